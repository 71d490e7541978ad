"""The run summary: per tier what ran, how long, the compiler cache, verify, digest, tags.

The reporter feeds it one event per task; at the end of a run it is written as Markdown to
`build/summary.md` (the last run's) and appended to `$GITHUB_STEP_SUMMARY` when that is set
(GitHub shows it on the run's page). The facts come from what the stages returned (stages
own them); a tier whose stages were all up to date shows the digest its push check read
from the registry in this run (never a note left by an earlier run).

Every value shown is escaped for a Markdown table (HTML, pipes, newlines): an error message
can carry a registry's or a build's text, which must not become markup on a CI page.
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from build_graph.fs import write_if_changed
from build_graph.run import diagrams
from build_graph.run.diagrams import Node, Span
from build_graph.stages import pipeline
from build_graph.stages.stage import Column, Outcome
from build_graph.stages.work import Facts

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
_CELL_LIMIT = 160
_MARKUP = re.compile(r"[\\`*_\[\]|~#!]")  # Markdown punctuation, escaped with a backslash


@dataclass
class TierRow:
    """What happened to one tier (one variant of it) in this run."""

    ran: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    up_to_date: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # stage -> first line of the error
    not_run: list[str] = field(default_factory=list)  # an earlier stage failed
    facts: Facts = field(default_factory=dict)

    def outcome_of(self, stage: str) -> Outcome:
        return Outcome(
            ran=stage in self.ran,
            up_to_date=stage in self.up_to_date,
            failed=self.failed.get(stage),
            not_run=stage in self.not_run,
        )

    @property
    def outcome(self) -> str:
        if self.failed:
            return "failed"
        return "rebuilt" if self.ran else "up to date" if self.up_to_date else "not run"


@dataclass
class RunSummary:
    """Collects the run's events; `markdown()` renders them in the graph's order."""

    title: str
    rows: dict[str, TierRow] = field(default_factory=dict)
    graph: tuple[Node, ...] = ()  # the stack's tiers and edges (empty: no picture of them)
    spans: list[Span] = field(default_factory=list)  # every stage that ran, for the timeline

    def _row(self, task_name: str) -> tuple[str, TierRow] | None:
        stage, _, key = task_name.partition(":")
        if stage not in pipeline.by_name() or not key:
            return None  # a tier's own task (`doit <tier>`), or not ours
        return stage, self.rows.setdefault(key, TierRow())

    def ran(self, task_name: str, seconds: float, facts: object, began: float = 0.0) -> None:
        """A stage that ran to its end: `began` is its start (seconds since the epoch)."""
        if (found := self._row(task_name)) is not None:
            stage, row = found
            row.ran[stage] = seconds
            self.spans.append(Span(task_name.partition(":")[2], stage, began, seconds))
            if isinstance(facts, dict):
                row.facts.update({str(k): str(v) for k, v in facts.items()})

    def up_to_date(self, task_name: str, facts: Facts | None = None) -> None:
        """A stage found up to date, with what its check read this run (a digest)."""
        if (found := self._row(task_name)) is not None:
            found[1].up_to_date.append(found[0])
            found[1].facts.update(facts or {})

    def failed(
        self, task_name: str, message: str, seconds: float | None, began: float = 0.0
    ) -> None:
        if (found := self._row(task_name)) is None:
            return
        stage, row = found
        if seconds is None:  # never started: a stage before it failed
            row.not_run.append(stage)
        else:
            row.ran[stage] = seconds
            row.failed[stage] = (message.strip().splitlines() or [""])[0]
            self.spans.append(Span(task_name.partition(":")[2], stage, began, seconds, True))

    def markdown(self) -> str:
        counts = {
            name: sum(1 for r in self.rows.values() if r.outcome == name)
            for name in ("rebuilt", "up to date", "failed", "not run")
        }
        total = sum(sum(r.ran.values()) for r in self.rows.values())
        headers = [column.header for _, column in _columns()]
        lines = [
            f"### build-graph: {cell(self.title)}",
            "",
            f"{len(self.rows)} tiers: "
            + ", ".join(f"{n} {name}" for name, n in counts.items() if n)
            + f"; {total:.1f} s in stages",
            "",
            "| " + " | ".join(["tier", "ran", "time", *headers]) + " |",
            "|" + "---|" * (3 + len(headers)),
        ]
        for key, row in self.rows.items():
            lines.append("| " + " | ".join(cell(c) for c in self._cells(key, row)) + " |")
        return "\n".join(lines + self._pictures()) + "\n"

    def _pictures(self) -> list[str]:
        """The stack coloured by what happened to each tier, and the timeline of what ran:
        Mermaid blocks, which GitHub draws on the run's page."""
        lines: list[str] = []
        if self.graph:
            state = {key: _drawn_as(row) for key, row in self.rows.items()}
            notes = {k: _note(r) for k, r in self.rows.items() if r.ran}
            chart = diagrams.flowchart(self.graph, state, notes=notes)
            lines += ["", "#### The stack", "", diagrams.LEGEND + ".", "", "```mermaid"]
            lines += [chart.rstrip("\n"), "```"]
        if drawn := diagrams.drawn(self.spans):
            lines += ["", "#### Where the time went", "", "```mermaid"]
            order = [node.key for node in self.graph]
            lines += [diagrams.gantt(drawn, order=order).rstrip("\n"), "```"]
            if left := len(self.spans) - len(drawn):
                lines += [
                    "",
                    f"{left} stages are not drawn (under {diagrams.SHORTEST} s, or past the "
                    f"{diagrams.MOST} longest).",
                ]
        return lines

    def _cells(self, key: str, row: TierRow) -> list[str]:
        ran = ", ".join(f"{s} FAILED" if s in row.failed else s for s in row.ran)
        if row.not_run:
            ran += ("; " if ran else "") + "not run: " + ", ".join(row.not_run)
        time_s = f"{sum(row.ran.values()):.1f} s" if row.ran else "-"
        # each stage's columns, from only what this run's stages or checks read
        stages = [column.cell(row.facts, row.outcome_of(stage)) for stage, column in _columns()]
        return [key, ran or "nothing (up to date)", time_s, *stages]

    def write(self, path: Path) -> list[str]:
        """Write the summary to `path` and append it to $GITHUB_STEP_SUMMARY when set.
        Returns the problems met (a summary never fails a run)."""
        text, problems = self.markdown(), []
        try:
            write_if_changed(path, text)
        except OSError as exc:
            problems.append(f"run summary not written to {path}: {exc}")
        step = os.environ.get(STEP_SUMMARY)
        if step:
            try:
                with open(step, "a", encoding="utf-8") as out:
                    out.write(text + "\n")
            except OSError as exc:
                problems.append(f"run summary not appended to ${STEP_SUMMARY} ({step}): {exc}")
        return problems


def _drawn_as(row: TierRow) -> str:
    """A tier's box in the picture: rebuilt only where it was built or compiled."""
    if row.outcome in ("failed", "up to date", "not run"):
        return row.outcome
    return "rebuilt" if {"build", "compile"} & row.ran.keys() else "not rebuilt"


def _note(row: TierRow) -> str:
    """'verify, promote: 2.3 s' for a tier not rebuilt; '9.4 s' for one that was."""
    seconds = f"{sum(row.ran.values()):.1f} s"
    return seconds if _drawn_as(row) == "rebuilt" else f"{', '.join(row.ran)}: {seconds}"


def cell(value: str) -> str:
    """One table cell: no markup, no line breaks, no column breaks, bounded."""
    text = " ".join(str(value).split())
    if len(text) > _CELL_LIMIT:
        text = text[: _CELL_LIMIT - 3] + "..."
    return html.escape(_MARKUP.sub(r"\\\g<0>", text), quote=False)


def _columns() -> list[tuple[str, Column]]:
    """(stage, column) for every summary column the pipeline's stages declare, in order."""
    return [(stage.name, column) for stage in pipeline.stages() for column in stage.columns]
