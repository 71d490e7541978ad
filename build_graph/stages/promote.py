"""The promote stage: move a tier's human tags to its verified images, in the registry.

A tier's platform group moves together: a tier built for the build host only is a group of
one, whose human tags get the very manifest its hash tag names (provenance kept); a tier
built per platform gets, under each human tag, an index of every platform's verified image.
Nothing is published unless every gate of the pipeline (verify, and any stage the table
marks so) passed for each image's digest: a digest nobody checked yet (another runner
pushed the hash tag last) is put through the gate here first. The index names exactly the
digests whose gates were checked here: a hash tag moved meanwhile changes nothing it says.
No layer moves: manifests are read by digest, hashed at the door, and written under tags.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from build_graph.errors import BuildFailed, UntrustedAnswer
from build_graph.log import log, progress
from build_graph.oci import json_door
from build_graph.oci.contents import Descriptor
from build_graph.oci.digest import Digest
from build_graph.oci.platforms import stated_platform
from build_graph.oci.refs import parse_ref
from build_graph.plan.plan import PlannedTier
from build_graph.registry import api
from build_graph.stages.stage import Column, Need, Stage, fact
from build_graph.stages.work import Facts, Work

if TYPE_CHECKING:  # oci/index.py is imported where a tier built per platform is promoted
    from build_graph.oci.index import Entry, Index


def gates_of(image: PlannedTier, gates: Sequence[Stage]) -> list[Stage]:
    """The gates an image has (the stages of `gates` that apply to it, each with its
    `passed`). Never none: an image no stage checks is never published."""
    found = [gate for gate in gates if gate.passed is not None and gate.applies(image)]
    if not found:
        raise BuildFailed(
            f"{image.key}: no stage of the pipeline checks this image (no gate applies); "
            "nothing unchecked is promoted"
        )
    return found


@dataclass(frozen=True)
class Published:
    """What the human tags are to name: its digest, and the bytes to write (None: copy the
    manifest the digest names)."""

    digest: Digest
    body: bytes | None = None
    media_type: str = ""


def target(images: tuple[PlannedTier, ...], digests: list[Digest]) -> Published:
    """The one decision: the hash tag's own manifest for a tier of the build host; the index
    of the platform images otherwise (pure but for reading the images by digest)."""
    if images[0].platform is None:
        return Published(digests[0])
    index = index_of(list(images), digests)
    return Published(index.digest, index.body, index.media_type)


def promoted(work: Work) -> bool:
    """Up to date: every image's hash tag names a digest every gate (`work.gates`) passed,
    and every human tag names what those digests publish. RegistryError when the registry
    could not say."""
    digests = [work.holdings.answer(image.image).digest for image in work.images]
    known = [d for d in digests if d is not None]
    if len(known) != len(work.images):
        return False
    for image, digest in zip(work.images, known, strict=True):
        if any(
            _passed(g, work.of(image), digest, False) is None for g in gates_of(image, work.gates)
        ):
            return False
    want = target(work.images, known).digest
    return all(_tag_digest(work, name) == want for name in work.tier.human_tags)


def _says(work: Work) -> str:
    tags = ", ".join(work.tier.human_tags) or "none"
    if work.tier.platform is None:
        return f"every human tag ({tags}) names the verified digest in the registry"
    platforms = ", ".join(str(i.platform) for i in work.images)
    return f"every human tag ({tags}) names the index of the verified images of {platforms}"


def _tag_digest(work: Work, name: str, fresh: bool = False) -> Digest | None:
    """The digest a human tag names now, None when absent; an error raises."""
    ref = work.tier.human_ref(name)
    return (work.holdings.require(ref) if fresh else work.holdings.answer(ref)).digest


def promote(work: Work) -> Facts:
    """Move the group's human tags to what its gated digests publish; refuses unless every
    gate (`work.gates`) passed for every image (one failing leaves every tag where it was).
    Returns the digest published, the tags moved and what the gates said."""
    first, digests, said = work.tier, [], []
    for image in work.images:
        digest, facts = _gated(work.of(image), work.gates, len(work.images) > 1)
        digests.append(digest)
        said.append(facts)
    published = target(work.images, digests)
    moving = tuple(
        t for t in first.human_tags if _tag_digest(work, t, fresh=True) != published.digest
    )
    _write_tags(work, published, moving)
    for image, facts in zip(work.images, said, strict=True):
        if facts.get("note"):
            progress(f"[{image.key}] {facts['note']}")
    out = {"digest": str(published.digest), "tags_moved": ", ".join(moving) or "none"}
    if first.platform is not None:
        out["platforms"] = ", ".join(str(i.platform) for i in work.images)
    for name in dict.fromkeys(k for facts in said for k in facts if k != "note"):
        out[name] = "; ".join(facts.get(name, "-") for facts in said)
    return out


def _passed(gate: Stage, one: Work, digest: Digest, fresh: bool) -> Facts | None:
    assert gate.passed is not None  # gates_of: the stages with a gate
    return gate.passed(one, digest, fresh)


def _gated(one: Work, gates: Sequence[Stage], group: bool) -> tuple[Digest, Facts]:
    """The digest the image's hash tag names now, once every gate passed for it (run here
    first where it has not), and what the gates said."""
    image = one.tier
    probe = one.holdings.require(image.image)
    if probe.digest is None:
        raise BuildFailed(
            f"{image.key}: {image.image} is not in the registry; run doit {image.key}"
        )
    said: Facts = {}
    for gate in gates_of(image, gates):
        facts = _passed(gate, one, probe.digest, True)
        if facts is None:
            log(
                f"[{image.key}] {image.image} names {probe.digest}, which has not passed "
                f"{gate.name} yet: running {gate.name} first"
            )
            gate.act(one)
            facts = _passed(gate, one, probe.digest, True)
        if facts is None:
            every = ", for every platform" if group else ""
            raise BuildFailed(
                f"{image.group_key}: {image.image} ({probe.digest}"
                f"{', ' + str(image.platform) if image.platform else ''}) has not passed "
                f"{gate.name}; human tags stay where they were{every}"
            )
        said |= facts
    return probe.digest, said


def _write_tags(work: Work, published: Published, tags: tuple[str, ...]) -> None:
    """Write under each tag the bytes `published` names: read by that digest and hashed
    here (api.get_manifest refuses bytes that do not hash to it), or the index made here."""
    if not tags:
        return
    first = work.tier
    target_ref = parse_ref(first.image)
    if published.body is None:
        manifest = api.get_manifest(target_ref.at(str(published.digest)))
        body, media_type = manifest.body, manifest.media_type
        what = "manifest copied, 0 layer bytes moved"
    else:
        body, media_type = published.body, published.media_type
        what = "an index of " + ", ".join(str(i.platform) for i in work.images)
    for name in tags:
        try:
            api.put_manifest(target_ref.at(name), body, media_type)
        finally:
            work.holdings.forget(first.human_ref(name))
        log(f"[{first.group_key}] {first.repository}:{name} -> {published.digest} ({what})")


# A tier built per platform: one index per human tag, of every platform's verified image.

_ENTRIES: dict[tuple[str, Digest, str | None], tuple[Entry, tuple[Descriptor, ...]]] = {}


def entry_of(image: PlannedTier, digest: Digest) -> tuple[Entry, tuple[Descriptor, ...]]:
    """One platform's index entry and the attestations about it, from what the hash tag's
    digest names (oci/contents.py, the bytes read by digest and hashed at the door): the
    image itself, or an index of exactly one image plus its attestations (what the
    containerd image store pushes). The entry's size and media type are those of the image
    manifest's bytes, never a HEAD's headers; its config must state the platform the entry
    will claim. Read once per process (a digest's bytes never change)."""
    key = (image.repository, digest, image.platform)
    if key in _ENTRIES:
        return _ENTRIES[key]
    platform = image.target
    assert platform is not None  # planned so: images of a tier built per platform
    found = api.read_image(parse_ref(image.image).at(str(digest)))
    named, attestations = found.image, found.named.attestations_of(found.image.digest)
    assert named.config is not None  # read_image: an image manifest
    said = (
        stated_platform(json_door.loads(api.get_blob(found.ref, named.config)))
        or "unstated-platform"
    )
    if said != platform.text:
        raise UntrustedAnswer(
            f"{image.repository}@{named.digest} ({image.key}) is a {said} "
            f"image, not {platform.text}: no index will call it that"
        )
    from build_graph.oci.index import Entry

    entry = Entry(platform, named.digest, named.size, named.media_type)
    _ENTRIES[key] = (entry, attestations)
    return _ENTRIES[key]


def index_of(images: list[PlannedTier], digests: list[Digest]) -> Index:
    """The index of exactly these digests' images (one per platform image), entries in
    platform order, then the attestations BuildKit made about them: the same images give the
    same bytes on every runner, whatever order images.toml lists its platforms in."""
    from build_graph.oci.index import build_index

    found = sorted(
        (entry_of(i, d) for i, d in zip(images, digests, strict=True)),
        key=lambda pair: pair[0].platform.text,
    )
    try:
        return build_index([e for e, _ in found], [a for _, about in found for a in about])
    except ValueError as exc:
        raise BuildFailed(
            f"{images[0].group_key}: no index can refer to these images: {exc}"
        ) from None


STAGE = Stage(
    "promote",
    "move the human tags and 'latest' to the verified digest",
    act=promote,
    needs=(Need("promote", of="parent"),),
    per="tier",
    after_gates=True,
    done=promoted,
    says=_says,
    columns=(Column("digest", fact("digest")), Column("tags moved", fact("tags_moved"))),
)
