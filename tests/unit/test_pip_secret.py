"""With credentialed pip settings, every pip step of every shipped template reads them from
the `pipconf` secret, never from public PyPI (issue 18: "nothing of the host")."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from build_graph import settings
from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from build_graph.plan.render import environment
from tests.helpers import REPO, write_manifest

SHIPPED = REPO / "templates"
MANIFESTS = sorted([REPO / "images.toml", *REPO.glob("examples/*/images.toml")])
SECRET = "--mount=type=secret,id=pipconf,target=/etc/pip.conf"
# pip as a command word: `pip`, `pip3`, `python3 -m pip`, "$whl/pip"; not python3-pip-whl.
_RUNS_PIP = re.compile(r"""(?:^|[\s;&|/"'])pip3?(?=[\s"';&|]|$)""")

# Every shipped Dockerfile template, every branch that can run pip taken.
EVERYTHING = """
[stack]
name = "all"
registry = "127.0.0.1:5000/all"

[versions]
python = "3.11"
cuda = "12.4.1"
torch = "2.6.0"
torchvision = "0.21.0"
pip = "26.3"
setuptools = "80.9.0"

[tiers.builder]
from = "debian:bookworm-slim"
template = "builder.Dockerfile.j2"
packages = ["cmake"]
system_packages = ["make"]

[tiers.cudabuilder]
from = "debian:bookworm-slim"
template = "cuda-builder.Dockerfile.j2"
packages = ["cuda-toolkit"]

[tiers.runtime]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
packages = ["numpy"]
compile = { builder = "builder", script = "c.sh.j2", sources = { ext = "ext" } }

[tiers.torch]
from = "debian:bookworm-slim"
template = "torch-wheels.Dockerfile.j2"
packages = ["rich"]
build_args = { TORCH_INDEX_URL = "https://download.pytorch.org/whl/cu124" }

[tiers.packages]
parent = "runtime"
template = "python-packages.Dockerfile.j2"
packages = ["six"]
system_packages = ["curl"]
context = ["pkg"]

[tiers.training]
parent = "packages"
template = "training.Dockerfile.j2"
packages = ["tqdm"]
system_packages = ["git"]
context = ["train"]

[tiers.runner]
parent = "training"
template = "runner.Dockerfile.j2"
packages = ["click"]
context = ["launch.py"]
"""


def instructions(dockerfile: str) -> list[str]:
    """Logical instructions: continuation lines joined, comments and blanks dropped."""
    joined, pending = [], ""
    for line in dockerfile.splitlines():
        if line.lstrip().startswith("#") and not pending:
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        if (pending + line).strip():
            joined.append((pending + line).strip())
        pending = ""
    return joined


def pip_runs_without_secret(dockerfile: str) -> list[str]:
    """RUN instructions that run pip able to reach an index without the pipconf secret.
    `pip install --no-index` (the bootstrap from Debian's own wheel) reads no index, so
    the settings cannot matter to it."""
    missing = []
    for instruction in instructions(dockerfile):
        keyword, _, rest = instruction.partition(" ")
        if keyword.upper() != "RUN" or not _RUNS_PIP.search(rest):
            continue
        words = shlex.split(rest, posix=True)
        flags = []
        while words and words[0].startswith("--"):
            flags.append(words.pop(0))
        if SECRET not in flags and "--no-index" not in words:
            missing.append(instruction)
    return missing


@pytest.fixture(autouse=True)
def _credentialed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUILD_GRAPH_PIP_INDEX_URL", "https://ci:TOKEN@mirror.example/simple")
    buildargs, secrets = settings.for_build(buildkit=True)
    assert buildargs == {} and "TOKEN" in secrets["pipconf"]  # the id the mount names


def test_the_parser_sees_a_pip_step_without_the_secret() -> None:
    dockerfile = (
        "FROM x\n# RUN pip install nothing\nRUN apt-get install python3-pip-whl\n"
        f"RUN {SECRET} python3 -m pip install a\n"
        "RUN --mount=type=cache,target=/c echo \\\n && python3 -m pip install b\n"
        'RUN python3 "$whl/pip" install --no-index "$whl"\n'
    )
    assert pip_runs_without_secret(dockerfile) == [
        "RUN --mount=type=cache,target=/c echo   && python3 -m pip install b"
    ]


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: p.parent.name)
def test_every_pip_step_of_the_shipped_stacks_mounts_the_secret(manifest: Path) -> None:
    for tier in plan(load(manifest)):
        assert pip_runs_without_secret(tier.dockerfile) == [], tier.key


def test_every_pip_step_of_every_shipped_template_mounts_the_secret(tmp_path: Path) -> None:
    for folder in ("ext", "pkg", "train"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.py").write_text("x = 1\n")
    (tmp_path / "launch.py").write_text("print('go')\n")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "c.sh.j2").write_text("#!/bin/sh\n")
    stack = load(write_manifest(tmp_path, EVERYTHING))
    planned = plan(stack)
    used = {t.spec.template for t in planned}
    shipped = {p.name for p in SHIPPED.glob("*.Dockerfile.j2")}
    assert used == shipped, f"render these too: {sorted(shipped - used)}"
    env = environment(stack)
    for tier in planned:
        assert str(env.get_template(tier.spec.template).filename).startswith(str(SHIPPED))
        assert pip_runs_without_secret(tier.dockerfile) == [], tier.key
