"""Semantic rules over one resolved variant: GPU coverage, CUDA archs, torch partners.

Each rule is a function `(versions, gpu, where, report)`; add a rule by writing one and
listing it in RULES. `where(section, key)` gives the key path the user should edit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import SpecifierSet
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
from build_graph.gpu.releases import (
    PARTNERS,
    Facts,
    Lookup,
    named_version,
    shipped,
    shipped_only,
)
from build_graph.manifest.model import GpuSpec, major_minor


@dataclass
class Report:
    """Collects every issue and note of one manifest."""

    file: Path
    lookup: Lookup = shipped_only  # where torch pairings come from (gpu/releases.py)
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


def check_arch_list(
    versions: Mapping[str, str], gpu: GpuSpec, where: Where, report: Report
) -> None:
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
            fix = (
                f"use CUDA >= {_fmt(first)} or drop it"
                if first and first > cuda
                else "drop it (this CUDA no longer compiles it) or use an older CUDA"
            )
            report.error(
                where("gpu", "arch_list"),
                f"CUDA {versions['cuda']} cannot compile arch {arch}; {fix}",
            )


def check_targets(versions: Mapping[str, str], gpu: GpuSpec, where: Where, report: Report) -> None:
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
                report.error(
                    where("gpu", "arch_list"), f"{label}; add '{cc[0]}.{cc[1]}' to gpu.arch_list"
                )


def check_torch_cuda(
    versions: Mapping[str, str], gpu: GpuSpec, where: Where, report: Report
) -> None:
    """CUDA must be one the torch release supports (PyTorch's release matrix)."""
    torch, cuda = versions.get("torch"), major_minor(versions.get("cuda", ""))
    torch_mm = major_minor(torch or "")
    if torch is None or cuda is None or torch_mm is None:
        return
    supported = tables.TORCH_CUDA.get(_fmt(torch_mm))
    if supported is None:
        row = shipped().torch_row(torch) if _final(torch) else None
        pypi = f" (its PyPI wheel is built for CUDA {row.cuda})" if row and row.cuda else ""
        report.note(
            where("versions", "torch"),
            f"torch {torch} is not in the release matrix "
            f"(gpu/tables.py TORCH_CUDA){pypi}; CUDA pairing not checked",
        )
        return
    listed = ", ".join(_fmt(c) for c in supported)
    if cuda < min(supported) or cuda[0] > max(supported)[0]:
        report.error(
            where("versions", "cuda"),
            f"torch {torch} does not support CUDA {versions['cuda']} "
            f"(it supports {listed}); change versions.cuda or versions.torch",
        )
    elif cuda not in supported:
        report.note(
            where("versions", "cuda"),
            f"torch {torch} has no official CUDA {_fmt(cuda)} build (those are "
            f"{listed}); this relies on CUDA minor-version compatibility",
        )


def check_torch_partners(
    versions: Mapping[str, str], gpu: GpuSpec, where: Where, report: Report
) -> None:
    """torchvision and torchaudio must be releases whose wheels accept this torch, as their
    METADATA says (gpu/releases.py: shipped, or asked of the index by `check`)."""
    torch = versions.get("torch")
    if torch is None or not _final(torch):
        return  # a pre-release or a from-source build's own version: nothing to look up
    given: dict[str, str] = {n: versions[n] for n in PARTNERS if versions.get(n)}
    facts, unasked = report.lookup(torch, given)
    suffix = f" ({unasked})" if unasked else ""
    if facts.is_published("torch", torch) is False:
        newest = max(facts.published["torch"]) if facts.published else None
        report.error(
            where("versions", "torch"),
            f"torch {torch} is not published on "
            f"{facts.index}" + (f"; the newest release there is {newest}" if newest else ""),
        )
        return
    if facts.torch_row(torch) is None and facts.published is None:
        report.note(
            where("versions", "torch"),
            f"torch {torch} is not in the shipped "
            f"compatibility data{suffix}; its partners are checked only as far as "
            "that data goes",
        )
    for name, version in given.items():
        problem = _partner_problem(facts, name, version, torch)
        if problem is None:
            continue
        if problem:
            report.error(
                where("versions", name),
                f"{name} {version} does not go with torch "
                f"{torch}: {problem}; use {_suggestion(facts, name, torch)}",
            )
        else:
            report.note(
                where("versions", name),
                f"{name} {version} is not in the shipped "
                f"compatibility data{suffix}; its pairing with torch {torch} is not "
                "checked",
            )


def check_torch_triton(
    versions: Mapping[str, str], gpu: GpuSpec, where: Where, report: Report
) -> None:
    """triton (torch.compile's GPU backend) must be one torch's own wheels accept."""
    torch, triton = versions.get("torch"), versions.get("triton")
    if torch is None or triton is None or not _final(torch):
        return
    row = report.lookup(torch, {})[0].torch_row(torch)
    if row is None or row.triton is None:
        return
    try:
        accepted = SpecifierSet(row.triton).contains(triton, prereleases=True)
    except InvalidVersion:
        accepted = False
    if not accepted:
        named = named_version(row.triton)
        use = named if named else f"a release in {row.triton}"
        report.error(
            where("versions", "triton"),
            f"torch {torch}'s wheels require triton"
            f"{row.triton}, not {triton}; use {use} ({row.source})",
        )


def _partner_problem(facts: Facts, name: str, version: str, torch: str) -> str | None:
    """Why `name` `version` cannot go with `torch`; None if it can; "" if unknown."""
    if not _final(version):
        return ""
    row, right = facts.partner(name, version), facts.partner_for(name, torch)
    if row is not None:
        return None if row.admits(torch) else f"its wheels require {row.describe()}"
    if facts.is_published(name, version) is False:
        return f"it is not published on {facts.index}"
    known = sorted((r for r in facts.partners if r.name == name), key=lambda r: Version(r.version))
    if (
        facts.published is None
        and known
        and Version(known[0].version) < Version(version) < Version(known[-1].version)
    ):
        return (
            f"it is not published on {facts.index} (the shipped data, read "
            f"{known[-1].read}, holds every release from {known[0].version} to "
            f"{known[-1].version})"
        )
    if right is not None and right.pins() is not None:
        return "it is not known to accept it"
    return ""


def _suggestion(facts: Facts, name: str, torch: str) -> str:
    right = facts.partner_for(name, torch)
    if right is not None and right.pins() is not None:
        return f"{right.version} (the release made with it: its wheels require torch=={torch})"
    newest = facts.newest(name)
    if right is not None:
        return (
            f"{right.version} (its wheels require {right.describe()}; no {name} release "
            f"pins torch {torch})"
        )
    return (
        f"another torch: no {name} release on {facts.index} accepts torch {torch}"
        + (f" (the newest, {newest.version}, requires {newest.describe()})" if newest else "")
        + f", or drop versions.{name}"
    )


def _final(version: str) -> bool:
    """A final release ('2.6.0', '2.6.0+cu124'): the only kind the index data holds."""
    try:
        return not Version(version).is_prerelease
    except InvalidVersion:
        return False


RULES: tuple[Rule, ...] = (
    check_arch_list,
    check_targets,
    check_torch_cuda,
    check_torch_partners,
    check_torch_triton,
)
