"""`outdated`'s `from` lines: newer tags of each `from` image's repository, of the same shape
as its tag (oci/tags.py), and the images.toml edit that takes the newest.

The digits a {field} put into a tag are proposed as that version's edit; a tag written out
in full is only said to have newer tags. A registry that cannot be asked is one line for
its image, never a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from build_graph.errors import RegistryError, UntrustedAnswer
from build_graph.log import log, shown
from build_graph.manifest.model import VariantSpec
from build_graph.oci.digest import maybe_digest
from build_graph.oci.refs import Ref, parse_ref
from build_graph.oci.tags import Newer, filled, newer_tags, newer_values, shape_of

if TYPE_CHECKING:  # pydantic: only where images.toml is read, not for `--help`
    from build_graph.manifest import schema

_SHOWN = 3  # newer tags named for a tag written out in full
Ask = Callable[[Ref], tuple[str, ...]]  # its tags; RegistryError, UntrustedAnswer


def tags_once(ask: Ask, ref: Ref, asked: dict[str, tuple[str, ...] | str]) -> tuple[str, ...] | str:
    """The repository's tags, or why they could not be had (asked once per repository)."""
    where = f"{ref.host}/{ref.repository}"
    if where not in asked:
        try:
            asked[where] = ask(ref)
        except (RegistryError, UntrustedAnswer) as exc:
            asked[where] = str(exc)
    return asked[where]


def from_lines(
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
