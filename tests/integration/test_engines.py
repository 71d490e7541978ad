"""The engines users run, side by side: the quickstart on Docker's classic image store (an
upgraded install) and on a daemon with Docker 29.0's API floor (1.44), each a dockerd of its
own (scripts/engine.sh: own socket, data root and containerd; no cache shared with the main
engine), seeded with `docker save | docker load` as a user's machine would be. The main
engine (the containerd image store, Docker 29's default) runs every other test."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_graph.manifest.expectation import Expectation
from build_graph.plan.lock import LOCAL, read_lock
from build_graph.verify.checks import check_size
from tests.support.engines import Engine, start_engine, stop_engine
from tests.support.registry import Registry
from tests.support.servers import free_port
from tests.support.workspace import built, make_workspace, pushed

pytestmark = pytest.mark.integration
TIERS = ("builder", "fastext", "base", "training", "runner")


@pytest.fixture(scope="module")
def classic() -> Iterator[Engine]:
    yield start_engine("classic", "classic")
    stop_engine("classic")


@pytest.fixture(scope="module")
def floor() -> Iterator[Engine]:
    yield start_engine("floor", "containerd", min_api="1.44")
    stop_engine("floor")


def promoted_everywhere(registry: Registry) -> None:
    for tier in TIERS:
        tags = registry.tags(f"quickstart/{tier}")
        hashes = [t for t in tags if len(t) == 20]
        assert "latest" in tags and hashes, (tier, tags)
        latest = registry.digest(f"quickstart/{tier}", "latest")
        assert latest in {registry.digest(f"quickstart/{tier}", h) for h in hashes}, tier


def test_the_quickstart_promotes_in_one_run_on_the_classic_store(
    tmp_path: Path, registry: Registry, classic: Engine
) -> None:
    ws = make_workspace(tmp_path, registry)
    first = ws.doit(env={"DOCKER_HOST": classic.host})
    assert first.returncode == 0, first.stderr[-3000:]
    promoted_everywhere(registry)
    again = ws.doit(env={"DOCKER_HOST": classic.host})
    assert again.returncode == 0 and not built(again) and not pushed(again)


def test_a_daemon_with_docker_29s_api_floor_builds_the_quickstart(
    tmp_path: Path, floor: Engine
) -> None:
    """Docker 29.0-29.2 refuse clients below API 1.44: the CLI chosen must speak it. The
    base image was loaded (`docker load`) and tagged for a registry that never got it: in
    the containerd store it still has a RepoDigests entry under that name, which must not
    become a pin (no registry serves it); images.lock records it as local."""
    registry = Registry(tmp_path / "registry", free_port())
    (tmp_path / "registry").mkdir()
    registry.start()
    try:
        ws = make_workspace(tmp_path, registry)
        seed = f"{registry.address}/seed/debian:loaded"
        floor.docker("tag", "debian:bookworm-slim", seed)
        ws.manifest.write_text(
            ws.manifest.read_text().replace('from = "debian:{debian}-slim"', f'from = "{seed}"')
        )
        (ws.root / "images.lock").unlink()  # pinned by this run, not the example's lock
        run = ws.doit(env={"DOCKER_HOST": floor.host})
        assert run.returncode == 0, run.stderr[-3000:]
        promoted_everywhere(registry)
        assert read_lock(ws.root / "images.lock").images == {seed: LOCAL}
    finally:
        registry.discard()


def test_a_cli_the_daemon_refuses_is_never_chosen(
    tmp_path: Path, floor: Engine, old_cli: Path
) -> None:
    """Debian 12's docker 20.10 CLI (API 1.41), alone on PATH against a 1.44 floor: one line
    naming what to install, before anything is built."""
    registry = Registry(tmp_path / "registry", free_port())  # an empty one: builder is built
    (tmp_path / "registry").mkdir()
    registry.start()
    try:
        ws = make_workspace(tmp_path, registry)
        path = f"{old_cli.parent}:/usr/sbin:/usr/bin:/sbin:/bin"
        run = ws.doit("build:builder", env={"DOCKER_HOST": floor.host, "PATH": path})
    finally:
        registry.discard()
    assert run.returncode != 0
    assert "API 1.44 or newer" in run.stderr and "buildx" in run.stderr, run.stderr[-2000:]
    assert f"{old_cli} (API 1.41)" in run.stderr
    assert "Traceback" not in run.stderr and not built(run)


def test_max_size_gives_one_verdict_on_both_stores(tmp_path: Path, classic: Engine) -> None:
    """verify.max_size is unpacked bytes on every store: the containerd store's own `Size`
    (compressed) would pass an image of 64 MiB of zeros under a limit it is over."""
    main = Engine(os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"), "containerd")
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "from build_graph.docker import daemon; print(daemon.containerd_store())",
        ],
        env=main.env(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert found == "True", "the main engine is not in the containerd image store"
    (tmp_path / "Dockerfile").write_text(
        "FROM debian:bookworm-slim\nRUN head -c 67108864 /dev/zero > /zeros\n"
    )
    sizes = {}
    for engine in (main, classic):
        engine.docker("buildx", "build", "--load", "--network=host", "-t", "sizes:1", str(tmp_path))
        sizes[engine.host] = int(
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "from build_graph.docker import daemon; "
                    "print(daemon.local_image('sizes:1').size)",
                ],
                env=engine.env(),
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
    first, second = sizes.values()
    assert abs(first - second) < 0.1 * max(first, second), sizes
    limit = 64 << 20  # the zeros alone; the image is more
    want = Expectation(
        python="3.11",
        conda=False,
        single_python=True,
        pip_check=True,
        packages={},
        cuda=None,
        max_size_bytes=limit,
    )
    verdicts = {h: check_size(want, {"image_size_bytes": s})[0].status for h, s in sizes.items()}
    assert set(verdicts.values()) == {"fail"}, (sizes, verdicts)


@pytest.fixture(scope="module")
def old_cli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Debian 12's own docker CLI (docker.io 20.10, API 1.41), unpacked from its package."""
    folder = tmp_path_factory.mktemp("old-cli")
    got = subprocess.run(
        ["apt-get", "download", "docker.io/bookworm"],
        cwd=folder,
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if got.returncode != 0:  # a host whose apt has no bookworm: said, never passed
        pytest.skip(
            f"not checked: Debian 12's docker.io is not in this host's apt sources "
            f"({got.stderr.strip()[-200:]})"
        )
    deb = next(folder.glob("docker.io_20.10*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(folder / "root")], check=True)
    cli = folder / "bin" / "docker"
    cli.parent.mkdir()
    cli.symlink_to(folder / "root" / "usr" / "bin" / "docker")
    return cli
