"""The bucket is untrusted, through the real client and the GCS emulator: hostile, truncated
and corrupt objects are refused whole with one warning naming the bucket, the local cache is
untouched, and the next save re-seeds the bucket; fallbacks parse keys (no Docker needed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from build_graph.ccache import archive as ccache_archive
from build_graph.ccache.sync import CacheSync
from tests.hostile_archives import CASES
from tests.support.gcs import GcsEmulator
from tests.unit.test_ccache_hostile import sync_for, tree, warnings_in
from tests.unit.test_ccache_local import make_cache

pytestmark = pytest.mark.integration
BUCKET = "team-ccache"  # created by the gcs fixture


@pytest.fixture
def bucket(
    gcs: GcsEmulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[str, Any]]:
    """A prefix of its own in the emulator's bucket for each test, and the client's handle."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs.url)
    prefix = f"hostile-{tmp_path.name}"
    handle = gcs.client().bucket(BUCKET)
    yield f"gs://{BUCKET}/{prefix}", handle
    for blob in handle.list_blobs(prefix=prefix):
        blob.delete()


def gs_sync(tmp_path: Path, url: str, folder: Path, variant: str = "cu128") -> CacheSync:
    return sync_for(tmp_path, folder, variant, url=url)


def blob_name(url: str, key: str) -> str:
    return f"{url.removeprefix(f'gs://{BUCKET}/')}/{key}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_object_is_refused_whole(
    tmp_path: Path, bucket: tuple[str, Any], capsys: pytest.CaptureFixture[str], name: str
) -> None:
    url, handle = bucket
    local, outside = tmp_path / "local", tmp_path / "outside"
    outside.mkdir()
    make_cache(local, files=5)
    sync = gs_sync(tmp_path, url, local)
    blob = handle.blob(blob_name(url, sync.key))
    blob.upload_from_string(CASES[name].make(outside))
    planted = handle.get_blob(blob.name).generation
    before, everything = ccache_archive.fingerprint(local), tree(tmp_path)
    capsys.readouterr()

    sync.restore()
    [line] = warnings_in(capsys.readouterr().err)
    assert url in line and CASES[name].reason in line, line
    assert sync.transfer.restored_from is None
    assert ccache_archive.fingerprint(local) == before
    assert tree(tmp_path, ("local.state.json",)) == everything
    assert not any(outside.iterdir())

    sync.save()  # re-seeded, under the refused object's generation
    assert sync.transfer.saved == f"saved {sync.key}"
    replaced = handle.get_blob(blob.name)
    assert replaced.generation != planted
    replaced.download_to_filename(str(tmp_path / "again.tar.zst"))
    ccache_archive.unpack(tmp_path / "again.tar.zst", tmp_path / "again")
    assert ccache_archive.fingerprint(tmp_path / "again") == before


def test_a_bucket_that_lost_its_object_is_reseeded(tmp_path: Path, bucket: tuple[str, Any]) -> None:
    url, handle = bucket
    local = tmp_path / "local"
    first = gs_sync(tmp_path, url, local)
    first.restore()
    make_cache(local, files=10)
    first.save()
    assert first.transfer.saved == f"saved {first.key}"
    handle.blob(blob_name(url, first.key)).delete()
    later = gs_sync(tmp_path, url, local)
    later.restore()
    later.save()
    assert later.transfer.saved == f"saved {later.key}"
    assert handle.get_blob(blob_name(url, later.key)) is not None


def test_a_variant_never_takes_a_longer_variants_object(
    tmp_path: Path, bucket: tuple[str, Any]
) -> None:
    url, handle = bucket
    debug = gs_sync(tmp_path, url, tmp_path / "debug", "cu128-debug")
    debug.restore()
    make_cache(tmp_path / "debug", files=10)
    debug.save()
    plain = gs_sync(tmp_path, url, tmp_path / "plain")
    plain.restore()
    assert plain.transfer.restored_from is None
    older = f"{plain.prefix}{'0' * 20}.tar.zst"
    source = handle.blob(blob_name(url, debug.key))
    handle.copy_blob(source, handle, blob_name(url, older))
    fallback = gs_sync(tmp_path, url, tmp_path / "plain")
    fallback.restore()
    assert fallback.transfer.restored_from == older
