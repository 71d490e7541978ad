"""doit entry point: `doit` builds, pushes, verifies and promotes the stack in images.toml.

`doit manifest=PATH` picks another manifest; `doit list --all` shows every tier;
`doit list --all --status` is the plan; `doit info build:<tier>` says why it would run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from doit import get_var

from build_graph import run_lock, settings
from build_graph.engine import buildkit, pins
from build_graph.errors import BuildGraphError, quiet_interrupts, report
from build_graph.plan.cache import load_plan
from build_graph.plan.paths import build_root
from build_graph.tasks import StackTasks, doit_config

_MANIFEST = Path(get_var("manifest", "images.toml") or "images.toml")
if get_var("verbose"):  # `doit verbose=1`: stream every line, as BUILD_GRAPH_VERBOSE=1 does
    os.environ["BUILD_GRAPH_VERBOSE"] = "1"


def _load() -> StackTasks:
    quiet_interrupts()
    try:
        tasks = StackTasks(*load_plan(_MANIFEST))
        if settings.credential() is not None:  # fail before any build, not in the middle
            settings.check(buildkit=buildkit.cli() is not None)
        if run_lock.doit_command(sys.argv) not in run_lock.READ_ONLY:
            run_lock.acquire(build_root(tasks.stack), sys.argv)
            if pins.record_missing(tasks.stack):  # images.lock changed: plan with it
                tasks = StackTasks(*load_plan(_MANIFEST))
        return tasks
    except BuildGraphError as exc:
        # A config problem fails before any build starts, with every error listed;
        # a second concurrent run of the stack stops here too.
        sys.exit(report(exc))


_TASKS = _load()
DOIT_CONFIG: dict[str, Any] = doit_config(_TASKS.stack)


def task_tiers() -> Iterator[dict[str, Any]]:
    yield from _TASKS.tiers()


def task_render() -> Iterator[dict[str, Any]]:
    yield from _TASKS.stage("render")


def task_compile() -> Iterator[dict[str, Any]]:
    yield from _TASKS.stage("compile")


def task_build() -> Iterator[dict[str, Any]]:
    yield from _TASKS.stage("build")


def task_push() -> Iterator[dict[str, Any]]:
    yield from _TASKS.stage("push")


def task_verify() -> Iterator[dict[str, Any]]:
    yield from _TASKS.stage("verify")


def task_promote() -> Iterator[dict[str, Any]]:
    yield from _TASKS.stage("promote")
