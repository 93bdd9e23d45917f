"""Builds the gwb Python package's module with CMake (pyproject.toml; README "Python").

The engine and the pybind11 module are configured with the torch, pybind11 and Python of the
environment that runs pip, without the window, the command line, tests or benchmarks. Environment:
  CMAKE_PREFIX_PATH   extra prefixes (Eigen, nlohmann-json) before torch's and pybind11's
  GWB_CMAKE_ARGS      extra CMake arguments, split on spaces (e.g. -DTORCH_CUDA_ARCH_LIST=9.0)
  GWB_BUILD_DIR       the CMake build folder (default: setuptools' build_temp), kept between runs
  CMAKE_BUILD_PARALLEL_LEVEL  compile jobs (default: the cores)
"""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
MODELS = ("grassmann-austen.gwb", "transformer-austen.gwb")


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        try:
            import torch
        except ImportError:
            sys.exit("gwb: torch is not importable by " + sys.executable + ": the module is built against the "
                     "environment's torch (install it first; offline, use pip install --no-build-isolation)")
        import pybind11

        build = os.environ.get("GWB_BUILD_DIR") or os.path.join(os.path.abspath(self.build_temp), "cmake")
        os.makedirs(build, exist_ok=True)
        prefixes = [p for p in os.environ.get("CMAKE_PREFIX_PATH", "").split(os.pathsep) if p]
        prefixes += [torch.utils.cmake_prefix_path, pybind11.get_cmake_dir()]
        args = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                "-DGWB_BUILD_GUI=OFF", "-DGWB_BUILD_CLI=OFF", "-DGWB_BUILD_TESTS=OFF",
                "-DGWB_BUILD_BENCHMARKS=OFF", "-DGWB_BUILD_PYTHON=ON",
                "-DPython_EXECUTABLE=" + sys.executable, "-DCMAKE_PREFIX_PATH=" + ";".join(prefixes)]
        if shutil.which("ninja") and not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            args += ["-G", "Ninja"]
        args += [a for a in os.environ.get("GWB_CMAKE_ARGS", "").split() if a]
        subprocess.run(args, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", build, "--target", "gwb_python", "-j", jobs], check=True)
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
    packages=["gwb"],
    package_dir={"gwb": "python/gwb"},
    ext_modules=[CMakeExtension("gwb._gwb")],
    cmdclass={"build_ext": CMakeBuild, "build_py": BuildPy},
    zip_safe=False,
)
