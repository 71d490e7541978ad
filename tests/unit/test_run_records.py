"""The integration tests read what a run did from its summary (tests/support/workspace.py):
those readers must not count a stage that failed or never started, nor lose a tier whose
key the table escaped."""

from __future__ import annotations

import pytest

from build_graph.run.summary import cell
from tests.support.workspace import stages_ran, unescaped


@pytest.mark.parametrize(
    ("ran", "stages"),
    [
        ("render, build, push, verify, promote", ["render", "build", "push", "verify", "promote"]),
        ("render, build FAILED; not run: push, verify", ["render"]),
        ("not run: render, build, push", []),  # its parent failed: nothing started
        ("nothing (up to date)", []),
    ],
)
def test_only_finished_stages_count(ran: str, stages: list[str]) -> None:
    assert stages_ran(ran) == stages


@pytest.mark.parametrize("key", ["my_tier", "a*b", "x<y>&z", "base@cu128/arm64", "t`1`"])
def test_a_tier_key_reads_back_as_it_was_written(key: str) -> None:
    assert unescaped(cell(key)) == key
