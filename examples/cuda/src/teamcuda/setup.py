"""teamcuda: a CUDA library built the way PyTorch builds itself. setup.py drives CMake +
Ninja; ccache sits in front of g++ and nvcc as CMake's compiler launcher, from the
environment the compile script sets (the shipped `cmake_launchers` macro, as for PyTorch).
The archs come from TORCH_CUDA_ARCH_LIST ('7.5;...;12.0+PTX'), the parallelism from
MAX_JOBS, as in PyTorch's own setup.py.
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def cuda_architectures(arch_list: str) -> str:
    """'7.5;8.0;12.0+PTX' -> '75-real;80-real;120-real;120-virtual' (CMake's form: SASS
    for each arch, PTX where '+PTX' asks for it)."""
    archs = []
    for entry in arch_list.replace(" ", ";").split(";"):
        if entry:
            number = entry.removesuffix("+PTX").replace(".", "")
            archs.append(f"{number}-real")
            if entry.endswith("+PTX"):
                archs.append(f"{number}-virtual")
    return ";".join(archs)


class BuildWithCMake(build_py):
    """Build the library with CMake, then put it beside the package's Python code."""

    def run(self) -> None:
        super().run()
        build = HERE / "build-cmake"
        nvcc = Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc"
        archs = cuda_architectures(os.environ["TORCH_CUDA_ARCH_LIST"])
        subprocess.run(["cmake", "-G", "Ninja", "-S", str(HERE), "-B", str(build),
                        "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                        f"-DCMAKE_CUDA_ARCHITECTURES={archs}"], check=True)
        jobs = os.environ.get("MAX_JOBS") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", str(build), "--parallel", jobs, "--verbose"],
                       check=True)
        target = Path(self.build_lib) / "teamcuda"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(build / "libteamcuda.so", target / "libteamcuda.so")


class BinaryDistribution(Distribution):
    """A platform wheel: it carries a compiled library, though no Python extension."""

    def has_ext_modules(self) -> bool:
        return True


setup(
    name="teamcuda",
    version="1.0.0",
    packages=["teamcuda"],
    cmdclass={"build_py": BuildWithCMake},
    distclass=BinaryDistribution,
)
