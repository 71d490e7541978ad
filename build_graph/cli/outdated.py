"""`python -m build_graph outdated`: what newer torch (with its partners), pip and setuptools
the index has for the stack's versions, and the images.toml edit that would take each.

Read-only and advisory: exit 0 whatever it finds (exit 3 only when the index cannot be
read at all). torch's partners come from the same facts `check` uses (the shipped
torch_releases.json, plus what the index says about newer releases), so the edit it
proposes passes `check`. Image tags of `from` repositories are not looked at.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from packaging.version import InvalidVersion, Version

from build_graph.gpu import tables
from build_graph.gpu.releases import PARTNERS, Lookup, TorchRow
from build_graph.manifest import schema
from build_graph.manifest.model import Stack, major_minor
from build_graph.pypi.fetch import NotOnIndex
from build_graph.pypi.simple import project

TOOLS = ("pip", "setuptools")
_CANDIDATES = 4  # newer torch releases tried, newest first, for one whose partners exist


def outdated(stack: Stack, manifest: schema.Manifest, index: str,
             lookup: Lookup) -> list[str]:
    """One block of lines per variant: each version, and what to edit where."""
    lines = []
    wanted = [n for n in ("torch", *TOOLS) if any(n in v.versions for v in stack.variants)]
    found = {name: _releases(index, name) for name in wanted}
    for variant in stack.variants:
        label = f"variant {variant.name}" if stack.has_variants else "versions"
        lines.append(f"{label}:")
        keys = _keys(manifest, variant.name, stack.has_variants)
        lines.extend(f"  {line}" for line in _torch(variant.versions, found.get("torch", []),
                                                    keys, lookup))
        for name in TOOLS:
            if name in variant.versions:
                newest = found[name][0] if found[name] else None
                lines.append(f"  {_tool(name, variant.versions[name], newest, keys)}")
    return lines


def _releases(index: str, name: str) -> list[Version]:
    """The project's final releases on the index, newest first ([] when it is not there)."""
    try:
        finals = [v for v in project(index, name).versions() if not v.is_prerelease]
    except NotOnIndex:
        return []
    return sorted(finals, reverse=True)


def _keys(manifest: schema.Manifest, variant: str, has_variants: bool) -> dict[str, str]:
    """version name -> the key to edit for this variant (its own override, or the base)."""
    own = manifest.variants[variant].versions if has_variants else {}
    return {name: f"variants.{variant}.versions.{name}" if name in own
            else f"versions.{name}" for name in ("torch", *PARTNERS, *TOOLS, "triton", "cuda")}


def _tool(name: str, current: str, newest: Version | None, keys: Mapping[str, str]) -> str:
    if newest is None:
        return f"{name} {current}: not on the index"
    if _older(current, newest):
        return f"{name} {current} -> {newest}: edit {keys[name]} = \"{newest}\""
    return f"{name} {current}: up to date"


def _torch(versions: Mapping[str, str], releases: list[Version], keys: Mapping[str, str],
           lookup: Lookup) -> Iterator[str]:
    """The newest torch whose partners (those the variant names) are published, and the
    edits that take it; a newer torch still waiting for a partner is said, not proposed."""
    current = versions.get("torch")
    if current is None or not releases:
        return
    newer = [v for v in releases if _older(current, v)]
    if not newer:
        yield f"torch {current}: up to date"
        return
    given: dict[str, str] = {n: versions[n] for n in PARTNERS if n in versions}
    for candidate in newer[:_CANDIDATES]:
        facts, unasked = lookup(str(candidate), given)
        missing = [n for n in given if facts.partner_for(n, str(candidate)) is None]
        if not missing:
            break
        why = f" ({unasked})" if unasked else ""
        yield (f"torch {candidate}: not yet, no {' or '.join(missing)} release that goes "
               f"with it is published{why}")
    else:
        yield f"torch {current}: up to date (the newest whose {' and '.join(given)} exist)"
        return
    yield f"torch {current} -> {candidate}: edit {keys['torch']} = \"{candidate}\""
    for name, version in given.items():
        right = facts.partner_for(name, str(candidate))
        assert right is not None
        if right.version == version:
            yield f"  {name} {version}: keep (it requires {right.describe()})"
        else:
            yield (f"  {name} {version} -> {right.version}: edit {keys[name]} = "
                   f"\"{right.version}\" (it requires {right.describe()})")
    yield from _torch_needs(versions, candidate, facts.torch_row(str(candidate)), keys)


def _torch_needs(versions: Mapping[str, str], torch: Version, row: TorchRow | None,
                 keys: Mapping[str, str]) -> Iterator[str]:
    """The triton and CUDA that torch release needs, where the variant names them."""
    if "triton" in versions and row is not None and row.triton:
        yield (f"  triton {versions['triton']}: torch {torch}'s wheels require "
               f"triton{row.triton} (edit {keys['triton']})")
    cuda = versions.get("cuda")
    lines = tables.TORCH_CUDA.get(f"{torch.major}.{torch.minor}")
    if cuda is not None and lines is not None:
        if major_minor(cuda) not in lines:
            listed = ", ".join(f"{a}.{b}" for a, b in lines)
            yield f"  cuda {cuda}: torch {torch} is built for CUDA {listed} (edit {keys['cuda']})"
    elif cuda is not None and row is not None and row.cuda:
        yield (f"  cuda {cuda}: torch {torch}'s PyPI wheel is built for CUDA {row.cuda} "
               f"(edit {keys['cuda']}; the release matrix, gpu/tables.py, has no row for it yet)")


def _older(current: str, newest: Version) -> bool:
    try:
        return Version(current) < newest
    except InvalidVersion:
        return False


def manifest_of(stack: Stack) -> schema.Manifest:
    from build_graph.manifest.load import read_manifest

    return read_manifest(Path(stack.manifest))
