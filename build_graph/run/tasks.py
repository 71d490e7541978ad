"""doit task dicts for every (variant, tier) and stage (run/ is the only code that knows doit).

Stages, in order: render, compile (tiers with a compile section), build, push, verify,
promote. Task names are '<stage>:<tier>' or '<stage>:<tier>@<variant>'. Up-to-date checks
ask where images exist (probed concurrently, once per run), so a fresh machine with an empty
doit database rebuilds and pushes nothing the registry already holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

from doit.exceptions import TaskFailed
from doit.tools import config_changed

from build_graph.errors import BuildGraphError, DaemonUnreachable, interrupted
from build_graph.layout import TierFolder
from build_graph.log import log, task_log
from build_graph.manifest.model import STAGES, Stack
from build_graph.plan.plan import PlannedTier, groups
from build_graph.registry.availability import Availability
from build_graph.run import account, explain
from build_graph.run.reporter import ExitCodeReporter, StageFailed
from build_graph.run.summary import Facts
from build_graph.stages import build, promote, push, trust
from build_graph.stages import compile as compile_stage
from build_graph.stages import render as render_stage
from build_graph.stages import verify as verify_stage

DoitTask = dict[str, Any]


def doit_config(stack: Stack) -> dict[str, Any]:
    reporter = type(
        "StackReporter",
        (ExitCodeReporter,),
        {
            "summary_file": stack.build_folder.run_summary,
            "summary_title": f"{stack.name} ({stack.manifest.name})",
        },
    )
    return {
        "dep_file": str(stack.build_folder.doit_db),
        "backend": "json",
        "default_tasks": ["promote"],
        "verbosity": 2,
        "reporter": reporter,
        # `doit -n N` runs tasks in threads of this process, not forked processes: a fork
        # would share the Docker client's open connections between processes.
        "par_type": "thread",
    }


def action(
    stage: str,
    tier: PlannedTier,
    fn: Callable[..., Facts | None],
    *args: Any,
    folder: TierFolder | None = None,
    key: str | None = None,
) -> Callable[[], TaskFailed | Facts]:
    """A doit python-action for one stage of one tier. Its output goes to the tier's
    logs/<stage>.log (and to the terminal when verbose); our errors become a clean
    StageFailed with the cause's exit code (no traceback); Ctrl-C becomes one line and
    exit 130. What the stage returns (its facts: a digest, a hit rate, ...) becomes the
    task's doit values, which the run summary reads."""
    path = (folder or tier.folder).log(stage)

    def run() -> TaskFailed | Facts:
        with task_log(path):
            try:
                facts = fn(*args) or {}
            except BuildGraphError as exc:
                if isinstance(exc, DaemonUnreachable):  # say which task wanted it
                    exc = exc.needs(f"{stage}:{key or tier.key}")
                log(f"error: {exc}")
                return StageFailed(str(exc), exc.exit_code, path)
            except KeyboardInterrupt:
                interrupted(f"{stage} of {key or tier.key}")
        return facts

    run.__name__ = fn.__name__
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
    stack: Stack
    planned: list[PlannedTier]

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
    def by_key(self) -> dict[str, PlannedTier]:
        return {t.key: t for t in self.planned}

    def describe(self, tier: PlannedTier) -> str:
        return (
            f"{tier.spec.description or tier.spec.name} ({self._base(tier)}; {self._summary(tier)})"
        )

    def _base(self, tier: PlannedTier) -> str:
        return f"on {tier.parent_key}" if tier.parent_key else f"from {tier.spec.from_image}"

    def _summary(self, tier: PlannedTier) -> str:
        """The key versions: python, torch, CUDA, cuDNN, and the archs a compile targets."""
        variant = self.stack.variant(tier.spec.variant)
        facts = [
            f"{k} {variant.versions[k]}"
            for k in ("python", "torch", "cuda", "cudnn")
            if k in variant.versions
        ]
        if variant.gpu.arch_list and tier.spec.compile:
            facts.append(f"archs {variant.gpu.torch_cuda_arch_list}")
        return ", ".join(facts)

    @cached_property
    def groups(self) -> dict[str, list[PlannedTier]]:
        """group key -> its images (one per platform for a tier built per platform)."""
        return groups(self.planned)

    def promote_task(self, tier: PlannedTier) -> str:
        """The promote task of a tier's image: per platform images share their tier's."""
        return f"promote:{tier.group_key}"

    def tiers(self) -> Iterator[DoitTask]:
        """`doit <tier>`: the tier through promote, one task per tier and variant, and per
        platform (`doit <tier>/arm64`: that platform's image through verify). With variants,
        `doit <tier>` is every variant of it. `doit list` shows these."""
        for key, images in self.groups.items():
            if images[0].platform:
                yield self._group_task(key, images)
            for tier in images:
                stages = [f"{stage}:{tier.key}" for stage in STAGES if stage != "promote"]
                if not tier.platform:
                    stages.append(self.promote_task(tier))
                yield {
                    "basename": tier.key,
                    "actions": None,
                    "doc": self.describe(tier),
                    "task_dep": [stages[-1]],
                    "meta": {
                        "tier": {
                            "key": tier.key,
                            "base": self._base(tier),
                            "summary": self._summary(tier),
                            "description": tier.spec.description or tier.spec.name,
                            "tasks": stages,
                            "changes": partial(explain.changes, tier),
                            "registry": partial(self.registry_holds, tier),
                        }
                    },
                }
        if self.stack.has_variants:
            for name in dict.fromkeys(t.spec.name for t in self.planned):
                keys = list(dict.fromkeys(t.group_key for t in self.planned if t.spec.name == name))
                yield {
                    "basename": name,
                    "actions": None,
                    "task_dep": keys,
                    "doc": f"{name} in every variant ({', '.join(keys)})",
                }

    def _group_task(self, key: str, images: list[PlannedTier]) -> DoitTask:
        """`doit <tier>` of a tier built per platform: every platform, then the index."""
        first = images[0]
        parent = self.by_key[first.parent_key].group_key if first.parent_key else None
        tasks = [f"{stage}:{t.key}" for t in images for stage in STAGES if stage != "promote"]

        def each(fn: Callable[[PlannedTier], list[str]]) -> list[str]:
            return [f"{t.key}: {line}" for t in images for line in fn(t)]

        return {
            "basename": key,
            "actions": None,
            "task_dep": [f"promote:{key}"],
            "doc": self._group_doc(images),
            "meta": {
                "tier": {
                    "key": key,
                    "base": f"on {parent}" if parent else f"from {first.spec.from_image}",
                    "summary": f"{self._summary(first)}; "
                    + ", ".join(str(t.platform) for t in images),
                    "description": first.spec.description or first.spec.name,
                    "tasks": [*tasks, f"promote:{key}"],
                    "changes": partial(each, explain.changes),
                    "registry": partial(each, self.registry_holds),
                }
            },
        }

    def _group_doc(self, images: list[PlannedTier]) -> str:
        platforms = ", ".join(str(t.platform) for t in images)
        return f"{self.describe(images[0]).split(' (')[0]} ({platforms}: one index per human tag)"

    def registry_holds(self, tier: PlannedTier) -> list[str]:
        return account.registry_holds(tier, self.holdings)

    def stage(self, name: str) -> Iterator[DoitTask]:
        yield {"basename": name, "name": None, "doc": STAGES[name]}
        if name == "promote":  # one promote per tier: of its image, or of its index
            for key, images in self.groups.items():
                task = (
                    self._promote_index(images) if images[0].platform else self._promote(images[0])
                )
                doc = self._group_doc(images) if images[0].platform else self.describe(images[0])
                yield {"basename": name, "name": key, "doc": doc, **task}
            return
        make = getattr(self, f"_{name}")
        for tier in self.planned:
            task = make(tier)
            if task is not None:
                yield {"basename": name, "name": tier.key, "doc": self.describe(tier), **task}

    def _render(self, tier: PlannedTier) -> DoitTask:
        return {
            "actions": [action("render", tier, render_stage.render, tier)],
            "targets": list(render_stage.rendered_files(tier)),
            "uptodate": [config_changed(render_stage.rendered_digest(tier))],
            "verbosity": 1,
        }

    def _compile(self, tier: PlannedTier) -> DoitTask | None:
        if tier.builder_key is None:
            return None
        builder = self.by_key[tier.builder_key]
        return {
            "actions": [
                action("compile", tier, compile_stage.compile_tier, self.stack, tier, builder)
            ],
            "task_dep": [f"render:{tier.key}", f"build:{builder.key}"],
            "uptodate": [
                Condition(
                    f"{tier.image} exists, or {tier.folder.wheels} holds wheels of compile "
                    f"inputs {tier.compile_hash}",
                    compile_stage.compiled,
                    tier,
                    self.holdings,
                )
            ],
        }

    def _build(self, tier: PlannedTier) -> DoitTask:
        deps = [f"render:{tier.key}"]
        deps += [f"build:{tier.parent_key}"] if tier.parent_key else []
        deps += [f"compile:{tier.key}"] if tier.builder_key else []
        return {
            "actions": [action("build", tier, build.build, self.stack, tier, self.holdings)],
            "task_dep": deps,
            "uptodate": [
                Condition(
                    f"the registry holds {tier.image}, or the daemon here has it",
                    build.image_available,
                    tier,
                    self.holdings,
                )
            ],
        }

    def _push(self, tier: PlannedTier) -> DoitTask:
        return {
            "actions": [action("push", tier, push.push, tier, self.holdings)],
            "task_dep": [f"build:{tier.key}"],
            "uptodate": [
                Condition(
                    f"the registry holds {tier.image}",
                    push.pushed,
                    tier,
                    self.holdings,
                    facts=partial(self._digest, tier),
                )
            ],
        }

    def _digest(self, tier: PlannedTier) -> Facts:
        """The digest the registry named for the hash tag in this run's round."""
        digest = self.holdings.answer(tier.image).digest
        return {"digest": str(digest)} if digest else {}

    def _verify(self, tier: PlannedTier) -> DoitTask:
        return {
            "actions": [action("verify", tier, verify_stage.verify, tier, self.holdings)],
            "task_dep": [f"push:{tier.key}"],
            "uptodate": [
                Condition(
                    f"the registry holds a passing verify report for {tier.image}'s digest "
                    "and these checks",
                    verify_stage.verified,
                    tier,
                    self.holdings,
                )
            ],
        }

    def _promote_index(self, images: list[PlannedTier]) -> DoitTask:
        first = images[0]
        deps = [f"verify:{image.key}" for image in images]
        deps += [self.promote_task(self.by_key[first.parent_key])] if first.parent_key else []
        verify_first = {
            image.key: partial(verify_stage.verify, image, self.holdings) for image in images
        }
        return {
            "actions": [
                action(
                    "promote",
                    first,
                    promote.promote_index,
                    images,
                    self.holdings,
                    verify_first,
                    key=first.group_key,
                    # the tier's own folder, above its platforms': the log
                    folder=self.stack.build_folder.tier(first.spec.variant, first.spec.name),
                )
            ],
            "task_dep": deps,
            "uptodate": [
                Condition(
                    f"every human tag ({', '.join(first.human_tags) or 'none'}) names the "
                    f"index of the verified images of {', '.join(str(i.platform) for i in images)}",
                    promote.index_promoted,
                    images,
                    self.holdings,
                )
            ],
        }

    def _promote(self, tier: PlannedTier) -> DoitTask:
        deps = [f"verify:{tier.key}"]
        deps += [self.promote_task(self.by_key[tier.parent_key])] if tier.parent_key else []
        verify_first = partial(verify_stage.verify, tier, self.holdings)
        return {
            "actions": [
                action("promote", tier, promote.promote, tier, self.holdings, verify_first)
            ],
            "task_dep": deps,
            "uptodate": [
                Condition(
                    f"every human tag ({', '.join(tier.human_tags) or 'none'}) names the "
                    "verified digest in the registry",
                    promote.promoted,
                    tier,
                    self.holdings,
                )
            ],
        }
