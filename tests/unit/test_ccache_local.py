"""Compiler-cache pieces that need no network: archive, file store, stats, sync decisions."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from build_graph.ccache import archive as ccache_archive
from build_graph.ccache.stats import parse
from build_graph.ccache.store import FileStore, open_store
from build_graph.errors import CacheConflict


def make_cache(folder: Path, files: int = 20) -> None:
    for i in range(files):
        entry = folder / f"{i % 16:x}" / f"{i:04d}R"
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_bytes(os.urandom(1000 + i))
    (folder / "0" / "stats").write_text("1 2 3\n")


def test_pack_and_unpack_round_trip(tmp_path: Path) -> None:
    source, restored = tmp_path / "cache", tmp_path / "restored"
    make_cache(source)
    size = ccache_archive.pack(source, tmp_path / "a.tar.zst")
    assert size > 0
    ccache_archive.unpack(tmp_path / "a.tar.zst", restored)
    assert ccache_archive.fingerprint(restored) == ccache_archive.fingerprint(source)
    for path in source.rglob("*R"):
        assert (restored / path.relative_to(source)).read_bytes() == path.read_bytes()


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_damaged_archive_raises_and_leaves_the_cache_intact(tmp_path: Path, damage: str) -> None:
    source, local = tmp_path / "cache", tmp_path / "local"
    make_cache(source)
    make_cache(local, files=3)
    before = ccache_archive.fingerprint(local)
    archive = tmp_path / "a.tar.zst"
    ccache_archive.pack(source, archive)
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2] if damage == "truncate" else os.urandom(4096))
    with pytest.raises(ccache_archive.ArchiveError):
        ccache_archive.unpack(archive, local)
    assert ccache_archive.fingerprint(local) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tar.zst", "cache", "local"]


def test_fingerprint_ignores_counters_and_touches(tmp_path: Path) -> None:
    make_cache(tmp_path)
    before = ccache_archive.fingerprint(tmp_path)
    (tmp_path / "0" / "stats").write_text("9 9 9 9\n")
    os.utime(next(tmp_path.rglob("*R")), (1, 1))
    assert ccache_archive.fingerprint(tmp_path) == before
    (tmp_path / "f" / "new-entryR").write_bytes(b"x")
    assert ccache_archive.fingerprint(tmp_path) != before


def test_file_store_writes_only_under_its_generation(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path / 'store'}")
    assert isinstance(store, FileStore)
    src = tmp_path / "a"
    src.write_bytes(b"first")
    assert store.stat("s/t/k.tar.zst") is None
    first = store.upload(src, "s/t/k.tar.zst", if_generation=0)
    with pytest.raises(CacheConflict):
        store.upload(src, "s/t/k.tar.zst", if_generation=0)  # it exists now
    src.write_bytes(b"second")
    second = store.upload(src, "s/t/k.tar.zst", if_generation=first.generation)
    assert second.generation != first.generation
    with pytest.raises(CacheConflict):  # a writer that started from `first` lost the race
        store.upload(src, "s/t/k.tar.zst", if_generation=first.generation)
    newest = store.newest("s/t/", lambda key: True)
    assert newest is not None and newest.key == "s/t/k.tar.zst"
    out = tmp_path / "out"
    store.download(newest, out)
    assert out.read_bytes() == b"second"


def test_file_store_racing_writers_one_wins(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path / 'store'}")
    results: list[str] = []

    def writer(n: int) -> None:
        src = tmp_path / f"src{n}"
        src.write_bytes(str(n).encode() * 1000)
        try:
            store.upload(src, "k.tar.zst", if_generation=0)
            results.append(f"won {n}")
        except CacheConflict:
            results.append("lost")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [r for r in results if r.startswith("won")]
    assert len(winners) == 1 and results.count("lost") == 7
    assert (tmp_path / "store" / "k.tar.zst").read_bytes()[:1] == winners[0][-1].encode()


def test_parse_print_stats() -> None:
    stats = parse(
        "direct_cache_hit\t7\npreprocessed_cache_hit\t2\ncache_miss\t1\n"
        "cache_size_kibibyte\t2048\nfiles_in_cache\t30\nstats_updated_timestamp\t0\n"
    )
    assert (stats.hits, stats.misses, stats.cache_bytes, stats.files) == (9, 1, 2 << 20, 30)
    assert stats.hit_rate == pytest.approx(0.9)
    assert parse("").hit_rate == 0.0


def test_an_archive_that_unpacks_past_the_limit_is_refused_whole(tmp_path: Path) -> None:
    """A bucket's archive may hold at most twice the cache's max_size (a zstd bomb must
    not fill the disk): past it, nothing is restored and the local cache stays."""
    source, local = tmp_path / "cache", tmp_path / "local"
    make_cache(source, files=20)
    make_cache(local, files=3)
    before = ccache_archive.fingerprint(local)
    archive = tmp_path / "a.tar.zst"
    ccache_archive.pack(source, archive)
    with pytest.raises(ccache_archive.ArchiveError):
        ccache_archive.unpack(archive, local, limit=8 * 1024)
    assert ccache_archive.fingerprint(local) == before
    ccache_archive.unpack(archive, local, limit=10 << 20)  # within the limit: restored
    assert ccache_archive.fingerprint(local) == ccache_archive.fingerprint(source)
