"""The push stage: the hash tag into the registry; the digest the registry holds recorded.

Done when the registry holds the hash tag (asked every run: push.json is only a note of
what this machine last saw, for `doit info` and the next run's first round of questions).
When another runner pushed the same hash tag first, its digest is adopted, never fought.
"""

from __future__ import annotations

from build_graph.docker import daemon
from build_graph.errors import RegistryError
from build_graph.fs import write_record
from build_graph.log import log
from build_graph.oci.refs import Presence
from build_graph.plan.plan import PlannedTier
from build_graph.plan.push_record import record
from build_graph.registry.availability import Availability


def pushed(tier: PlannedTier, holdings: Availability) -> bool:
    """Up to date: the registry holds the hash tag; RegistryError when it could not say."""
    probe = holdings.answer(tier.image)
    if probe.presence is Presence.PRESENT and probe.digest:
        write_record(tier.folder.push_record, record(tier, probe.digest))
        return True
    return False


def push(tier: PlannedTier, holdings: Availability) -> dict[str, str]:
    """Push the hash tag; returns the digest the registry holds under it."""
    probe = holdings.require(tier.image)
    if probe.presence is Presence.PRESENT and probe.digest:
        log(f"[{tier.key}] registry already holds {tier.image} ({probe.digest})")
        write_record(tier.folder.push_record, record(tier, probe.digest))
        return {"digest": str(probe.digest)}
    ours = daemon.push(tier.image)  # only compared and logged: the registry's answer counts
    now = holdings.require(tier.image)
    if now.digest is None:
        raise RegistryError(
            f"{tier.image} was pushed ({ours or 'no digest said'}) but the "
            "registry does not hold it; check the registry's storage and logs"
        )
    if ours is not None and now.digest != ours:
        log(
            f"[{tier.key}] another runner pushed {tier.image} too; adopting the registry's "
            f"{now.digest} (ours was {ours})"
        )
    write_record(tier.folder.push_record, record(tier, now.digest))
    return {"digest": str(now.digest)}
