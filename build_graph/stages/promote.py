"""The promote stage: move the human tags and 'latest' to the verified digest.

Done when every human tag already names the digest that has a passing verify report.
Refuses any digest without one: nothing unverified is ever promoted.
"""

from __future__ import annotations

from build_graph.engine import daemon
from build_graph.engine.availability import Availability
from build_graph.engine.records import image_digest, passing_report, read_record, write_record
from build_graph.errors import BuildFailed
from build_graph.log import log, progress
from build_graph.plan.plan import PlannedTier


def promoted(tier: PlannedTier, seen: Availability) -> bool:
    """Up to date for promote: every human tag already names the verified digest."""
    digest = image_digest(tier, seen)
    if digest is None or not passing_report(tier, digest):
        return False
    record = read_record(tier.promote_record)
    if record and record.get("digest") == digest and record.get("tags") == list(tier.human_tags):
        return True
    if all(seen.registry(f"{tier.repository}:{t}").digest == digest for t in tier.human_tags):
        # Remember the registry's answer, as promote would have: the next run need not ask.
        write_record(tier.promote_record, {"digest": digest, "tags": list(tier.human_tags)})
        return True
    return False


def promote(tier: PlannedTier, seen: Availability) -> None:
    """Move the human tags to the verified digest; refuses anything not verified."""
    probe = seen.require(tier.image)
    if probe.digest is None or not passing_report(tier, probe.digest):
        raise BuildFailed(f"{tier.key}: {tier.image} has no passing verify report for its "
                          "registry digest; human tags stay where they were")
    # Tag exactly the verified manifest (by digest), never whatever the daemon calls the
    # hash tag locally.
    verified_ref = f"{tier.repository}@{probe.digest}"
    daemon.ensure_local(verified_ref)
    for name in tier.human_tags:
        ref = f"{tier.repository}:{name}"
        daemon.tag(verified_ref, ref)
        digest = daemon.push(ref)
        seen.pushed(ref, digest)
        if digest != probe.digest:
            raise BuildFailed(f"{ref} was pushed as {digest}, not the verified {probe.digest}; "
                              "check the registry for concurrent writers")
        log(f"[{tier.key}] {ref} -> {digest}")
    gpu = (read_record(tier.verify_record) or {}).get("gpu", "")
    if not str(gpu).startswith(("passed", "not applicable")):
        progress(f"[{tier.key}] promoted with GPU {gpu} (verify.gpu = \"optional\")")
    write_record(tier.promote_record, {"digest": probe.digest, "tags": list(tier.human_tags),
                                       "gpu": gpu})
