"""SIGTERM (how CI cancels a job, how a job timeout ends it) unwinds a run as Ctrl-C does:
`finally` blocks and context managers run (a compile's cache is saved, its container
removed), one line is said, and the exit is 143; a second SIGTERM cannot cut the cleanup."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from build_graph.errors import EXIT_TERMINATED

RUN = """
import sys, time
from pathlib import Path
from build_graph.interrupts import interrupted, quiet_interrupts
quiet_interrupts()
done = Path(sys.argv[1])
try:
    try:
        print("working", flush=True)
        time.sleep(60)
    finally:  # what a compile's save of its cache stands for: slow, and must finish
        print("saving", flush=True)
        time.sleep(float(sys.argv[2]))
        done.write_text("saved")
except KeyboardInterrupt:
    interrupted("compile of fastext")
"""


def stopped(tmp_path: Path, signals: int, save_s: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, str(tmp_path / "done"), str(save_s)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "working\n"
    proc.send_signal(signal.SIGTERM)
    if signals > 1:
        assert proc.stdout.readline() == "saving\n"
        for _ in range(signals - 1):
            time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    return proc, err


def test_sigterm_runs_the_cleanup_says_one_line_and_exits_143(tmp_path: Path) -> None:
    proc, err = stopped(tmp_path, signals=1, save_s=0.2)
    assert proc.returncode == EXIT_TERMINATED == 143
    assert (tmp_path / "done").read_text() == "saved"
    assert err.splitlines() == [
        "terminated (SIGTERM) during compile of fastext: stopped; "
        "nothing interrupted was recorded as done"
    ]


def test_a_second_sigterm_does_not_cut_the_save_the_first_started(tmp_path: Path) -> None:
    proc, err = stopped(tmp_path, signals=3, save_s=1.0)
    assert proc.returncode == 143, err
    assert (tmp_path / "done").read_text() == "saved"
    assert "Traceback" not in err


def test_sigint_then_sigterm_as_ci_cancels_does_not_cut_the_save(tmp_path: Path) -> None:
    """GitHub cancels a job with SIGINT and follows with SIGTERM: the second signal, of the
    other kind, is ignored while the first one's cleanup runs; the exit says Ctrl-C's."""
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, str(tmp_path / "done"), "1.0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as a terminal's job: a suite started in the background inherits SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "working\n"
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.readline() == "saving\n"
    time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert (tmp_path / "done").read_text() == "saved"
    assert err.splitlines() == [
        "interrupted during compile of fastext: stopped; nothing interrupted was recorded as done"
    ]
