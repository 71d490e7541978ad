"""A no-op run imports the stages' rows and checks, never what acting needs (issue 41):
each heavy action is named by a `Deferred` path, resolved only when it runs."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from build_graph.stages import pipeline
from build_graph.stages.stage import Deferred, Stage

# What only an action (or a lock that moves) needs: a build, a compile, a push, a verify,
# the compiler cache, containers, the uploads, a resolver.
ACTING = (
    "build_graph.stages.build_act",
    "build_graph.stages.compile_act",
    "build_graph.stages.push_act",
    "build_graph.stages.verify_act",
    "build_graph.stages.verify_probe",
    "build_graph.stages.sbom",
    "build_graph.stages.preflight",
    "build_graph.ccache",
    "build_graph.docker.buildkit",
    "build_graph.docker.containers",
    "build_graph.docker.daemon",
    "build_graph.docker.apt",
    "build_graph.registry.upload",
    "build_graph.pylock.resolve",
    "tarfile",
)


@pytest.mark.parametrize("stage", pipeline.stages(), ids=lambda s: s.name)
def test_a_deferred_action_names_a_function_of_the_stages_layer(stage: Stage) -> None:
    act = stage.act
    if not isinstance(act, Deferred):
        return
    module, _, name = act.path.partition(":")
    assert module.startswith("build_graph.stages."), act.path  # the layer rule, by name
    assert callable(getattr(importlib.import_module(module), name)), act.path


def test_what_dodo_py_imports_loads_no_action() -> None:
    code = (
        "import json, sys\n"
        "import build_graph.run.session, build_graph.run.tasks\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(result.stdout))
    assert not [m for m in loaded if m.startswith(ACTING)]
