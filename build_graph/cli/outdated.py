"""`python -m build_graph outdated`: what newer torch (with its partners), pip and setuptools
the index has for the stack's versions, what newer tags the `from` images' repositories
have, and the images.toml edit that would take each.

Read-only and advisory: exit 0 whatever it finds (exit 3 only when the index cannot be
read at all; a registry that cannot be asked is one line for its image). torch's partners
come from the same facts `check` uses (the shipped torch_releases.json, plus what the index
says about newer releases), so the edit it proposes passes `check`. A `from` tag is compared
with the registry's tags of the same shape (oci/tags.py): the digits a {field} put there are
proposed as that version's edit; a tag written out in full is only said to have newer tags.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from packaging.version import InvalidVersion, Version

from build_graph.errors import NotOnIndex, RegistryError, UntrustedAnswer
from build_graph.gpu import releases, tables
from build_graph.gpu.releases import PARTNERS, Lookup, TorchRow
from build_graph.log import log, shown
from build_graph.manifest import schema
from build_graph.manifest.model import Stack, VariantSpec, major_minor
from build_graph.oci.digest import maybe_digest
from build_graph.oci.refs import Ref, parse_ref
from build_graph.oci.tags import Newer, filled, newer_tags, newer_values, shape_of
from build_graph.pypi.simple import project

TOOLS = ("pip", "setuptools")
_CANDIDATES = 4  # newer torch releases tried, newest first, for one whose partners exist
_SHOWN = 3  # newer tags named for a tag written out in full
Ask = Callable[[Ref], tuple[str, ...]]  # its tags; RegistryError, UntrustedAnswer


def outdated(
    stack: Stack, manifest: schema.Manifest, index: str, lookup: Lookup, ask: Ask | None = None
) -> list[str]:
    """One block of lines per variant: each version, and what to edit where. With `ask`,
    each `from` image's repository is asked for its tags (once per repository)."""
    lines = []
    asked: dict[str, tuple[str, ...] | str] = {}
    wanted = [n for n in ("torch", *TOOLS) if any(n in v.versions for v in stack.variants)]
    found = {name: _releases(index, name) for name in wanted}
    for variant in stack.variants:
        label = f"variant {variant.name}" if stack.has_variants else "versions"
        lines.append(f"{label}:")
        keys = _keys(manifest, variant, stack.has_variants)
        lines.extend(
            f"  {line}" for line in _torch(variant.versions, found.get("torch", []), keys, lookup)
        )
        for name in TOOLS:
            if name in variant.versions:
                newest = found[name][0] if found[name] else None
                lines.append(f"  {_tool(name, variant.versions[name], newest, keys)}")
        if ask is not None:
            lines.extend(
                f"  {line}"
                for line in _from_lines(manifest, variant, keys, lambda ref: _tags(ask, ref, asked))
            )
    return lines


def _releases(index: str, name: str) -> list[Version]:
    """The project's final releases on the index, newest first ([] when it is not there)."""
    try:
        finals = [v for v in project(index, name).versions() if not v.is_prerelease]
    except NotOnIndex:
        return []
    return sorted(finals, reverse=True)


def _keys(manifest: schema.Manifest, variant: VariantSpec, has_variants: bool) -> dict[str, str]:
    """version name -> the key to edit for this variant (its own override, or the base)."""
    own = manifest.variants[variant.name].versions if has_variants else {}
    written = {k for k, v in manifest.versions.model_dump().items() if v is not None} | set(own)
    # A triton the file leaves out follows torch (manifest/resolve.follow_torch): no key.
    names = [
        n
        for n in ("torch", *PARTNERS, *TOOLS, "triton", "cuda", *variant.versions)
        if n != "triton" or n in written
    ]
    return {
        name: f"variants.{variant.name}.versions.{name}" if name in own else f"versions.{name}"
        for name in names
    }


def _tool(name: str, current: str, newest: Version | None, keys: Mapping[str, str]) -> str:
    if newest is None:
        return f"{name} {current}: not on the index"
    if _older(current, newest):
        return f'{name} {current} -> {newest}: edit {keys[name]} = "{newest}"'
    return f"{name} {current}: up to date"


def _torch(
    versions: Mapping[str, str], releases: list[Version], keys: Mapping[str, str], lookup: Lookup
) -> Iterator[str]:
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
        yield (
            f"torch {candidate}: not yet, no {' or '.join(missing)} release that goes "
            f"with it is published{why}"
        )
    else:
        yield f"torch {current}: up to date (the newest whose {' and '.join(given)} exist)"
        return
    yield f'torch {current} -> {candidate}: edit {keys["torch"]} = "{candidate}"'
    for name, version in given.items():
        right = facts.partner_for(name, str(candidate))
        assert right is not None
        if right.version == version:
            yield f"  {name} {version}: keep (it requires {right.describe()})"
        else:
            yield (
                f"  {name} {version} -> {right.version}: edit {keys[name]} = "
                f'"{right.version}" (it requires {right.describe()})'
            )
    yield from _torch_needs(versions, candidate, facts.torch_row(str(candidate)), keys)


