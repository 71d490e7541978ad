"""How a run reads: one line per task with its result and time; exit codes by cause.

Each task's full output is in `build/<variant>/<tier>/logs/<stage>.log`; the terminal gets
one line per task (`ok`, `FAIL`, or doit's `--` for up to date), and on a terminal a live
line naming the task that runs. A failure prints its message, the log's path and its last
lines. `BUILD_GRAPH_VERBOSE=1` streams every line as well, as the tasks produce them.

doit itself exits 1 when a task failed and 2 when a task's dependency failed (as under
`--continue`), whatever the cause. A stage failure carries the exit code of its cause;
after the run, the reporter ends the process with it: 3 when the Docker daemon, the
registry or a tool could not be reached, 2 for an invalid manifest, template or site
setting, 1 for a failed build, compile, push or verify. Runs without a failure of ours
keep doit's code.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

from doit.exceptions import TaskFailed
from doit.reporter import ConsoleReporter

from build_graph.errors import EXIT_BUILD, EXIT_CONFIG, EXIT_ENVIRONMENT
from build_graph.log import progress, tail, verbose
from build_graph.run.diagrams import Node
from build_graph.run.summary import RunSummary

TAIL_LINES = 15


class StageFailed(TaskFailed):  # type: ignore[misc]
    """A stage's failure, carrying the exit code of its cause and the log it wrote."""

    def __init__(self, message: str, exit_code: int, log_path: Path | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.log_path = log_path


def exit_code_for(codes: list[int]) -> int:
    """The most actionable cause first: the environment, then the manifest, then a build."""
    for code in (EXIT_ENVIRONMENT, EXIT_CONFIG):
        if code in codes:
            return code
    return EXIT_BUILD


class ExitCodeReporter(ConsoleReporter):  # type: ignore[misc]
    desc = "one line per task, logs per task, exit codes by cause"
    # Set by run/tasks.py's doit_config for a stack: where the run summary goes, and how
    # it reads the digest of a tier that ran nothing. None: no summary (unit tests).
    summary_file: ClassVar[Path | None] = None
    summary_title: ClassVar[str] = ""
    summary_graph: ClassVar[tuple[Node, ...]] = ()

    def __init__(self, outstream: Any, options: dict[str, Any]) -> None:
        super().__init__(outstream, options)
        self.started: dict[str, float] = {}
        self.began: dict[str, float] = {}  # the same starts on the wall clock, for the timeline
        self.live = bool(getattr(outstream, "isatty", lambda: False)()) and not verbose()
        self.summary = RunSummary(self.summary_title, graph=self.summary_graph)

    def execute_task(self, task: Any) -> None:
        if not task.actions or task.name.startswith("_"):
            return
        self.started[task.name] = time.monotonic()
        self.began[task.name] = time.time()
        if verbose():
            self.write(f".  {task.title()}\n")
        elif self.live:
            self.write(f"\r\033[K..    {task.title()}")
            self.outstream.flush()

    def _done(self, task: Any, mark: str) -> float:
        elapsed = time.monotonic() - self.started.pop(task.name, time.monotonic())
        prefix = "\r\033[K" if self.live else ""
        self.write(f"{prefix}{mark:<5} {task.title()}  {elapsed:.1f} s\n")
        return elapsed

    def add_success(self, task: Any) -> None:
        if task.actions and not task.name.startswith("_"):
            began = self.began.pop(task.name, time.time())
            self.summary.ran(task.name, self._done(task, "ok"), task.values, began)

    def skip_uptodate(self, task: Any) -> None:
        super().skip_uptodate(task)
        facts: dict[str, str] = {}
        for check, _, _ in task.uptodate:  # what our up-to-date checks found (a digest)
            found = getattr(check, "facts", None)
            if callable(found):
                facts |= found()
        self.summary.up_to_date(task.name, facts)

    def add_failure(self, task: Any, fail: Any) -> None:
        if not fail.report:
            return
        self.failures.append({"task": task, "exception": fail})
        if task.name in self.started:
            began = self.began.pop(task.name, time.time())
            self.summary.failed(task.name, fail.get_msg(), self._done(task, "FAIL"), began)
        else:
            self.summary.failed(task.name, fail.get_msg(), None)
            self.write(f"FAIL  {task.title()}\n")
        self.write("".join(f"      {line}\n" for line in fail.get_msg().rstrip().splitlines()))
        log_path = getattr(fail, "log_path", None)
        if log_path is not None and not verbose():
            last = tail(log_path, TAIL_LINES, before="error: ")  # the error is shown above
            self.write(f"      log: {log_path} (last {len(last)} lines before the error):\n")
            self.write("".join(f"      | {line}\n" for line in last))

    def complete_run(self) -> None:
        super().complete_run()
        if self.summary_file is not None and self.summary.rows:
            for problem in self.summary.write(self.summary_file):
                progress(f"warning: {problem}")
        failures: list[dict[str, Any]] = self.failures
        codes = [
            f["exception"].exit_code for f in failures if isinstance(f["exception"], StageFailed)
        ]
        if codes:
            # doit returns its own code after this; raising ends the run with ours (doit's
            # database was already closed by the runner).
            raise SystemExit(exit_code_for(codes))
