"""Which verify reports count on this runner, and where a tier's reports are kept.

A runner trusts a report for the same digest and its own verifier fingerprint (the
verifier's code, the promises, whether a GPU was present), and on a CPU runner a GPU
runner's (verify/request.py's trusted_fingerprints). The verify and promote stages and
`doit info` ask here; the registry's report store (registry/reports.py) knows no policy.
"""

from __future__ import annotations

from build_graph.docker import connection
from build_graph.oci.digest import Digest
from build_graph.oci.platforms import host_platform, platform_of_machine
from build_graph.plan.plan import PlannedTier
from build_graph.plan.push_record import recorded_digest
from build_graph.registry.availability import Availability
from build_graph.registry.reports import ReportStore, StoredReport
from build_graph.verify.request import trusted_fingerprints


def store(tier: PlannedTier) -> ReportStore:
    return ReportStore(tier.repository, tier.folder, tier.key, tier.signing)


def fingerprints(tier: PlannedTier) -> list[str]:
    """The fingerprints a report may carry to count here, this runner's first. Computed
    once per expectation and process: every up-to-date check of verify and promote asks."""
    here = gpu_here() and native(tier)
    key = (repr(tier.expect), here)  # by value: two stacks in one process never mix
    if key not in _FINGERPRINTS:
        _FINGERPRINTS[key] = trusted_fingerprints(tier.expect, here)
    return _FINGERPRINTS[key]


_FINGERPRINTS: dict[tuple[str, bool], list[str]] = {}


def gpu_here() -> bool:
    """Whether this runner judges reports as a GPU runner does.

    With no daemon to ask (stopped, or a planning-only host), as a runner without a GPU:
    that runner trusts both kinds of report (a GPU runner's checked everything a CPU runner
    can, and ran a kernel), so a stack verified anywhere plans as up to date and `doit list
    --status` or a no-op run needs no daemon. Nothing is verified on that assumption: a
    verify that does run asks the daemon itself (stages/verify_act.py) and fails in one line
    when it cannot, and a GPU runner whose daemon answers still wants its own report.
    """
    return connection.reachable_gpu_runtime() is True


def native(tier: PlannedTier) -> bool:
    """Whether the Docker daemon runs the tier's image natively: the build host's own
    platform, or a declared one of the daemon's machine (DOCKER_HOST may name another
    machine than this one; with no daemon answering, this one's). Another platform's image
    runs under emulation, where no GPU is reachable: it is verified as a runner without a
    GPU verifies."""
    if tier.platform is None:
        return True
    machine = connection.daemon_machine()
    here = platform_of_machine(machine) if machine else host_platform()
    return tier.target == here


def passing_report(
    tier: PlannedTier, digest: Digest, holdings: Availability, fresh: bool = False
) -> StoredReport | None:
    """A passing report for `digest` that counts here (ReportStore.find's contract)."""
    return store(tier).find(digest, fingerprints(tier), holdings, fresh)


def expected_refs(tier: PlannedTier) -> list[str]:
    """The report tag worth asking about in the run's first round: this runner's, for the
    digest this machine last saw (a hint: a different digest, or a GPU runner's report
    looked for where this runner has none, costs a second round)."""
    digest = recorded_digest(tier)
    return [store(tier).ref(digest, fingerprints(tier)[0])] if digest else []
