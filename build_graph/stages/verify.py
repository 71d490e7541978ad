"""The verify stage's row: probe the pushed image, decide, then publish the SBOM and the
report. It is also promote's gate.

Done when the registry holds a passing report (stages/trust.py) for the digest the hash
tag names and the current verifier fingerprint (probe, reader, checks, promises, GPU
present or not). The verify itself is stages/verify_act.py's, imported when a verify runs:
what runs in the image is stages/verify_probe.py's, the verdict over it
stages/verify_verdict.py's (pure).
"""

from __future__ import annotations

from collections.abc import Mapping

from build_graph.gpu.status import GpuStatus
from build_graph.oci.digest import Digest
from build_graph.oci.refs import Presence
from build_graph.stages import trust
from build_graph.stages.stage import Column, Deferred, Need, Outcome, Stage, fact
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
    act=Deferred("build_graph.stages.verify_act:verify"),
    needs=(Need("push"),),
    done=verified,
    says=_says,
    passed=passed,
    columns=(Column("pulled", fact("pulled")), Column("verify", _cell)),
)
