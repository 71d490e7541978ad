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
from build_graph.log import log, shown, task_log
from build_graph.manifest.model import STAGES, Stack
from build_graph.oci.digest import Digest
from build_graph.oci.refs import Presence
from build_graph.plan.plan import PlannedTier
from build_graph.registry.availability import Availability
from build_graph.run import explain
from build_graph.run.reporter import ExitCodeReporter, StageFailed
from build_graph.run.summary import Facts
from build_graph.stages import build, promote, push, trust
from build_graph.stages import compile as compile_stage
from build_graph.stages import render as render_stage
from build_graph.stages import verify as verify_stage

DoitTask = dict[str, Any]


def doit_config(stack: Stack) -> dict[str, Any]:
    reporter = type("StackReporter", (ExitCodeReporter,), {
        "summary_file": stack.build_folder.run_summary,
        "summary_title": f"{stack.name} ({stack.manifest.name})"})
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


def action(stage: str, tier: PlannedTier, fn: Callable[..., Facts | None],
           *args: Any) -> Callable[[], TaskFailed | Facts]:
    """A doit python-action for one stage of one tier. Its output goes to the tier's
    logs/<stage>.log (and to the terminal when verbose); our errors become a clean
    StageFailed with the cause's exit code (no traceback); Ctrl-C becomes one line and
    exit 130. What the stage returns (its facts: a digest, a hit rate, ...) becomes the
    task's doit values, which the run summary reads."""
    path = tier.folder.log(stage)

    def run() -> TaskFailed | Facts:
        with task_log(path):
            try:
                facts = fn(*args) or {}
            except BuildGraphError as exc:
                if isinstance(exc, DaemonUnreachable):  # say which task wanted it
                    exc = exc.needs(f"{stage}:{tier.key}")
                log(f"error: {exc}")
                return StageFailed(str(exc), exc.exit_code, path)
            except KeyboardInterrupt:
                interrupted(f"{stage} of {tier.key}")
        return facts

    run.__name__ = fn.__name__
    return run


