"""Where progress lines go: the running task's log file, and the terminal when verbose.

Every step logs through `log()`. Inside `task_log(path)` (each doit action runs in one)
the line goes to that task's log file, `build/<variant>/<tier>/logs/<stage>.log`, and to
stderr only with `BUILD_GRAPH_VERBOSE=1` (or `doit ... verbose=1`), which streams
everything as it happens. Outside a task (planning, the CLI) lines go to stderr.
`progress()` lines always reach the terminal: they say a long step is alive.
Per thread, so `doit -n N -P thread` keeps each task's lines in its own file.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

_local = threading.local()


def verbose() -> bool:
    return os.environ.get("BUILD_GRAPH_VERBOSE", "") not in ("", "0")


def log(message: str) -> None:
    _emit(message, always=False)


def progress(message: str) -> None:
    """A line for the terminal even when task output goes to a file (and to the file)."""
    _emit(message, always=True)


def _emit(message: str, always: bool) -> None:
    """To the running task's log file if any; to stderr when `always`, verbose, or no task."""
    handle: IO[str] | None = getattr(_local, "handle", None)
    if handle is not None and handle.closed:  # a watching thread outlived its task
        handle = None
    if handle is not None:
        handle.write(message + "\n")
        handle.flush()
    if always or handle is None or verbose():
        print(message, file=sys.stderr, flush=True)


@contextmanager
def task_log(path: Path) -> Iterator[Path]:
    """Send this thread's log lines to `path` (replaced: the log of the latest attempt)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle, task_log_of(handle):
        handle.write(f"# {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        yield path


def current_handle() -> IO[str] | None:
    """This thread's task log, for a thread it starts to write to (task_log_of)."""
    return getattr(_local, "handle", None)


@contextmanager
def task_log_of(handle: IO[str] | None) -> Iterator[None]:
    """This thread's log lines to `handle`, another thread's task log (current_handle)."""
    previous = getattr(_local, "handle", None)
    _local.handle = handle
    try:
        yield
    finally:
        _local.handle = previous


def tail(path: Path, lines: int = 20, before: str | None = None) -> list[str]:
    """The last lines of a log file (empty if it cannot be read); with `before`, the last
    lines ahead of the last line that starts with it (what led up to an error)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    if before is not None:
        cut = max((i for i, line in enumerate(text) if line.startswith(before)), default=len(text))
        text = text[:cut]
    return text[-lines:]


FAILURE_TAIL = 25  # lines of a failed build's or compile's output shown in its error


def last_output(lines: list[str], count: int = FAILURE_TAIL) -> str:
    """'last output:' and the last `count` lines, indented: how every failure shows its tail."""
    shown = "\n".join(f"    {line}" for line in lines[-count:])
    return f"last output:\n{shown}"


def shown(value: object, limit: int = 160) -> str:
    """Text from outside (a registry's words, a report's fields) as it may reach a terminal:
    printable characters only (no escape sequences that redraw the screen), at most `limit`."""
    text = "".join(c if c.isprintable() else " " for c in str(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."
