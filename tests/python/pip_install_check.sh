#!/usr/bin/env bash
# PythonPackage.PipInstall: the package as a researcher installs it. A fresh venv of the given
# interpreter (with its site packages: Debian's torch, numpy, pybind11), `pip install
# --no-build-isolation` of the source tree (the module built against that torch), then the
# package used from another folder, without PYTHONPATH and without the gwb program: load, trace,
# run with a hook, patch (one pair and a pairs list), paths, stats, generate, and gwb.figure's
# one-sentence refusal.
#   pip_install_check.sh SOURCE_DIR WORK_DIR PYTHON
# The CMake build folder is SOURCE_DIR/build/pip (kept between runs; with ccache and the release
# build's flags its engine objects are the release build's).
set -euo pipefail
src=$1
work=$2
py=$3
rm -rf "$work"
mkdir -p "$work"
"$py" -m venv --system-site-packages "$work/venv"
cd "$work"
GWB_BUILD_DIR="$src/build/pip" GWB_CMAKE_ARGS="-DGWB_WERROR=ON" \
  "$work/venv/bin/pip" install --no-build-isolation --no-deps --quiet "$src"
env -u PYTHONPATH -u GWB_PROGRAM -u GWB_MODELS_DIR "$work/venv/bin/python" - "$work" <<'PYEOF'
import os, sys
import torch  # first, as a researcher's script does
import gwb
work = sys.argv[1]
assert os.path.realpath(gwb.__file__).startswith(os.path.realpath(work)), gwb.__file__
m = gwb.bundled("grassmann")
t = m.trace("It is a truth universally acknowledged, that a single man")
assert t["l0_h"].shape[0] == len(t.tokens)
seen = {}
def observe(value, name):
    seen[name] = value.shape  # returns None: observe, do not replace
logits = m.run(m.encode("It is a truth"), hooks={"resid.1": observe})
assert "resid.1" in seen and logits.shape[0] == len(m.encode("It is a truth"))
clean, corrupt = "They could not help laughing, and", "She could not help laughing, and"
one = m.patch(clean=clean, corrupt=corrupt, answer="they", wrong="she", site="resid", progress=False)
pairs = m.patch(pairs=[dict(clean=clean, corrupt=corrupt, answer="they", wrong="she")], site="resid",
                bootstrap=50, progress=False)
import numpy as np
cols = one["effect"].shape[1]
assert np.allclose(pairs["effect"][0][:, -cols:], one["effect"], equal_nan=True, atol=1e-12), "pairs equal one sweep"
p = m.paths(clean, corrupt, "they", "she", progress=False)
assert p["metric"].size > 0
corpus = os.path.join(work, "c.txt")
with open(corpus, "w") as f:
    f.write("It is a truth universally acknowledged, that a single man in possession of a good fortune. " * 8)
s = m.stats(corpus, window=32, stride=32, max_windows=2, progress=False)
assert s.meta["complete"]
g = m.generate("It is a truth", max_new=4, greedy=True)
try:
    gwb.figure("gate", prompt="It is")
    raise AssertionError("gwb.figure ran without a gwb program")
except RuntimeError as e:
    refusal = str(e)
assert "Qt" in refusal and "\n" not in refusal, refusal
print(f"pip-installed gwb from {os.path.dirname(gwb.__file__)} with torch {torch.__version__}: "
      f"load, trace, run with a hook, patch, patch(pairs=), paths, stats, generate work; figure: {refusal}")
PYEOF
