"""The stack and the run as pictures: what the Mermaid and dot texts say, and that no name
can become syntax in them. (tests/integration/test_mermaid_browser.py draws them in
Chromium with Mermaid's own renderer.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from build_graph.run import diagrams
from build_graph.run.diagrams import Node, Span
from build_graph.run.summary import RunSummary
from tests.helpers import MINIMAL, REPO, load_text

HOSTILE = [
    '"]; click t0 call alert(1); x["',
    "a<script>alert(1)</script>",
    "%%{init: {'securityLevel': 'loose'}}%%",
    "line\nbreak --> t1",
    "#quot; ; : # ` |",
]


def mermaid_lines(chart: str) -> list[str]:
    return chart.strip("\n").splitlines()


def test_the_quickstart_graph_has_each_parent_and_builder_edge() -> None:
    planned = plan(load(REPO / "examples" / "quickstart" / "images.toml"))
    nodes = diagrams.nodes_of(planned)
    assert [n.key for n in nodes] == ["builder", "fastext", "base", "training", "runner"]
    chart = diagrams.flowchart(nodes)
    assert mermaid_lines(chart)[0] == "flowchart LR"
    ids = {m[2]: m[1] for m in re.finditer(r'(t\d+)\["([^"<]*)', chart)}
    assert f"{ids['builder']} -. wheels .-> {ids['fastext']}" in chart
    for parent, child in (("fastext", "base"), ("base", "training"), ("training", "runner")):
        assert f"{ids[parent]} --> {ids[child]}" in chart
    assert chart.count("-->") == 3 and chart.count(".->") == 1
    assert "classDef" not in chart  # no run: no colours


def test_a_multi_platform_tier_has_a_box_per_image_and_one_for_its_index(tmp_path: Path) -> None:
    two = '["linux/amd64", "linux/arm64"]'
    text = MINIMAL.replace(
        'registry = "127.0.0.1:5000/demo"', f'registry = "127.0.0.1:5000/demo"\nplatforms = {two}'
    )
    nodes = {n.key: n for n in diagrams.nodes_of(plan(load_text(tmp_path, text)))}
    assert {"base/amd64", "base/arm64", "base"} <= set(nodes)
    assert nodes["base"].parents == ("base/amd64", "base/arm64")
    assert nodes["base/arm64"].parents == ()


@pytest.mark.parametrize("hostile", HOSTILE)
def test_no_name_becomes_mermaid_syntax(hostile: str) -> None:
    label = diagrams.label_text(hostile)
    assert re.fullmatch(r"(?:[A-Za-z0-9 .,/@()+=:%_-]|#\d+;)*", label), label
    chart = diagrams.flowchart([Node(hostile), Node("b", (hostile,))], {hostile: "failed"})
    body = mermaid_lines(chart)
    assert len(body) == 1 + 2 + 1 + len(diagrams.STATES)  # header, boxes, one edge, classes
    assert body[1].startswith('  t0["') and body[1].endswith('"]:::failed')
    assert body[3] == "  t0 --> t1"
    name = diagrams.safe_name(hostile)
    assert re.fullmatch(r"[A-Za-z0-9@/._+ -]*", name), name
    timeline = diagrams.gantt([Span(hostile, hostile, 100.0, 1.5)], title=hostile)
    assert len(mermaid_lines(timeline)) == 5 + 2  # header lines, one section, one task


@pytest.mark.parametrize("hostile", HOSTILE)
def test_no_name_breaks_out_of_a_dot_string(hostile: str) -> None:
    text = diagrams.dot([Node(hostile), Node("b", (hostile,), hostile)], {hostile: hostile})
    # every string closes where it should: unescaped quotes come in pairs on each line
    for line in text.splitlines():
        quotes = len(re.findall(r'(?<!\\)(?:\\\\)*"', line))
        assert quotes % 2 == 0, line
    assert "\n" not in diagrams._quoted(hostile)
    assert text.count(" -> ") == 2


def test_the_timeline_has_a_section_per_tier_in_start_order_and_marks_failures() -> None:
    spans = [
        Span("base", "build", 1010.0, 5.0),
        Span("fastext", "compile", 1000.0, 9.5),
        Span("base", "verify", 1015.0, 2.0, failed=True),
        Span("fastext", "build", 1009.5, 0.0001),  # too short to see: not drawn
        Span("base", "push", 1015.0, 0.001, failed=True),  # a failure always is
    ]
    lines = mermaid_lines(diagrams.gantt(spans))
    assert lines[:4] == [
        "gantt",
        "  title where the time went",
        "  dateFormat x",
        "  axisFormat %H:%M:%S",
    ]
    assert lines[5:] == [
        "  section fastext",
        "    compile 9.5s :1000000, 1009500",
        "  section base",
        "    build 5.0s :1010000, 1015000",
        "    push 0.0s :crit, 1015000, 1015001",  # a bar is at least a millisecond wide
        "    verify 2.0s :crit, 1015000, 1017000",
    ]


def test_the_summary_draws_the_stack_by_outcome_and_the_stages_that_ran() -> None:
    graph = (
        Node("builder"),
        Node("fastext", (), "builder"),
        Node("base", ("fastext",)),
        Node("runner", ("base",)),
    )
    summary = RunSummary("t", graph=graph)
    summary.up_to_date("build:builder")
    summary.ran("verify:builder", 2.0, {}, 999.0)  # verified again, not rebuilt
    summary.ran("promote:builder", 0.01, {}, 1001.0)
    summary.ran("compile:fastext", 12.0, {}, 1000.0)
    summary.failed("verify:base", "boom", 2.0, 1013.0)
    summary.failed("promote:runner", "boom", None)
    text = summary.markdown()
    blocks = re.findall(r"```mermaid\n(.*?)```", text, re.S)
    assert len(blocks) == 2
    chart, timeline = blocks
    assert '["builder<br/>not rebuilt<br/>verify, promote: 2.0 s"]:::checked' in chart
    assert '["fastext<br/>rebuilt<br/>12.0 s"]:::built' in chart
    assert '["base<br/>failed<br/>verify: 2.0 s"]:::failed' in chart
    assert '["runner<br/>not run"]:::kept' in chart
    assert "section fastext" in timeline and "verify 2.0s :crit, 1013000, 1015000" in timeline
    assert diagrams.LEGEND in text
    assert "promote 0.0s" not in timeline and "1 stages are not drawn (under 0.05 s" in text


def test_a_run_where_nothing_ran_draws_the_stack_and_no_timeline() -> None:
    summary = RunSummary("t", graph=(Node("a"), Node("b", ("a",))))
    summary.up_to_date("build:a")
    summary.up_to_date("build:b")
    text = summary.markdown()
    assert text.count("```mermaid") == 1 and "Where the time went" not in text
    assert RunSummary("t").markdown().count("```mermaid") == 0  # no graph given: no picture


def test_the_graph_command_prints_mermaid_or_dot_from_the_plan(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from build_graph.cli.main import main

    manifest = str(REPO / "examples" / "quickstart" / "images.toml")
    planned = {t.key: t.content_hash[:12] for t in plan(load(Path(manifest)))}
    assert main(["graph", "--manifest", manifest, "--fenced"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("```mermaid\nflowchart LR\n") and out.endswith("```\n")
    assert f'["training<br/>:{planned["training"]}"]' in out
    assert main(["graph", "--manifest", manifest, "--format", "dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph stack {") and '"base" -> "training";' in out
    assert '"builder" -> "fastext" [style=dashed, label="wheels"];' in out


def test_the_timeline_follows_the_graphs_order_where_it_is_given() -> None:
    spans = [Span("runner", "render", 1.0, 0.2), Span("builder", "build", 2.0, 18.0)]
    sections = [line for line in diagrams.gantt(spans).splitlines() if "section" in line]
    assert sections == ["  section runner", "  section builder"]
    ordered = diagrams.gantt(spans, order=["builder", "fastext", "runner"])
    assert [line for line in ordered.splitlines() if "section" in line] == [
        "  section builder",
        "  section runner",  # fastext ran nothing: no empty section
    ]


def test_long_stages_read_in_minutes_and_hours_and_a_matrix_is_cut_to_the_longest() -> None:
    assert [diagrams.took(s) for s in (9.54, 303.0, 11_250.0)] == ["9.5s", "5m03s", "3h07m"]
    many = [Span(f"t{i}", "build", float(i), 1.0 + i % 7, failed=i == 3) for i in range(1000)]
    kept = diagrams.drawn(many)
    assert len(kept) <= diagrams.MOST + 1 and any(s.failed for s in kept)
    assert min(s.seconds for s in kept if not s.failed) >= 5.0  # the longest ones
    assert sum(s.seconds == 7.0 for s in kept) == sum(s.seconds == 7.0 for s in many)
    assert len(diagrams.gantt(many)) < 50_000
