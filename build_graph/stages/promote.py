"""The promote stage: move the human tags and 'latest' to the verified digest, in the registry.

Done when every human tag names the digest the hash tag names, and that digest has a
passing verify report in the registry. Promote copies the manifest under each tag (no pull,
no layer moves) and refuses a digest without a passing report: nothing unverified is ever
promoted. When another runner pushed the hash tag last (racing runners), its digest is the
one promoted; verified here first if no report for it exists yet.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from build_graph.errors import BuildFailed, UntrustedAnswer
from build_graph.log import log, progress, shown
from build_graph.oci.contents import Descriptor
from build_graph.oci.digest import Digest
from build_graph.oci.index import Entry, Index, build_index
from build_graph.oci.platforms import parse_platform, stated_platform
from build_graph.oci.refs import Presence, parse_ref
from build_graph.plan.plan import PlannedTier
from build_graph.registry import api
from build_graph.registry.availability import Availability
from build_graph.stages import trust


def promoted(tier: PlannedTier, holdings: Availability) -> bool:
    """Up to date: every human tag names the hash tag's digest, which has a passing report.
    Raises RegistryError when the registry could not say (never read as 'not promoted')."""
    probe = holdings.answer(tier.image)
    if probe.presence is not Presence.PRESENT or probe.digest is None:
        return False
    if any(_tag_digest(tier, name, holdings) != probe.digest for name in tier.human_tags):
        return False
    return trust.passing_report(tier, probe.digest, holdings) is not None


def _tag_digest(
    tier: PlannedTier, name: str, holdings: Availability, fresh: bool = False
) -> Digest | None:
    """The digest a human tag names now, None when absent; an error raises."""
    ref = tier.human_ref(name)
    return (holdings.require(ref) if fresh else holdings.answer(ref)).digest


def promote(
    tier: PlannedTier, holdings: Availability, verify_first: Callable[[], object]
) -> dict[str, str]:
    """Move the human tags to the verified digest; refuses anything not verified.
    `verify_first` (the verify stage, wired in by run/tasks.py) runs when the hash tag
    names a digest nobody verified yet. Returns the digest and the tags it moved."""
    probe = holdings.require(tier.image)
    if probe.digest is None:
        raise BuildFailed(f"{tier.key}: {tier.image} is not in the registry; run push:{tier.key}")
    report = trust.passing_report(tier, probe.digest, holdings, fresh=True)
    if report is None:
        # The hash tag names a digest nobody verified: another runner pushed it after ours
        # was verified. Adopt it, verify it here, then promote it.
        log(
            f"[{tier.key}] {tier.image} names {probe.digest}, which has no passing report "
            "yet: verifying it first"
        )
        verify_first()
        report = trust.passing_report(tier, probe.digest, holdings, fresh=True)
    if report is None:
        raise BuildFailed(
            f"{tier.key}: {tier.image} ({probe.digest}) has no passing verify "
            "report; human tags stay where they were"
        )
    moving = tuple(
        t for t in tier.human_tags if _tag_digest(tier, t, holdings, fresh=True) != probe.digest
    )
    copy_manifest(tier, probe.digest, moving, holdings)
    gpu = shown(report.get("gpu", ""))
    if not gpu.startswith(("passed", "not applicable")):
        progress(f'[{tier.key}] promoted with GPU {gpu} (verify.gpu = "optional")')
    return {"digest": str(probe.digest), "tags_moved": ", ".join(moving) or "none", "gpu": gpu}


def copy_manifest(
    tier: PlannedTier, digest: Digest, tags: tuple[str, ...], holdings: Availability
) -> None:
    """Put the manifest `digest` names under each tag: the very bytes read by that digest,
    hashed here and refused unless they hash to it (api.get_manifest), so no tag
    is written before the bytes are checked; no layer moves. Raises UntrustedAnswer (a
    BuildFailed) naming the registry and both digests when the bytes or the registry's
    answer to a PUT disagree."""
    image = parse_ref(tier.image)
    if not tags:
        return
    manifest = api.get_manifest(image.at(str(digest)))
    for name in tags:
        try:
            api.put_manifest(image.at(name), manifest.body, manifest.media_type)
        finally:
            holdings.forget(f"{tier.repository}:{name}")
        log(
            f"[{tier.key}] {tier.repository}:{name} -> {digest} (manifest copied, 0 layer "
            "bytes moved)"
        )


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
    assert image.platform is not None  # planned so: images of a tier built per platform
    platform = parse_platform(image.platform)
    found = api.read_image(parse_ref(image.image).at(str(digest)))
    named, attestations = found.image, found.named.attestations_of(found.image.digest)
    assert named.config is not None  # read_image: an image manifest
    said = stated_platform(json.loads(api.get_blob(found.ref, named.config))) or "unstated-platform"
    if said != platform.text:
        raise UntrustedAnswer(
            f"{image.repository}@{named.digest} ({image.key}) is a {said} "
            f"image, not {platform.text}: no index will call it that"
        )
    entry = Entry(platform, named.digest, named.size, named.media_type)
    _ENTRIES[key] = (entry, attestations)
    return _ENTRIES[key]


def index_of(images: list[PlannedTier], digests: list[Digest]) -> Index:
    """The index of exactly these digests' images (one per platform image), entries in
    platform order, then the attestations BuildKit made about them: the same images give the
    same bytes on every runner, whatever order images.toml lists its platforms in."""
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


def index_promoted(images: list[PlannedTier], holdings: Availability) -> bool:
    """Up to date: every platform's hash tag names a digest with a passing report, and
    every human tag names the index of exactly those digests. RegistryError when the
    registry could not say."""
    digests = [holdings.answer(image.image).digest for image in images]
    known = [d for d in digests if d is not None]
    if len(known) != len(images):
        return False
    if any(
        trust.passing_report(image, digest, holdings) is None
        for image, digest in zip(images, known, strict=True)
    ):
        return False
    index = index_of(images, known)
    first = images[0]
    return all(_tag_digest(first, name, holdings) == index.digest for name in first.human_tags)


def promote_index(
    images: list[PlannedTier], holdings: Availability, verify_first: dict[str, Callable[[], object]]
) -> dict[str, str]:
    """Write the index of every platform's verified image under each human tag; refuses
    unless every platform's image has a passing report (verified here first where nobody
    verified its digest yet): one platform failing leaves every tag where it was. The index
    names exactly the digests whose reports were checked here: a hash tag that another
    runner moves meanwhile changes nothing it says."""
    first = images[0]
    digests: list[Digest] = []
    gpus: list[str] = []
    for image in images:
        probe = holdings.require(image.image)
        if probe.digest is None:
            raise BuildFailed(
                f"{image.key}: {image.image} is not in the registry; run doit {image.key}"
            )
        if trust.passing_report(image, probe.digest, holdings, fresh=True) is None:
            log(
                f"[{image.key}] {image.image} names {probe.digest}, which has no passing "
                "report yet: verifying it first"
            )
            verify_first[image.key]()
        report = trust.passing_report(image, probe.digest, holdings, fresh=True)
        if report is None:
            raise BuildFailed(
                f"{first.group_key}: {image.image} ({probe.digest}, "
                f"{image.platform}) has no passing verify report; human tags "
                "stay where they were, for every platform"
            )
        digests.append(probe.digest)
        gpus.append(shown(report.get("gpu", "")))
    index = index_of(images, digests)
    moving = tuple(
        t for t in first.human_tags if _tag_digest(first, t, holdings, fresh=True) != index.digest
    )
    target = parse_ref(first.image)
    for name in moving:
        try:
            api.put_manifest(target.at(name), index.body, index.media_type)
        finally:
            holdings.forget(first.human_ref(name))
        log(
            f"[{first.group_key}] {first.repository}:{name} -> {index.digest} (an index of "
            f"{', '.join(str(i.platform) for i in images)})"
        )
    for image, gpu in zip(images, gpus, strict=True):
        if not gpu.startswith(("passed", "not applicable")):
            progress(f'[{image.key}] promoted with GPU {gpu} (verify.gpu = "optional")')
    return {
        "digest": str(index.digest),
        "tags_moved": ", ".join(moving) or "none",
        "platforms": ", ".join(str(i.platform) for i in images),
        "gpu": "; ".join(gpus),
    }
