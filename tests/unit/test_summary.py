"""The run summary: what the reporter hears becomes one Markdown row per tier, escaped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from doit.cmd_base import ModuleTaskLoader
from doit.doit_cmd import DoitMain

from build_graph.run.reporter import ExitCodeReporter, StageFailed
from build_graph.run.summary import STEP_SUMMARY, RunSummary, cell
from tests.helpers import summary_rows as rows

DIGEST = "sha256:" + "ab" * 32


def test_a_tier_that_ran_shows_its_stages_time_cache_verify_digest_and_tags() -> None:
    summary = RunSummary("demo (images.toml)")
    summary.up_to_date("render:fastext")
    summary.ran(
        "compile:fastext",
        12.25,
        {"ccache": "14 hits / 0 misses (100%)", "compile_time": "compiled in 12s"},
    )
    summary.ran("build:fastext", 3.0, {})
    pushed = "12.5 MB sent (1 of 3 blobs; 1 mounted, 1 there) in 1.0 s"
    summary.ran("push:fastext", 1.0, {"digest": DIGEST, "pushed": pushed})
    summary.ran(
        "verify:fastext",
        2.0,
        {"verify": "passed (9 passed, 0 failed, 1 not checked)", "gpu": "not checked: no GPU"},
    )
    summary.ran("promote:fastext", 0.5, {"digest": DIGEST, "tags_moved": "latest, py3.11"})
    summary.ran("fastext", 0.0, None)  # the tier's own task: no row of its own
    [row] = rows(summary.markdown()).values()
    assert row == {
        "tier": "fastext",
        "ran": "compile, build, push, verify, promote",
        "time": "18.8 s",
        "compiler cache": "14 hits / 0 misses (100%)",
        "compile time": "compiled in 12s",
        "built": "-",
        "pushed": pushed,
        "pulled": "-",
        "verify": "passed (9 passed, 0 failed, 1 not checked); GPU not checked: no GPU",
        "digest": DIGEST,
        "tags moved": "latest, py3.11",
    }
    assert "1 tiers: 1 rebuilt; 18.8 s in stages" in summary.markdown()


def test_up_to_date_failed_and_not_run_tiers_say_so() -> None:
    summary = RunSummary("demo")
    for stage in ("render", "build", "push", "verify", "promote"):
        # push's up-to-date check says what digest the registry named in this run
        summary.up_to_date(f"{stage}:base", {"digest": DIGEST} if stage == "push" else None)
    summary.ran("build:training", 4.0, {})
    summary.ran("push:training", 1.0, {"digest": DIGEST})
    summary.failed("verify:training", "verify of training: 1 failed\nFAIL package x", 2.0)
    summary.failed("promote:training", "dependent task failed", None)
    found = rows(summary.markdown())
    assert list(found["base"].values()) == [
        "base",
        "nothing (up to date)",
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        "passed (a report in the registry)",
        DIGEST,
        "-",
    ]
    training = found["training"]
    assert training["ran"] == "build, push, verify FAILED; not run: promote"
    assert training["time"] == "7.0 s"
    summary.failed("build:leaf", "build of leaf failed", 3.0)  # nothing pushed: no digest
    assert rows(summary.markdown())["leaf"]["digest"] == "-"
    assert training["verify"] == "failed: verify of training: 1 failed"
    assert "3 tiers: 1 up to date, 2 failed" in summary.markdown()


@pytest.mark.parametrize(
    "hostile",
    [
        "<img src=x onerror=alert(1)>",
        "a | b",
        "[click](https://evil.example)",
        "`code`",
        "line one\nline two",
        "**bold** _it_ ~~gone~~ # head !",
    ],
)
def test_untrusted_text_cannot_become_markup_or_break_the_table(hostile: str) -> None:
    text = cell(hostile)
    assert "<" not in text and ">" not in text and "\n" not in text
    for mark in "|[]`*_~#!":
        assert mark not in text.replace(f"\\{mark}", "")  # every one escaped
    summary = RunSummary("demo")
    summary.failed("verify:t", hostile, 1.0)
    [row] = [line for line in summary.markdown().splitlines() if line.startswith("| t ")]
    assert row.count(" | ") == 10  # still eleven cells


def test_a_long_message_is_cut() -> None:
    assert len(cell("x" * 5000)) <= 160


def test_written_to_the_build_folder_and_appended_to_the_step_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = tmp_path / "step.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv(STEP_SUMMARY, str(step))
    summary = RunSummary("demo")
    summary.ran("build:a", 1.0, {})
    assert summary.write(tmp_path / "build" / "summary.md") == []
    text = (tmp_path / "build" / "summary.md").read_text()
    assert step.read_text() == "earlier step\n" + text + "\n"


def test_a_summary_that_cannot_be_written_is_a_problem_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv(STEP_SUMMARY, str(tmp_path / "no" / "such" / "dir" / "x.md"))
    summary = RunSummary("demo")
    summary.ran("build:a", 1.0, {})
    problems = summary.write(blocked / "summary.md")  # a file where a folder should be
    assert len(problems) == 2
    assert "not written to" in problems[0] and STEP_SUMMARY in problems[1]


def one(task: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A doit sub-task named 'a' (doit names it '<basename>:a')."""
    yield {"name": "a", **task}


def test_the_reporter_feeds_the_summary_through_doits_runner(tmp_path: Path) -> None:
    """Facts a stage returns become doit values, which the summary reads; a failed stage
    and the stages it kept from running are rows too."""
    reporter = type(
        "R", (ExitCodeReporter,), {"summary_file": tmp_path / "summary.md", "summary_title": "t"}
    )

    def push() -> dict[str, str]:
        return {"digest": DIGEST}

    class Held:  # an up-to-date check that says what it read, as run/tasks.Condition does
        def __call__(self) -> bool:
            return True

        def facts(self) -> dict[str, str]:
            return {"digest": "sha256:" + "cd" * 32}

    def verify() -> StageFailed:
        return StageFailed("verify of a: 1 failed", 1)

    tasks: dict[str, Any] = {
        "DOIT_CONFIG": {
            "reporter": reporter,
            "dep_file": str(tmp_path / "db"),
            "backend": "json",
            "verbosity": 0,
        },
        "task_push": lambda: one({"actions": [push]}),
        "task_build": lambda: (
            t for t in [{"name": "b", "actions": [lambda: True], "uptodate": [Held()]}]
        ),
        "task_verify": lambda: one({"actions": [verify], "task_dep": ["push:a"]}),
        "task_promote": lambda: one({"actions": [lambda: True], "task_dep": ["verify:a"]}),
    }
    with pytest.raises(SystemExit):
        DoitMain(ModuleTaskLoader(tasks)).run(["--continue", "promote:a", "build:b"])
    assert rows((tmp_path / "summary.md").read_text())["b"]["ran"] == "nothing (up to date)"
    assert rows((tmp_path / "summary.md").read_text())["b"]["digest"] == "sha256:" + "cd" * 32
    row = rows((tmp_path / "summary.md").read_text())["a"]
    assert row["ran"] == "push, verify FAILED; not run: promote"
    assert row["verify"] == "failed: verify of a: 1 failed" and row["digest"] == DIGEST
