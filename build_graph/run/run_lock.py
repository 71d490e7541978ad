"""One doit run per stack at a time: two runs must never share a doit database.

The lock is an flock on the build folder's .doit.lock held for the life of the process (the kernel
releases it when the process ends, however it ends). Read-only doit commands skip it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from build_graph.errors import EnvironmentProblem

READ_ONLY = {"list", "info", "help", "dumpdb", "tabcompletion"}
# doit's global options that take a separate value (`-f dodo.py`).
_WITH_VALUE = {
    "-f",
    "--file",
    "-d",
    "--dir",
    "-k",
    "--seek-file",
    "--db-file",
    "--backend",
    "--check_file_uptodate",
    "--codec-cls",
}
_held: list[IO[str]] = []  # keeps the locked file open until the process exits


def doit_command(argv: list[str]) -> str:
    """doit's sub-command: the first argument that is neither an option nor NAME=VALUE."""
    args = iter(argv[1:])
    for arg in args:
        if arg in _WITH_VALUE:
            next(args, None)
        elif not arg.startswith("-") and "=" not in arg:
            return arg
    return "run"


def acquire(lock: Path, argv: list[str]) -> None:
    """Take the stack's run lock (BuildFolder.run_lock), unless the command only reads;
    fail clearly if another process holds it."""
    if doit_command(argv) in READ_ONLY:
        return
    build_dir = lock.parent
    build_dir.mkdir(parents=True, exist_ok=True)
    handle = lock.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise EnvironmentProblem(
            f"another doit run ({holder}) is using {build_dir}; "
            "wait for it to finish (runs of one stack never share "
            "a doit database)"
        ) from None
    handle.truncate(0)
    handle.write(f"pid {os.getpid()}\n")
    handle.flush()
    _held.append(handle)
