"""apt locks on real parts: the real apt in the quickstart's debian:bookworm-slim resolves a
package added to images.toml, a run records it before building, the image holds exactly
the locked versions, and a .deb whose bytes are not the locked ones stops the build."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from build_graph.aptlock import files
from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.helpers import REPO
from tests.support.registry import Registry
from tests.support.workspace import Workspace, make_workspace

pytestmark = pytest.mark.integration


@pytest.fixture
def ws(tmp_path: Path, registry: Registry) -> Iterator[Workspace]:
    yield make_workspace(tmp_path, registry)


def check(ws: Workspace) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "build_graph", "check", "--offline", "--manifest", str(ws.manifest)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=120,
    )


def installed(image: str) -> dict[str, str]:
    said = docker.from_env().containers.run(
        image, ["dpkg-query", "-W", "-f", "${Package} ${Version}\\n"], remove=True
    )
    return dict(line.split(" ", 1) for line in said.decode().splitlines())


def test_a_package_added_is_locked_by_the_run_installed_as_locked_and_other_bytes_refused(
    ws: Workspace,
) -> None:
    ws.edit(
        'system_packages = ["g++", "gcc", "libc6-dev"]',
        'system_packages = ["g++", "gcc", "hello", "libc6-dev"]',
    )
    path = ws.root / "images.aptlock" / "builder.linux-amd64.toml"
    said = check(ws)
    assert said.returncode == 2, said.stdout + said.stderr
    assert f"{path}" in said.stderr and "no longer answers images.toml" in said.stderr

    first = ws.doit("build:builder")
    text = first.stdout + first.stderr
    assert first.returncode == 0, text[-3000:]
    lock = files.read(path, "builder", ws.manifest)
    assert lock is not None
    hello = next(d for d in lock.debs if d.name == "hello")
    assert f"builder.linux-amd64.toml: hello (none) -> {hello.version}" in text
    [builder] = [t for t in plan(load(ws.manifest)) if t.spec.name == "builder"]
    assert builder.apt.fresh
    held = installed(builder.image)
    assert {d.name: d.version for d in lock.debs}.items() <= held.items()

    # Another file under the same version: the tag moves (the sha256 is an input) and the
    # build refuses the archive's bytes before dpkg sees them.
    path.write_text(path.read_text().replace(hello.sha256, "0" * 64))
    second = ws.doit("build:builder")
    text = second.stdout + second.stderr
    assert second.returncode != 0, text[-3000:]
    assert f"/var/cache/apt/archives/{hello.file}: FAILED" in text, text[-3000:]
