"""The team's CUDA ops: torch.ops.teamkernels.{saxpy, row_sum, arch}."""

import torch

from teamkernels import _C  # noqa: F401  (registers the ops with torch)

__all__ = ["arch", "row_sum", "saxpy"]


def saxpy(a: float, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """a * x + y on the GPU (float32)."""
    return torch.ops.teamkernels.saxpy(a, x, y)


def row_sum(x: torch.Tensor) -> torch.Tensor:
    """The sum of each row of a 2-D float32 tensor, one block per row."""
    return torch.ops.teamkernels.row_sum(x)


def arch(device: torch.device | None = None) -> int:
    """__CUDA_ARCH__ of the code that really ran (e.g. 900 for sm_90 SASS on an H100)."""
    return int(torch.ops.teamkernels.arch(torch.empty(0, device=device or "cuda")))
