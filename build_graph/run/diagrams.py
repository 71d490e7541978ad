"""The stack and the run as pictures: Mermaid (GitHub renders it in Markdown) and Graphviz dot.

A `flowchart` of the tiers (an edge from each parent, a dashed one from each builder),
coloured by what happened to each in a run; a `gantt` timeline of the stages that ran, one
section per tier, so tiers that ran side by side show so and the long bar is where the time
went; and the same graph as dot for `python -m build_graph graph --format dot`.

Every name is written so that neither renderer can read it as syntax: Mermaid labels as
entity codes (`#35;` for '#', https://mermaid.js.org/syntax/flowchart.html#entity-codes-to-
escape-characters), Gantt sections and task names from a fixed safe alphabet, dot strings
quoted with their quotes and backslashes escaped. Node ids are positions, never names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # read by attribute only: drawing needs no planner loaded
    from build_graph.plan.plan import PlannedTier

# What happened to a tier in a run -> (Mermaid class, words in its box, fill, stroke)
STATES: dict[str, tuple[str, str, str]] = {
    "rebuilt": ("built", "#c8e6c9", "#2e7d32"),
    "not rebuilt": ("checked", "#e3f2fd", "#1565c0"),  # pushed, verified or promoted only
    "up to date": ("current", "#eceff1", "#78909c"),
    "failed": ("failed", "#ffcdd2", "#c62828"),
    "not run": ("kept", "#fff3cd", "#b28704"),  # an earlier stage failed: kept from running
    "not in this run": ("absent", "#ffffff", "#b0bec5"),
}
LEGEND = (
    "green: built in this run; blue: not rebuilt, but pushed, verified or promoted; "
    "grey: up to date (nothing to do); red: failed; "
    "yellow: kept from running by a failure before it; white: not part of this run"
)
SHORTEST = 0.05  # seconds: a shorter stage is left out of the timeline
MOST = 400  # stages a timeline draws at most (about 60 characters each)
_SAFE_LABEL = re.compile(r"[A-Za-z0-9 .,/@()+=:%_-]")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9@/._+ -]")


@dataclass(frozen=True)
class Node:
    """One box: a tier's key, the keys it is built on (its parent, or a multi-platform
    tier's platform images) and the builder whose wheels it installs."""

    key: str
    parents: tuple[str, ...] = ()
    builder: str | None = None


@dataclass(frozen=True)
class Span:
    """One stage of one tier that ran: when it began (seconds since the epoch) and for how
    long; `failed` when it ended in a failure."""

    key: str
    stage: str
    start: float
    seconds: float
    failed: bool = False


def nodes_of(planned: Iterable[PlannedTier]) -> list[Node]:
    """The graph of a plan: every image, and for a tier built per platform its group (the
    index promote publishes), in the plan's order."""
    found: dict[str, Node] = {}
    groups: dict[str, list[str]] = {}
    for tier in planned:
        parent = (tier.parent_key,) if tier.parent_key else ()
        found[tier.key] = Node(tier.key, parent, tier.builder_key)
        if tier.platform is not None:
            groups.setdefault(tier.group_key, []).append(tier.key)
    for group, images in groups.items():
        found[group] = Node(group, tuple(images))
    return list(found.values())


def flowchart(
    nodes: Sequence[Node],
    state: Mapping[str, str] | None = None,
    *,
    notes: Mapping[str, str] | None = None,
) -> str:
    """A Mermaid flowchart, left to right. With `state` (key -> one of STATES), each box is
    coloured by what happened to it and says so in words (a picture read without colour
    says the same); `notes` adds a second line to a box (its time, its tag)."""
    ids = {node.key: f"t{i}" for i, node in enumerate(nodes)}
    lines = ["flowchart LR"]
    for node in nodes:
        words = [node.key]
        if state is not None:
            words.append(state.get(node.key, "not in this run"))
        if notes and notes.get(node.key):
            words.append(notes[node.key])
        label = "<br/>".join(label_text(word) for word in words)
        kind = STATES[state.get(node.key, "not in this run")][0] if state is not None else ""
        lines.append(f'  {ids[node.key]}["{label}"]' + (f":::{kind}" if kind else ""))
    for node in nodes:
        for parent in node.parents:
            if parent in ids:
                lines.append(f"  {ids[parent]} --> {ids[node.key]}")
        if node.builder in ids:
            lines.append(f"  {ids[node.builder]} -. wheels .-> {ids[node.key]}")
    if state is not None:
        lines += [
            f"  classDef {kind} fill:{fill},stroke:{stroke},color:#000"
            for kind, fill, stroke in STATES.values()
        ]
    return "\n".join(lines) + "\n"


