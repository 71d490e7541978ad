"""apt pins moved on purpose, against a signed apt repository on 127.0.0.1 that moves on
(tests/support/apt_repo.py: real .debs, a signed index, a third party's key; the real apt
in the pinned `from` image reads it).

The stack's locks are made against the archive as it was; then a version is dropped and a
security fix published. `outdated` lists the moves and writes nothing, `lock --update app
bg-extra` moves that package alone, `lock --update` the rest (the security archive's said
so), and the next run rebuilds exactly the tier whose lock moved. The old lock, built
again with this machine's cache and the team's store emptied and the version gone from the
archive, is fetched from the snapshot archive at the time it was resolved and makes the
same image. A stale index, another signer, and other
bytes in the snapshot are refused, each in one line, nothing written.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import docker
import pytest
from docker.models.containers import Container

from build_graph.aptlock import files, snapshot
from build_graph.manifest.load import load
from build_graph.plan.plan import PlannedTier, plan
from tests.helpers import build_graph
from tests.pypi_index import Index
from tests.pypi_index import serving as index_serving
from tests.support.apt_repo import KEYRING, AptRepo, served, sources
from tests.support.registry import Registry
from tests.support.workspace import Run, ran, run_doit

pytestmark = pytest.mark.integration

STACK = """
[stack]
name = "mirrored"
registry = "{registry}/mirrored"

[versions]
python = "3.11"

[apt]
lock = true
snapshots = {{ "{debian}" = "{snapshots}/{{time}}/debian" }}

[tiers.base]
from = "{registry}/aptbase:1"
template = "tier.Dockerfile.j2"
system_packages = ["bg-tool"]

[tiers.app]
parent = "base"
template = "tier.Dockerfile.j2"
system_packages = ["bg-extra", "bg-greeting"]
"""

TEMPLATE = """{% import "_macros.j2" as m %}
FROM {{ base_image }}
ENV DEBIAN_FRONTEND=noninteractive
{{ m.apt_install(tier.system_packages) }}
"""

BEFORE = [("bg-tool", "1.0"), ("bg-extra", "1.0"), ("bg-greeting", "1.0")]
# Debian's next point release drops bg-extra 1.0; the security archive fixes bg-greeting.
AFTER = [("bg-tool", "1.0"), ("bg-extra", "1.1"), ("bg-greeting", "1.0")]
FIXED = [("bg-greeting", "1.1")]


@pytest.fixture
def repo(tmp_path: Path, registry: Registry) -> Iterator[AptRepo]:
    """The repository serving BEFORE, and a base image (pushed) whose apt knows only it."""
    with served(AptRepo(tmp_path / "archive")) as repo:
        keyring = repo.make_key()
        repo.make_key("stranger")
        repo.publish("debian", BEFORE)
        repo.publish("debian-security", [])
        client = docker.from_env()
        box = client.containers.run(
            "debian:bookworm-slim",
            ["sleep", "300"],
            detach=True,
            network_mode="host",
        )
        try:
            box.exec_run(["rm", "-f", "/etc/apt/sources.list.d/debian.sources"])
            listed = sources(repo, ["debian", "debian-security"])
            _write(box, "/etc/apt/sources.list.d/test.list", listed.encode())
            _write(box, KEYRING, keyring.read_bytes())
            box.commit(f"{registry.address}/aptbase", "1")
        finally:
            box.remove(force=True)
        client.images.push(f"{registry.address}/aptbase", "1")
        yield repo


def _write(box: Container, path: str, data: bytes) -> None:
    """`data` in `path` in the running container (a tar of one file, put_archive)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(Path(path).name)
        info.size = len(data)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))
    assert box.put_archive(str(Path(path).parent), buffer.getvalue())


def command(manifest: Path, index: Index, *args: str) -> subprocess.CompletedProcess[str]:
    return build_graph(manifest, *args, env={"BUILD_GRAPH_PIP_INDEX_URL": f"{index.url}/simple"})


def said(run: Run | subprocess.CompletedProcess[str]) -> str:
    return run.stdout + run.stderr


