"""The compile stage with its cache in a GCS bucket (real client, real emulator, real ccache)."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from build_graph.ccache.store import open_store
from build_graph.ccache.sync import CacheSync
from build_graph.errors import CacheConflict
from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.support.gcs import GcsEmulator
from tests.support.registry import Registry
from tests.support.workspace import Workspace, make_workspace
from tests.unit.test_ccache_sync import read_only

pytestmark = pytest.mark.integration
BUCKET = "team-ccache"
FIRST_WHEEL: dict[str, int] = {}  # the cold compile's wheel, compared after a warm one


@pytest.fixture(scope="module")
def ws(
    tmp_path_factory: pytest.TempPathFactory, registry: Registry, gcs: GcsEmulator
) -> Iterator[Workspace]:
    ws = make_workspace(tmp_path_factory.mktemp("cc"), registry)
    ws.edit('max_size = "2G"', f'url = "gs://{BUCKET}/ccache"\nmax_size = "2G"')
    yield ws


def compile_(ws: Workspace, gcs: GcsEmulator, **env: str) -> tuple[str, dict[str, Any]]:
    """Wipe the local cache and wheels (a fresh runner), compile, return output and stats."""
    build = ws.root / "build"
    shutil.rmtree(build / "ccache", ignore_errors=True)
    shutil.rmtree(build / "default" / "fastext" / "wheels", ignore_errors=True)
    result = ws.doit("compile:fastext", env={"STORAGE_EMULATOR_HOST": gcs.url, **env})
    assert result.returncode == 0, "a cache problem must never fail the compile"
    stats = json.loads((build / "default" / "fastext" / "ccache-stats.json").read_text())
    return result.stdout + result.stderr, stats


def archives(gcs: GcsEmulator) -> dict[str, int]:
    return {b.name: int(b.generation) for b in gcs.client().list_blobs(BUCKET)}


def wheel_contents(ws: Workspace) -> dict[str, int]:
    [wheel] = (ws.root / "build" / "default" / "fastext" / "wheels").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return {i.filename: i.CRC for i in archive.infolist() if "RECORD" not in i.filename}


def test_cold_compile_saves_an_archive(ws: Workspace, gcs: GcsEmulator) -> None:
    output, stats = compile_(ws, gcs)
    assert stats["stats"]["misses"] > 0 and stats["stats"]["hits"] == 0
    assert stats["transfer"]["bytes_up"] > 0 and stats["transfer"]["saved"].startswith("saved")
    [name] = archives(gcs)
    assert name.startswith("ccache/quickstart/fastext/default-") and name.endswith(".tar.zst")
    assert "0.0% hit rate" in output
    FIRST_WHEEL.update(wheel_contents(ws))


def test_warm_compile_on_a_wiped_workspace_hits(ws: Workspace, gcs: GcsEmulator) -> None:
    before = archives(gcs)
    output, stats = compile_(ws, gcs)
    assert stats["stats"]["hit_rate"] >= 0.9
    assert stats["transfer"]["restored_from"] is not None
    assert stats["transfer"]["saved"] == "unchanged: not uploaded"
    # Keys are named without the bucket prefix.
    assert "compiler cache: restored ccache/quickstart/fastext/" not in output
    assert "compiler cache: restored quickstart/fastext/default-" in output
    assert archives(gcs) == before
    assert FIRST_WHEEL and wheel_contents(ws) == FIRST_WHEEL


def test_corrupt_archive_means_a_cold_compile_with_a_warning(
    ws: Workspace, gcs: GcsEmulator
) -> None:
    [name] = archives(gcs)
    gcs.client().bucket(BUCKET).blob(name).upload_from_string(b"not a zstd archive")
    output, stats = compile_(ws, gcs)
    assert "warning: compiler cache: could not restore" in output
    assert stats["stats"]["misses"] > 0
    assert stats["transfer"]["saved"].startswith("saved")  # the garbage is replaced
    blob = gcs.client().bucket(BUCKET).get_blob(name)
    assert blob is not None and blob.size > 1000


def test_truncated_archive_is_refused_whole_and_replaced(ws: Workspace, gcs: GcsEmulator) -> None:
    [name] = archives(gcs)
    blob = gcs.client().bucket(BUCKET).blob(name)
    whole = blob.download_as_bytes()
    blob.upload_from_string(whole[: len(whole) // 2])
    output, stats = compile_(ws, gcs)
    [warning] = [line for line in output.splitlines() if "warning:" in line]
    assert f"gs://{BUCKET}/ccache" in warning and "zstd frame incomplete" in warning, warning
    assert stats["stats"]["misses"] > 0 and stats["transfer"]["restored_from"] is None
    assert stats["transfer"]["saved"].startswith("saved")
    assert gcs.client().bucket(BUCKET).get_blob(name).size > len(whole) // 2


def test_read_only_store_warns_and_the_compile_succeeds(ws: Workspace, gcs: GcsEmulator) -> None:
    store = ws.root / "read-only-store"
    store.mkdir()
    text = ws.manifest.read_text()
    ws.manifest.write_text(text.replace(f"gs://{BUCKET}/ccache", f"file://{store}"))
    try:
        with read_only(store):
            output, stats = compile_(ws, gcs)  # asserts the compile step succeeded
    finally:
        ws.manifest.write_text(text)
    [warning] = [line for line in output.splitlines() if "warning:" in line]
    assert f"compiler cache not saved: file://{store}: " in warning, warning
    assert stats["transfer"]["saved"] == "save failed"
    assert not any(store.iterdir())


def test_stopped_emulator_means_a_cold_compile_with_a_warning(
    ws: Workspace, gcs: GcsEmulator
) -> None:
    gcs.stop()
    try:
        output, stats = compile_(ws, gcs)
    finally:
        gcs.start()
    assert "warning: compiler cache:" in output and "unavailable" in output
    assert stats["stats"]["misses"] > 0
    assert stats["transfer"]["saved"] == "store unavailable: not uploaded"


def test_missing_bucket_is_a_warning(ws: Workspace, gcs: GcsEmulator) -> None:
    text = ws.manifest.read_text()
    ws.manifest.write_text(text.replace(f"gs://{BUCKET}/ccache", "gs://no-such-bucket/x"))
    try:
        output, stats = compile_(ws, gcs)
    finally:
        ws.manifest.write_text(text)
    assert "warning: compiler cache:" in output
    assert stats["stats"]["misses"] > 0


def test_racing_writers_never_clobber_a_newer_archive(
    ws: Workspace, gcs: GcsEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs.url)
    stack = load(ws.manifest)
    by_key = {t.key: t for t in plan(stack)}
    tier, builder = by_key["fastext"], by_key["builder"]
    folders = [ws.root / "build" / "race" / name for name in ("a", "b")]
    syncs = [CacheSync(stack, tier, builder, folder) for folder in folders]
    for sync in syncs:
        sync.restore()  # both start from the same generation
    for n, folder in enumerate(folders):
        (folder / "f" / f"entry-{n}R").parent.mkdir(parents=True, exist_ok=True)
        (folder / "f" / f"entry-{n}R").write_bytes(b"x" * (100 + n))
    syncs[0].save()
    assert syncs[0].transfer.saved.startswith("saved")
    after_first = archives(gcs)
    syncs[1].save()
    assert syncs[1].transfer.saved == "newer archive in store: not overwritten"
    assert archives(gcs) == after_first
    store = open_store(stack.cache.url)
    with pytest.raises(CacheConflict):
        store.upload(Path(__file__), syncs[0].key, if_generation=1)
