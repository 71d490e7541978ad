"""Semantic rules over one resolved variant: GPU coverage, CUDA archs, torch pairs.

Each rule is a function `(versions, gpu, where, report)`; add a rule by writing one and
listing it in RULES. `where(section, key)` gives the key path the user should edit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from build_graph.errors import ConfigIssue
from build_graph.gpu import tables
from build_graph.gpu.archs import (
    Coverage,
    coverage,
    parse_arch,
    parse_target,
    split_arch_list,
)
from build_graph.manifest.model import GpuSpec, major_minor


@dataclass
class Report:
    """Collects every issue and note of one manifest."""

    file: Path
    issues: list[ConfigIssue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def error(self, key: str, message: str) -> None:
        issue = ConfigIssue(self.file, key, message)
        if issue not in self.issues:
            self.issues.append(issue)

    def note(self, key: str, message: str) -> None:
        text = f"{key}: {message}"
        if text not in self.notes:
            self.notes.append(text)


Where = Callable[[str, str], str]
Rule = Callable[[Mapping[str, str], GpuSpec, Where, Report], None]


def _fmt(mm: tuple[int, int]) -> str:
    return f"{mm[0]}.{mm[1]}"


def check_arch_list(versions: Mapping[str, str], gpu: GpuSpec, where: Where,
                    report: Report) -> None:
    """Every arch parses, and the CUDA toolkit of this variant can compile it."""
    cuda = major_minor(versions.get("cuda", ""))
    for entry in gpu.arch_list:
        try:
            arch, _ = parse_arch(entry)
        except ValueError as exc:
            report.error(where("gpu", "arch_list"), str(exc))
            continue
        if cuda is None:
            continue
        compilable = tables.cuda_archs(cuda)
        if compilable is not None and str(arch) not in compilable:
            first = tables.first_cuda_with(str(arch))
            fix = (f"use CUDA >= {_fmt(first)} or drop it" if first and first > cuda
                   else "drop it (this CUDA no longer compiles it) or use an older CUDA")
            report.error(where("gpu", "arch_list"),
                         f"CUDA {versions['cuda']} cannot compile arch {arch}; {fix}")


def check_targets(versions: Mapping[str, str], gpu: GpuSpec, where: Where,
                  report: Report) -> None:
    """Each target GPU can run the build: own SASS; lower SASS or PTX only as a note."""
    try:
        sass, ptx = split_arch_list(list(gpu.arch_list), gpu.ptx)
    except ValueError:
        return  # check_arch_list reports it
    for target in gpu.targets:
        try:
            cc = parse_target(target)
        except ValueError as exc:
            report.error(where("gpu", "targets"), str(exc))
            continue
        result = coverage(sass, ptx, cc)
        label = f"target {target!r}: {result.describe(cc)}"
        match result.coverage:
            case Coverage.EXACT_SASS:
                pass
            case Coverage.LOWER_SASS | Coverage.PTX_JIT:
                report.note(where("gpu", "targets"), label)
            case Coverage.NONE:
                report.error(where("gpu", "arch_list"),
                             f"{label}; add '{cc[0]}.{cc[1]}' to gpu.arch_list")


def check_torch_cuda(versions: Mapping[str, str], gpu: GpuSpec, where: Where,
                     report: Report) -> None:
    """CUDA must be one the torch release supports (PyTorch's release matrix)."""
    torch, cuda = versions.get("torch"), major_minor(versions.get("cuda", ""))
    torch_mm = major_minor(torch or "")
    if torch is None or cuda is None or torch_mm is None:
        return
    supported = tables.TORCH_CUDA.get(_fmt(torch_mm))
    if supported is None:
        report.note(where("versions", "torch"),
                    f"torch {torch} is not in the compatibility table; CUDA pairing not checked")
        return
    listed = ", ".join(_fmt(c) for c in supported)
    if cuda < min(supported) or cuda[0] > max(supported)[0]:
        report.error(where("versions", "cuda"),
                     f"torch {torch} does not support CUDA {versions['cuda']} "
                     f"(it supports {listed}); change versions.cuda or versions.torch")
    elif cuda not in supported:
        report.note(where("versions", "cuda"),
                    f"torch {torch} has no official CUDA {_fmt(cuda)} build (those are "
                    f"{listed}); this relies on CUDA minor-version compatibility")


def check_torch_partners(versions: Mapping[str, str], gpu: GpuSpec, where: Where,
                         report: Report) -> None:
    """torchvision and torchaudio must be the releases made with this torch."""
    torch = versions.get("torch")
    if torch is None:
        return
    partners = tables.TORCH_PARTNERS.get(_release(torch))
    if partners is None:
        if versions.get("torchvision") or versions.get("torchaudio"):
            report.note(where("versions", "torch"), f"torch {torch} is not in the "
                        "compatibility table; torchvision/torchaudio pairing not checked")
        return
    for key, expected in zip(("torchvision", "torchaudio"), partners, strict=True):
        given = versions.get(key)
        if given is not None and not _same_release(given, expected):
            report.error(where("versions", key),
                         f"{key} {given} does not go with torch {torch}; use {expected} "
                         "(the release made with it)")


def _release(version: str) -> str:
    """'2.6.0+cu124' -> '2.6.0'."""
    return version.split("+", 1)[0]


def _same_release(a: str, b: str) -> bool:
    try:
        return Version(_release(a)) == Version(_release(b))
    except InvalidVersion:
        return False


RULES: tuple[Rule, ...] = (check_arch_list, check_targets, check_torch_cuda,
                           check_torch_partners)
