"""A ninja-driven compile is estimated by what each unit took last time, as PyTorch's
needs: one unit there takes 726 s while most take seconds, so ninja's own counts say
'nearly done' long before it is.

The quickstart's compile is given a ninja stage first (ninja-build added to the builder):
eight quick units and, last, one slow unit (its rule sleeps before compiling, as a heavy
translation unit would take its time). The first compile keeps each unit's time from
.ninja_log in the cache folder; the second, with that history, estimates by those weights
while the slow unit is still running, and its record and the run summary say how far off
that was. By ninja's counts the same moment reads eight ninths done.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.registry import Registry
from tests.support.workspace import Workspace, make_workspace

pytestmark = pytest.mark.integration
SLOW_S = 20  # the slow unit's time; the others take about a second each on 2 cores
QUICK = 8

NINJA_STAGE = f"""
# A ninja stage before the wheel: {QUICK} quick units, then one slow one (ninja -j1 runs
# them in the order of the default targets).
mkdir -p {{{{ paths.src }}}}/fastext/ninja && cd {{{{ paths.src }}}}/fastext/ninja
{{
  echo 'rule cxx'
  echo '  command = sh -c "case $out in slow*) sleep {SLOW_S};; esac; ccache g++ -c $in -o $out"'
  echo '  description = CXX $out'
  for i in $(seq 1 {QUICK}); do
    printf 'int quick_%s(int x) {{ return x * %s; }}\\n' "$i" "$i" > "quick_$i.cpp"
    echo "build quick_$i.o: cxx quick_$i.cpp"
  done
  printf 'int slow(int x) {{ return x + 1; }}\\n' > slow.cpp
  echo 'build slow.o: cxx slow.cpp'
}} > build.ninja
ninja -j1
cd {{{{ paths.src }}}}/fastext
"""


def seconds_left(line: str) -> int:
    """'about 1m02s left' -> 62."""
    found = re.search(r"about (?:(\d+)m)?(\d+)s left", line)
    assert found is not None, line
    return int(found[1] or 0) * 60 + int(found[2])


def compile_record(ws: Workspace) -> dict[str, Any]:
    path = ws.root / "build" / "default" / "fastext" / "ccache-stats.json"
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def test_a_second_compile_is_estimated_by_what_each_unit_took_last_time(
    tmp_path: Path, registry: Registry
) -> None:
    ws = make_workspace(tmp_path, registry, cold=True)
    ws.edit(
        'system_packages = ["g++", "gcc", "libc6-dev"]',
        'system_packages = ["g++", "gcc", "libc6-dev", "ninja-build"]',
    )
    script = ws.root / "templates" / "fastext-compile.sh.j2"
    text = script.read_text()
    script.write_text(text.replace("ccache --zero-stats\n", "ccache --zero-stats\n" + NINJA_STAGE))
    first = ws.doit("compile:fastext", env={"BUILD_GRAPH_PROGRESS_S": "2"})
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    history = json.loads(
        next((ws.root / "build" / "ccache").rglob("build-graph-compile.json")).read_text()
    )
    assert history["weights"]["slow.o"] >= SLOW_S, history  # from .ninja_log
    assert sum(history["weights"].values()) < 2 * SLOW_S + QUICK * 5, history

    ws.edit('FASTEXT_KERNELS = "2"', 'FASTEXT_KERNELS = "3"')  # the compile runs again
    second = ws.doit("compile:fastext", env={"BUILD_GRAPH_PROGRESS_S": "2"})
    assert second.returncode == 0, (second.stdout + second.stderr)[-3000:]
    progress = [line for line in (second.stdout + second.stderr).splitlines() if " left (" in line]
    weighted = [line for line in progress if "weighted by the last compile" in line]
    assert weighted, progress
    # While the slow unit ran, ninja's counts said 8/9 (89%) done; the weights said less
    # than half, since the slow unit alone took more than the eight quick ones together.
    during = [line for line in weighted if f"{QUICK}/{QUICK + 1} files" in line]
    assert during, weighted
    # The first such line: the slow unit just started. The weights put most of the work
    # ahead (by the counts, elapsed / 8 * 1: a second or two).
    assert seconds_left(during[0]) >= SLOW_S / 2, during[0]
    clock = compile_record(ws)["clock"]
    print("estimate:", clock, "\n" + "\n".join(during))
    assert clock["estimate_s"] is not None and clock["off"] is not None, clock
    assert second.summary is not None
    cell = second.summary["fastext"]["compile time"]
    assert cell.startswith("compiled in ") and "; estimated " in cell, cell
