"""The promote stage: move the human tags and 'latest' to the verified digest, in the registry.

Done when every human tag names the digest the hash tag names, and that digest has a
passing verify report in the registry. Promote copies the manifest under each tag (no pull,
no layer moves) and refuses a digest without a passing report: nothing unverified is ever
promoted. When another runner pushed the hash tag last (racing runners), its digest is the
one promoted; verified here first if no report for it exists yet.
"""

from __future__ import annotations

from collections.abc import Callable

from build_graph.errors import BuildFailed
from build_graph.log import log, progress, shown
from build_graph.oci.digest import Digest
from build_graph.oci.index import Entry, Index, build_index
from build_graph.oci.platforms import parse_platform
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


def _tag_digest(tier: PlannedTier, name: str, holdings: Availability,
                fresh: bool = False) -> Digest | None:
    """The digest a human tag names now, None when absent; an error raises."""
    ref = tier.human_ref(name)
    return (holdings.require(ref) if fresh else holdings.answer(ref)).digest


def promote(tier: PlannedTier, holdings: Availability,
            verify_first: Callable[[], object]) -> dict[str, str]:
    """Move the human tags to the verified digest; refuses anything not verified.
    `verify_first` (the verify stage, wired in by run/tasks.py) runs when the hash tag
    names a digest nobody verified yet. Returns the digest and the tags it moved."""
    probe = holdings.require(tier.image)
    if probe.digest is None:
        raise BuildFailed(f"{tier.key}: {tier.image} is not in the registry; run "
                          f"push:{tier.key}")
    report = trust.passing_report(tier, probe.digest, holdings, fresh=True)
    if report is None:
        # The hash tag names a digest nobody verified: another runner pushed it after ours
        # was verified. Adopt it, verify it here, then promote it.
        log(f"[{tier.key}] {tier.image} names {probe.digest}, which has no passing report "
            "yet: verifying it first")
        verify_first()
        report = trust.passing_report(tier, probe.digest, holdings, fresh=True)
    if report is None:
        raise BuildFailed(f"{tier.key}: {tier.image} ({probe.digest}) has no passing verify "
                          "report; human tags stay where they were")
    moving = tuple(t for t in tier.human_tags
                   if _tag_digest(tier, t, holdings, fresh=True) != probe.digest)
    copy_manifest(tier, probe.digest, moving, holdings)
    gpu = shown(report.get("gpu", ""))
    if not gpu.startswith(("passed", "not applicable")):
        progress(f"[{tier.key}] promoted with GPU {gpu} (verify.gpu = \"optional\")")
    return {"digest": str(probe.digest), "tags_moved": ", ".join(moving) or "none",
            "gpu": gpu}


def copy_manifest(tier: PlannedTier, digest: Digest, tags: tuple[str, ...],
                  holdings: Availability) -> None:
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
        log(f"[{tier.key}] {tier.repository}:{name} -> {digest} (manifest copied, 0 layer "
            "bytes moved)")


# A tier built per platform: one index per human tag, of every platform's verified image.


def index_of(images: list[PlannedTier], holdings: Availability,
             fresh: bool = False) -> Index | None:
    """The index the human tags should name: each platform's hash-tag digest, as the
    registry answered this run; None while a platform's image is not in the registry."""
    entries = []
    for image in images:
        probe = holdings.require(image.image) if fresh else holdings.answer(image.image)
        if probe.digest is None or probe.size is None or probe.media_type is None:
            return None
        assert image.platform is not None  # planned so: images of a tier built per platform
        entries.append(Entry(parse_platform(image.platform), probe.digest, probe.size,
                             probe.media_type))
    try:
        return build_index(entries)
    except ValueError as exc:
        raise BuildFailed(f"{images[0].group_key}: no index can refer to these images: {exc}"
                          ) from None


def index_promoted(images: list[PlannedTier], holdings: Availability) -> bool:
    """Up to date: every platform's image has a passing report, and every human tag names
    the index of exactly those images. RegistryError when the registry could not say."""
    index = index_of(images, holdings)
    first = images[0]
    if index is None or any(_tag_digest(first, name, holdings) != index.digest
                            for name in first.human_tags):
        return False
    return all(trust.passing_report(image, entry_digest, holdings) is not None
               for image, entry_digest in zip(images, _digests(images, holdings), strict=True))


def _digests(images: list[PlannedTier], holdings: Availability) -> list[Digest]:
    return [d for d in (holdings.answer(image.image).digest for image in images) if d]


def promote_index(images: list[PlannedTier], holdings: Availability,
                  verify_first: dict[str, Callable[[], object]]) -> dict[str, str]:
    """Write the index of every platform's verified image under each human tag; refuses
    unless every platform's image has a passing report (verified here first where nobody
    verified its digest yet): one platform failing leaves every tag where it was."""
    first = images[0]
    for image in images:
        probe = holdings.require(image.image)
        if probe.digest is None:
            raise BuildFailed(f"{image.key}: {image.image} is not in the registry; run "
                              f"push:{image.key}")
        if trust.passing_report(image, probe.digest, holdings, fresh=True) is None:
            log(f"[{image.key}] {image.image} names {probe.digest}, which has no passing "
                "report yet: verifying it first")
            verify_first[image.key]()
        if trust.passing_report(image, probe.digest, holdings, fresh=True) is None:
            raise BuildFailed(f"{first.group_key}: {image.image} ({probe.digest}, "
                              f"{image.platform}) has no passing verify report; human tags "
                              "stay where they were, for every platform")
    index = index_of(images, holdings, fresh=True)
    if index is None:
        raise BuildFailed(f"{first.group_key}: the registry no longer names every "
                          "platform's image; run the pushes again")
    moving = tuple(t for t in first.human_tags
                   if _tag_digest(first, t, holdings, fresh=True) != index.digest)
    target = parse_ref(first.image)
    for name in moving:
        try:
            api.put_manifest(target.at(name), index.body, index.media_type)
        finally:
            holdings.forget(first.human_ref(name))
        log(f"[{first.group_key}] {first.repository}:{name} -> {index.digest} (an index of "
            f"{', '.join(str(i.platform) for i in images)})")
    return {"digest": str(index.digest), "tags_moved": ", ".join(moving) or "none",
            "platforms": ", ".join(str(i.platform) for i in images)}
