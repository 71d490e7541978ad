"""The compile stage's row: run a tier's compile script in its builder image, collect the
wheels. Done when the tier's image already exists, or its wheels match the compile inputs'
hash. The compile itself is stages/compile_act.py's, imported when a compile runs.
"""

from __future__ import annotations

from build_graph.errors import RegistryError
from build_graph.plan.plan import PlannedTier
from build_graph.stages import build
from build_graph.stages.stage import Column, Deferred, Need, Stage, fact
from build_graph.stages.wheels import wheels_current
from build_graph.stages.work import Work


def compiled(work: Work) -> bool:
    """Up to date: the image already exists (no wheels needed) or the wheels are current.
    Raises RegistryError only when the registry could not say and the wheels are stale."""
    try:
        return build.image_available(work) or wheels_current(work.tier)
    except RegistryError:
        if wheels_current(work.tier):
            return True
        raise


def _says(work: Work) -> str:
    tier = work.tier
    return (
        f"{tier.image} exists, or {tier.folder.wheels} holds wheels of compile inputs "
        f"{tier.compile_hash}"
    )


def _has_compile(tier: PlannedTier) -> bool:
    return tier.builder_key is not None


STAGE = Stage(
    "compile",
    "run a tier's compile script in its builder image with a compiler cache",
    act=Deferred("build_graph.stages.compile_act:compile_wheels"),
    needs=(Need("render"), Need("build", of="builder")),
    applies=_has_compile,
    done=compiled,
    says=_says,
    columns=(
        Column("compiler cache", fact("ccache")),
        Column("compile time", fact("compile_time")),
    ),
)
