"""Same inputs, same image: the quickstart built by two daemons that share no cache.

Daemon A (the tests' engine) and daemon B (a second dockerd: scripts/engine.sh's instance
`repro`, its own data root, containerd, BuildKit cache and pip/apt cache mounts) each build
the whole quickstart, from the same files, into their own empty registry. Each workspace
has its own compiler cache and cache store, so the compiled wheel is compiled twice. The
two registries answer at the same address one after the other (a child's `FROM` and its
base-name label name the registry, as a stack's registry would), each with its own storage.

Then `reproduce` on daemon A rebuilds from scratch and compares with registry A: the same
digest for base, and for a tier that writes the time into a file at build time, that file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_graph.pylock import files
from tests.helpers import REPO
from tests.support.engines import Engine, start_engine, stop_engine
from tests.support.registry import Registry
from tests.support.servers import free_port
from tests.support.workspace import Workspace, make_workspace

pytestmark = pytest.mark.integration
INSTANCE = "repro"
TIERS = ("builder", "fastext", "base", "training", "runner")
STAMPED = """\
{% import "_macros.j2" as m %}
FROM {{ base_image }}
{{ m.site_args() }}
RUN date +%s%N > /opt/built-at
"""


@pytest.fixture(scope="module")
def second() -> Iterator[Engine]:
    try:
        yield start_engine(INSTANCE, "containerd")
    finally:
        stop_engine(INSTANCE, purge=True)


def reproduce(ws: Workspace, tier: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "build_graph", "reproduce", tier, "--manifest", str(ws.manifest)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=1800,
    )
    print(done.stdout[-10000:], done.stderr[-10000:])
    return done


def built(ws: Workspace, registry: Registry, env: dict[str, str] | None = None) -> dict[str, str]:
    """Run the whole stack; each tier's hash tag and the digest it names."""
    started = time.monotonic()
    result = ws.doit(env=env)
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    print(f"quickstart cold on {env or 'daemon A'}: {time.monotonic() - started:.0f} s")
    found = {}
    for tier in TIERS:
        hashes = [t for t in registry.tags(f"quickstart/{tier}") if len(t) == 20]
        assert len(hashes) == 1, (tier, hashes)
        digest = registry.digest(f"quickstart/{tier}", hashes[0])
        assert digest is not None and "latest" in registry.tags(f"quickstart/{tier}")
        found[tier] = f"{hashes[0]} {digest}"
    return found


def test_two_daemons_build_the_same_quickstart_and_reproduce_says_so(
    tmp_path: Path, second: Engine
) -> None:
    port = free_port()
    first = Registry(tmp_path / "registry-a", port)
    first.folder.mkdir()
    first.start()
    try:
        a = make_workspace(tmp_path / "a", first, cold=True)
        (a.root / "templates" / "stamped.Dockerfile.j2").write_text(STAMPED)
        a.manifest.write_text(
            a.manifest.read_text()
            + '\n[tiers.stamped]\nparent = "base"\ntemplate = "stamped.Dockerfile.j2"\n'
            "verify = { archs = false }\n"
        )
        on_a = built(a, first)
        sbom = subprocess.run(
            [sys.executable, "-m", "build_graph", "sbom", "fastext", "--manifest", str(a.manifest)],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout
        lock = files.read(
            a.root / "images.pylock" / "fastext.linux-amd64.toml", "fastext", a.manifest
        )
        assert lock is not None
        assert {
            "name": "build-graph:python-lock",
            "value": f"images.pylock/fastext.linux-amd64.toml sha256:{lock.digest}",
        } in json.loads(sbom)["metadata"]["properties"]
        assert a.doit("promote:stamped").returncode == 0

        started = time.monotonic()
        same = reproduce(a, "base")
        assert same.returncode == 0, same.stdout + same.stderr
        base_digest = on_a["base"].split()[1]
        assert same.stdout.startswith(f"base: same digest {base_digest} as ")
        print(f"reproduce base: {time.monotonic() - started:.0f} s")
        assert first.digest("quickstart/base", "latest") == base_digest  # nothing re-tagged

        planted = reproduce(a, "stamped")
        assert planted.returncode == 1, planted.stdout + planted.stderr
        assert "stamped: differs from " in planted.stdout
        lines = [line.strip() for line in planted.stdout.splitlines()]
        assert any(
            line.startswith("layer ") and "/opt/built-at: content differs" in line for line in lines
        ), planted.stdout
        # only the planted file: the rest of the layer is what the inputs make
        assert [line for line in lines if line.startswith("layer ")] == [
            next(line for line in lines if "/opt/built-at" in line)
        ], planted.stdout
    finally:
        first.stop()

    other = Registry(tmp_path / "registry-b", port)  # same address, its own storage
    other.folder.mkdir()
    other.start()
    try:
        b = make_workspace(tmp_path / "b", other, cold=True)
        on_b = built(b, other, env={"DOCKER_HOST": second.host})
    finally:
        other.discard()
    assert on_b == on_a  # every tier: the same hash tag naming the same digest
