"""The build stage's row: `docker build` of a tier's rendered Dockerfile, tagged by content
hash. Done when the registry holds the hash tag, or the local daemon has it (then push
sends it). The build itself is stages/build_act.py's, imported when a build runs.
"""

from __future__ import annotations

from build_graph.errors import DaemonUnreachable
from build_graph.oci.refs import Presence
from build_graph.plan.plan import PlannedTier
from build_graph.registry.availability import Availability
from build_graph.stages.stage import Column, Deferred, Need, Stage, fact
from build_graph.stages.work import Work


def image_available(work: Work) -> bool:
    """Up to date for build: the registry holds the hash tag, or the daemon here has it.
    The daemon is asked only when the registry lacks it (a fresh runner never asks).
    Raises RegistryError when the registry could not say and the daemon lacks it."""
    tier, holdings = work.tier, work.holdings
    probe = holdings.registry(tier.image)
    if probe.presence is Presence.PRESENT or _built_here(tier, holdings):
        return True
    holdings.answer(tier.image)  # an error raises: 'could not ask' is not 'absent'
    return False


def _built_here(tier: PlannedTier, holdings: Availability) -> bool:
    """Whether the daemon here has the image; False when no daemon answers: planning needs
    the registry only, and without a daemon nothing local could be pushed anyway (the build
    then says in one line that it needs the daemon)."""
    try:
        return holdings.local(tier.image)
    except DaemonUnreachable:
        return False


def _says(work: Work) -> str:
    return f"the registry holds {work.tier.image}, or the daemon here has it"


STAGE = Stage(
    "build",
    "docker build a tier, tagged <registry>/<tier>:<content hash>",
    act=Deferred("build_graph.stages.build_act:build_image"),
    needs=(Need("render"), Need("build", of="parent"), Need("compile")),
    done=image_available,
    says=_says,
    columns=(Column("built", fact("built")),),
)
