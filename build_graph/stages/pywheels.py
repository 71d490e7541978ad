"""The wheels a hermetic tier's Python lock names, on this machine before its build
(stages/inputs.py: kept, checked, handed over). The build gets them in its context and pip
installs those files only, from no index, with no network (templates/_macros.j2). Where a
wheel is served is asked of the builds' index only when no copy of ours holds it.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from build_graph import settings
from build_graph.errors import NotOnIndex
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier
from build_graph.pypi import lookup, simple
from build_graph.stages import inputs

KIND = inputs.Kind("wheels", ".whl", "Python lock")


def gather(stack: Stack, tier: PlannedTier) -> Path | None:
    """The folder holding exactly the wheels of the tier's Python lock, each checked; None
    for a stack that is not hermetic or a tier that installs nothing from the index."""
    files = wheels(tier) if stack.hermetic else []
    return inputs.gather(stack, tier, KIND, tier.folder.pywheels, files) if files else None


def wheels(tier: PlannedTier) -> list[inputs.Locked]:
    """Each wheel the tier's Python lock names (none for a missing or stale lock)."""
    state = tier.python
    lock = state.lock if state.request is not None and state.fresh else None
    if lock is None:
        return []
    index = lookup.builds_index()
    named = {(file, sha256): pin for pin in lock.pins for file, sha256 in pin.wheels}
    return [
        inputs.Locked(
            file,
            sha256,
            None,  # the lock records no size: a longer answer is refused by its sha256
            f"{pin.name} {pin.version}",
            origin=partial(served_at, index, pin.name, file),
        )
        for (file, sha256), pin in named.items()
    ]


def served_at(index: str, project: str, file: str) -> str:
    """The URL `index` serves `file` of `project` at (its hash fragment left off: the lock's
    sha256 is what the bytes are held to)."""
    for found in simple.project(index, project).files:
        if found.filename == file:
            return found.url.partition("#")[0]
    raise NotOnIndex(f"{file} is not on {settings.without_userinfo(index)} (or yanked)")
