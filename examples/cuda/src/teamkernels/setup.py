"""teamkernels: the team's own CUDA ops, a PyTorch extension of several .cu units.

Built for the stable Python ABI (one cp39-abi3 wheel) and registered through TORCH_LIBRARY,
not pybind11: the same .so loads in any CPython >= 3.9 that has the same torch, which is
how the GPU evidence runs the very bytes this image carries on a machine with another
Python (docs/gpu-evidence.md). The arch list comes from TORCH_CUDA_ARCH_LIST.
"""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="teamkernels",
    version="1.0.0",
    packages=["teamkernels"],
    ext_modules=[
        CUDAExtension(
            "teamkernels._C",
            sources=["csrc/ops.cpp", "csrc/saxpy.cu", "csrc/rowsum.cu", "csrc/archinfo.cu"],
            extra_compile_args={"cxx": ["-O2"],
                                "nvcc": ["-O2", "-Xfatbin", "-compress-all"]},
            py_limited_api=True,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
