"""The pipeline, declared once: its stages' rows, in the order a tier goes through them.

Each stage module declares its own row (stages/stage.py's `Stage`: what it needs, when it is
done, what it does, per platform image or per tier, whether promote must see it passed, its
summary columns); this table only lists them. run/tasks.py turns the rows into doit tasks;
`doit list`, `doit info`, the run summary and promote read them; no other module lists or
wires a stage (run/tasks.py keeps the six names a dodo.py of the release before this table
asked for, frozen). Adding a stage is a module in stages/ and its row here.
"""

from __future__ import annotations

from build_graph.stages import build, compile, promote, push, render, verify
from build_graph.stages.stage import Stage

STAGES: tuple[Stage, ...] = (
    render.STAGE,
    compile.STAGE,
    build.STAGE,
    push.STAGE,
    verify.STAGE,
    promote.STAGE,
)


def stages() -> tuple[Stage, ...]:
    """The table in force (a test may add a row: run/tasks.py and the readers take it from
    here, never from a copy)."""
    return STAGES


def by_name() -> dict[str, Stage]:
    return {stage.name: stage for stage in stages()}


def gates() -> tuple[Stage, ...]:
    """The stages promote must see passed, for each image, in pipeline order."""
    return tuple(stage for stage in stages() if stage.passed is not None)


def final() -> str:
    """The stage `doit` runs by default: the last, which takes a tier to its human tags."""
    return stages()[-1].name