def gantt(
    spans: Sequence[Span], title: str = "where the time went", order: Sequence[str] = ()
) -> str:
    """A Mermaid Gantt chart of the stages that ran, a section per tier (in `order`, the
    graph's, then in the order they first started); times are the viewer's clock (the
    axis), bars are wall time. Failed stages are marked `crit` (red). Stages under SHORTEST
    seconds are not drawn (a bar no one can see, whose label hides the next's)."""
    lines = [
        "gantt",
        f"  title {safe_name(title)}",
        "  dateFormat x",
        "  axisFormat %H:%M:%S",
        "  todayMarker off",
    ]
    by_tier: dict[str, list[Span]] = {key: [] for key in order}
    for span in sorted(drawn(spans), key=lambda s: (s.start, s.stage)):
        by_tier.setdefault(span.key, []).append(span)
    for key, rows in by_tier.items():
        if not rows:
            continue
        lines.append(f"  section {safe_name(key)}")
        for span in rows:
            begin = int(span.start * 1000)
            end = begin + max(1, round(span.seconds * 1000))
            tags = "crit, " if span.failed else ""
            lines.append(f"    {safe_name(span.stage)} {took(span.seconds)} :{tags}{begin}, {end}")
    return "\n".join(lines) + "\n"


def drawn(spans: Sequence[Span]) -> list[Span]:
    """The spans a timeline draws: failures always, others of SHORTEST seconds or more; of
    a matrix stack's thousands, the MOST longest (Mermaid refuses a diagram past 50,000
    characters)."""
    shown = [span for span in spans if span.failed or span.seconds >= SHORTEST]
    if len(shown) <= MOST:
        return shown
    kept = set(sorted(range(len(shown)), key=lambda i: -shown[i].seconds)[:MOST])
    return [span for i, span in enumerate(shown) if i in kept or span.failed]


def took(seconds: float) -> str:
    """'9.5s', '5m03s', '3h07m': a bar's label."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes = int(seconds // 60)
    return (
        f"{minutes}m{int(seconds % 60):02d}s"
        if minutes < 60
        else f"{minutes // 60}h{minutes % 60:02d}m"
    )


def dot(nodes: Sequence[Node], notes: Mapping[str, str] | None = None) -> str:
    """The same graph for Graphviz (`dot -Tsvg`): parents solid, builders dashed."""
    lines = ["digraph stack {", "  rankdir=LR;", '  node [shape=box, fontname="sans-serif"];']
    for node in nodes:
        parts = [node.key, *([notes[node.key]] if notes and notes.get(node.key) else [])]
        lines.append(f"  {_quoted(node.key)} [label={_quoted(*parts)}];")
    known = {node.key for node in nodes}
    for node in nodes:
        for parent in node.parents:
            if parent in known:
                lines.append(f"  {_quoted(parent)} -> {_quoted(node.key)};")
        if node.builder in known:
            lines.append(
                f"  {_quoted(node.builder or '')} -> {_quoted(node.key)}"
                ' [style=dashed, label="wheels"];'
            )
    return "\n".join(lines) + "\n}\n"


def label_text(text: str) -> str:
    """`text` for inside a quoted Mermaid label: every character outside a small safe set as
    its entity code, so no name can close the label, start markup or a directive."""
    return "".join(c if _SAFE_LABEL.fullmatch(c) else f"#{ord(c)};" for c in text)


def safe_name(text: str) -> str:
    """A Gantt section, task name or title: characters outside [A-Za-z0-9@/._+-] and the
    space become '_' (there ':' and '#' are syntax, and entity codes are not read)."""
    return _UNSAFE_NAME.sub("_", " ".join(text.split()))


def _quoted(*lines: str) -> str:
    """A dot string of `lines` (joined by dot's own line break): backslashes and quotes
    escaped, no raw line breaks."""
    escaped = (" ".join(line.split()).replace("\\", "\\\\").replace('"', '\\"') for line in lines)
    return '"' + "\\n".join(escaped) + '"'
