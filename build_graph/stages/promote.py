"""The promote stage: move the human tags and 'latest' to the verified digest, in the registry.

Done when every human tag names the digest the hash tag names, and that digest has a
passing verify report in the registry. Promote copies the manifest under each tag (no pull,
no layer moves) and refuses a digest without a passing report: nothing unverified is ever
promoted. When another runner pushed the hash tag last (racing runners), its digest is the
one promoted; verified here first if no report for it exists yet.
"""

from __future__ import annotations

from build_graph.errors import BuildFailed, RegistryError
from build_graph.log import log, progress
from build_graph.plan.plan import PlannedTier
from build_graph.registry import api as registry_http
from build_graph.registry import reports
from build_graph.registry.availability import Availability
from build_graph.registry.refs import Presence, parse_ref
from build_graph.stages import verify as verify_stage
from build_graph.verify.expectation import Expectation


def promoted(tier: PlannedTier, want: Expectation, seen: Availability) -> bool:
    """Up to date: every human tag names the hash tag's digest, which has a passing report."""
    probe = seen.registry(tier.image)
    if probe.presence is not Presence.PRESENT or probe.digest is None:
        return False
    if not all(seen.registry(f"{tier.repository}:{t}").digest == probe.digest
               for t in tier.human_tags):
        return False
    return reports.find(tier, want, probe.digest, seen) is not None


def promote(tier: PlannedTier, want: Expectation, seen: Availability) -> None:
    """Move the human tags to the verified digest; refuses anything not verified."""
    probe = seen.require(tier.image)
    if probe.digest is None:
        raise BuildFailed(f"{tier.key}: {tier.image} is not in the registry; run "
                          f"push:{tier.key}")
    report = reports.find(tier, want, probe.digest, seen, fresh=True)
    if report is None:
        # The hash tag names a digest nobody verified: another runner pushed it after ours
        # was verified. Adopt it, verify it here, then promote it.
        log(f"[{tier.key}] {tier.image} names {probe.digest}, which has no passing report "
            "yet: verifying it first")
        verify_stage.verify(tier, want, seen)
        report = reports.find(tier, want, probe.digest, seen, fresh=True)
    if report is None:
        raise BuildFailed(f"{tier.key}: {tier.image} ({probe.digest}) has no passing verify "
                          "report; human tags stay where they were")
    moving = tuple(t for t in tier.human_tags
                   if seen.registry(f"{tier.repository}:{t}").digest != probe.digest)
    copy_manifest(tier, probe.digest, moving, seen)
    gpu = str(report.get("gpu", ""))
    if not gpu.startswith(("passed", "not applicable")):
        progress(f"[{tier.key}] promoted with GPU {gpu} (verify.gpu = \"optional\")")


def copy_manifest(tier: PlannedTier, digest: str, tags: tuple[str, ...],
                  seen: Availability) -> None:
    """Put the manifest `digest` names under each tag: the same bytes, so the same digest;
    no layer moves."""
    image = parse_ref(tier.image)
    body, media_type, got = registry_http.get_manifest(image.at(digest))
    if got != digest:
        raise RegistryError(f"{tier.repository}@{digest} read back as {got}")
    for name in tags:
        written = registry_http.put_manifest(image.at(name), body, media_type)
        seen.forget(f"{tier.repository}:{name}")
        if written != digest:
            raise RegistryError(f"{tier.repository}:{name} was stored as {written}, not "
                                f"{digest}; check the registry")
        log(f"[{tier.key}] {tier.repository}:{name} -> {digest} (manifest copied, 0 layer "
            "bytes moved)")
