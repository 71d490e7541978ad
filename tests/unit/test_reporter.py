"""Exit codes by cause, through doit's real runner (no Docker: the tasks fail by themselves)."""

from __future__ import annotations

from typing import Any

import pytest
from doit.cmd_base import ModuleTaskLoader
from doit.doit_cmd import DoitMain

from build_graph.errors import EXIT_BUILD, EXIT_CONFIG, EXIT_ENVIRONMENT
from build_graph.run.reporter import ExitCodeReporter, StageFailed, exit_code_for


def run_doit(code: int | None, *args: str, tmp_path: Any) -> int:
    """Run a two-task graph (b depends on a; a fails with `code`) with our reporter."""

    def fail() -> StageFailed | bool:
        return True if code is None else StageFailed("a failed", code)

    tasks: dict[str, Any] = {
        "DOIT_CONFIG": {
            "reporter": ExitCodeReporter,
            "dep_file": str(tmp_path / "db"),
            "backend": "json",
            "verbosity": 0,
        },
        "task_a": lambda: {"actions": [fail]},
        "task_b": lambda: {"actions": [lambda: True], "task_dep": ["a"]},
    }
    try:
        return int(DoitMain(ModuleTaskLoader(tasks)).run(list(args)))
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize(
    ("cause", "expected"), [(EXIT_BUILD, 1), (EXIT_ENVIRONMENT, 3), (EXIT_CONFIG, 2), (None, 0)]
)
def test_exit_code_is_the_causes_also_under_continue(
    tmp_path: Any, cause: int | None, expected: int
) -> None:
    assert run_doit(cause, "b", tmp_path=tmp_path) == expected
    # doit alone would say 2 here: b's dependency failed.
    assert run_doit(cause, "--continue", "b", tmp_path=tmp_path) == expected


def test_the_environment_wins_over_a_build_failure() -> None:
    assert exit_code_for([EXIT_BUILD, EXIT_ENVIRONMENT, EXIT_CONFIG]) == EXIT_ENVIRONMENT
    assert exit_code_for([EXIT_BUILD, EXIT_CONFIG]) == EXIT_CONFIG
    assert exit_code_for([EXIT_BUILD]) == EXIT_BUILD
