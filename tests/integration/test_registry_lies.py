"""Nothing from a registry is trusted before it is checked (issue 18), driven as an attacker.

A one-tier stack talks to a real registry through a lying reverse proxy on loopback
(lying_proxy.py). With a lie switched on: promote refuses bytes that do not hash to the
verified digest, and `latest` (polled on the real registry all along) never names a digest
without a passing report; a path in a digest header writes nothing anywhere; a 5xx on the
report tag fails verify and promote loudly, naming the registry, before any container runs;
`doit list --status` (and `plan`) say the registry could not be asked and exit 3.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from build_graph.errors import RegistryError
from tests.helpers import REPO
from tests.integration.lying_proxy import Lies, lying_proxy
from tests.support.engines import engine_events
from tests.support.registry import Registry
from tests.support.servers import free_port
from tests.support.workspace import Workspace, ran

pytestmark = pytest.mark.integration

STACK = """\
[stack]
name = "lies"
registry = "{registry}/lies"

[versions]
python = "3.11"

[tiers.app]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
description = "one tier, verified through a proxy that lies when told to"
"""


@pytest.fixture(scope="module")
def proxied(registry: Registry) -> Iterator[tuple[str, Lies]]:
    with lying_proxy(registry.address) as (address, lies):
        yield address, lies


@pytest.fixture(scope="module")
def ws(
    tmp_path_factory: pytest.TempPathFactory, registry: Registry, proxied: tuple[str, Lies]
) -> Workspace:
    """The stack through the proxy, built, pushed and verified honestly (not promoted)."""
    root = tmp_path_factory.mktemp("lies") / "stack"
    root.mkdir()
    (root / "images.toml").write_text(STACK.format(registry=proxied[0]))
    shutil.copy(REPO / "examples" / "quickstart" / "images.lock", root / "images.lock")
    workspace = Workspace(root, registry)
    result = workspace.doit("verify:app")
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return workspace


@pytest.fixture(autouse=True)
def _honest_after(proxied: tuple[str, Lies]) -> Iterator[None]:
    yield
    proxied[1].reset()


def hash_digest(reg: Registry) -> str:
    tag = next(
        t for t in reg.tags("lies/app") if t not in ("latest",) and not t.startswith("sha256-")
    )
    digest = reg.digest("lies/app", tag)
    assert digest is not None
    return digest


def passing_report(reg: Registry, digest: str) -> bool:
    """Whether the real registry holds a passing report for `digest` (read directly)."""
    base = f"http://{reg.address}/v2/lies/app"
    for tag in reg.tags("lies/app"):
        if not tag.startswith(digest.replace(":", "-") + ".verify-"):
            continue
        request = urllib.request.Request(
            f"{base}/manifests/{tag}",
            headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
        )
        with urllib.request.urlopen(request) as response:
            manifest = json.load(response)
        with urllib.request.urlopen(f"{base}/blobs/{manifest['layers'][0]['digest']}") as r:
            document = json.load(r)
        report = document.get("predicate", document)  # an in-toto Statement (issue 22)
        if report["passed"] is True and report["digest"] == digest:
            return True
    return False


class LatestWatch:
    """Polls the real registry for lies/app:latest in a thread; `seen` is every digest."""

    def __init__(self, reg: Registry) -> None:
        self.reg, self.seen, self._stop = reg, set[str](), threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self.polls, self.error = 0, None  # type: int, BaseException | None

    def _poll(self) -> None:
        try:
            while not self._stop.is_set():
                digest = self.reg.digest("lies/app", "latest")
                self.polls += 1
                if digest is not None:
                    self.seen.add(digest)
                time.sleep(0.02)
        except BaseException as exc:  # a watch that stopped watching fails the test
            self.error = exc

    def __enter__(self) -> LatestWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        if self.error is not None:
            raise AssertionError(f"the watch of latest stopped: {self.error!r}")
        assert self.polls > 1, "latest was not watched"


def manifest_of(reg: Registry, tag: str) -> tuple[bytes, str]:
    request = urllib.request.Request(
        f"http://{reg.address}/v2/lies/app/manifests/{tag}",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
    )
    with urllib.request.urlopen(request) as response:
        return response.read(), str(response.headers["Content-Type"])


def files_outside(root: Path, build: Path) -> set[Path]:
    return {p for p in root.rglob("*") if build not in p.parents and p != build}


def test_promote_refuses_other_bytes_under_the_verified_digest(
    ws: Workspace, proxied: tuple[str, Lies]
) -> None:
    address, lies = proxied
    reg = ws.registry
    verified = hash_digest(reg)
    # The other bytes: a real manifest whose blobs the registry holds (the report artifact),
    # so a registry would accept it under `latest` if promote copied it.
    report_tag = next(t for t in reg.tags("lies/app") if ".verify-" in t)
    other, media_type = manifest_of(reg, report_tag)
    lies.swap = (other, media_type)
    with LatestWatch(reg) as watch:
        refused = ws.doit("promote:app")
        lies.reset()
        honest = ws.doit("promote:app")
    text = refused.stdout + refused.stderr
    assert refused.returncode == 1, text[-3000:]
    assert f"the registry {address} served other bytes for lies/app@{verified}" in text
    assert "Traceback" not in text
    assert f"sha256:{hashlib.sha256(other).hexdigest()}" in text  # the bytes' own digest
    assert honest.returncode == 0, (honest.stdout + honest.stderr)[-3000:]
    assert reg.digest("lies/app", "latest") == verified
    assert watch.seen == {verified}  # never anything else, not even for a moment
    assert all(passing_report(reg, digest) for digest in watch.seen)


def test_a_path_in_a_digest_header_writes_nothing_anywhere(
    ws: Workspace, proxied: tuple[str, Lies]
) -> None:
    address, lies = proxied
    build = ws.root / "build"
    shutil.rmtree(build / "default" / "app" / "reports", ignore_errors=True)
    before = files_outside(ws.root.parent, build)
    lies.digest_header = "sha256:../../../../../../escaped"
    result = ws.doit("promote:app")
    text = result.stdout + result.stderr
    assert result.returncode != 0, text[-3000:]
    assert address in text and "not a sha256 digest" in text and "Traceback" not in text
    assert files_outside(ws.root.parent, build) == before
    assert not list(ws.root.parent.rglob("escaped*")) and not Path("/escaped.json").exists()
    assert [p for p in build.rglob("*") if ".." in p.name] == []


def test_a_5xx_on_the_report_tag_fails_loudly_before_any_container(
    ws: Workspace, proxied: tuple[str, Lies]
) -> None:
    address, lies = proxied
    lies.fail = 503
    time.sleep(1.1)  # the daemon counts events by the second
    since = int(time.time())
    for stage in ("verify:app", "promote:app"):
        result = ws.doit(stage)
        text = result.stdout + result.stderr
        assert result.returncode == 3, text[-3000:]
        assert f"the registry {address} answered HTTP 503" in text, text[-3000:]
        assert "see" in text and "Traceback" not in text
        assert ran(result, "verify") == []
    # no probe ran on a guess
    assert [a for k, a in engine_events(since, address) if k == "container"] == []
    listed = ws.doit("list", "--status")
    assert listed.returncode == 3, listed.stdout + listed.stderr
    assert f"the registry {address} answered HTTP 503" in listed.stderr
    assert "verify" not in listed.stdout


def test_list_status_against_a_registry_that_does_not_answer_exits_3(
    ws: Workspace, tmp_path: Path
) -> None:
    root = tmp_path / "stack"
    shutil.copytree(ws.root, root, ignore=shutil.ignore_patterns("build"))
    nowhere = f"127.0.0.1:{free_port()}"
    (root / "images.toml").write_text(STACK.format(registry=nowhere))
    result = Workspace(root, ws.registry).doit("list", "--status")
    assert result.returncode == 3, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert f"cannot ask the registry {nowhere}: nothing answers there" in errors[0]
    assert "scripts/services.sh up" in errors[0] and "Error" not in errors[0]
    assert "build, push" not in result.stdout
    every = Workspace(root, ws.registry).doit("list", "--all", "--status")
    assert every.returncode == 3 and "R build:" not in every.stdout, every.stdout + every.stderr
    assert f"cannot ask the registry {nowhere}" in every.stderr
    plan = subprocess.run(
        [sys.executable, "-m", "build_graph", "plan", "--manifest", str(root / "images.toml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert plan.returncode == 3, plan.stdout + plan.stderr
    assert f"cannot ask the registry {nowhere}" in plan.stderr and "to build" not in plan.stdout


def test_a_registry_that_fails_one_push_with_a_5xx_gets_it_again(registry: Registry) -> None:
    """Racing runners can make a registry fail one upload (a 500 seen here under load):
    push retries a 5xx, and only a 5xx, a bounded number of times."""
    from build_graph.docker import daemon

    client = docker.from_env()
    with lying_proxy(registry.address) as (address, lies):
        image = f"{address}/retry/app:1"
        client.images.get("debian:bookworm-slim").tag(image)
        try:
            lies.fail, lies.fail_method, lies.fail_times = 500, "PUT", 1
            lies.fail_paths = re.compile(r"/manifests/1$")
            digest = daemon.push(image)
            assert lies.fail_times == 0  # the lie was told, and the push went through
            assert str(digest) == registry.digest("retry/app", "1")
            # Not the registry failing: no second try. A new tag, so the manifest is PUT
            # (an engine skips a PUT the registry already holds, as the containerd store does).
            other = f"{address}/retry/app:2"
            client.images.get("debian:bookworm-slim").tag(other)
            lies.fail, lies.fail_times = 401, 1
            lies.fail_paths = re.compile(r"/manifests/2$")
            with pytest.raises(RegistryError):
                daemon.push(other)
            assert lies.fail_times == 0
        finally:
            client.images.remove(image)
            client.images.remove(f"{address}/retry/app:2")
