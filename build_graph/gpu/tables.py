"""Compatibility tables (GPUs, CUDA archs, torch's CUDA lines), kept as data with sources.

To extend: add a row. The rules that read these tables live in `gpu.archs` (which GPU
runs which code) and `manifest.rules` (what a manifest may combine). Which torchvision and
torchaudio go with a torch release is not typed here: it is read from the wheels' own
METADATA into torch_releases.json (gpu/releases.py, `python -m build_graph.pypi.refresh`).
"""

from __future__ import annotations

# GPU name -> compute capability (major, minor).
# Source: NVIDIA, "CUDA GPUs - Compute Capability", https://developer.nvidia.com/cuda-gpus
GPU_COMPUTE_CAPABILITY: dict[str, tuple[int, int]] = {
    "V100": (7, 0),
    "T4": (7, 5),
    "RTX 2080 Ti": (7, 5),
    "A100": (8, 0),
    "A30": (8, 0),
    "A10": (8, 6),
    "A10G": (8, 6),
    "A40": (8, 6),
    "RTX 3090": (8, 6),
    "RTX A6000": (8, 6),
    "Jetson Orin": (8, 7),
    "L4": (8, 9),
    "L40": (8, 9),
    "L40S": (8, 9),
    "RTX 4090": (8, 9),
    "RTX 6000 Ada": (8, 9),
    "H100": (9, 0),
    "H200": (9, 0),
    "GH200": (9, 0),
    "B100": (10, 0),
    "B200": (10, 0),
    "GB200": (10, 0),
    "B300": (10, 3),
    "GB300": (10, 3),
    "RTX 5090": (12, 0),
    "RTX PRO 6000": (12, 0),
    "DGX Spark": (12, 1),
}

# Real architectures (SASS targets) each CUDA toolkit can compile, keyed by the first
# toolkit (major, minor) that has that set; a toolkit uses the newest row not above it.
# Sources: `nvcc --list-gpu-code` of each toolkit and the CUDA Toolkit release notes
# (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/): 12.0 dropped sm_35/37;
# 12.8 added sm_100/101/120; 12.9 added sm_103/121 and the family ("f") targets;
# 13.0 dropped everything below sm_75, renamed sm_101 to sm_110 and added sm_88
# (`nvcc --list-gpu-code` of CUDA 13.0 on our CI host prints sm_75..sm_121 exactly so).
_PRE_VOLTA = ["3.5", "3.7", "5.0", "5.2", "5.3", "6.0", "6.1", "6.2"]
_VOLTA_TO_HOPPER = ["7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0"]
CUDA_ARCHS: dict[tuple[int, int], frozenset[str]] = {
    (11, 8): frozenset([*_PRE_VOLTA, *_VOLTA_TO_HOPPER]),
    (12, 0): frozenset([*_PRE_VOLTA[2:], *_VOLTA_TO_HOPPER, "9.0a"]),
    (12, 8): frozenset(
        [
            *_PRE_VOLTA[2:],
            *_VOLTA_TO_HOPPER,
            "9.0a",
            "10.0",
            "10.0a",
            "10.1",
            "10.1a",
            "12.0",
            "12.0a",
        ]
    ),
    (12, 9): frozenset(
        [
            *_PRE_VOLTA[2:],
            *_VOLTA_TO_HOPPER,
            "9.0a",
            "10.0",
            "10.0a",
            "10.0f",
            "10.1",
            "10.1a",
            "10.1f",
            "10.3",
            "10.3a",
            "10.3f",
            "12.0",
            "12.0a",
            "12.0f",
            "12.1",
            "12.1a",
            "12.1f",
        ]
    ),
    (13, 0): frozenset(
        [
            "7.5",
            "8.0",
            "8.6",
            "8.7",
            "8.8",
            "8.9",
            "9.0",
            "9.0a",
            "10.0",
            "10.0a",
            "10.0f",
            "10.3",
            "10.3a",
            "10.3f",
            "11.0",
            "11.0a",
            "11.0f",
            "12.0",
            "12.0a",
            "12.0f",
            "12.1",
            "12.1a",
            "12.1f",
        ]
    ),
}

# torch minor -> CUDA (major, minor) versions of its official binaries (stable and
# experimental columns together). The index does not say this (PyPI carries one CUDA build
# per release: torch_releases.json's `cuda`), so it stays a table.
# Source: PyTorch RELEASE.md, "Release Compatibility Matrix"
# (https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix);
# rows 2.10-2.14 read 2026-11-23 from the matrix as it stood then (2.14 was its newest
# row: 2.15 is left out until the matrix lists it).
TORCH_CUDA: dict[str, tuple[tuple[int, int], ...]] = {
    "2.0": ((11, 7), (11, 8)),
    "2.1": ((11, 8), (12, 1)),
    "2.2": ((11, 8), (12, 1)),
    "2.3": ((11, 8), (12, 1)),
    "2.4": ((11, 8), (12, 1), (12, 4)),
    "2.5": ((11, 8), (12, 1), (12, 4)),
    "2.6": ((11, 8), (12, 4), (12, 6)),
    "2.7": ((11, 8), (12, 6), (12, 8)),
    "2.8": ((12, 6), (12, 8), (12, 9)),
    "2.9": ((12, 6), (12, 8), (13, 0)),
    "2.10": ((12, 6), (12, 8), (13, 0)),
    "2.11": ((12, 6), (12, 8), (13, 0)),
    "2.12": ((12, 6), (13, 0), (13, 2)),
    "2.13": ((12, 6), (13, 0), (13, 2)),
    "2.14": ((12, 6), (13, 0), (13, 2)),
}


def cuda_archs(cuda: tuple[int, int]) -> frozenset[str] | None:
    """The archs a CUDA toolkit can compile, or None for a toolkit older than the table."""
    known = [key for key in CUDA_ARCHS if key <= cuda]
    return CUDA_ARCHS[max(known)] if known else None


def first_cuda_with(arch: str) -> tuple[int, int] | None:
    """The oldest toolkit in the table that compiles `arch`."""
    for key in sorted(CUDA_ARCHS):
        if arch in CUDA_ARCHS[key]:
            return key
    return None
