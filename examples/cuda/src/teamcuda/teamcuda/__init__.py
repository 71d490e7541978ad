"""teamcuda: a CMake-built CUDA library (no torch), loaded with ctypes."""

import ctypes
from pathlib import Path

_LIB = ctypes.CDLL(str(Path(__file__).with_name("libteamcuda.so")))
_LIB.teamcuda_version.restype = ctypes.c_char_p


def version() -> str:
    """The library's own version string (read from the .so, not from Python)."""
    return _LIB.teamcuda_version().decode()
