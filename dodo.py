"""doit entry point: `doit` builds, pushes, verifies and promotes the stack in images.toml.

`doit manifest=PATH` picks another manifest; `doit list` shows the tiers, `doit list
--status` the plan; `doit info <tier>` says why it would run. This file only hands doit the
stack's tasks (build_graph.stages.pipeline declares the stages), so it stays the same when a
release adds a stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from doit import get_var

from build_graph.run.session import open_session
from build_graph.run.tasks import doit_config

_TASKS = open_session(get_var("manifest"), verbose=get_var("verbose"))
DOIT_CONFIG: dict[str, Any] = doit_config(_TASKS.stack)


def task_stack() -> Iterator[dict[str, Any]]:
    """Every task of the stack: `doit <tier>` and each stage's (their own basenames)."""
    yield from _TASKS.all()
