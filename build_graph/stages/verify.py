"""The verify stage: probe the pushed image, decide, then publish the SBOM and the report.

Done when the registry holds a passing report (stages/trust.py) for the digest the hash
tag names and the current verifier fingerprint (probe, reader, checks, promises, GPU
present or not). What runs in the image is stages/verify_probe.py's, the verdict over it
stages/verify_verdict.py's (pure); this module acts on it: the report goes to the registry,
bound to the digest, pass or fail, and a copy to the tier's verify.json; the image's SBOM
(stages/sbom.py) goes beside it. It is also promote's gate.
"""

from __future__ import annotations

from collections.abc import Mapping

from build_graph.errors import BuildFailed
from build_graph.gpu.status import GpuStatus
from build_graph.log import log, progress
from build_graph.oci.digest import Digest
from build_graph.oci.refs import Answer, Presence
from build_graph.plan.plan import PlannedTier
from build_graph.signing import policy
from build_graph.stages import sbom, trust, verify_probe
from build_graph.stages.stage import Column, Need, Outcome, Stage, fact
from build_graph.stages.verify_verdict import decide
from build_graph.stages.work import Facts, Work


def verified(work: Work) -> bool:
    """Up to date: the registry holds a passing report for the hash tag's digest and this
    verifier (made here or by any other runner). Raises RegistryError when the registry
    could not say."""
    tier, holdings = work.tier, work.holdings
    probe = holdings.answer(tier.image)
    return bool(
        probe.presence is Presence.PRESENT
        and probe.digest
        and trust.passing_report(tier, probe.digest, holdings) is not None
    )


def passed(work: Work, digest: Digest, fresh: bool) -> Facts | None:
    """Promote's gate: what a passing report for `digest` that counts here says (its GPU
    status, and a note when its kernels were not checked), None when there is none."""
    report = trust.passing_report(work.tier, digest, work.holdings, fresh)
    if report is None:
        return None
    facts = {"gpu": str(report.gpu)}
    if not report.gpu.settled:
        facts["note"] = f'promoted with GPU {report.gpu} (verify.gpu = "optional")'
    return facts


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
    # two leaves a digest to verify again, never a verified one without its SBOM.
    publish_sbom(tier, image, digest, probed.inventory)
    trust.store(tier).publish(image, verdict.report, holdings)
    if verdict.failure is not None:
        raise BuildFailed(verdict.failure)
    progress(verdict.said)
    log(verdict.lines)
    return verdict.facts


def publish_sbom(tier: PlannedTier, image: Answer, digest: Digest, inventory: object) -> None:
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
    trust.store(tier).publish_sbom(image, document)


def _says(work: Work) -> str:
    return (
        f"the registry holds a passing verify report for {work.tier.image}'s digest "
        "and these checks"
    )


def _cell(facts: Mapping[str, str], outcome: Outcome) -> str:
    """'passed (12 passed, ...); GPU passed': the GPU's words only where it was not."""
    if outcome.failed is not None:
        return f"failed: {outcome.failed}"
    gpu = facts.get("gpu", "")
    status = GpuStatus.read(gpu)
    if status is not None and status.settled:
        gpu = str(status.state)
    gpu = f"; GPU {gpu}" if gpu else ""
    if "verify" in facts:
        return f"{facts['verify']}{gpu}"
    if outcome.up_to_date:
        return f"passed (a report in the registry){gpu}"
    return "not run" if outcome.not_run else "-"


STAGE = Stage(
    "verify",
    "probe the pushed image and check it against images.toml",
    act=verify,
    needs=(Need("push"),),
    done=verified,
    says=_says,
    passed=passed,
    columns=(Column("pulled", fact("pulled")), Column("verify", _cell)),
)