class Condition:
    """An uptodate callable that `doit info` prints as the sentence it tests.

    A problem while checking (daemon down, registry unreachable, ...) reads as 'not up to
    date' for a run (the action then runs and explains it), and is kept in `error`: `doit
    list --status` and `doit info` report it instead of a plan made of guesses.
    """

    def __init__(self, says: str, fn: Callable[..., bool], *args: Any,
                 facts: Callable[[], Facts] | None = None) -> None:
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
            holdings.register([tier.image, *map(tier.human_ref, tier.human_tags),
                           *trust.expected_refs(tier)])
        return holdings

    @cached_property
    def by_key(self) -> dict[str, PlannedTier]:
        return {t.key: t for t in self.planned}

    def describe(self, tier: PlannedTier) -> str:
        return f"{tier.spec.description or tier.spec.name} ({self._base(tier)}; " \
               f"{self._summary(tier)})"

    def _base(self, tier: PlannedTier) -> str:
        return f"on {tier.parent_key}" if tier.parent_key else f"from {tier.spec.from_image}"

    def _summary(self, tier: PlannedTier) -> str:
        """The key versions: python, torch, CUDA, cuDNN, and the archs a compile targets."""
        variant = self.stack.variant(tier.spec.variant)
        facts = [f"{k} {variant.versions[k]}" for k in ("python", "torch", "cuda", "cudnn")
                 if k in variant.versions]
        if variant.gpu.arch_list and tier.spec.compile:
            facts.append(f"archs {variant.gpu.torch_cuda_arch_list}")
        return ", ".join(facts)

    def tiers(self) -> Iterator[DoitTask]:
        """`doit <tier>`: the tier through promote, one task per tier and variant; with
        variants, `doit <tier>` is every variant of it. `doit list` shows these."""
        for tier in self.planned:
            yield {"basename": tier.key, "actions": None, "doc": self.describe(tier),
                   "task_dep": [f"promote:{tier.key}"],
                   "meta": {"tier": {"key": tier.key, "base": self._base(tier),
                                     "summary": self._summary(tier),
                                     "description": tier.spec.description or tier.spec.name,
                                     "changes": partial(explain.changes, tier),
                                     "registry": partial(self.registry_holds, tier)}}}
        if self.stack.has_variants:
            for name in dict.fromkeys(t.spec.name for t in self.planned):
                keys = [t.key for t in self.planned if t.spec.name == name]
                yield {"basename": name, "actions": None, "task_dep": keys,
                       "doc": f"{name} in every variant ({', '.join(keys)})"}

    def registry_holds(self, tier: PlannedTier) -> list[str]:
        """What the registry holds for the tier, asked now: `doit info`'s account."""
        image = self.holdings.registry(tier.image)
        if image.presence is not Presence.PRESENT or image.digest is None:
            lines = [f"{tier.image}: " + (f"could not ask ({image.error})" if image.error
                                          else "not in the registry")]
            for name in tier.human_tags:
                tag = self.holdings.registry(f"{tier.repository}:{name}")
                lines.append(f"{tier.repository}:{name} -> "
                             f"{tag.digest or ('could not ask' if tag.error else 'absent')}")
            return lines
        lines = [f"{tier.image} = {image.digest}"]
        for name in tier.human_tags:
            tag = self.holdings.registry(f"{tier.repository}:{name}")
            where = ("the same digest" if tag.digest == image.digest else tag.digest
                     if tag.digest else "could not ask" if tag.error else "absent")
            lines.append(f"{tier.repository}:{name} -> {where}")
        try:
            report = trust.passing_report(tier, image.digest, self.holdings)
        except BuildGraphError as exc:
            report, lines = None, [*lines, f"verify report: could not read ({exc})"]
        if report is not None:
            by = report.get("made_by")
            by = by if isinstance(by, dict) else {}
            lines.append(f"verify report: passed ({shown(report.get('summary'))}; GPU "
                         f"{shown(report.get('gpu'))}), made on "
                         f"{shown(by.get('host', '?'))} at {shown(by.get('at', '?'))}")
            fingerprint = str(report.get("fingerprint"))
            lines.append(f"  at {trust.store(tier).ref(image.digest, fingerprint)}")
        else:
            lines.append("verify report: none that passed for this digest and these checks")
        return [*lines, self._sbom(tier, image.digest)]

    def _sbom(self, tier: PlannedTier, digest: Digest) -> str:
        """Where the image's SBOM is (`python -m build_graph sbom` prints it)."""
        ref = trust.store(tier).sbom_ref(digest)
        sbom = self.holdings.registry(ref)
        return (f"SBOM: {ref}" if sbom.presence is Presence.PRESENT
                else f"SBOM: could not ask ({sbom.error})" if sbom.error
                else "SBOM: none stored for this digest")

    def stage(self, name: str) -> Iterator[DoitTask]:
        yield {"basename": name, "name": None, "doc": STAGES[name]}
        make = getattr(self, f"_{name}")
        for tier in self.planned:
            task = make(tier)
            if task is not None:
                yield {"basename": name, "name": tier.key, "doc": self.describe(tier), **task}

    def _render(self, tier: PlannedTier) -> DoitTask:
        return {"actions": [action("render", tier, render_stage.render, tier)],
                "targets": list(render_stage.rendered_files(tier)),
                "uptodate": [config_changed(render_stage.rendered_digest(tier))],
                "verbosity": 1}

    def _compile(self, tier: PlannedTier) -> DoitTask | None:
        if tier.builder_key is None:
            return None
        builder = self.by_key[tier.builder_key]
        return {"actions": [action("compile", tier, compile_stage.compile_tier, self.stack, tier,
                                      builder)],
                "task_dep": [f"render:{tier.key}", f"build:{builder.key}"],
                "uptodate": [Condition(
                    f"{tier.image} exists, or {tier.folder.wheels} holds wheels of compile "
                    f"inputs {tier.compile_hash}", compile_stage.compiled, tier, self.holdings)]}

    def _build(self, tier: PlannedTier) -> DoitTask:
        deps = [f"render:{tier.key}"]
        deps += [f"build:{tier.parent_key}"] if tier.parent_key else []
        deps += [f"compile:{tier.key}"] if tier.builder_key else []
        return {"actions": [action("build", tier, build.build, self.stack, tier, self.holdings)],
                "task_dep": deps, "uptodate": [Condition(
                    f"the registry holds {tier.image}, or the daemon here has it",
                    build.image_available, tier, self.holdings)]}

    def _push(self, tier: PlannedTier) -> DoitTask:
        return {"actions": [action("push", tier, push.push, tier, self.holdings)],
                "task_dep": [f"build:{tier.key}"],
                "uptodate": [Condition(f"the registry holds {tier.image}", push.pushed,
                                       tier, self.holdings,
                                       facts=partial(self._digest, tier))]}

    def _digest(self, tier: PlannedTier) -> Facts:
        """The digest the registry named for the hash tag in this run's round."""
        digest = self.holdings.answer(tier.image).digest
        return {"digest": str(digest)} if digest else {}

    def _verify(self, tier: PlannedTier) -> DoitTask:
        return {"actions": [action("verify", tier, verify_stage.verify, tier, self.holdings)],
                "task_dep": [f"push:{tier.key}"],
                "uptodate": [Condition(
                    f"the registry holds a passing verify report for {tier.image}'s digest "
                    "and these checks", verify_stage.verified, tier, self.holdings)]}

    def _promote(self, tier: PlannedTier) -> DoitTask:
        deps = [f"verify:{tier.key}"]
        deps += [f"promote:{tier.parent_key}"] if tier.parent_key else []
        verify_first = partial(verify_stage.verify, tier, self.holdings)
        return {"actions": [action("promote", tier, promote.promote, tier, self.holdings,
                                   verify_first)],
                "task_dep": deps,
                "uptodate": [Condition(
                    f"every human tag ({', '.join(tier.human_tags) or 'none'}) names the "
                    "verified digest in the registry",
                    promote.promoted, tier, self.holdings)]}

