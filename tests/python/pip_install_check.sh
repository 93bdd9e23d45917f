#!/usr/bin/env bash
# PythonPackage.PipInstall: the package as a researcher installs it, into fresh venvs that already
# have the build's torch:
#   1. venv A: `pip install --no-build-isolation .` of the source tree;
#   2. venv A: `pip wheel --no-build-isolation .` -> the wheel installed into a fresh venv B;
#   3. in A and in B, from another folder, without PYTHONPATH and with no gwb program anywhere:
#      tests/python/installed_check.py (load .gwb/.pt/.safetensors, trace, hook, patch, pairs, paths,
#      stats, generate, features train/eval/edit, gwb.torch.module with autograd; torch imported
#      before gwb in one run and after it in the other);
#   4. plain `pip wheel .` (build isolation, so no torch in the build environment) stops with the
#      package's one sentence (setup.py NO_TORCH).
#   pip_install_check.sh SOURCE_DIR WORK_DIR PYTHON [BUILD_DIR]
# BUILD_DIR (the pip-torch leg): setup.py packages the module that build made (GWB_REUSE_BUILD)
# instead of configuring and compiling the engine again.
# PYTHON is the build's interpreter. Debian's /usr/bin/python3: the venvs see its site packages
# (Debian's torch 1.13, numpy, pybind11, setuptools). A venv's interpreter (the pip-torch leg,
# build/pip-torch-env/venv): the fresh venvs are made from its base interpreter and see that venv's
# packages through a .pth file (its pinned torch, numpy, pybind11, cmake, ninja, setuptools, pytest)
# instead of a second 5 GB install. The CMake build folder is SOURCE_DIR/build/pip-<torch version>
# (kept between runs; with ccache its engine objects are the release build's).
set -euo pipefail
src=$1
work=$2
py=$3
rm -rf "$work"
mkdir -p "$work/elsewhere"
read -r base site torch_version < <("$py" -c 'import sys, sysconfig, torch
print(sys._base_executable if sys.prefix != sys.base_prefix else "-", sysconfig.get_paths()["purelib"], torch.__version__)')
[ "$base" = "-" ] && base="" # a system interpreter: its venvs see its site packages
make_venv() { # make_venv DIR: a fresh venv with the build's torch
  if [ -n "$base" ]; then
    "$base" -m venv "$1"
    local own
    own=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$site" >"$own/build-torch.pth"
  else
    "$py" -m venv --system-site-packages "$1"
  fi
}
make_venv "$work/a"
make_venv "$work/b"
if [ -n "${4:-}" ]; then
  export GWB_BUILD_DIR="$4" GWB_REUSE_BUILD=1
else
  # GWB_CMAKE_ARGS: the release build's warnings-as-errors.
  export GWB_BUILD_DIR="$src/build/pip-${torch_version%%+*}" GWB_CMAKE_ARGS="-DGWB_WERROR=ON"
fi
echo "1. pip install --no-build-isolation . (torch $torch_version)"
"$work/a/bin/python" -m pip install --no-build-isolation --no-deps --quiet "$src"
echo "2. pip wheel --no-build-isolation . -> a fresh venv"
"$work/a/bin/python" -m pip wheel --no-build-isolation --no-deps --quiet -w "$work/dist" "$src"
wheel=$(ls "$work"/dist/gwb-*.whl)
echo "   $(basename "$wheel")"
"$work/b/bin/python" -m pip install --no-deps --quiet "$wheel"
unset GWB_BUILD_DIR GWB_CMAKE_ARGS GWB_REUSE_BUILD

cd "$work/elsewhere"
for venv in a b; do
  if [ $venv = a ]; then order="torch first"; pre="import torch"; else order="gwb first"; pre="import gwb"; fi
  echo "3. installed_check.py in venv $venv ($order)"
  # -p: a plugin from the current folder (python -m puts it on sys.path) imports torch (or gwb)
  # before anything else; the tests import the other one after it.
  printf '%s\n' "$pre" >"$work/elsewhere/import_order_$venv.py"
  env -u PYTHONPATH -u GWB_PROGRAM -u GWB_MODELS_DIR GWB_EXPECT_ROOT="$work/$venv" PATH=/usr/bin:/bin \
    "$work/$venv/bin/python" -m pytest -q -p no:cacheprovider -p "import_order_$venv" \
    "$src/tests/python/installed_check.py"
done

echo "4. pip wheel . with build isolation: refused in one sentence"
if out=$("$work/b/bin/python" -m pip wheel --no-deps -w "$work/iso" "$src" 2>&1); then
  echo "pip wheel with build isolation succeeded: expected the no-torch refusal" >&2
  exit 1
fi
sentence=$(cd "$src" && "$py" -c 'import ast; t = ast.parse(open("setup.py").read())
print(next(ast.literal_eval(n.value) for n in t.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "NO_TORCH"))')
if ! grep -qF "$sentence" <<<"$out"; then
  echo "the isolated build failed without the package's sentence:" >&2
  tail -30 <<<"$out" >&2
  exit 1
fi
echo "   $sentence"
echo "pip install check passed with torch $torch_version"
