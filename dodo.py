"""doit entry point: `doit` builds, pushes, verifies and promotes the stack in images.toml.

`doit manifest=PATH` picks another manifest; `doit list --all` shows every tier;
`doit list --all --status` is the plan; `doit info build:<tier>` says why it would run.
This file only declares tasks: build_graph.run.session opens the stack.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from doit import get_var

from build_graph.run.session import open_session
from build_graph.run.tasks import doit_config

_TASKS = open_session(get_var("manifest"), verbose=get_var("verbose"))
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
