"""`doit list` and `doit info` in the user's words: tiers, and why a tier would run.

Registered as doit command plugins in pyproject.toml ([tool.doit.plugins.command]).
`doit list` prints one line per tier (and variant): its base, key versions and
description; `--status` adds what a run would do to it. `doit info <tier>` says in
sentences which stage would run and why, and which inputs changed since the last push.
Any other use (`--all`, task names, templates, `info <stage>:<tier>`) is doit's own.
"""

from __future__ import annotations

import io
import sys
from typing import Any

from doit.cmd_info import Info
from doit.cmd_list import List
from doit.exceptions import InvalidCommand

from build_graph.errors import BuildGraphError, EnvironmentProblem, did_you_mean
from build_graph.stages import pipeline


def _shown() -> set[str]:
    """What a run does to a tier, as `--status` says it: the stages with a check of their
    own (rendering, doit's own target check, is local bookkeeping)."""
    return {stage.name for stage in pipeline.stages() if stage.done is not None}


def _environment_errors(tasks: list[Any]) -> list[BuildGraphError]:
    """The problems (registry, daemon) that stopped the up-to-date checks of `tasks` from
    getting an answer: a status computed past them would be a guess."""
    found: dict[str, BuildGraphError] = {}
    for task in tasks:
        for entry in task.uptodate:
            error = getattr(entry[0] if isinstance(entry, tuple) else entry, "error", None)
            if isinstance(error, EnvironmentProblem):
                found.setdefault(str(error), error)
    return list(found.values())


def _could_not_ask(errors: list[BuildGraphError]) -> int:
    """One 'error:' line (the first problem; they share a cause), exit 3 (the environment)."""
    first = errors[0]
    more = f" (and {len(errors) - 1} more like it)" if len(errors) > 1 else ""
    print(f"error: no status: {str(first).splitlines()[0]}{more}", file=sys.stderr)
    return first.exit_code


def _tiers(task_list: list[Any]) -> list[Any]:
    return [t for t in task_list if isinstance(t.meta, dict) and "tier" in t.meta]


def _plan(command: Any, tier_task: Any, tasks: dict[str, Any]) -> list[tuple[str, Any]]:
    """(stage, task) for each stage task of the tier that would run, in pipeline order
    (a platform's image shares its tier's promote: the meta names the tasks)."""
    facts = tier_task.meta["tier"]
    names = facts["tasks"]
    pending = []
    for name in names:
        stage, _, key = name.partition(":")
        task = tasks.get(name)
        if (
            stage in _shown()
            and task is not None
            and command.dep_manager.get_status(task, tasks).status != "up-to-date"
        ):
            pending.append((stage if key == facts["key"] else name, task))
    return pending


class TierList(List):  # type: ignore[misc]
    doc_purpose = "list the tiers (--status: what a run would do to each; --all: every task)"

    def _execute(
        self,
        subtasks: bool = False,
        quiet: bool = True,
        status: bool = False,
        private: bool = False,
        list_deps: bool = False,
        template: Any = None,
        sort: str = "name",
        pos_args: Any = None,
    ) -> int:
        tiers = _tiers(self.task_list)
        if subtasks or private or list_deps or template or pos_args or not tiers:
            # doit's own listing; with --status, held back until every check got an answer
            shown: Any = getattr(self, "outstream")  # noqa: B009 (doit sets it untyped)
            held = io.StringIO()
            self.outstream = held
            try:
                code = int(
                    super()._execute(
                        subtasks, quiet, status, private, list_deps, template, sort, pos_args
                    )
                )
            finally:
                self.outstream = shown
            listing = held.getvalue()
            errors = _environment_errors(self.task_list) if status else []
            if errors:
                return _could_not_ask(errors)
            self.outstream.write(listing)
            return code
        tasks = {t.name: t for t in self.task_list}
        width = max(len(t.name) for t in tiers) + 2
        base_width = max(len(t.meta["tier"]["base"]) for t in tiers) + 2
        lines, checked = [], []
        for task in tiers:
            facts = task.meta["tier"]
            line = f"{task.name:<{width}}{facts['base']:<{base_width}}{facts['summary']}"
            plan = _plan(self, task, tasks) if status else []
            checked += [stage_task for _, stage_task in plan]
            lines.append((", ".join(stage for stage, _ in plan) or "up to date", line))
        errors = _environment_errors(checked)
        if errors:
            return _could_not_ask(errors)
        state_width = max(len(state) for state, _ in lines) + 2
        for state, line in lines:
            text = f"{state:<{state_width}}{line}" if status else line
            self.outstream.write(text.rstrip() + "\n")
        return 0


class TierInfo(Info):  # type: ignore[misc]
    doc_purpose = "say why a tier (or task) would run"

    def _execute(self, pos_args: list[str], hide_status: bool = False) -> int:
        tasks = {t.name: t for t in self.task_list}
        if len(pos_args) == 1 and pos_args[0] not in tasks:
            tiers = [t.name for t in _tiers(self.task_list)]
            raise InvalidCommand(
                f"no tier or task named {pos_args[0]!r}"
                f"{did_you_mean(pos_args[0], tiers or tasks)}; `doit list` "
                "shows the tiers, `doit list --all` every task"
            )
        task = tasks.get(pos_args[0]) if len(pos_args) == 1 else None
        if task is None or not isinstance(task.meta, dict) or "tier" not in task.meta:
            return int(super()._execute(pos_args, hide_status))
        facts = task.meta["tier"]
        out = self.outstream
        out.write(f"{task.name}: {facts['description']}\n  {facts['base']}; {facts['summary']}\n")
        out.write("The registry holds:\n")
        out.writelines(f"  - {line}\n" for line in facts["registry"]())
        pending = _plan(self, task, tasks)
        errors = _environment_errors([t for _, t in pending])
        if errors:
            return _could_not_ask(errors)
        if not pending:
            promoted = any(
                name.startswith(f"{pipeline.final()}:")
                for name in facts.get("tasks") or [f"{pipeline.final()}:"]
            )
            out.write(
                "Up to date: built, pushed, verified and promoted; a run does nothing.\n"
                if promoted
                else "Up to date: built, pushed and verified (its tier's "
                f"index: doit info {task.name.rsplit('/', 1)[0]}).\n"
            )
            return 0
        out.write(f"A run would {', '.join(stage for stage, _ in pending)}:\n")
        for stage, stage_task in pending:
            why = "; ".join(
                repr(u[0] if isinstance(u, tuple) else u).removeprefix("up to date when ")
                for u in stage_task.uptodate
            )
            out.write(f"  - {stage}: up to date only when {why}; that is not so now\n")
        changed = facts["changes"]()
        if changed:
            out.write("Changed since the last push recorded here:\n")
            out.writelines(f"  - {line}\n" for line in changed)
        return 1
