"""What verify concludes from what it found out about an image, pure: each check's result,
whether anything stops promotion, the report (oci/verify_report.py) and what the stage says.

The verify stage (stages/verify_act.py) probes (stages/verify_probe.py), asks `decide`, then
acts on the verdict: the SBOM and the report published, then a failure raised or the
facts returned.
"""

from __future__ import annotations

from dataclasses import dataclass

from build_graph.oci.digest import Digest
from build_graph.oci.verify_report import Check, VerifyReport, Versions
from build_graph.plan.plan import PlannedTier
from build_graph.stages.work import Facts
from build_graph.verify.checks import evaluate
from build_graph.verify.device import gpu_code_paths
from build_graph.verify.probe_output import ProbeOutput
from build_graph.verify.request import fingerprint
from build_graph.verify.results import blocking, gpu_verdict, summary


@dataclass(frozen=True)
class Probed:
    """What verify found out about an image."""

    ref: str  # the platform image run, by its own digest
    output: ProbeOutput  # the probe's report, with what the host added
    inventory: object  # every installed package, for the SBOM (not the report's)
    gpu_present: bool
    pulled: str  # what making it local cost: '812.4 MB image in 5.7 s'


@dataclass(frozen=True)
class Verdict:
    report: VerifyReport  # published whether it passed or not
    lines: str  # one per check
    failure: str | None  # the error verify fails with; None when nothing stops promotion
    said: str  # the line a pass prints
    facts: Facts  # what a pass returns, for the run summary


def decide(tier: PlannedTier, digest: Digest, probed: Probed) -> Verdict:
    """Each check over what was probed, against the tier's promises; the verdict."""
    want = tier.expect
    probe = probed.output
    results = evaluate(want, probe)
    stoppers = blocking(results, want)
    torch = probe.get("torch") or {}
    python = probe.get("python") or {}
    report = VerifyReport(
        tier=tier.spec.name,
        variant=tier.spec.variant,
        image=tier.image,
        platform=tier.platform,
        digest=digest,
        content_hash=tier.content_hash,
        passed=not stoppers,
        summary=summary(results),
        fingerprint=fingerprint(want, probed.gpu_present),
        fingerprints=Versions(
            python=python.get("version"),
            torch=torch.get("version"),
            cuda=torch.get("cuda"),
            cudnn=torch.get("cudnn"),
            arch_list=torch.get("arch_list"),
        ),
        gpu=gpu_verdict(results),
        gpu_policy=want.gpu_policy,
        gpu_present=probed.gpu_present,
        gpu_code_paths=tuple(gpu_code_paths(probe)),
        checks=tuple(Check(r.name, r.status, r.expected, r.actual, r.gpu) for r in results),
        probe=probe,
    )
    lines = "\n".join(r.line() for r in results)
    why = "; ".join(
        f"{r.name} {'failed' if r.status == 'fail' else 'not checked'}" for r in stoppers
    )
    return Verdict(
        report,
        lines,
        failure=(
            f"verify of {tier.key} ({probed.ref}): {report.summary}; nothing promoted "
            f"({why}):\n{lines}"
            if stoppers
            else None
        ),
        said=f"[{tier.key}] verified {probed.ref}: {report.summary}; GPU {report.gpu}",
        facts={
            "verify": f"passed ({report.summary})",
            "gpu": str(report.gpu),
            "pulled": probed.pulled,
        },
    )
