"""doit task dicts for every stage of every image (run/ is the only code that knows doit).

The stages and their edges are stages/pipeline.py's table; this module only turns each row
into doit tasks: '<stage>:<tier>' (or '<stage>:<tier>@<variant>', '.../arm64') per image,
'<stage>:<tier>' per tier for a stage of the whole platform group, and `doit <tier>`
(run/tier_tasks.py). Up-to-date checks ask where images exist (probed concurrently, once
per run), so a fresh machine with an empty doit database rebuilds and pushes nothing the
registry already holds. A team's dodo.py yields `StackTasks.all()`: a stage added to the
table reaches it without a change there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from doit.exceptions import TaskFailed
from doit.tools import config_changed

from build_graph.errors import BuildGraphError, DaemonUnreachable
from build_graph.interrupts import doing, interrupted
from build_graph.layout import TierFolder
from build_graph.log import log, task_log
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier
from build_graph.registry.availability import Availability
from build_graph.run.diagrams import Node, nodes_of
from build_graph.run.reporter import ExitCodeReporter, StageFailed
from build_graph.run.tier_tasks import DoitTask, TierTasks
from build_graph.stages import pipeline, trust
from build_graph.stages.stage import Stage
from build_graph.stages.work import Facts, Work

# The stages a dodo.py written before stages/pipeline.py named, one `task_` function each,
# `promote` last: frozen, whatever the table holds now (its last generator yields the rest).
_BEFORE_THE_TABLE = ("render", "compile", "build", "push", "verify", "promote")
# The graph of the stack each StackTasks planned, by manifest: what the run summary draws.
# doit_config takes the stack alone (every team's dodo.py calls it so), and finds it here.
_GRAPHS: dict[Path, tuple[Node, ...]] = {}


def doit_config(stack: Stack) -> dict[str, Any]:
    reporter = type(
        "StackReporter",
        (ExitCodeReporter,),
        {
            "summary_file": stack.build_folder.run_summary,
            "summary_title": f"{stack.name} ({stack.manifest.name})",
            "summary_graph": _GRAPHS.get(stack.manifest, ()),
        },
    )
    return {
        "dep_file": str(stack.build_folder.doit_db),
        "backend": "json",
        "default_tasks": [pipeline.final()],
        "verbosity": 2,
        "reporter": reporter,
        # `doit -n N` runs tasks in threads of this process, not forked processes: a fork
        # would share the Docker client's open connections between processes.
        "par_type": "thread",
    }


def action(
    stage: str, key: str, fn: Callable[[], Facts | None], folder: TierFolder
) -> Callable[[], TaskFailed | Facts]:
    """A doit python-action for one stage of one image or tier. Its output goes to the
    folder's logs/<stage>.log (and to the terminal when verbose); our errors become a clean
    StageFailed with the cause's exit code (no traceback); Ctrl-C becomes one line and
    exit 130. What the stage returns (its facts: a digest, a hit rate, ...) becomes the
    task's doit values, which the run summary reads."""
    path = folder.log(stage)

    def run() -> TaskFailed | Facts:
        with task_log(path), doing(f"{stage} of {key}"):
            try:
                facts = fn() or {}
            except BuildGraphError as exc:
                if isinstance(exc, DaemonUnreachable):  # say which task wanted it
                    exc = exc.needs(f"{stage}:{key}")
                log(f"error: {exc}")
                return StageFailed(str(exc), exc.exit_code, path)
            except KeyboardInterrupt:
                interrupted(f"{stage} of {key}")
        return facts

    run.__name__ = stage
    return run


class Condition:
    """An uptodate callable that `doit info` prints as the sentence it tests.

    A problem while checking (daemon down, registry unreachable, ...) reads as 'not up to
    date' for a run (the action then runs and explains it), and is kept in `error`: `doit
    list --status` and `doit info` report it instead of a plan made of guesses.
    """

    def __init__(
        self,
        says: str,
        fn: Callable[..., bool],
        *args: Any,
        facts: Callable[[], Facts] | None = None,
    ) -> None:
        self.says, self.fn, self.args, self._facts = says, fn, args, facts
        self.error: BuildGraphError | None = None

    def facts(self) -> Facts:
        """What the check found, for the run summary of a task it found up to date (read
        from this run's answers: no new question)."""
        try:
            return self._facts() if self._facts else {}
        except BuildGraphError:
            return {}

    def __call__(self) -> bool:
        try:
            self.error = None
            return bool(self.fn(*self.args))
        except BuildGraphError as exc:
            self.error = exc
            return False
        except KeyboardInterrupt:
            interrupted("an up-to-date check")

    def __repr__(self) -> str:
        return f"up to date when {self.says}"