def test_pins_move_on_purpose_and_the_old_lock_builds_from_the_snapshot(
    tmp_path: Path, registry: Registry, repo: AptRepo
) -> None:
    stack = tmp_path / "stack"
    (stack / "templates").mkdir(parents=True)
    (stack / "templates" / "tier.Dockerfile.j2").write_text(TEMPLATE)
    manifest = stack / "images.toml"
    manifest.write_text(
        STACK.format(
            registry=registry.address,
            debian=repo.url("debian"),
            snapshots=f"http://{repo.address}/snapshot",
        )
    )
    cache = tmp_path / "machine-cache"
    env = {"XDG_CACHE_HOME": str(cache)}
    client = docker.from_env()
    locks = stack / "images.aptlock"
    with index_serving(Index({})) as index:
        locked = command(manifest, index, "lock")
        assert locked.returncode == 0, said(locked)[-3000:]
        old = files.read(locks / "app.linux-amd64.toml", "app", manifest)
        assert old is not None and snapshot.is_stamp(old.resolved), old
        assert [d.pin for d in old.debs] == ["bg-extra=1.0", "bg-greeting=1.0"]
        old_text = (locks / "app.linux-amd64.toml").read_text()
        first = run_doit(stack, manifest, ("build:app",), env, 600)
        assert first.returncode == 0, said(first)[-3000:]
        assert sorted(ran(first, "build")) == ["app", "base"]
        app_image = _planned(stack, "app").image
        built = client.images.get(app_image).id

        # The archive moves on: bg-extra 1.0 dropped, a security fix of bg-greeting.
        repo.freeze("debian")
        repo.publish("debian", AFTER)
        repo.publish("debian-security", FIXED)
        before = {p.name: p.read_bytes() for p in locks.iterdir()}
        newer = command(manifest, index, "outdated", "--no-from-tags", "--no-python")
        assert newer.returncode == 0, said(newer)[-3000:]
        assert "apt pins that `lock --update` would move (2 locks asked):" in newer.stdout
        for line in (
            "app.linux-amd64.toml: bg-extra 1.0 -> 1.1",
            "app.linux-amd64.toml: bg-greeting 1.0 -> 1.1 (security update)",
            "-> python -m build_graph lock --update app",
        ):
            assert line in newer.stdout, newer.stdout
        assert "base.linux-amd64.toml" not in newer.stdout  # nothing of base moved
        assert {p.name: p.read_bytes() for p in locks.iterdir()} == before

        # One package on request: the rest of the tier's lock stays
        one = command(manifest, index, "lock", "--update", "app", "bg-extra")
        assert one.returncode == 0, said(one)[-3000:]
        assert "app.linux-amd64.toml: bg-extra 1.0 -> 1.1" in said(one), said(one)
        assert ": bg-greeting 1.0 ->" not in said(one), said(one)
        app = files.read(locks / "app.linux-amd64.toml", "app", manifest)
        assert app is not None and [d.pin for d in app.debs] == ["bg-extra=1.1", "bg-greeting=1.0"]
        typo = command(manifest, index, "lock", "--update", "app", "bg-extr")
        assert typo.returncode == 2, said(typo)
        assert "bg-extr is in neither app's Python lock nor its apt lock" in typo.stderr

        moved = command(manifest, index, "lock", "--update")
        assert moved.returncode == 0, said(moved)[-3000:]
        for line in (
            "app.linux-amd64.toml: bg-greeting 1.0 -> 1.1 (security update)",
            "base.linux-amd64.toml: no apt package moved",
        ):
            assert line in said(moved), said(moved)
        assert ": bg-extra 1.1 ->" not in said(moved)  # moved already
        assert (locks / "base.linux-amd64.toml").read_bytes() == before["base.linux-amd64.toml"]
        again = run_doit(stack, manifest, ("build:app",), env, 600)
        assert again.returncode == 0, said(again)[-3000:]
        assert ran(again, "build") == ["app"]  # exactly the tier whose lock moved
        versions = client.containers.run(
            _planned(stack, "app").image,
            [
                "cat",
                "/usr/share/build-graph-test/bg-extra",
                "/usr/share/build-graph-test/bg-greeting",
            ],
            remove=True,
            network_mode="host",
        )
        assert versions.decode().split() == ["1.1", "1.1"]

        # A year on: the old lock again, nothing of it on this machine or in the store,
        # bg-extra 1.0 only in the snapshot archive as it was when the lock was resolved.
        (locks / "app.linux-amd64.toml").write_text(old_text)
        _forget(stack, cache)
        repo.requests.clear()
        year_on = run_doit(stack, manifest, ("build:app",), env, 600)
        assert year_on.returncode == 0, said(year_on)[-3000:]
        from_snapshot = f"http://{repo.address}/snapshot/{old.resolved}/debian/pool/"
        assert f"bg-extra_1.0_all.deb: fetched from {from_snapshot}bg-extra_1.0_all.deb" in (
            said(year_on)
        ), said(year_on)[-3000:]
        assert "/debian/pool/bg-extra_1.0_all.deb" in repo.requests  # the archive, first
        assert client.images.get(app_image).id == built  # the same image as a year ago

        # Other bytes in the snapshot under the locked version: refused before building.
        (repo.root / ".snapshot" / "debian" / "pool" / "bg-extra_1.0_all.deb").write_bytes(
            b"not the package"
        )
        _forget(stack, cache)
        refused = run_doit(stack, manifest, ("build:app",), env, 600)
        assert refused.returncode != 0
        assert f"{from_snapshot}bg-extra_1.0_all.deb served other bytes for bg-extra 1.0" in (
            said(refused)
        ), said(refused)[-3000:]
        assert not client.images.list(app_image)

        # An index gone stale, and one signed by another key: apt refuses, nothing moves.
        held = (locks / "app.linux-amd64.toml").read_bytes()
        for stale_for, signer, words in ((-1, "signer", "expired"), (7, "stranger", "NO_PUBKEY")):
            repo.publish("debian", AFTER, valid_for=timedelta(days=stale_for))
            repo.publish("debian-security", FIXED, signer=signer)
            refused_index = command(manifest, index, "lock", "--update", "app")
            assert refused_index.returncode != 0, said(refused_index)
            assert words in refused_index.stderr, refused_index.stderr
            assert "Traceback" not in refused_index.stderr
            assert (locks / "app.linux-amd64.toml").read_bytes() == held


def _planned(stack: Path, tier: str) -> PlannedTier:
    [planned] = [t for t in plan(load(stack / "images.toml")) if t.spec.name == tier]
    return planned


def _forget(stack: Path, cache: Path) -> None:
    """The app image, its gathered .debs, this machine's cache and the team's store."""
    app = _planned(stack, "app")
    docker.from_env().images.remove(app.image, force=True)
    shutil.rmtree(app.folder.debs)
    shutil.rmtree(stack / "build" / "ccache-store" / "inputs")
    shutil.rmtree(cache)
