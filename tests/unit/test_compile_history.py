"""The compile's own .ninja_log files, read after the compile: the container wrote the
sources folder, so a log there may be a link, a FIFO or huge; reading it never blocks,
follows a link or fails the compile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from build_graph.stages.compile_history import ninja_logs, read_log_safely


def test_logs_are_found_a_few_levels_down_and_no_deeper(tmp_path: Path) -> None:
    for folder in ("pytorch/build", "vision/build/temp", "a/b/c/d/e/build"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / ".ninja_log").write_text("# ninja log v5\n")
    (tmp_path / ".git" / "x").mkdir(parents=True)
    (tmp_path / ".git" / "x" / ".ninja_log").write_text("# ninja log v5\n")
    found = [p.relative_to(tmp_path).as_posix() for p in ninja_logs(tmp_path)]
    assert found == ["pytorch/build/.ninja_log", "vision/build/temp/.ninja_log"]


def test_a_log_is_read_only_as_a_regular_file_and_only_so_far(tmp_path: Path) -> None:
    log = tmp_path / ".ninja_log"
    log.write_text("# ninja log v5\n" + "x" * 100)
    assert read_log_safely(log, limit=20) == "# ninja log v5\n" + "x" * 5
    link = tmp_path / "link"
    link.symlink_to("/dev/zero")
    with pytest.raises(OSError):
        read_log_safely(link)  # not followed: /dev/zero would fill memory
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_log_safely(fifo)  # no writer: a blocking open would wait for ever
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "gone")
    with pytest.raises(OSError):
        read_log_safely(dangling)
