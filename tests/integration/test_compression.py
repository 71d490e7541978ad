"""A `[layers] compression = "zstd"` stack on the engines users run: built, pushed, verified
and promoted on the current engine (its own layers zstd in the registry, the base image's
left as they came), and refused in one line by Debian 12's Docker 20.10, which cannot read
zstd (its own words: "archive/tar: invalid tar header"), with nothing verified or promoted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.support.engines import Engine, start_engine, stop_engine
from tests.support.registry import Registry
from tests.support.workspace import Workspace

pytestmark = pytest.mark.integration
ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
STACK = """\
[stack]
name = "zs"
registry = "{registry}/zs"

[versions]
python = "3.11"

[layers]
compression = "zstd"
level = 3

[tiers.app]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
tags = ["stable"]
"""


@pytest.fixture(scope="module")
def old() -> Iterator[Engine]:
    """Debian 12's own docker.io 20.10, in a chroot of its own (scripts/engine.sh)."""
    yield start_engine("old", "classic", suite="bookworm")
    stop_engine("old", suite="bookworm")


def workspace(folder: Path, registry: Registry, text: str) -> Workspace:
    folder.mkdir()
    (folder / "images.toml").write_text(text.format(registry=registry.address))
    (folder / "images.lock").write_bytes((REPO / "examples/quickstart/images.lock").read_bytes())
    return Workspace(folder, registry)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Workspace:
    """The zstd stack, after the same stack as gzip was built (a warm BuildKit cache that
    holds the tier's own layer gzipped: what switching an existing stack meets)."""
    gzip = STACK.replace('[layers]\ncompression = "zstd"\nlevel = 3\n', "")
    assert gzip != STACK
    before = workspace(tmp_path_factory.mktemp("gzip") / "stack", registry, gzip)
    assert before.doit("build:app").returncode == 0
    return workspace(tmp_path_factory.mktemp("zstd") / "stack", registry, STACK)


def layer_types(registry: Registry, tag: str) -> list[str]:
    manifest = json.loads(registry.manifest_and_config("zs/app", tag)[0])
    return [layer["mediaType"] for layer in manifest["layers"]]


def test_docker_20_10_fails_verify_in_one_line_naming_the_compression(
    ws: Workspace, registry: Registry, old: Engine
) -> None:
    pushed = ws.doit("push:app")
    assert pushed.returncode == 0, pushed.stderr[-3000:]
    hash_tag = next(t for t in registry.tags("zs/app") if len(t) == 20)
    types = layer_types(registry, hash_tag)
    # the base image's layer as it came (gzip); the layers this build made, zstd, though
    # BuildKit's cache held the same RUN step's layer as gzip (the fixture built it): the
    # exporter converted it rather than reusing that blob
    assert types[0].endswith("gzip") and types[1:] and set(types[1:]) == {ZSTD}, types

    refused = ws.doit("verify:app", env={"DOCKER_HOST": old.host})
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0
    # one message (doit shows it under the task and again in its closing list of errors)
    lines = {
        line.strip().removeprefix("error: ")
        for line in said.splitlines()
        if "cannot read zstd layers" in line
    }
    assert len(lines) == 1, said[-3000:]
    [line] = lines
    assert "20.10" in line and 'compression = "gzip"' in line, line
    assert "Traceback" not in said and "invalid tar header" not in said
    tags = registry.tags("zs/app")
    assert "latest" not in tags and not [t for t in tags if ".verify-" in t], tags


def test_the_current_engine_verifies_and_promotes_the_zstd_stack(
    ws: Workspace, registry: Registry
) -> None:
    result = ws.doit()
    assert result.returncode == 0, result.stderr[-3000:]
    assert {"latest", "stable"} <= set(registry.tags("zs/app"))
    assert ZSTD in layer_types(registry, "latest")
    again = ws.doit()
    assert again.returncode == 0 and "-- build:app" in again.stdout, again.stdout[-2000:]


def test_a_runner_s_engine_pulls_what_was_pushed(
    ws: Workspace, registry: Registry, tmp_path: Path
) -> None:
    """The digest promoted is the digest built: a fresh pull on a second engine of the
    current Docker reads the zstd layers and runs the image."""
    runner = start_engine("zrunner", "containerd")
    try:
        digest = registry.digest("zs/app", "latest")
        ref = f"{registry.address}/zs/app@{digest}"
        runner.docker("pull", ref)
        out = runner.docker("run", "--rm", "--network=host", ref, "python3", "-c", "print(7*6)")
        assert out.strip() == b"42"
    finally:
        stop_engine("zrunner", purge=True)
