"""doit's console reporter, ending with the exit code the README promises.

doit itself exits 1 when a task failed and 2 when a task's dependency failed (as under
`--continue`), whatever the cause. A stage failure carries the exit code of its cause;
after the run, the reporter ends the process with it: 3 when the Docker daemon, the
registry or a tool could not be reached, 2 for an invalid manifest or template, 1 for a
failed build, compile, push or verify. Runs without a failure of ours keep doit's code.
"""

from __future__ import annotations

from typing import Any

from doit.exceptions import TaskFailed
from doit.reporter import ConsoleReporter

from build_graph.errors import EXIT_BUILD, EXIT_CONFIG, EXIT_ENVIRONMENT


class StageFailed(TaskFailed):  # type: ignore[misc]
    """A stage's failure, carrying the exit code of its cause."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def exit_code_for(codes: list[int]) -> int:
    """The most actionable cause first: the environment, then the manifest, then a build."""
    for code in (EXIT_ENVIRONMENT, EXIT_CONFIG):
        if code in codes:
            return code
    return EXIT_BUILD


class ExitCodeReporter(ConsoleReporter):  # type: ignore[misc]
    desc = "console output; exit codes by cause"

    def complete_run(self) -> None:
        super().complete_run()
        failures: list[dict[str, Any]] = self.failures
        codes = [f["exception"].exit_code for f in failures
                 if isinstance(f["exception"], StageFailed)]
        if codes:
            # doit returns its own code after this; raising ends the run with ours (doit's
            # database was already closed by the runner).
            raise SystemExit(exit_code_for(codes))