@dataclass
class StackTasks:
    """Every task of a planned stack: the stage tasks (here) and `doit <tier>` (its
    `tier_tasks`), over one set of registry answers for the run (`holdings`)."""

    stack: Stack
    planned: list[PlannedTier]

    def __post_init__(self) -> None:
        _GRAPHS[self.stack.manifest] = tuple(nodes_of(self.planned))

    @cached_property
    def holdings(self) -> Availability:
        """Every reference the run may ask the registry about, asked in one round: hash
        tags, human tags, and the reports for the digests this machine saw last."""
        holdings = Availability()
        for tier in self.planned:
            holdings.register(
                [tier.image, *map(tier.human_ref, tier.human_tags), *trust.expected_refs(tier)]
            )
        return holdings

    @cached_property
    def tier_tasks(self) -> TierTasks:
        return TierTasks(self.stack, self.planned, self.holdings)

    @property
    def by_key(self) -> dict[str, PlannedTier]:
        return self.tier_tasks.by_key

    def tiers(self) -> Iterator[DoitTask]:
        """`doit <tier>` (run/tier_tasks.py), as a dodo.py of one `task_` per stage asks."""
        return self.tier_tasks.tiers()

    def all(self) -> Iterator[DoitTask]:
        """Every task of the stack: `doit <tier>`, then each stage's, in pipeline order."""
        yield from self.tiers()
        for stage in pipeline.stages():
            yield from self.stage(stage)

    def stage(self, stage: Stage | str) -> Iterator[DoitTask]:
        """The stage's group task (`doit <stage>`) and one task per image, or per tier. By
        name too, as a dodo.py written before the table asks (one `task_` per stage, the
        last one `promote`): the last of those also yields every stage it does not name."""
        if isinstance(stage, str):
            if stage in pipeline.by_name():  # a stage a later release removed: nothing
                yield from self.stage(pipeline.by_name()[stage])
            if stage == _BEFORE_THE_TABLE[-1]:
                for other in pipeline.stages():
                    if other.name not in _BEFORE_THE_TABLE:
                        yield from self.stage(other)
            return
        yield {"basename": stage.name, "name": None, "doc": stage.doc}
        for work in self._works(stage):
            if stage.applies(work.tier):
                task = self._task(stage, work)
                yield {"basename": stage.name, "name": stage.key(work.tier), **task}

    def _works(self, stage: Stage) -> Iterator[Work]:
        gates = pipeline.gates()
        if stage.per == "image":
            for tier in self.planned:
                yield Work(self.stack, (tier,), self.holdings, self.by_key, gates)
        else:
            for images in self.tier_tasks.groups.values():
                yield Work(self.stack, tuple(images), self.holdings, self.by_key, gates)

    def _task(self, stage: Stage, work: Work) -> DoitTask:
        first = work.tier
        if stage.per == "tier":  # the tier's own folder, above its platforms'
            folder = self.stack.build_folder.tier(first.spec.variant, first.spec.name)
            tiers = self.tier_tasks
            doc = tiers.group_doc(list(work.images)) if first.platform else tiers.describe(first)
        else:
            folder, doc = first.folder, self.tier_tasks.describe(first)
        key = stage.key(first)
        task: DoitTask = {
            "doc": doc,
            "actions": [action(stage.name, key, partial(stage.act, work), folder)],
            "task_dep": self._deps(stage, work),
        }
        if stage.done is not None:
            found = partial(stage.found, work) if stage.found else None
            task["uptodate"] = [Condition(stage.says(work), stage.done, work, facts=found)]
        if stage.targets is not None:
            task["targets"] = stage.targets(work)
        if stage.config is not None:
            task["uptodate"] = [config_changed(stage.config(work))]
        if stage.quiet:
            task["verbosity"] = 1
        return task

    def _deps(self, stage: Stage, work: Work) -> list[str]:
        """The task names a stage's task waits for: every gate of each image first (for the
        stage that promotes: one failing stops the run before anything moves), then its
        needs, of this image (or each of the group's), its parent, its builder."""
        table = pipeline.by_name()
        wanted: list[tuple[Stage, str]] = []
        if stage.after_gates:
            wanted += [(s, "self") for s in table.values() if s.passed is not None]
        wanted += [(table[need.stage], need.of) for need in stage.needs]
        deps: list[str] = []
        for other, of in wanted:
            for image in work.images:
                key = {"self": image.key, "parent": image.parent_key, "builder": image.builder_key}[
                    of
                ]
                if key is not None and other.applies(self.by_key[key]):
                    deps.append(other.task(self.by_key[key]))
        return list(dict.fromkeys(deps))
