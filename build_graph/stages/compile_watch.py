"""Watching a running compile from a thread of its own: how far it is and when it will end,
and its compiler cache saved on an interval.

A compile of PyTorch runs for hours and may be killed where no handler runs (SIGKILL, a
preempted VM, a job limit's last resort): the cache it built so far is saved to the store
every `[cache] save_every`, so such a stop costs at most that much compiling. The saves go
through the same CacheSync as the save after the compile (generation preconditions, never
over a warmer archive), from the folder the container writes into (ccache renames whole
entries into place, archive.pack reads it live); on a daemon elsewhere (copy mode) the
cache is inside the container until it ends, so there is nothing to save on the way.

A progress line (elapsed, the estimate of what is left, ninja's counts, ccache's hit rate)
goes out every BUILD_GRAPH_PROGRESS_S seconds: 15 on a terminal, 60 in a log (CI's).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from build_graph.ccache.stats import parse
from build_graph.ccache.sync import CacheSync
from build_graph.docker import containers
from build_graph.layout import CCACHE_DIR
from build_graph.log import current_handle, log, progress, task_log_of
from build_graph.stages.compile_clock import Clock, format_duration

if TYPE_CHECKING:
    from docker.models.containers import Container


def tick_every() -> float:
    """Seconds between progress lines: BUILD_GRAPH_PROGRESS_S, else a terminal's 15 or a
    log's 60 (a line a minute keeps CI's log readable and shows the job is alive)."""
    given = os.environ.get("BUILD_GRAPH_PROGRESS_S", "")
    try:
        seconds = float(given)
    except ValueError:
        seconds = 0.0
    if 0.1 <= seconds <= 3600:
        return seconds
    return 15.0 if sys.stderr.isatty() else 60.0


class Watch:
    """Feeds the compile's output lines to its clock (line(), from the thread that reads
    them) and, from its own thread, writes a progress line every `tick_s` and saves the
    cache through `sync` every `save_s` (None or 0: no saves on the way). Used as a
    context manager around the wait for the compile; leaving it stops the thread (waiting
    for a save under way only when the compile ended: an interrupt goes on to remove the
    container at once; CacheSync runs one save at a time either way)."""

    def __init__(
        self,
        key: str,
        box: Container,
        clock: Clock,
        *,
        sync: CacheSync | None,
        save_s: float,
        tick_s: float,
    ) -> None:
        self.key, self.box, self.clock = key, box, clock
        self.sync, self.save_s, self.tick_s = sync, save_s, tick_s
        self._handle = current_handle()  # the compile task's log: its lines go there too
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch {key}", daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if kind is None:
            self._thread.join()
        # else (Ctrl-C, SIGTERM, a failure): not waiting for a save under way, so that the
        # container is removed at once; the save after the compile waits for it instead
        # (CacheSync saves one at a time).

    def line(self, text: str) -> None:
        log(f"[{self.key}]   {text}")
        self.clock.ninja_line(text, at=time.monotonic())

    def _run(self) -> None:
        with task_log_of(self._handle):
            now = time.monotonic()
            next_tick = now + self.tick_s
            saving = self.sync is not None and self.save_s > 0
            next_save = now + self.save_s if saving else math.inf
            while not self._stop.wait(max(min(next_tick, next_save) - time.monotonic(), 0)):
                if time.monotonic() >= next_tick:
                    next_tick = time.monotonic() + self.tick_s  # a failing tick waits too
                    self._guarded(self._tick)
                if time.monotonic() >= next_save:
                    next_save = time.monotonic() + self.save_s
                    self._guarded(self._save)

    def _guarded(self, step: Callable[[], None]) -> None:
        try:
            step()
        except Exception as exc:  # a watcher's trouble must never touch the compile
            log(f"[{self.key}] {step.__name__.strip('_')}: {type(exc).__name__}: {exc}")

    def _tick(self) -> None:
        files = self.clock.counts
        counts = [f"{files[0]}/{files[1]} files ({files[0] / files[1]:.0%})"] if files else []
        code, output = containers.exec_in(
            self.box, ["ccache", "--print-stats"], {"CCACHE_DIR": CCACHE_DIR}
        )
        if code == 0:
            stats = parse(output)
            self.clock.units_done(stats.hits + stats.misses)
            counts.append(
                f"ccache {stats.hits} hits / {stats.misses} misses ({stats.hit_rate:.0%})"
            )
        said = self.clock.line(time.monotonic())
        progress(f"..    compile:{self.key}  {said}" + "".join(f", {c}" for c in counts))

    def _save(self) -> None:
        assert self.sync is not None
        self.sync.save()
        moved = self.sync.transfer
        if moved.saved.startswith("saved "):
            said = (
                f"{moved.saved} during the compile ({moved.bytes_up / 2**20:.1f} MiB in "
                f"{moved.save_s:.1f} s; every {format_duration(self.save_s)}, so a killed "
                "run loses at most that)"
            )
        else:
            said = f"{moved.saved} (a save during the compile)"
        progress(f"[{self.key}] compiler cache: {said}")
