"""The verify stage's action: probe the pushed image, decide, then publish the SBOM and
the report (its row, up-to-date check and gate: stages/verify.py). The report goes to the
registry, bound to the digest, pass or fail, and a copy to the tier's verify.json; the
image's SBOM (stages/sbom.py) goes beside it.
"""

from __future__ import annotations

from build_graph.errors import BuildFailed
from build_graph.log import log, progress
from build_graph.oci.digest import Digest
from build_graph.oci.referrers import Referrer
from build_graph.oci.refs import Answer
from build_graph.plan.plan import PlannedTier
from build_graph.signing import policy
from build_graph.stages import sbom, trust, verify_probe
from build_graph.stages.verify_verdict import decide
from build_graph.stages.work import Facts, Work


def verify(work: Work) -> Facts:
    """Answer the digest the hash tag names; store the report in the registry either way;
    raise unless it passed. A passing report another runner stored meanwhile is adopted.
    Returns what the report says: its summary and the GPU's status."""
    tier, holdings = work.tier, work.holdings
    image = holdings.require(tier.image)
    digest = image.digest
    if digest is None:
        raise BuildFailed(f"{tier.key}: {tier.image} is not in the registry; run push:{tier.key}")
    stored = trust.passing_report(tier, digest, holdings, fresh=True)
    if stored is not None:
        log(f"[{tier.key}] the registry already holds a passing report for {digest}")
        return {"verify": "passed (a report another runner stored)", "gpu": str(stored.gpu)}
    policy.ready(tier.signing)  # no key where one is required: said before any probe runs
    probed = verify_probe.probe(tier, digest)
    verdict = decide(tier, digest, probed)
    # The SBOM first: the report is what marks verify done, so a run stopped between the
    # two leaves a digest to verify again, never a verified one without its SBOM. Both are
    # added to the image's referrers tag together, after the report (one round, not two).
    unlisted: list[Referrer] = []
    publish_sbom(tier, image, digest, probed.inventory, unlisted)
    trust.store(tier).publish(image, verdict.report, holdings, unlisted)
    if verdict.failure is not None:
        raise BuildFailed(verdict.failure)
    progress(verdict.said)
    log(verdict.lines)
    return verdict.facts


def publish_sbom(
    tier: PlannedTier,
    image: Answer,
    digest: Digest,
    inventory: object,
    unlisted: list[Referrer] | None = None,
) -> None:
    """The image's SBOM to the registry; an inventory the probe could not take is said,
    not fatal: the image's promises were checked all the same."""
    lock = tier.python
    named = (
        f"{lock.path.parent.name}/{lock.path.name} sha256:{lock.lock.digest}"
        if lock.path is not None and lock.lock is not None and lock.fresh
        else None
    )
    try:
        document = sbom.cyclonedx_json(inventory, tier.repository, digest, named)
    except BuildFailed as exc:
        progress(f"[{tier.key}] no SBOM stored: {exc}")
        return
    trust.store(tier).publish_sbom(image, document, unlisted)
