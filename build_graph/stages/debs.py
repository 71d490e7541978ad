"""The .debs a tier's apt lock names, on this machine before its build (stages/inputs.py:
kept, checked, handed over). The build gets the folder in its context and installs from it
with no network (templates/_macros.j2).
"""

from __future__ import annotations

from pathlib import Path

from build_graph.aptlock import snapshot
from build_graph.aptlock.files import Deb
from build_graph.log import progress
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier
from build_graph.stages import inputs

KIND = inputs.Kind("debs", ".deb", "apt lock")


def locked(deb: Deb, elsewhere: tuple[str, ...] = ()) -> inputs.Locked:
    what = f"{deb.name} {deb.version}"
    return inputs.Locked(deb.file, deb.sha256, deb.size, what, lambda: deb.url, elsewhere)


def gather(stack: Stack, tier: PlannedTier) -> Path | None:
    """The folder holding exactly the tier's locked .debs, each checked; None for a tier
    that installs none from a lock."""
    files = debs(stack, tier)
    return inputs.gather(stack, tier, KIND, tier.folder.debs, files) if files else None


def debs(stack: Stack, tier: PlannedTier) -> list[inputs.Locked]:
    """Each .deb the tier's apt lock names (none for a missing or stale lock), with where
    the stack's snapshot archives serve it."""
    lock = tier.apt.lock if tier.apt.fresh else None
    if lock is None:
        return []
    if not snapshot.is_stamp(lock.resolved) and any(
        snapshot.TIME in s for _, s in stack.apt_snapshots
    ):
        progress(
            f"note: {tier.key}: its apt lock records no time it was resolved (made before "
            "locks recorded one), so no snapshot archive is asked for its files; add "
            'resolved = "YYYYMMDDTHHMMSSZ" (when it was made, e.g. its commit\'s time, UTC) '
            f"or move its pins: `python -m build_graph lock --update {tier.spec.name}`"
        )
    return [locked(d, snapshot.urls(stack.apt_snapshots, lock.resolved, d.url)) for d in lock.debs]
