"""Ctrl-C and SIGTERM: a run stopped part-way unwinds, says so in one line and exits 130
or 143, having saved what it finished (a compile's cache) and removed what it started
(containers), in the thread the signal reached and in the threads it did not (doit -n)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import NoReturn

from build_graph.errors import EXIT_INTERRUPTED, EXIT_TERMINATED


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is, so that it unwinds as Ctrl-C does: a compile's
    container removed, its finished units' cache saved, nothing interrupted recorded."""


_cleanups: list[Callable[[], None]] = []


def on_interrupt(cleanup: Callable[[], None]) -> None:
    """Run `cleanup` (best effort) when a run is interrupted, just before it exits: what
    worker threads hold (doit -n runs tasks in threads, and only the main thread sees the
    signal) is not unwound by them."""
    _cleanups.append(cleanup)


_doing: dict[int, str] = {}  # thread -> the stage it runs ('compile of fastext')


@contextlib.contextmanager
def doing(what: str) -> Iterator[None]:
    """`what` the calling thread does, for an interrupt that reaches another thread (doit
    -n: the main thread dispatches, workers run stages) to name."""
    _doing[threading.get_ident()] = what
    try:
        yield
    finally:
        _doing.pop(threading.get_ident(), None)


def interrupted(where: str = "") -> NoReturn:
    """Ctrl-C or SIGTERM: one line on stderr and exit 130 (143 for SIGTERM), at once.

    Records are written only after the step they describe succeeded, so nothing that was
    interrupted is recorded as done; exiting at once also skips doit's database save.
    Context managers (containers, temporary files) and `finally` blocks (the compiler
    cache's save) of the thread that was interrupted have run by the time the interrupt
    reaches the code that calls this; the registered cleanups (on_interrupt) then remove
    what other threads still hold.
    """
    global _stopping
    with _exiting:
        second, _stopping = _stopping, True
    while second:  # another thread is ending the run (doit -n): it says so, once
        time.sleep(3600)
    where = where or ", ".join(sorted(set(_doing.values())))
    for cleanup in _cleanups:
        with contextlib.suppress(Exception):
            cleanup()
    during = f" during {where}" if where else ""
    what, code = (
        ("terminated (SIGTERM)", EXIT_TERMINATED)
        if _terminated
        else ("interrupted", EXIT_INTERRUPTED)
    )
    print(
        f"{what}{during}: stopped; nothing interrupted was recorded as done",
        file=sys.stderr,
        flush=True,
    )
    os._exit(code)


_terminated = False
_stopping = False
_exiting = threading.Lock()


def stopping() -> bool:
    """The run is exiting on an interrupt: a worker thread must start nothing new (a
    container started now would outlive the run)."""
    return _stopping


def _on_signal(signum: int, frame: object) -> None:
    """The first SIGINT or SIGTERM unwinds the run (KeyboardInterrupt, Terminated); any
    later one, of either kind, is ignored, so that it cannot cut the cleanup the first one
    started (the cache's save): CI cancels with SIGINT and follows with SIGTERM."""
    global _terminated
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if signum == signal.SIGTERM:
        _terminated = True
        raise Terminated()
    raise KeyboardInterrupt()


def quiet_interrupts() -> None:
    """An uncaught KeyboardInterrupt anywhere (doit's own code too) becomes one line, and
    SIGTERM is handled as Ctrl-C is; each signal only where nobody else set a handler for
    it (SIGINT ignored, as in a background job, stays ignored). Call it from the main
    thread."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt) and not os.environ.get("BUILD_GRAPH_DEBUG"):
            interrupted()
        previous(kind, value, tb)

    sys.excepthook = hook
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_signal)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_signal)
