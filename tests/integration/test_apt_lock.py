"""apt locks on real parts: the real apt in debian:bookworm-slim resolves the lock, the run
fetches each locked .deb from a mirror on 127.0.0.1 (the real file, taken from Debian's
archive by apt in a container), keeps it in the team's store and installs it with no
network; when the mirror drops the version the rebuild takes it from the store and makes
the same image; other bytes under the locked version stop the run before anything builds."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import docker
import pytest

from build_graph.aptlock import files
from build_graph.manifest.load import load
from build_graph.plan.plan import PlannedTier, plan
from tests.helpers import build_graph
from tests.loopback_http import serving
from tests.support.registry import Registry
from tests.support.workspace import run_doit

pytestmark = pytest.mark.integration

STACK = """
[stack]
name = "aptlock"
registry = "{registry}/aptlock"

[versions]
python = "3.11"

[apt]
lock = true

[tiers.tool]
from = "debian:bookworm-slim"
template = "tool.Dockerfile.j2"
system_packages = ["hello"]
"""

TEMPLATE = """{% import "_macros.j2" as m %}
FROM {{ base_image }}
ENV DEBIAN_FRONTEND=noninteractive
{{ m.apt_install(tier.system_packages) }}
"""


@pytest.fixture
def stack(tmp_path: Path, registry: Registry) -> Iterator[Path]:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "tool.Dockerfile.j2").write_text(TEMPLATE)
    manifest = tmp_path / "images.toml"
    manifest.write_text(STACK.format(registry=registry.address))
    yield manifest


def command(manifest: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return build_graph(manifest, *args)


def tool(manifest: Path) -> PlannedTier:
    [planned] = plan(load(manifest))
    return planned


def forget_here(planned: PlannedTier, cache: Path) -> None:
    """What this machine holds of the tier: its image, its gathered .debs, its .deb cache."""
    docker.from_env().images.remove(planned.image, force=True)
    for deb in planned.folder.debs.iterdir():
        deb.unlink()
    shutil.rmtree(cache)


def mirror_handler(folder: Path) -> type[SimpleHTTPRequestHandler]:
    class Mirror(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Mirror


def test_the_lock_is_installed_from_the_team_store_once_the_mirror_drops_it(
    stack: Path, tmp_path: Path
) -> None:
    said = command(stack, "check", "--offline")
    assert said.returncode == 2 and "no apt lock yet" in said.stderr, said.stderr
    locked = command(stack, "lock")
    assert locked.returncode == 0, locked.stderr[-2000:]
    path = stack.parent / "images.aptlock" / "tool.linux-amd64.toml"
    lock = files.read(path, "tool", stack)
    assert lock is not None
    [hello] = lock.debs  # libc6 is in the image already
    assert hello.name == "hello"

    # The mirror: the real .deb, taken from the archive by apt in a container.
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    client = docker.from_env()
    client.containers.run(
        "debian:bookworm-slim",
        ["sh", "-c", f"apt-get update -qq && cd /out && apt-get download -qq {hello.pin}"],
        volumes={str(mirror): {"bind": "/out", "mode": "rw"}},
        network_mode="host",
        remove=True,
    )
    assert (mirror / hello.file).is_file()
    with serving(mirror_handler(mirror)) as address:
        path.write_text(path.read_text().replace(hello.url, f"http://{address}/{hello.file}"))
        # this machine's cache of .debs, the test's own (every stack on a machine shares it)
        cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
        first = run_doit(stack.parent, stack, ("build:tool",), cache, 600)
        text = first.stdout + first.stderr
        assert first.returncode == 0, text[-3000:]
        assert f"{hello.file}: fetched from http://{address}/" in text
        planned = tool(stack)
        image = client.images.get(planned.image)
        said_hello = client.containers.run(planned.image, ["hello"], remove=True)
        assert said_hello.decode().strip() == "Hello, world!"

        # The mirror moves on: the version is gone from it, the image from this machine.
        (mirror / hello.file).unlink()
        forget_here(planned, tmp_path / "cache")
        again = run_doit(stack.parent, stack, ("build:tool",), cache, 600)
        text = again.stdout + again.stderr
        assert again.returncode == 0, text[-3000:]
        assert f"{hello.file}: from the team's store" in text
        assert client.images.get(planned.image).id == image.id
        assert (
            tmp_path / "cache" / "build-graph" / "debs" / f"sha256-{hello.sha256}.deb"
        ).is_file()

        # Other bytes under the locked version: refused before anything builds.
        (mirror / hello.file).write_bytes(b"not the package")
        store = stack.parent / "build" / "ccache-store" / "inputs" / "sha256" / hello.sha256
        assert store.is_file()
        store.unlink()
        forget_here(planned, tmp_path / "cache")
        refused = run_doit(stack.parent, stack, ("build:tool",), cache, 600)
        text = refused.stdout + refused.stderr
        assert refused.returncode != 0
        assert f"served other bytes for hello {hello.version}" in text, text[-3000:]
        assert "refused before building" in text
        assert not client.images.list(planned.image)
        assert not (planned.folder.debs / hello.file).exists()
