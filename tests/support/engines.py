"""Docker engines beside the main one: scripts/engine.sh instances, each with its own
socket, data root and store, seeded with the main engine's debian:bookworm-slim."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import REPO

ENGINE = REPO / "scripts" / "engine.sh"


def engine_root() -> Path:
    """The engines' root filesystem on this host (what their daemons see as /)."""
    return Path(os.environ.get("ENGINE_ROOT", "/var/lib/build-graph/engine"))


@dataclass(frozen=True)
class Engine:
    host: str  # DOCKER_HOST of this engine
    store: str

    def env(self, **more: str) -> dict[str, str]:
        return {**os.environ, "DOCKER_HOST": self.host, **more}

    def docker(self, *args: str, stdin: bytes | None = None) -> bytes:
        done = subprocess.run(
            ["docker", *args],
            env=self.env(),
            input=stdin,
            capture_output=True,
            check=False,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        return done.stdout


def suite_env(suite: str) -> dict[str, str]:
    """engine.sh's settings for an engine of another Debian suite, in a root of its own."""
    if not suite:
        return {}
    return {"ENGINE_SUITE": suite, "ENGINE_ROOT": f"{engine_root()}-{suite}"}  # engine.sh's too


def start_engine(
    instance: str, store: str, min_api: str = "", ca_dir: Path | None = None, suite: str = ""
) -> Engine:
    """scripts/engine.sh's engine `instance` in `store`, seeded with debian:bookworm-slim
    from the engine the tests run on (docker save | docker load). `ca_dir` (under /tmp):
    the CA certificates its daemon trusts besides the system's (ENGINE_CA_DIR). `suite`
    'bookworm': Debian 12's own Docker 20.10 instead of the current engine."""
    env = {
        **os.environ,
        "ENGINE_INSTANCE": instance,
        "ENGINE_MIN_API": min_api,
        "ENGINE_CA_DIR": str(ca_dir or ""),
        **suite_env(suite),
    }
    subprocess.run([str(ENGINE), "up", store], env=env, check=True, timeout=600)
    exports = subprocess.run(
        [str(ENGINE), "env"], env=env, check=True, capture_output=True, text=True
    ).stdout
    host = next(
        line.split("=", 1)[1]
        for line in exports.splitlines()
        if line.startswith("export DOCKER_HOST=")
    )
    engine = Engine(host, store)
    try:
        engine.docker("image", "inspect", "debian:bookworm-slim")
    except AssertionError:
        image = subprocess.run(
            ["docker", "save", "debian:bookworm-slim"], capture_output=True, check=True, timeout=600
        ).stdout
        engine.docker("load", stdin=image)
    return engine


def stop_engine(instance: str, purge: bool = False, suite: str = "") -> None:
    """Stops the engine `instance`; `purge` removes its data (images, build cache) too."""
    subprocess.run(
        [str(ENGINE), "purge" if purge else "down"],
        env={**os.environ, "ENGINE_INSTANCE": instance, **suite_env(suite)},
        check=False,
        timeout=120,
    )


def engine_events(since: int, about: str) -> list[tuple[str, str]]:
    """(type, action) of the main engine's events since `since` (a whole second: the engine
    counts by the second) whose subject names `about`, a test's own registry address: the
    pulls and containers its runs caused, not those of tests running beside it. What this
    cannot see (verify's baseline container on the `from` image, a pull of that image)
    happens only within a verify or a build, which the run's record shows: read both
    (`ran(run, "verify")`, `built(run)`)."""
    import time

    import docker

    stream = docker.from_env().events(since=since, until=int(time.time()) + 1, decode=True)
    return [
        (str(e.get("Type")), str(e.get("Action")))
        for e in stream
        if about in json.dumps(e.get("Actor") or {}) or about in str(e.get("from") or "")
    ]


def forget_images(address: str) -> int:
    """Removes from the main engine every image name under `address` (a test registry's, once
    it is gone: nothing can pull or push those names again), tags and digest names alike,
    and says how many went. Names only, never by ID: an image also named under another
    registry (a test beside this one) keeps that name and its content. Without this a CI
    run keeps every quickstart and CUDA image it ever built (tens of GB)."""
    import docker
    import docker.errors

    client = docker.from_env()
    # One listing call: images.list() inspects each image after listing, and an image a
    # worker beside this one removes in between is a NotFound (seen in CI).
    names = [
        name
        for image in client.api.images(all=True)
        for name in (image.get("RepoTags") or []) + (image.get("RepoDigests") or [])
        if name.startswith(f"{address}/")
    ]
    gone = 0
    try:
        for name in names:
            try:
                client.images.remove(name, noprune=False)
                gone += 1
            except docker.errors.NotFound:
                pass  # one removal can take two names (a tag and its digest)
            except docker.errors.APIError as exc:  # a container a killed run left uses it
                print(f"note: {name} kept: {exc.explanation or exc}")
    finally:
        client.close()
    return gone
