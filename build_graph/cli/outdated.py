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
from build_graph.gpu.releases import PARTNERS, Lookup
from build_graph.manifest import schema
from build_graph.manifest.model import Stack, major_minor
from build_graph.pypi.fetch import NotOnIndex
from build_graph.pypi.simple import project

TOOLS = ("pip", "setuptools")


def outdated(stack: Stack, manifest: schema.Manifest, index: str,
             lookup: Lookup) -> list[str]:
    """One block of lines per variant: each version, and what to edit where."""
    lines = []
    newest = {name: _newest(index, name) for name in ("torch", *TOOLS)
              if any(name in v.versions for v in stack.variants)}
    for variant in stack.variants:
        label = f"variant {variant.name}" if stack.has_variants else "versions"
        lines.append(f"{label}:")
        keys = _keys(manifest, variant.name, stack.has_variants)
        lines.extend(f"  {line}" for line in _torch(variant.versions, newest.get("torch"),
                                                    keys, lookup))
        for name in TOOLS:
            if name in variant.versions:
                lines.append(f"  {_tool(name, variant.versions[name], newest[name], keys)}")
    return lines


def _newest(index: str, name: str) -> Version | None:
    try:
        finals = [v for v in project(index, name).versions() if not v.is_prerelease]
    except NotOnIndex:
        return None
    return max(finals, default=None)


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


def _torch(versions: Mapping[str, str], newest: Version | None, keys: Mapping[str, str],
           lookup: Lookup) -> Iterator[str]:
    current = versions.get("torch")
    if current is None or newest is None:
        return
    if not _older(current, newest):
        yield f"torch {current}: up to date"
        return
    yield f"torch {current} -> {newest}: edit {keys['torch']} = \"{newest}\""
    given: dict[str, str] = {n: versions[n] for n in PARTNERS if n in versions}
    facts, unasked = lookup(str(newest), given)
    for name, version in given.items():
        right = facts.partner_for(name, str(newest))
        if right is None:
            why = f" ({unasked})" if unasked else ""
            yield f"  {name} {version}: no release accepts torch {newest} yet{why}"
        elif right.version == version:
            yield f"  {name} {version}: keep (it requires {right.describe()})"
        else:
            yield (f"  {name} {version} -> {right.version}: edit {keys[name]} = "
                   f"\"{right.version}\" (it requires {right.describe()})")
    row = facts.torch_row(str(newest))
    if "triton" in versions and row is not None and row.triton:
        yield (f"  triton {versions['triton']}: torch {newest}'s wheels require "
               f"triton{row.triton} (edit {keys['triton']})")
    cuda = versions.get("cuda")
    lines = tables.TORCH_CUDA.get(f"{newest.major}.{newest.minor}")
    if cuda is not None and lines is not None:
        if major_minor(cuda) not in lines:
            listed = ", ".join(f"{a}.{b}" for a, b in lines)
            yield f"  cuda {cuda}: torch {newest} is built for CUDA {listed} (edit {keys['cuda']})"
    elif cuda is not None and row is not None and row.cuda:
        yield (f"  cuda {cuda}: torch {newest}'s PyPI wheel is built for CUDA {row.cuda} "
               f"(edit {keys['cuda']}; the release matrix, gpu/tables.py, has no row for it yet)")


def _older(current: str, newest: Version) -> bool:
    try:
        return Version(current) < newest
    except InvalidVersion:
        return False


def manifest_of(stack: Stack) -> schema.Manifest:
    from build_graph.manifest.load import read_manifest

    return read_manifest(Path(stack.manifest))
