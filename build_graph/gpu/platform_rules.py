"""Which GPU archs and CUDA lines apply to a linux/arm64 (aarch64) image.

An aarch64 CUDA image runs on Arm hosts with NVIDIA GPUs, and those are few: Grace
superchips, DGX Spark, Jetson/IGX boards, a cloud instance, an Arm server kit. Their GPUs
decide which archs of TORCH_CUDA_ARCH_LIST are worth compiling into the linux/arm64 image.

Two CUDA builds exist for aarch64 (CUDA 12.x release notes list each component for
"x86_64, arm64-sbsa, aarch64-jetson", https://docs.nvidia.com/cuda/archive/12.8.0/
cuda-toolkit-release-notes/, Table 1): arm64-sbsa for servers with a data-center driver,
aarch64-jetson (L4T/JetPack) for Tegra boards. A linux/arm64 image is taken to carry the
arm64-sbsa build: PyTorch's aarch64 CUDA wheels are its "aarch64 (sbsa) wheels"
(pytorch/pytorch#152690); that nvidia/cuda's arm64 tags are SBSA was not read in a source
here. CUDA 13.0 unified the two: its release notes list only
"x86_64, arm64-sbsa" (https://docs.nvidia.com/cuda/archive/13.0.0/cuda-toolkit-release-notes/)
and Jetson Thor runs the SBSA build, "The only exception is Orin (sm_87), which will continue
on its current path for now" (NVIDIA blog, "What's New in CUDA Toolkit 13.0 for Jetson Thor",
https://developer.nvidia.com/blog/whats-new-in-cuda-toolkit-13-0-for-jetson-thor-unified-arm-ecosystem-and-more).
SBSA libraries on a Jetson crash (ollama's "distinct sbsa variant for linux arm64" commit:
"avoids accidentally trying to load the sbsa cuda libraries on a jetson system which results
in crashes"), so a Jetson-only GPU gains nothing from an arch in the SBSA image.

The sm floor is not repeated here: CUDA 13.0 compiles nothing below sm_75 on any platform,
which `tables.CUDA_ARCHS` and `manifest.rules.check_arch_list` already enforce.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from build_graph.gpu.archs import Arch, parse_arch, ptx_runs_on, sass_runs_on

PLATFORM = "linux/arm64"


class Stack(Enum):
    """Which aarch64 CUDA build a host runs (the toolkit's own platform names)."""

    SBSA = "arm64-sbsa"  # servers, Grace, DGX Spark, IGX dGPU; Jetson Thor from CUDA 13
    JETSON = "aarch64-jetson"  # Tegra boards on L4T/JetPack: Orin always, Thor before 13


@dataclass(frozen=True)
class ArmHost:
    """One Arm host carrying an NVIDIA GPU, for the CUDA lines [cuda_from, cuda_before)."""

    name: str
    gpu: str
    cc: tuple[int, int]
    stack: Stack
    cuda_from: tuple[int, int] | None = None  # first CUDA line this row holds for
    cuda_before: tuple[int, int] | None = None  # first CUDA line it no longer holds for

    def holds_for(self, cuda: tuple[int, int] | None) -> bool:
        """This row describes the host under `cuda` (any line when None)."""
        if cuda is None:
            return True
        return (self.cuda_from is None or cuda >= self.cuda_from) and (
            self.cuda_before is None or cuda < self.cuda_before
        )

    def runs_image(self, cuda: tuple[int, int] | None) -> bool:
        """A linux/arm64 (arm64-sbsa) CUDA image of line `cuda` runs here."""
        return self.stack is Stack.SBSA and self.holds_for(cuda)

    @property
    def label(self) -> str:
        return f"{self.cc[0]}.{self.cc[1]} {self.name} ({self.gpu})"


# Arm (aarch64) hosts with NVIDIA GPUs. Compute capabilities: NVIDIA, "CUDA GPU Compute
# Capability", https://developer.nvidia.com/cuda-gpus (read 2026-11-24 through the docs
# search), unless a row says otherwise. Rows are what a source names; an Arm server sold
# with another GPU joins the table when a source for it is found.
ARM_GPU_HOSTS: tuple[ArmHost, ...] = (
    # "Amazon EC2 G5g instances are powered by AWS Graviton2 processors and feature NVIDIA
    # T4G Tensor Core GPUs" (https://aws.amazon.com/ec2/instance-types/g5g/; the wording read
    # in a copy of that page through the code search, not on the page itself). The T4G is
    # Turing (NVIDIA GPU Operator platform support, "Supported ARM Based Platforms": "AWS EC2
    # G5g instances | Turing"); every Turing part on the CUDA GPUs page is 7.5, and ollama's
    # maintainer reports "AWS g5g T4G arm64 system uses CC 7.5" (ollama/ollama#11999).
    ArmHost("AWS EC2 G5g", "T4G", (7, 5), Stack.SBSA),
    # NVIDIA Arm HPC Developer Kit: "1x Ampere Altra Q80-30", "2x NVIDIA A100 GPU"
    # (github.com/arm-hpc-devkit/nvidia-arm-hpc-devkit-users-guide, README). A100: 8.0.
    ArmHost("Ampere Altra Arm HPC DevKit", "A100", (8, 0), Stack.SBSA),
    # IGX Orin Developer Kit in dGPU mode supports "NVIDIA RTX A6000" and "NVIDIA RTX 6000
    # Ada" (docs.nvidia.com/igx-orin/user-guide/latest/configuration.html); its "dGPU stack
    # is the same as SBSA, not as Jetpack" (pytorch/pytorch#152690). RTX A6000 8.6, RTX 6000
    # Ada 8.9. Its documented dGPU stack is CUDA 12.2 with driver R535 (IGX-SW 1.0
    # Production Release page); CUDA 13.0 needs driver >= 580.65.06 (CUDA 13.0 release
    # notes' driver table, as several projects quote it; the table itself was not read), and
    # no IGX Orin release with an R580 driver was found, so
    # these rows end at CUDA 13. Widen them when one is documented.
    ArmHost("IGX Orin dGPU mode", "RTX A6000", (8, 6), Stack.SBSA, cuda_before=(13, 0)),
    ArmHost("IGX Orin dGPU mode", "RTX 6000 Ada", (8, 9), Stack.SBSA, cuda_before=(13, 0)),
    # "8.7 | Jetson AGX Orin Jetson Orin NX Jetson Orin Nano"; Jetson builds only, on every
    # CUDA line (the CUDA 13.0 blog's Orin exception, module docstring).
    ArmHost("Jetson Orin", "Orin iGPU", (8, 7), Stack.JETSON),
    # "9.0 | NVIDIA GH200 NVIDIA H200 NVIDIA H100".
    ArmHost("GH200 Grace Hopper", "H100", (9, 0), Stack.SBSA),
    # "10.0 | NVIDIA GB200 NVIDIA B200".
    ArmHost("GB200 Grace Blackwell", "B200", (10, 0), Stack.SBSA),
    # "10.3 | NVIDIA GB300 NVIDIA B300".
    ArmHost("GB300 Grace Blackwell Ultra", "B300", (10, 3), Stack.SBSA),
    # "11.0 | Jetson T5000 Jetson T4000" (Thor). CUDA 13.0 release notes: "SM101 has been
    # renumbered as SM110 from this release"; CUTLASS 4.2 changelog: "For CUDA toolkit
    # version < 13.0, SM101 is still used for Thor GPUs". Before 13.0 Thor ran the legacy
    # nvgpu (Jetson) driver (pytorch/pytorch#156176); from 13.0 the unified SBSA build
    # ("Thor and SPARK now both on SBSA platforms", pytorch/pytorch#159779).
    ArmHost("Jetson Thor", "Thor iGPU", (10, 1), Stack.JETSON, cuda_before=(13, 0)),
    ArmHost("Jetson Thor", "Thor iGPU", (11, 0), Stack.SBSA, cuda_from=(13, 0)),
    # "12.1 | NVIDIA GB10 (DGX Spark)"; SBSA (pytorch/pytorch#159779, as above).
    ArmHost("DGX Spark", "GB10", (12, 1), Stack.SBSA),
)

# torch minor -> CUDA line of its linux/arm64 (manylinux_2_28_aarch64) wheel on PyPI, read
# from the wheels' METADATA on 2026-11-24 (cp312 wheels: torch 2.11.0, 2.12.0, 2.13.0,
# 2.14.0, 2.14.1 require cuda-toolkit==13.0.x, torch 2.15.0 cuda-toolkit==13.2.2, each
# marked only `platform_system == "Linux"`). Up to 2.10 the aarch64 wheel is CPU-only: the
# CUDA requirements of the 2.5.1, 2.6.0, 2.8.0, 2.9.1 and 2.10.0 aarch64 wheels are all
# marked `platform_machine == "x86_64"` (and those wheels are 86-146 MB, the 2.11+ ones
# 420-484 MB). A minor newer than this table is not judged.
PYPI_TORCH_AARCH64_CUDA: dict[str, tuple[int, int]] = {
    "2.11": (13, 0),
    "2.12": (13, 0),
    "2.13": (13, 0),
    "2.14": (13, 0),
    "2.15": (13, 2),
}
PYPI_FIRST_AARCH64_CUDA_TORCH = (2, 11)

# CUDA line -> TORCH_CUDA_ARCH_LIST of PyTorch's own aarch64 CUDA wheel builds, from
# pytorch/pytorch .ci/aarch64_linux/aarch64_ci_build.sh ("Set CUDA architecture lists to
# match x86 build_cuda.sh"), one stored version of that file read through the code search
# (its commit was not shown; other versions of the file differ, e.g. one sets 12.9 to
# "8.0;9.0;10.0;11.0;12.0;12.1"). Kept as a reference point for messages and tests.
PYTORCH_AARCH64_ARCH_LIST: dict[tuple[int, int], str] = {
    (12, 6): "8.0;9.0",
    (12, 8): "8.0;9.0;10.0;12.0",
    (13, 0): "8.0;9.0;10.0;11.0;12.0+PTX",
}


def cuda_line(text: str | None) -> tuple[int, int] | None:
    """'13.0.2' -> (13, 0); None for None or text that does not start with two numbers."""
    match = re.match(r"^(\d+)\.(\d+)", text.strip()) if text else None
    return (int(match[1]), int(match[2])) if match else None


def image_hosts(cuda: str | None, hosts: Sequence[ArmHost] = ARM_GPU_HOSTS) -> tuple[ArmHost, ...]:
    """The hosts a linux/arm64 CUDA image of line `cuda` runs on (None: any line)."""
    line = cuda_line(cuda)
    return tuple(host for host in hosts if host.runs_image(line))


def carried_archs(cuda: str | None, hosts: Sequence[ArmHost] = ARM_GPU_HOSTS) -> list[str]:
    """The compute capabilities ('9.0') of the GPUs a linux/arm64 image of `cuda` can meet."""
    return [f"{cc[0]}.{cc[1]}" for cc in sorted({h.cc for h in image_hosts(cuda, hosts)})]


def arm64_warnings(
    sass: list[str],
    ptx: list[str],
    cuda: str | None,
    hosts: Sequence[ArmHost] = ARM_GPU_HOSTS,
    torch: str | None = None,
) -> list[str]:
    """One sentence per arch of a linux/arm64 image that no Arm GPU host can use, and one
    if `torch`'s aarch64 wheel on PyPI has no CUDA. Entries that do not parse are left to
    `check_arch_list`; `hosts` narrows the table to the hosts a team deploys to."""
    line = cuda_line(cuda)
    on_image = image_hosts(cuda, hosts)
    warnings: list[str] = []
    for arch in _parsed(sass):
        if not any(sass_runs_on(arch, host.cc) for host in on_image):
            warnings.append(_unused_sass(arch, line, hosts, on_image))
    for arch in _parsed(ptx):
        if not any(ptx_runs_on(arch, host.cc) for host in on_image):
            warnings.append(
                f"{arch}+PTX: no Arm GPU host that runs a {PLATFORM} image"
                f"{_of(line)} has compute capability {arch} or above "
                f"({_table(on_image)}), so nothing would JIT it; emit PTX of a "
                "lower arch or none (gpu.ptx; a variant of its own for linux/arm64)"
            )
    wheel = pypi_wheel_warning(torch) if torch else None
    if wheel:
        warnings.append(wheel)
    return warnings


def arm64_uncovered(
    sass: list[str], ptx: list[str], cuda: str | None, hosts: Sequence[ArmHost] = ARM_GPU_HOSTS
) -> list[str]:
    """One sentence per Arm GPU host the linux/arm64 image runs on whose GPU can run
    neither a SASS nor a PTX of the list (the other direction of arm64_warnings)."""
    sass_archs, ptx_archs = _parsed(sass), _parsed(ptx)
    uncovered: list[str] = []
    for host in image_hosts(cuda, hosts):
        if any(sass_runs_on(a, host.cc) for a in sass_archs):
            continue
        if any(ptx_runs_on(a, host.cc) for a in ptx_archs):
            continue
        cc = f"{host.cc[0]}.{host.cc[1]}"
        uncovered.append(
            f"{host.name} ({host.gpu}, {cc}) runs {PLATFORM} CUDA images"
            f"{_of(cuda_line(cuda))} but can run none of this build: add "
            f"'{cc}' to gpu.arch_list (of a variant for linux/arm64), or leave "
            "that host out"
        )
    return uncovered


def pypi_aarch64_cuda(torch: str) -> tuple[int, int] | None:
    """CUDA line of torch's aarch64 wheel on PyPI; None when it is CPU-only or unknown."""
    minor = cuda_line(torch)
    return PYPI_TORCH_AARCH64_CUDA.get(f"{minor[0]}.{minor[1]}") if minor else None


def pypi_wheel_warning(torch: str) -> str | None:
    """A sentence when torch's linux/arm64 wheel on PyPI is CPU-only, else None."""
    minor = cuda_line(torch)
    if minor is None or minor >= PYPI_FIRST_AARCH64_CUDA_TORCH:
        return None
    first = ".".join(map(str, PYPI_FIRST_AARCH64_CUDA_TORCH))
    return (
        f"torch {torch}: its {PLATFORM} wheel on PyPI is CPU-only (its CUDA "
        "requirements are for x86_64 alone); PyPI has CUDA aarch64 wheels from torch "
        f"{first} (CUDA 13.0): use torch >= {first} or build torch from source for "
        f"the {PLATFORM} image"
    )


def _parsed(entries: list[str]) -> list[Arch]:
    archs: list[Arch] = []
    for entry in entries:
        try:
            arch, _ = parse_arch(entry)
        except ValueError:
            continue
        if arch not in archs:
            archs.append(arch)
    return archs


def _unused_sass(
    arch: Arch, line: tuple[int, int] | None, hosts: Sequence[ArmHost], on_image: Sequence[ArmHost]
) -> str:
    """Why SASS for `arch` serves no host of a linux/arm64 image, naming the fix."""
    fix = (
        f"it only costs compile time in the {PLATFORM} image; drop it from gpu.arch_list, "
        f"or build {PLATFORM} in a variant of its own with its own arch list"
    )
    runners = [h for h in hosts if sass_runs_on(arch, h.cc)]
    jetson = sorted(
        {f"{h.name} ({h.gpu})" for h in runners if h.stack is Stack.JETSON and h.holds_for(line)}
    )
    other_lines = sorted(
        {
            f"{h.name} ({h.gpu}) {_lines(h)}"
            for h in runners
            if h.stack is Stack.SBSA and not h.holds_for(line)
        }
    )
    reasons = [
        f"{name} runs only Jetson (L4T) CUDA builds, not arm64-sbsa" for name in jetson
    ] + other_lines
    if not reasons:
        return f"{arch}: no Arm GPU host carries it (table: {_table(on_image)}); {fix}"
    image = f"{PLATFORM} image{_of(line)}"
    hint = " (a Jetson image needs an L4T base of its own)" if jetson else ""
    return (
        f"{arch}: no Arm GPU host runs a {image} with it ({'; '.join(reasons)}; table"
        f"{_for(line)}: {_table(on_image)}); {fix}{hint}"
    )


def _table(on_image: Sequence[ArmHost]) -> str:
    return ", ".join(host.label for host in sorted(on_image, key=lambda h: h.cc)) or "none"


def _lines(host: ArmHost) -> str:
    """The CUDA lines a row holds for, in words: 'only before CUDA 13.0'."""
    start, end = host.cuda_from, host.cuda_before
    parts = ([f"from CUDA {start[0]}.{start[1]}"] if start else []) + (
        [f"before CUDA {end[0]}.{end[1]}"] if end else []
    )
    return "carries it only " + " and ".join(parts)


def _for(line: tuple[int, int] | None) -> str:
    return f" for CUDA {line[0]}.{line[1]}" if line else ""


def _of(line: tuple[int, int] | None) -> str:
    return f" of CUDA {line[0]}.{line[1]}" if line else ""
