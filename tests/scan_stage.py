"""A stage that exists only in tests: a no-op 'scan' after verify, in one module, as a release
would add a CVE scan. tests/unit/test_pipeline.py puts it in the table and nowhere else."""

from __future__ import annotations

from build_graph.oci.digest import Digest
from build_graph.stages.stage import Column, Need, Stage
from build_graph.stages.work import Facts, Work

SCANNED: set[str] = set()  # the digests scanned in this process
SAYS_SCANNED = True  # whether a scan makes the digest pass (a test turns it off)


def scan(work: Work) -> Facts:
    digest = work.holdings.answer(work.tier.image).digest
    if SAYS_SCANNED and digest is not None:
        SCANNED.add(str(digest))
    return {"scan": "clean"}


def scanned(work: Work) -> bool:
    digest = work.holdings.answer(work.tier.image).digest
    return digest is not None and str(digest) in SCANNED


def passed(work: Work, digest: Digest, fresh: bool) -> Facts | None:
    return {"scan": "clean"} if str(digest) in SCANNED else None


STAGE = Stage(
    "scan",
    "scan a verified image for known vulnerabilities (a test's no-op)",
    act=scan,
    needs=(Need("verify"),),
    done=scanned,
    says=lambda work: f"{work.tier.image}'s digest was scanned",
    passed=passed,
    columns=(Column("scan", lambda facts, outcome: facts.get("scan", "-")),),
)
