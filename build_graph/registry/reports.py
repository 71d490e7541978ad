"""Verify reports in the registry: bound to the image digest, shared by every runner.

A report is an OCI artifact about the image's manifest (engine/artifacts.py), tagged
`sha256-<image digest>.verify-<verifier fingerprint>`. Any runner trusts a report for the
same digest and the same fingerprint (the verifier's code, the promises, whether a GPU was
present). A runner without a GPU also trusts a GPU runner's report: it checked everything a
CPU runner can, and ran a kernel. What this machine read or wrote is kept in the tier's
reports/ folder by artifact digest, a cache the registry's answer validates on every run.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
from pathlib import Path
from typing import Any

from build_graph.docker import daemon
from build_graph.fs import read_record, write_record
from build_graph.log import log
from build_graph.oci.digest import Digest
from build_graph.oci.refs import Presence, Probe, artifact_tag, parse_ref
from build_graph.plan.plan import PlannedTier
from build_graph.registry import artifacts
from build_graph.registry.availability import Availability
from build_graph.stages.push import recorded_digest
from build_graph.verify.expectation import Expectation
from build_graph.verify.request import fingerprint

ARTIFACT_TYPE = "application/vnd.build-graph.verify-report.v1+json"
RUN_ID = os.urandom(6).hex()  # tells reports of different runs (and runners) apart


def fingerprints(want: Expectation) -> list[str]:
    """The fingerprints a report may carry to count here: this runner's, and on a runner
    without a GPU, a GPU runner's as well."""
    here = daemon.gpu_runtime()
    return [fingerprint(want, here)] + ([] if here else [fingerprint(want, True)])


def report_ref(tier: PlannedTier, digest: Digest, fp: str) -> str:
    return f"{tier.repository}:{artifact_tag(digest, f'verify-{fp}')}"


def expected_refs(tier: PlannedTier, want: Expectation) -> list[str]:
    """The report tag worth asking about in the run's first round: this runner's, for the
    digest this machine last saw (a hint: a different digest, or a GPU runner's report
    looked for where this runner has none, costs a second round)."""
    digest = recorded_digest(tier)
    return [report_ref(tier, digest, fingerprints(want)[0])] if digest else []


def find(tier: PlannedTier, want: Expectation, digest: Digest, seen: Availability,
         fresh: bool = False) -> dict[str, Any] | None:
    """A passing report for `digest` under a fingerprint that counts here, or None when the
    registry definitely holds none. `fresh` asks the registry again (before acting on the
    answer). Raises RegistryError when the registry could not say (an error is never 'no
    report'), UntrustedAnswer when what it served fails its hash."""
    for fp in fingerprints(want):
        ref = report_ref(tier, digest, fp)
        probe = seen.require(ref) if fresh else seen.answer(ref)
        if probe.presence is Presence.ABSENT or probe.digest is None:
            continue
        report = _cached(tier, probe.digest) or _fetch(tier, probe.digest)
        if (report and report.get("passed") is True and report.get("digest") == str(digest)
                and report.get("fingerprint") == fp):
            return report
    return None


def _path(tier: PlannedTier, artifact: Digest) -> Path:
    """Where this machine keeps a copy of the report whose artifact is `artifact`: the
    name comes from a parsed digest, so it stays inside reports/."""
    return tier.folder.reports / f"{artifact.dashed}.json"


def _cached(tier: PlannedTier, artifact: Digest) -> dict[str, Any] | None:
    return read_record(_path(tier, artifact))


def _fetch(tier: PlannedTier, artifact: Digest) -> dict[str, Any] | None:
    """Read a report another run (or runner) published, by its artifact digest (hashed on
    the way in), and keep it here. A payload that is not a JSON object is no report."""
    payload = artifacts.read(parse_ref(tier.image), artifact, ARTIFACT_TYPE)
    try:
        report = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(report, dict):
        return None
    by = report.get("made_by")
    by = by if isinstance(by, dict) else {}
    log(f"[{tier.key}] verify report from {by.get('host', '?')} (run {by.get('run', '?')}), "
        f"{report.get('summary', '')}")
    _keep(tier, artifact, report)
    return report


def _keep(tier: PlannedTier, artifact: Digest, report: dict[str, Any]) -> None:
    write_record(_path(tier, artifact), report)
    write_record(tier.folder.verify_record, report)


def publish(tier: PlannedTier, image: Probe, report: dict[str, Any],
            seen: Availability) -> None:
    """Store `report` in the registry, bound to the image's digest, and keep it here."""
    report = {**report, "made_by": {
        "host": socket.gethostname(), "run": RUN_ID,
        "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}}
    payload = json.dumps(report, indent=1, sort_keys=True).encode()
    annotations = {"org.opencontainers.image.created": report["made_by"]["at"],
                   "dev.build-graph.passed": str(bool(report.get("passed"))).lower(),
                   "dev.build-graph.summary": str(report.get("summary", ""))}
    write_record(tier.folder.verify_record, report)  # kept even when the registry refuses it
    tag, artifact = artifacts.publish(parse_ref(tier.image), image,
                                      f"verify-{report['fingerprint']}", ARTIFACT_TYPE,
                                      payload, annotations)
    seen.forget(f"{tier.repository}:{tag}")
    _keep(tier, artifact, report)
    log(f"[{tier.key}] report stored in the registry as {tier.repository}:{tag}")

