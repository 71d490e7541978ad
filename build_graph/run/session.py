"""What `dodo.py` opens before doit generates tasks: the plan, the host checks, the run lock.

`open_session` is the one place where a doit run starts: it loads the plan (from the plan
cache when nothing changed), fails before any build when a credentialed pip setting has no
safe way into builds, takes the stack's run lock for commands that write (two runs never
share a doit database), and records the `images.lock` pins the lock file is missing and
the Python and apt locks that are missing or stale (then plans again with them). A user
error exits here with its message and exit code, no traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from build_graph import settings
from build_graph.errors import BuildGraphError, report
from build_graph.interrupts import quiet_interrupts
from build_graph.layout import DEFAULT_MANIFEST
from build_graph.log import progress
from build_graph.plan.cache import load_plan
from build_graph.run import run_lock
from build_graph.run.stack import check_tier_names
from build_graph.run.tasks import StackTasks
from build_graph.stages import apt_pin, pin, python_pin


def open_session(
    manifest: str | None, verbose: str | None = None, argv: list[str] | None = None
) -> StackTasks:
    """The tasks of the stack in `manifest` (default images.toml); exits on a user error."""
    quiet_interrupts()
    if verbose:  # `doit verbose=1`: stream every line, as BUILD_GRAPH_VERBOSE=1 does
        os.environ["BUILD_GRAPH_VERBOSE"] = "1"
    path = Path(manifest or DEFAULT_MANIFEST)
    argv = sys.argv if argv is None else argv
    try:
        tasks = StackTasks(*load_plan(path))
        check_tier_names(tasks.stack)
        if settings.credential() is not None:  # fail before any build, not in the middle
            from build_graph.docker import buildkit  # asks for the docker CLI: only here

            settings.check(buildkit=buildkit.cli() is not None)
        settings.host_ca()  # a named CA bundle that is not there: before any build too
        if run_lock.doit_command(argv) not in run_lock.READ_ONLY:
            for line in settings.warnings():
                progress(line)
            run_lock.acquire(tasks.stack.build_folder.run_lock, argv)
            # images.lock or a Python lock changed: plan with it
            pinned = pin.record_missing(tasks.stack)
            # the plan in hand, unless images.lock just changed: no second plan on a no-op
            moved = python_pin.record(tasks.stack, planned=None if pinned else tasks.planned)
            moved += apt_pin.record(tasks.stack, planned=None if pinned or moved else tasks.planned)
            if pinned or moved:
                tasks = StackTasks(*load_plan(path))
        return tasks
    except BuildGraphError as exc:
        # A config problem fails before any build starts, with every error listed;
        # a second concurrent run of the stack stops here too.
        sys.exit(report(exc))
