"""GPU architecture parsing and CUDA's real rules for which code runs on which GPU."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from build_graph.gpu.tables import GPU_COMPUTE_CAPABILITY

_ARCH_RE = re.compile(r"^(\d{1,2})\.(\d)([af]?)(\+PTX)?$")
_SM_RE = re.compile(r"^(?:sm_|compute_)(\d{1,2})(\d)([af]?)$")


@dataclass(frozen=True, order=True)
class Arch:
    """One TORCH_CUDA_ARCH_LIST entry: compute capability plus 'a'/'f' variant."""

    major: int
    minor: int
    suffix: str = ""  # "" portable within the major, "a" this exact chip, "f" its family

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}{self.suffix}"

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}{self.suffix}"


def parse_arch(text: str) -> tuple[Arch, bool]:
    """Parse '8.6', '9.0a' or '8.6+PTX' (also 'sm_86') into (Arch, wants_ptx)."""
    text = text.strip()
    match = _ARCH_RE.match(text)
    if match:
        major, minor, suffix, ptx = match.groups()
        return Arch(int(major), int(minor), suffix), bool(ptx)
    match = _SM_RE.match(text)
    if match:
        major, minor, suffix = match.groups()
        return Arch(int(major), int(minor), suffix), False
    raise ValueError(f"{text!r} is not an architecture; write it as '8.9', '9.0a' or '8.6+PTX'")


def parse_target(text: str) -> tuple[int, int]:
    """A GPU target by name ('L4'), by 'sm_89' or by '8.9' -> compute capability."""
    for name, cc in GPU_COMPUTE_CAPABILITY.items():
        if name.lower() == text.strip().lower():
            return cc
    try:
        arch, _ = parse_arch(text)
    except ValueError:
        known = ", ".join(GPU_COMPUTE_CAPABILITY)
        raise ValueError(f"unknown GPU {text!r}; use a name ({known}), 'sm_89' or '8.9'") from None
    return arch.major, arch.minor


class Coverage(Enum):
    """How a GPU runs a build: its own SASS, a lower SASS of its major, PTX via JIT, or not."""

    EXACT_SASS = "exact SASS"
    LOWER_SASS = "lower SASS"
    PTX_JIT = "PTX JIT"
    NONE = "not runnable"


@dataclass(frozen=True)
class CoverageResult:
    coverage: Coverage
    via: Arch | None  # the arch whose code the GPU would run

    def describe(self, cc: tuple[int, int]) -> str:
        target = f"sm_{cc[0]}{cc[1]}"
        match self.coverage:
            case Coverage.EXACT_SASS:
                return f"{target} runs its own SASS ({self.via})"
            case Coverage.LOWER_SASS:
                return f"{target} runs SASS built for {self.via} (no {cc[0]}.{cc[1]} SASS)"
            case Coverage.PTX_JIT:
                return (
                    f"{target} has no SASS and would JIT-compile PTX for {self.via} "
                    "at first launch (slow start, possibly slower kernels)"
                )
            case Coverage.NONE:
                return f"{target} has neither compatible SASS nor PTX"


def sass_runs_on(arch: Arch, cc: tuple[int, int]) -> bool:
    """CUDA binary compatibility: SASS for X.Z runs on X.Y when Z <= Y (same major).

    Arch-specific 'a' code runs only on that exact chip; family 'f' code runs on later
    chips of the same family. (CUDA C Programming Guide, "Binary Compatibility" and
    "Feature Availability".)
    """
    if arch.major != cc[0]:
        return False
    if arch.suffix == "a":
        return arch.minor == cc[1]
    return arch.minor <= cc[1]


def ptx_runs_on(arch: Arch, cc: tuple[int, int]) -> bool:
    """PTX for compute_X.Z is JIT-compiled on any GPU with capability >= X.Z."""
    if arch.suffix == "a":
        return (arch.major, arch.minor) == cc
    return (arch.major, arch.minor) <= cc


def coverage(sass: list[Arch], ptx: list[Arch], cc: tuple[int, int]) -> CoverageResult:
    """The best way a GPU of capability `cc` can run code built for `sass` + `ptx`."""
    runnable = sorted((a for a in sass if sass_runs_on(a, cc)), reverse=True)
    for arch in runnable:
        if (arch.major, arch.minor) == cc:
            return CoverageResult(Coverage.EXACT_SASS, arch)
    if runnable:
        return CoverageResult(Coverage.LOWER_SASS, runnable[0])
    jit = sorted((a for a in ptx if ptx_runs_on(a, cc)), reverse=True)
    if jit:
        return CoverageResult(Coverage.PTX_JIT, jit[0])
    return CoverageResult(Coverage.NONE, None)


def split_arch_list(arch_list: list[str], ptx_newest: bool) -> tuple[list[Arch], list[Arch]]:
    """(SASS archs, PTX archs) that TORCH_CUDA_ARCH_LIST + the `ptx` flag produce."""
    sass: list[Arch] = []
    ptx: list[Arch] = []
    for entry in arch_list:
        arch, wants_ptx = parse_arch(entry)
        sass.append(arch)
        if wants_ptx:
            ptx.append(arch)
    if ptx_newest and sass:
        newest = max(sass)
        if newest not in ptx:
            ptx.append(newest)
    return sass, ptx


def torch_cuda_arch_list(arch_list: list[str], ptx_newest: bool) -> str:
    """The TORCH_CUDA_ARCH_LIST value: '7.5;8.0;9.0+PTX'."""
    sass, ptx = split_arch_list(arch_list, ptx_newest)
    return ";".join(f"{a}+PTX" if a in ptx else str(a) for a in sass)
