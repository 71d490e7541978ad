"""The thread that watches a running compile: its trouble never stops the interval saves,
and it never spins."""

from __future__ import annotations

import time
from typing import Any, cast

from build_graph.ccache.sync import CacheSync, Transfer
from build_graph.stages.compile_clock import Clock
from build_graph.stages.compile_watch import Watch


class FailingBox:
    """A container whose exec fails with what is no DockerException (requests' own)."""

    def __init__(self) -> None:
        self.calls = 0

    def exec_run(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        raise ConnectionError("connection reset by peer")


class CountingSync:
    def __init__(self) -> None:
        self.saves = 0
        self.transfer = Transfer(saved="saved demo/ext/a.tar.zst", save_s=0.01)

    def save(self) -> None:
        self.saves += 1


def test_a_failing_progress_tick_neither_spins_nor_stops_the_saves() -> None:
    box, sync = FailingBox(), CountingSync()
    with Watch(
        "ext",
        cast(Any, box),
        Clock(None, started=time.monotonic()),
        sync=cast(CacheSync, sync),
        save_s=0.05,
        tick_s=0.02,
    ):
        time.sleep(0.5)
    assert sync.saves >= 3, sync.saves  # every 50 ms: ten, give or take a slow machine
    assert box.calls <= 30, box.calls  # every 20 ms, not as fast as it can


def test_without_a_store_to_save_to_it_only_ticks() -> None:
    box = FailingBox()
    with Watch("ext", cast(Any, box), Clock(None, 0.0), sync=None, save_s=0.05, tick_s=0.02):
        time.sleep(0.2)
    assert 3 <= box.calls <= 15, box.calls
