"""Blobs into a real registry with no work done twice (registry/upload.py), read from what the
registry was asked (a loopback proxy's request log in front of distribution 2.8): a second
push sends 0 bytes, a child's push mounts its parent's layers and sends only its own, and an
upload cut off halfway resumes where the registry says it stopped.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_graph.errors import RegistryError
from build_graph.oci.digest import Digest
from build_graph.oci.refs import parse_ref
from build_graph.registry import api, upload
from tests.helpers import REPO, doit_command, summary_rows
from tests.integration.lying_proxy import Lies, lying_proxy
from tests.support.registry import Registry
from tests.support.workspace import Workspace

pytestmark = pytest.mark.integration
MB = 1 << 20


@pytest.fixture
def proxied(registry: Registry) -> Iterator[tuple[str, Lies]]:
    with lying_proxy(registry.address) as served:
        yield served


def blobs(folder: Path, *sizes: int) -> list[tuple[Digest, Path]]:
    """Incompressible blobs of these sizes, as files named by their digests."""
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    for size in sizes:
        data = os.urandom(size)
        digest = Digest.of(data)
        path = folder / digest.hex
        path.write_bytes(data)
        made.append((digest, path))
    return made


def sent_bytes(lies: Lies, since: int) -> list[tuple[str, str]]:
    return [r for r in lies.requests[since:] if r[0] in ("PATCH", "PUT") and "/blobs/" in r[1]]


def test_a_second_push_sends_nothing(proxied: tuple[str, Lies], tmp_path: Path) -> None:
    address, lies = proxied
    image = parse_ref(f"{address}/up/base:t")
    layers = blobs(tmp_path / "b", 3 * MB, 2 * MB, 1000)
    first = upload.push_blobs(image, layers, (), tmp_path / "sessions")
    assert sum(m.sent for m in first) == 5 * MB + 1000
    assert {m.how for m in first} == {"sent"}
    for digest, path in layers:  # what the registry holds is the bytes on disk
        assert api.get_blob(image, digest) == path.read_bytes()
    before = len(lies.requests)
    again = upload.push_blobs(image, layers, (), tmp_path / "sessions")
    assert [m.sent for m in again] == [0, 0, 0] and {m.how for m in again} == {"present"}
    assert sent_bytes(lies, before) == []


def test_a_child_mounts_its_parent_s_layers(proxied: tuple[str, Lies], tmp_path: Path) -> None:
    address, lies = proxied
    parent = parse_ref(f"{address}/up/parent:t")
    shared = blobs(tmp_path / "p", 2 * MB, MB)
    upload.push_blobs(parent, shared, (), tmp_path / "sessions")
    own = blobs(tmp_path / "c", MB + 7)
    before = len(lies.requests)
    moved = upload.push_blobs(
        parse_ref(f"{address}/up/child:t"), [*shared, *own], ("up/parent",), tmp_path / "sessions"
    )
    assert [m.how for m in moved] == ["mounted", "mounted", "sent"]
    assert sum(m.sent for m in moved) == MB + 7
    mounts = [r for r in lies.requests[before:] if r[0] == "POST"]
    assert len(mounts) == 3  # a mount asked for each missing blob; the last opened an upload
    patched = sent_bytes(lies, before)
    assert len([r for r in patched if r[0] == "PATCH"]) == 1  # the child's own layer only


def test_an_upload_cut_off_resumes_where_the_registry_stopped(
    proxied: tuple[str, Lies], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    address, lies = proxied
    monkeypatch.setattr(upload, "CHUNK", MB)
    image = parse_ref(f"{address}/up/resume:t")
    [(digest, path)] = blobs(tmp_path / "r", 5 * MB + 123)
    sessions = tmp_path / "sessions"
    # The third chunk fails as a dropped connection would surface: the runner stops there.
    lies.fail, lies.fail_method = 503, "PATCH"
    lies.fail_paths = re.compile(r"/blobs/uploads/")
    seen = 0

    def third_patch(method: str, _path: str) -> bool:
        nonlocal seen
        seen += method == "PATCH"
        return seen == 3

    lies.fail_times = None
    lies.fail_when = third_patch
    with pytest.raises(RegistryError, match="503"):
        upload.push_blobs(image, [(digest, path)], (), sessions)
    lies.reset()
    assert (sessions / f"{digest.hex}.json").is_file()  # where it got to, kept
    [moved] = upload.push_blobs(image, [(digest, path)], (), sessions)
    assert moved.how == "resumed"
    assert moved.sent == path.stat().st_size - 2 * MB  # two chunks were in already
    assert api.get_blob(image, digest) == path.read_bytes()
    assert not (sessions / f"{digest.hex}.json").exists()


BIG_TEMPLATE = """\
FROM {{ base_image }}
RUN head -c 200M /dev/urandom > /payload.bin
"""
KILLED_STACK = """\
[stack]
name = "killed"
registry = "{registry}/killed"

[versions]
python = "3.11"

[tiers.app]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"

[tiers.big]
parent = "app"
template = "big.Dockerfile.j2"
"""


def test_a_push_killed_halfway_resumes_and_the_image_verifies(
    proxied: tuple[str, Lies], registry: Registry, tmp_path: Path
) -> None:
    """SIGKILL (the OOM killer, a cancelled CI job) while a 200 MB layer is going up in
    64 MiB chunks: the next run asks the registry how far the upload got, sends only the
    rest, and the image it pushed verifies and is promoted."""
    address, lies = proxied
    root = tmp_path / "stack"
    (root / "templates").mkdir(parents=True)
    (root / "templates" / "big.Dockerfile.j2").write_text(BIG_TEMPLATE)
    (root / "images.toml").write_text(KILLED_STACK.format(registry=address))
    (root / "images.lock").write_bytes((REPO / "examples/quickstart/images.lock").read_bytes())
    ws = Workspace(root, registry)
    built = ws.doit("build:big")
    assert built.returncode == 0, built.stderr[-3000:]

    run = subprocess.Popen(
        doit_command(ws.manifest, "push:big"),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    patches: dict[str, int] = {}

    def kill_at_third_chunk(method: str, path: str) -> bool:
        if method != "PATCH":
            return False
        patches[path] = patches.get(path, 0) + 1
        if patches[path] < 3:
            return False
        os.killpg(run.pid, signal.SIGKILL)  # two chunks in, the third in flight
        return True

    lies.fail, lies.fail_method, lies.fail_times = 503, "PATCH", None
    lies.fail_paths = re.compile(r"/blobs/uploads/")
    lies.fail_when = kill_at_third_chunk
    assert run.wait(timeout=600) == -signal.SIGKILL
    lies.reset()
    sessions = root / "build" / "default" / "big" / "uploads"
    assert [p.name for p in sessions.glob("*.json")], "the cut-off upload's session was kept"

    again = ws.doit()
    said = again.stdout + again.stderr
    assert again.returncode == 0, said[-3000:]
    row = summary_rows((root / "build" / "summary.md").read_text())["big"]
    moved = re.fullmatch(r"([\d.]+) MB sent \(.* 1 resumed\) in [\d.]+ s", row["pushed"])
    assert moved and float(moved[1]) < 200 * MB / 1e6 - 100, row  # not the whole layer again
    assert row["verify"].startswith("passed ("), row
    assert "latest" in row["tags moved"].split(", "), row
    assert not list(sessions.glob("*.json"))
