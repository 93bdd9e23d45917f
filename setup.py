"""Builds the gwb Python package's module with CMake (pyproject.toml; README "Python").

The engine and the pybind11 module are configured with the torch, pybind11 and Python of the
environment that runs pip, without the window, the command line, tests or benchmarks. Environment:
  CMAKE_PREFIX_PATH   extra prefixes (Eigen, nlohmann-json) before torch's and pybind11's
  GWB_CMAKE_ARGS      extra CMake arguments, split on spaces (e.g. -DTORCH_CUDA_ARCH_LIST=9.0)
  GWB_BUILD_DIR       the CMake build folder (default: setuptools' build_temp), kept between runs
  GWB_REUSE_BUILD     with GWB_BUILD_DIR an already configured build: package its module as it is
  CMAKE_BUILD_PARALLEL_LEVEL  compile jobs (default: the cores)
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
MODELS = ("grassmann-austen.gwb", "transformer-austen.gwb")
NO_TORCH = ("gwb: there is no torch in this build environment (pip's build isolation hides an installed one), "
            "so in an environment that has torch 2.x, numpy, pybind11, cmake and ninja run "
            "pip install --no-build-isolation . instead (README \"Python\").")


def project_version():
    """The version, from one place: CMakeLists.txt's project(... VERSION x.y.z)."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(\s*\w+\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not m:
        sys.exit("gwb: no project(... VERSION x.y.z) in CMakeLists.txt")
    return m.group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        try:
            import torch
        except ImportError:
            sys.exit(NO_TORCH)
        import pybind11

        build = os.environ.get("GWB_BUILD_DIR") or os.path.join(os.path.abspath(self.build_temp), "cmake")
        if os.environ.get("GWB_REUSE_BUILD") and os.path.exists(os.path.join(build, "CMakeCache.txt")):
            # An existing, configured build folder (scripts/test's pip-torch leg): its module as it is.
            subprocess.run(["cmake", "--build", build, "--target", "gwb_python"], check=True)
            return self._copy_module(build, ext)
        os.makedirs(build, exist_ok=True)
        prefixes = [p for p in os.environ.get("CMAKE_PREFIX_PATH", "").split(os.pathsep) if p]
        # The torch folder itself first: its TorchConfig looks for libtorch with find_library, which
        # would otherwise take a system LibTorch (Debian's) before the environment's own.
        prefixes += [os.path.dirname(torch.__file__), torch.utils.cmake_prefix_path, pybind11.get_cmake_dir()]
        args = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                "-DGWB_BUILD_GUI=OFF", "-DGWB_BUILD_CLI=OFF", "-DGWB_BUILD_TESTS=OFF",
                "-DGWB_BUILD_BENCHMARKS=OFF", "-DGWB_BUILD_PYTHON=ON",
                "-DPython_EXECUTABLE=" + sys.executable, "-DCMAKE_PREFIX_PATH=" + ";".join(prefixes)]
        if shutil.which("ninja") and not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            args += ["-G", "Ninja"]
        # An installed module finds the libtorch of the environment it is installed in (site-packages/
        # torch/lib beside site-packages/gwb) before the one it was built against, so a wheel works
        # in another environment with the same torch version.
        args += ["-DGWB_PYTHON_RPATH=$ORIGIN/../torch/lib"]
        # A CUDA torch's CMake config asks the GPU for its architecture unless told; on a machine
        # without one (a login node, CI) that probe fails. gwb compiles no CUDA code of its own, so
        # any architecture torch supports will do; TORCH_CUDA_ARCH_LIST in the environment wins.
        if torch.version.cuda and not torch.cuda.is_available() and not os.environ.get("TORCH_CUDA_ARCH_LIST"):
            args += ["-DTORCH_CUDA_ARCH_LIST=9.0"]
        args += [a for a in os.environ.get("GWB_CMAKE_ARGS", "").split() if a]
        subprocess.run(args, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", build, "--target", "gwb_python", "-j", jobs], check=True)
        self._copy_module(build, ext)

    def _copy_module(self, build, ext):
        pkg = os.path.join(build, "python", "gwb")
        built = [f for f in os.listdir(pkg) if f.startswith("_gwb") and f.endswith(".so")]
        if not built:
            sys.exit(f"gwb: the build made no _gwb module in {pkg}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(pkg, built[0]), target)


class BuildPy(build_py):
    """The pure-Python files, an installed package's _paths.py (no gwb program beside it; the
    bundled models inside the package) and the bundled models."""

    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "gwb")
        with open(os.path.join(out, "_paths.py"), "w", encoding="utf-8") as f:
            f.write("# Written by setup.py: an installed package has no gwb program beside it; its bundled\n"
                    "# models are in gwb/models.\nGWB_PROGRAM = \"\"\nSOURCE_DIR = \"\"\n")
        os.makedirs(os.path.join(out, "models"), exist_ok=True)
        for name in MODELS:
            shutil.copyfile(os.path.join(ROOT, "resources", "models", name), os.path.join(out, "models", name))


setup(
    version=project_version(),
    packages=["gwb"],
    package_dir={"gwb": "python/gwb"},
    ext_modules=[CMakeExtension("gwb._gwb")],
    cmdclass={"build_ext": CMakeBuild, "build_py": BuildPy},
    zip_safe=False,
)
