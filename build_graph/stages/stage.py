"""A stage's row: what it needs, when it is done, what it does, its gate and its columns.

Each stage module declares its own row (`STAGE`) over a `Work`, the one thing every stage
is handed; stages/pipeline.py lists the rows in order, and run/tasks.py turns them into
doit tasks. A row whose action needs much (a builder, the compiler cache, the probe) names
it as `Deferred("module:function")`: a run whose tasks are all up to date imports the rows
and their checks, never what acting needs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from build_graph.oci.digest import Digest
    from build_graph.plan.plan import PlannedTier
    from build_graph.stages.work import Facts, Work


@dataclass(frozen=True)
class Need:
    """An edge: `stage` of this image (self), of its parent tier, or of its builder. A
    per-tier stage's 'self' is every image of its group."""

    stage: str
    of: Literal["self", "parent", "builder"] = "self"


@dataclass(frozen=True)
class Outcome:
    """What happened to one stage of one tier in a run, for its summary columns."""

    ran: bool = False
    up_to_date: bool = False
    failed: str | None = None  # the first line of its error
    not_run: bool = False  # a stage it needs failed


Cell = Callable[[Mapping[str, str], Outcome], str]  # the tier's facts, this stage's outcome


@dataclass(frozen=True)
class Column:
    header: str
    cell: Cell


def fact(name: str) -> Cell:
    """A cell showing one of the tier's facts ('-' where no stage said it)."""
    return lambda facts, outcome: facts.get(name, "-")


@dataclass(frozen=True)
class Deferred:
    """A stage's action named by `module:function`, imported when the action runs (the
    stage's module keeps its row and up-to-date check; its `_act` module, the action)."""

    path: str

    def __call__(self, work: Work) -> Facts | None:
        module, _, name = self.path.partition(":")
        act: Callable[[Work], Facts | None] = getattr(importlib.import_module(module), name)
        return act(work)


def _every_image(tier: PlannedTier) -> bool:
    return True


def _no_sentence(work: Work) -> str:
    return ""


@dataclass(frozen=True)
class Stage:
    name: str
    doc: str  # `doit list`'s line for the stage
    act: Callable[[Work], Facts | None]
    needs: tuple[Need, ...] = ()
    per: Literal["image", "tier"] = "image"
    applies: Callable[[PlannedTier], bool] = _every_image
    # The up-to-date check and the sentence `doit info` prints for it. None: doit's own,
    # from `targets` and `config` (files written here, their text's digest).
    done: Callable[[Work], bool] | None = None
    says: Callable[[Work], str] = _no_sentence
    found: Callable[[Work], Facts] | None = None  # what `done` read, for the summary
    targets: Callable[[Work], list[str]] | None = None
    config: Callable[[Work], str] | None = None
    # A gate: promote moves no tag until this stage passed for every image of the group
    # (run first, there, for a digest nobody ran it for). `passed(work, digest, fresh)`
    # says what it found (facts; a "note" is shown), None when it has not passed.
    passed: Callable[[Work, Digest, bool], Facts | None] | None = None
    after_gates: bool = False  # needs every gate of every image of its group (promote)
    columns: tuple[Column, ...] = ()
    quiet: bool = False  # doit's verbosity 1: its output only on failure

    def key(self, image: PlannedTier) -> str:
        """What follows '<stage>:' in the task's name: the image's key, or its tier's for a
        stage of the whole platform group."""
        return image.group_key if self.per == "tier" else image.key

    def task(self, image: PlannedTier) -> str:
        """The doit task of this stage for `image` (or for its group)."""
        return f"{self.name}:{self.key(image)}"
