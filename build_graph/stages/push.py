"""The push stage: the hash tag into the registry, its digest recorded in push.json.

Done when push.json names the hash tag, or the registry already holds it.
"""

from __future__ import annotations

from build_graph.engine import daemon
from build_graph.engine.availability import Availability
from build_graph.engine.records import recorded_digest, write_record
from build_graph.engine.registry import Presence
from build_graph.log import log
from build_graph.plan.plan import PlannedTier


def pushed(tier: PlannedTier, seen: Availability) -> bool:
    if recorded_digest(tier) is not None:
        return True
    probe = seen.registry(tier.image)
    if probe.presence is Presence.PRESENT and probe.digest:
        # Remember the registry's answer, as push would have: the next run need not ask.
        write_record(tier.push_record, record(tier, probe.digest))
        return True
    return False


def push(tier: PlannedTier, seen: Availability) -> None:
    probe = seen.require(tier.image)
    if probe.presence is Presence.PRESENT and probe.digest:
        log(f"[{tier.key}] registry already holds {tier.image} ({probe.digest})")
        digest = probe.digest
    else:
        digest = daemon.push(tier.image)
        seen.pushed(tier.image, digest)
    write_record(tier.push_record, record(tier, digest))


def record(tier: PlannedTier, digest: str) -> dict[str, object]:
    """push.json: the hash tag, its digest, and the inputs it was made of (for `doit info`)."""
    return {"image": tier.image, "digest": digest, "inputs": dict(tier.inputs)}