def _torch_needs(
    versions: Mapping[str, str], torch: Version, row: TorchRow | None, keys: Mapping[str, str]
) -> Iterator[str]:
    """The triton and CUDA that torch release needs, where the variant names them."""
    if "triton" in keys and row is not None and row.triton:
        named = releases.named_version(row.triton)
        edit = f'edit {keys["triton"]} = "{named}"' if named else f"edit {keys['triton']}"
        if named != versions["triton"]:
            yield (
                f"  triton {versions['triton']}: torch {torch}'s wheels require "
                f"triton{row.triton} ({edit})"
            )
    cuda = versions.get("cuda")
    lines = tables.TORCH_CUDA.get(f"{torch.major}.{torch.minor}")
    if cuda is not None and lines is not None:
        if major_minor(cuda) not in lines:
            listed = ", ".join(f"{a}.{b}" for a, b in lines)
            yield f"  cuda {cuda}: torch {torch} is built for CUDA {listed} (edit {keys['cuda']})"
    elif cuda is not None and row is not None and row.cuda:
        yield (
            f"  cuda {cuda}: torch {torch}'s PyPI wheel is built for CUDA {row.cuda} "
            f"(edit {keys['cuda']}; the release matrix, gpu/tables.py, has no row for it yet)"
        )


def _older(current: str, newest: Version) -> bool:
    try:
        return Version(current) < newest
    except InvalidVersion:
        return False


def _tags(ask: Ask, ref: Ref, asked: dict[str, tuple[str, ...] | str]) -> tuple[str, ...] | str:
    """The repository's tags, or why they could not be had (asked once per repository)."""
    where = f"{ref.host}/{ref.repository}"
    if where not in asked:
        try:
            asked[where] = ask(ref)
        except (RegistryError, UntrustedAnswer) as exc:
            asked[where] = str(exc)
    return asked[where]


def _from_lines(
    manifest: schema.Manifest,
    variant: VariantSpec,
    keys: Mapping[str, str],
    tags: Callable[[Ref], tuple[str, ...] | str],
) -> Iterator[str]:
    """A line (or two) per `from` image of the variant: newer tags of its shape."""
    seen = set()
    for tier in manifest.tiers.values():
        if tier.from_ is None:
            continue
        image, owners = filled(tier.from_, variant.fields)
        if image not in seen:
            seen.add(image)
            yield from _from(image, owners, variant.versions, keys, tags)


def _from(
    image: str,
    owners: tuple[str | None, ...],
    versions: Mapping[str, str],
    keys: Mapping[str, str],
    tags: Callable[[Ref], tuple[str, ...] | str],
) -> Iterator[str]:
    head = f"from {image}"
    ref = parse_ref(image)
    if maybe_digest(ref.reference) or not image.endswith(f":{ref.reference}"):
        yield f"{head}: names no tag to compare"
        return
    shape = shape_of(ref.reference, owners[len(image) - len(ref.reference) :], versions)
    if not shape.runs:
        yield f"{head}: its tag has no version number to compare"
        return
    listed = tags(ref)
    if isinstance(listed, str) or not listed:
        yield (
            f"{head}: could not ask: {shown(listed, 400)}"
            if listed
            else f"{head}: its registry lists no tags of {ref.repository}"
        )
        return
    if not shape.fields:
        newer = newer_tags(shape, listed)
        more = f" and {len(newer) - _SHOWN} more" if len(newer) > _SHOWN else ""
        yield (
            f"{head}: newer tags exist: {', '.join(shown(t) for t in newer[:_SHOWN])}{more}"
            if newer
            else f"{head}: up to date (no newer tag of its shape)"
        )
        return
    proposed = [
        line
        for field in shape.fields
        for line in _edits(
            head, field, versions[field], keys, newer_values(shape, field, versions[field], listed)
        )
    ]
    yield from proposed or [f"{head}: up to date (no newer tag of its shape)"]


def _edits(
    head: str, field: str, value: str, keys: Mapping[str, str], found: list[Newer]
) -> list[str]:
    """The newest tag's edit of `field`, and the newest of the same major when another."""
    major = value.split(".")[0]
    same = next((n for n in found if str(n.value).split(".")[0] == major), None)
    picks = [
        (n, note)
        for n, note in ((found[0] if found else None, ""), (same, f" (the newest {major}.x)"))
        if n is not None
    ]
    if len(picks) == 2 and picks[0][0] == picks[1][0]:
        picks.pop()
    return [
        f'{head} -> {shown(n.tag)}: edit {keys[field]} = "{shown(n.value)}"{note}'
        for n, note in picks
    ]


def registry_tags(ref: Ref) -> tuple[str, ...]:
    """The tags `ref`'s registry lists for its repository (registry/tags.py's bounds)."""
    from build_graph.registry.tags import read_tags

    listed = read_tags(ref)
    if listed.malformed:
        log(
            f"{ref.host}/{ref.repository}: {listed.malformed} listed tag(s) that are not "
            "tags left out"
        )
    return listed.tags


def manifest_of(stack: Stack) -> schema.Manifest:
    from build_graph.manifest.load import read_manifest

    return read_manifest(Path(stack.manifest))
