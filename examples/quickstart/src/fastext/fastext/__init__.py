"""fastext: native kernels for the quickstart stack."""

from fastext._native import checksum, kernel_count

__all__ = ["checksum", "kernel_count"]
__version__ = "1.0.0"
