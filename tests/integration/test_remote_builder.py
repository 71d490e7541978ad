"""A remote builder: the quickstart built, pushed, verified and promoted through a second
Docker daemon reached over tcp://, with the local daemon untouched.

The second daemon runs on this machine (its own data root, exec root, containerd and
sockets), but over tcp:// build-graph cannot know that it shares this host's files, so
every container gets its files through the Docker API (docker/files.py: copy mode): the
compile's sources and cache go in, the wheels and the cache come back.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.support.registry import Registry
from tests.support.servers import free_port
from tests.support.workspace import make_workspace

pytestmark = pytest.mark.integration
TIERS = ("builder", "fastext", "base", "training", "runner")


@dataclass
class Daemon:
    """A dockerd of the test's own (scripts/engine.sh's instance `remote`: its own data root,
    exec root and containerd), on a Unix socket and on tcp://127.0.0.1 (no TLS: loopback)."""

    port: int

    @property
    def tcp(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {**os.environ, "ENGINE_INSTANCE": "remote", "ENGINE_TCP": str(self.port)}

    def docker(self, *args: str, stdin: bytes | None = None) -> str:
        return subprocess.run(
            ["docker", "-H", self.tcp, *args],
            check=True,
            input=stdin,
            capture_output=True,
            timeout=300,
        ).stdout.decode()

    def start(self) -> None:
        subprocess.run(
            [str(REPO / "scripts" / "engine.sh"), "up", "containerd"],
            env=self.env(),
            check=True,
            timeout=300,
        )

    def stop(self) -> None:
        subprocess.run(
            [str(REPO / "scripts" / "engine.sh"), "purge"], env=self.env(), check=False, timeout=300
        )


@pytest.fixture(scope="module")
def remote() -> Iterator[Daemon]:
    daemon = Daemon(free_port())
    try:
        daemon.start()
        # The quickstart starts from debian:bookworm-slim: seeded from the main daemon.
        saved = subprocess.run(
            ["docker", "save", "debian:bookworm-slim"], check=True, capture_output=True, timeout=300
        ).stdout
        daemon.docker("load", stdin=saved)
        yield daemon
    finally:
        daemon.stop()


def local_traces(registry: Registry) -> tuple[list[str], list[str]]:
    """The main daemon's images and containers (all) of this module's registry."""
    import docker

    main = docker.from_env()  # the main daemon: the environment's, not the remote one
    images = sorted(t for i in main.images.list() for t in i.tags if t.startswith(registry.address))
    boxes = sorted(
        str(c.id)
        for c in main.containers.list(all=True)
        if str(c.attrs["Config"]["Image"]).startswith(registry.address)
    )
    return images, boxes


def test_the_quickstart_runs_through_a_remote_daemon(
    tmp_path: Path, registry: Registry, remote: Daemon
) -> None:
    ws = make_workspace(tmp_path, registry, cold=True)
    env = {"DOCKER_HOST": remote.tcp}
    assert local_traces(registry) == ([], [])
    started = time.monotonic()
    result = ws.doit(env=env)
    first_s = time.monotonic() - started
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    for tier in TIERS:
        assert "latest" in registry.tags(f"quickstart/{tier}"), tier
    # The images are the remote daemon's, the local daemon saw nothing of the stack.
    remote_tags = remote.docker("images", "--format", "{{.Repository}}")
    for tier in TIERS:
        assert f"{registry.address}/quickstart/{tier}" in remote_tags.split(), tier
    assert local_traces(registry) == ([], [])
    # The compile's files came through the API, and its cache landed on this host.
    assert "copied back /ccache -> " in output and "copied back /out -> " in output
    cache = ws.root / "build" / "ccache" / "default" / "fastext"
    assert sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) > 10_000
    stats = json.loads(
        (ws.root / "build" / "default" / "fastext" / "ccache-stats.json").read_text()
    )
    assert stats["stats"]["misses"] > 0
    print(f"remote quickstart, cold: {first_s:.0f} s")

    # A compile again (forced): the remote container starts empty, so every hit comes
    # from the cache this host sent.
    started = time.monotonic()
    again = ws.doit("--always-execute", "compile:fastext", env=env)
    assert again.returncode == 0, (again.stdout + again.stderr)[-5000:]
    stats = json.loads(
        (ws.root / "build" / "default" / "fastext" / "ccache-stats.json").read_text()
    )
    assert stats["stats"]["hit_rate"] >= 0.9, stats
    assert local_traces(registry) == ([], [])
    print(f"remote compile, warm: {time.monotonic() - started:.0f} s")


def test_a_failed_remote_compile_never_loses_the_cache(
    tmp_path: Path, registry: Registry, remote: Daemon
) -> None:
    """A compile that fails after compiling brings its cache back (not its wheels); one
    whose cache holds a link out of it is refused whole: the local cache stays as it was."""
    ws = make_workspace(tmp_path, registry, cold=True)
    env = {"DOCKER_HOST": remote.tcp}
    script = ws.root / "templates" / "fastext-compile.sh.j2"
    script.write_text(script.read_text() + "exit 3\n")
    failed = ws.doit("compile:fastext", env=env)
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0 and "failed (exit 3)" in output
    assert "copied back /ccache -> " in output and "copied back /out -> " not in output
    assert not (ws.root / "build" / "default" / "fastext" / "wheels").exists()
    cache = ws.root / "build" / "ccache" / "default" / "fastext"
    kept = entries(cache)
    assert len(kept) > 10 and local_traces(registry) == ([], [])

    script.write_text(
        script.read_text().replace("exit 3\n", 'ln -s /etc/passwd "$CCACHE_DIR/evil"\nexit 4\n')
    )
    hostile = ws.doit("compile:fastext", env=env)
    output = hostile.stdout + hostile.stderr
    assert hostile.returncode != 0 and "failed (exit 4)" in output
    assert "the compiler cache stays as it was before this compile" in output
    assert "symlink to '/etc/passwd'" in output
    assert entries(cache) == kept


def entries(folder: Path) -> dict[str, int]:
    """Each cache entry and its size (ccache's counters left out: they change on every hit)."""
    return {
        str(p.relative_to(folder)): p.stat().st_size
        for p in folder.rglob("*")
        if p.is_file() and p.name != "stats"
    }
