"""`python -m build_graph prune`: delete the hash-tag images, and their artifacts, that
nothing needs (the rules: oci/retention.py). Dry run unless asked to delete.

Contract: every repository of the plan is read whole before anything is decided; a
registry that cannot be read raises RegistryError (exit 3) having deleted nothing. Per
image, its artifacts (verify reports, SBOMs: tags 'sha256-<its hex>.*') are deleted first,
then the image's manifest by digest, so an interrupted prune leaves images without
reports (rebuilt or re-verified if ever needed), never reports about nothing.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from build_graph.errors import EXIT_ENVIRONMENT, DeletesRefused
from build_graph.log import progress
from build_graph.oci.refs import parse_ref
from build_graph.oci.retention import Decision, Policy, Repository, bytes_freed, decide
from build_graph.plan.plan import PlannedTier
from build_graph.registry import api
from build_graph.registry.catalog import read_repository


@dataclass(frozen=True)
class Pruning:
    decisions: list[Decision]
    freed: int  # layer bytes the deletes free (once the registry collects its garbage)


def judge(planned: list[PlannedTier], policy: Policy) -> Pruning:
    """Read every repository of the plan (all variants) and decide. Raises RegistryError
    when any read fails: nothing is judged on a partial picture."""
    wanted: dict[str, set[str]] = {}
    for tier in planned:
        wanted.setdefault(tier.repository, set()).add(tier.content_hash)
    repos: list[Repository] = [read_repository(name) for name in wanted]
    decisions = [d for repo in repos for d in decide(repo, wanted[repo.name], policy)]
    return Pruning(decisions, bytes_freed(decisions, repos))


def show(pruning: Pruning, deleting: bool) -> None:
    for d in pruning.decisions:
        verb = ("delete" if deleting else "would delete") if d.delete else "keep"
        extra = f" and {len(d.artifacts)} artifact(s)" if d.delete and d.artifacts else ""
        progress(f"{verb:<12} {d.repository}:{','.join(d.tags)} ({d.digest.hex[:12]}){extra}"
                 f"  {d.why}")
    count = sum(d.delete for d in pruning.decisions)
    progress(f"{count} image(s) {'deleted' if deleting else 'to delete'}, "
             f"{_size(pruning.freed)} of layers freed once the registry collects garbage"
             + ("" if deleting or not count else "; run with --yes to delete"))


def delete(pruning: Pruning) -> int:
    """Delete what `pruning` decided; returns the exit code (3, in one line, when the
    registry does not allow deletes)."""
    for d in (d for d in pruning.decisions if d.delete):
        ref = parse_ref(f"{d.repository}:latest")
        try:
            for _tag, artifact in d.artifacts:
                api.delete_manifest(ref, artifact)
            api.delete_manifest(ref, d.digest)
        except DeletesRefused as exc:
            progress(f"error: {exc}")
            return EXIT_ENVIRONMENT
    return 0


def policy(keep: int, older_than: datetime.timedelta) -> Policy:
    return Policy(keep, older_than, datetime.datetime.now(datetime.UTC))


def _size(count: int) -> str:
    """'123456789 bytes (117.7 MiB)': exact, for scripts and tests, and readable."""
    scaled, unit = float(count), "B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if scaled < 1024 or unit == "GiB":
            break
        scaled /= 1024
    return f"{count} bytes ({scaled:.1f} {unit})"
