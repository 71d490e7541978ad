"""The Mermaid harness (tests/browser.py): diagrams rendered by Mermaid's own renderer in
headless Chromium. A valid flowchart and gantt render, a broken diagram is reported with
Mermaid's parse error while the others in the same page still render, a hostile source
never runs as script in the page, and a screenshot is a real PNG.

scripts/browser.sh installs Chromium and the pinned Mermaid bundle when they are missing: a
test here that cannot render fails, it is never skipped."""

from __future__ import annotations

import struct
import time
from pathlib import Path

from tests.browser import (
    TITLE,
    mermaid_blocks,
    render_mermaid,
    run_chromium,
)

FLOWCHART = """flowchart LR
  base["Build base"] --> cuda["Push cuda"]
  classDef built fill:#9f9,stroke:#393
  class base built
"""

# dateFormat x: start and end are epoch milliseconds (the run summary's clock offsets)
GANTT = """gantt
  dateFormat x
  axisFormat %M:%S
  section tiers
  compile base :t1, 0, 65000
  push cuda :t2, 65000, 140000
"""

BROKEN = "flowchart LR\n  a -->"

PWNED = '</script><script>document.title="pwned"</script>'


def test_flowchart_and_gantt_render(browser: None, tmp_path: Path) -> None:
    flowchart, gantt = render_mermaid([FLOWCHART, GANTT], tmp_path)
    assert flowchart.error == "" and gantt.error == ""
    assert flowchart.source == FLOWCHART and gantt.source == GANTT
    assert flowchart.svg.startswith("<svg") and 'id="d0"' in flowchart.svg
    assert "Build base" in flowchart.svg and "Push cuda" in flowchart.svg
    assert "built" in flowchart.svg  # the classDef's class on the node
    assert gantt.svg.startswith("<svg") and 'id="d1"' in gantt.svg
    assert "compile base" in gantt.svg and "push cuda" in gantt.svg
    assert ">00:00<" in gantt.svg  # the axis starts at 0 ms, read as UTC


def test_broken_diagram_is_reported_and_the_rest_render(browser: None, tmp_path: Path) -> None:
    first, broken, last = render_mermaid([FLOWCHART, BROKEN, GANTT], tmp_path)
    assert broken.svg == ""
    assert "Parse error" in broken.error, broken.error
    assert first.error == "" and "Build base" in first.svg
    assert last.error == "" and "compile base" in last.svg


def test_a_hostile_source_never_runs(browser: None, tmp_path: Path) -> None:
    hostile = [
        f'flowchart LR\n  a["{PWNED}"] --> b',  # as written: a parse error (quotes in quotes)
        f'flowchart LR\n  a["{PWNED.replace(chr(34), chr(39))}"] --> b',  # one that parses
        'flowchart LR\n  a["<!--<script>"] --> b',  # would keep the real </script> open
        "flowchart LR\n  a[\"<img src=x onerror=document.title='pwned'>\"] --> b",  # sanitised
    ]
    results = render_mermaid([*hostile, FLOWCHART], tmp_path)
    assert [r.title for r in results] == [TITLE] * len(results)
    assert all(r.svg or r.error for r in results)
    assert not any("<script" in r.svg or "onerror" in r.svg for r in results)
    assert results[-1].error == "" and "Build base" in results[-1].svg
    page = (tmp_path / "page.html").read_text()
    assert PWNED not in page and "</script><script>" not in page and "<!--" not in page


def test_screenshot_is_a_png(browser: None, tmp_path: Path) -> None:
    shot = tmp_path / "docs" / "diagrams.png"
    results = render_mermaid([FLOWCHART, GANTT], tmp_path / "page", screenshot=shot)
    assert [r.error for r in results] == ["", ""]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 5_000, len(data)
    width, height = struct.unpack(">II", data[16:24])  # IHDR
    assert width == 1400 and 200 <= height <= 16_384, (width, height)


def test_the_dump_waits_for_the_page(browser: None, tmp_path: Path) -> None:
    """The flags' promise that render_mermaid stands on: the DOM is dumped only after the
    virtual-time budget, so a page that finishes after a 10-second timer is dumped finished;
    its timers are fast-forwarded, not waited for in real time. (Without the budget the dump
    comes right after the load event, without the results.)"""
    page = tmp_path / "late.html"
    page.write_text(
        "<!doctype html><title>late</title><body><script>"
        "setTimeout(async () => { await new Promise(r => setTimeout(r, 0));"
        " const pre = document.createElement('pre'); pre.id = 'results';"
        " pre.textContent = 'done ' + Math.round(performance.now() / 1000);"
        " document.body.appendChild(pre); }, 10000);"
        "</script></body>"
    )
    started = time.monotonic()
    dumped = run_chromium(["--dump-dom", page.as_uri()], tmp_path, "profile")
    assert '<pre id="results">done 10</pre>' in dumped.stdout, dumped.stdout[-2000:]
    assert time.monotonic() - started < 10  # virtual time: the timer did not take 10 s


def test_mermaid_blocks() -> None:
    markdown = (
        "# Run\n\n```mermaid\nflowchart LR\n  a --> b\n```\n\n"
        "```text\n```mermaid\nnot a diagram\n```\n\n"
        "~~~~ mermaid\ngantt\n  dateFormat x\n~~~\n~~~~\n"
        "```python\nprint()\n```\n"
    )
    assert mermaid_blocks(markdown) == ["flowchart LR\n  a --> b", "gantt\n  dateFormat x\n~~~"]
    assert mermaid_blocks("no diagrams") == []


def test_the_run_summarys_diagrams_render_whatever_the_names(browser: None, tmp_path: Path) -> None:
    """The summary's flowchart and timeline (build_graph/run/diagrams.py) with every hostile
    name the unit tests try: each renders without an error and runs nothing."""
    from build_graph.run import diagrams
    from build_graph.run.diagrams import Node, Span
    from tests.unit.test_diagrams import HOSTILE

    nodes = [Node(name, (HOSTILE[i - 1],) if i else (), None) for i, name in enumerate(HOSTILE)]
    state = dict(zip(HOSTILE, diagrams.STATES, strict=False))
    chart = diagrams.flowchart(nodes, state, notes={HOSTILE[0]: HOSTILE[1]})
    spans = [
        Span(name, "build", 1_800_000_000 + i, 1.5, i % 2 == 1) for i, name in enumerate(HOSTILE)
    ]
    timeline = diagrams.gantt(spans, title=HOSTILE[0])
    for shown in render_mermaid([chart, timeline], tmp_path):
        assert shown.error == "" and shown.svg.startswith("<svg") and shown.title == TITLE
    assert "not run" in render_mermaid([chart], tmp_path / "again")[0].svg
