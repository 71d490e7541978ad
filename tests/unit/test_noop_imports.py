"""A no-op run imports the stages' rows and checks, never what acting needs (issue 41):
each heavy action is named by a `Deferred` path, resolved only when it runs. Nor what
planning needs: a run whose plan cache holds plans not at all, and a first run plans once."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from build_graph.stages import pipeline
from build_graph.stages.stage import Deferred, Stage
from tests.helpers import REPO
from tests.unit.test_plan import quickstart_copy

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
# What only planning needs (a plan cache miss): the manifest's models and templates, the
# requirement and version grammar, the GPU rules; and the index of a tier built per platform,
# read where one is promoted.
PLANNING = (
    "pydantic",
    "jinja2",
    "packaging",
    "build_graph.manifest.load",
    "build_graph.manifest.schema",
    "build_graph.gpu.archs",
    "build_graph.oci.index",
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


# dodo.py's session, opened for `doit` (a run: the run lock taken, the locks recorded), with
# every call of the planner counted; then the modules the process holds.
SESSION = """
import json, sys
from build_graph.plan.plan import plan
from build_graph.run.session import open_session

plans = []

def count(frame, event, arg):
    if event == "call" and frame.f_code is plan.__code__:
        plans.append(1)

sys.setprofile(count)
open_session(sys.argv[1], argv=["doit"])
sys.setprofile(None)
print(json.dumps({"plans": len(plans), "modules": sorted(sys.modules)}))
"""


def test_a_no_op_plans_once_then_not_at_all_and_imports_no_planning(tmp_path: Path) -> None:
    """The first run plans once (its locks answer images.toml: none is recorded, nothing is
    planned again); the next is served by the plan cache: no plan, and none of what planning
    or acting imports (a second plan for the locks once cost 45-95 ms of every no-op)."""
    manifest = quickstart_copy(tmp_path)

    def session() -> dict[str, Any]:
        result = subprocess.run(
            [sys.executable, "-c", SESSION, str(manifest)],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        found: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
        return found

    first, again = session(), session()
    assert first["plans"] == 1
    assert again["plans"] == 0
    assert not [m for m in again["modules"] if m.startswith(ACTING + PLANNING)]
