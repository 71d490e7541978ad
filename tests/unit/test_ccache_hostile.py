"""The bucket is untrusted: hostile, truncated and corrupt archives in a real file:// store are
refused whole, with one warning, the local cache untouched and nothing written outside it;
a store that lost (or held a refused) archive is re-seeded; fallbacks parse keys."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from build_graph.ccache import archive as ccache_archive
from build_graph.ccache.keys import key_fields
from build_graph.ccache.store import FileStore
from build_graph.ccache.sync import CacheSync
from build_graph.plan.plan import plan
from tests.helpers import MINIMAL, load_text
from tests.hostile_archives import CASES, accepted_links, accepted_owners_and_modes
from tests.unit.test_ccache_local import make_cache

STACK = (
    MINIMAL
    + """
[tiers.ext]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
compile = { builder = "base", script = "c.sh.j2" }

[cache]
url = "file://store"

[variants.cu128]
[variants.cu128-debug]
"""
)


def sync_for(
    tmp_path: Path, folder: Path, variant: str = "cu128", url: str = "file://store"
) -> CacheSync:
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "c.sh.j2").write_text("#!/bin/sh\n")
    stack = load_text(tmp_path, STACK.replace("file://store", url))
    planned = {(t.spec.variant, t.spec.name): t for t in plan(stack)}
    return CacheSync(stack, planned[(variant, "ext")], planned[(variant, "base")], folder)


def store_path(sync: CacheSync, key: str | None = None) -> Path:
    assert isinstance(sync.store, FileStore)
    return sync.store.root / (key or sync.key)


def tree(folder: Path, leave_out: tuple[str, ...] = ()) -> set[str]:
    """Every path under `folder` (links not followed), but those starting with `leave_out`."""
    return {
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if not str(p.relative_to(folder)).startswith(leave_out)
    }


def warnings_in(text: str) -> list[str]:
    return [line for line in text.splitlines() if "warning:" in line]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_archive_in_the_store_is_refused_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    local, outside = tmp_path / "local", tmp_path / "outside"
    outside.mkdir()
    make_cache(local, files=5)
    sync = sync_for(tmp_path, local)
    stored = store_path(sync)
    stored.parent.mkdir(parents=True)
    stored.write_bytes(CASES[name].make(outside))
    before, everything = ccache_archive.fingerprint(local), tree(tmp_path, ("store",))
    capsys.readouterr()

    sync.restore()
    [line] = warnings_in(capsys.readouterr().err)
    assert sync.store.url in line and CASES[name].reason in line, line
    assert sync.transfer.restored_from is None and len(sync.transfer.warnings) == 1
    assert ccache_archive.fingerprint(local) == before
    assert tree(tmp_path, ("store", "local.state.json")) == everything  # no leftovers
    assert not any(outside.iterdir())

    sync.save()  # the refused archive is replaced, though this cache did not change
    assert sync.transfer.saved == f"saved {sync.key}"
    again = tmp_path / "again"
    ccache_archive.unpack(stored, again)
    assert ccache_archive.fingerprint(again) == before


def test_owners_and_high_mode_bits_are_never_applied(tmp_path: Path) -> None:
    archive, folder = tmp_path / "a.tar.zst", tmp_path / "cache"
    archive.write_bytes(accepted_owners_and_modes())
    ccache_archive.unpack(archive, folder)
    modes = {}
    for name in ("root-owned", "other-owned"):
        info = (folder / "1" / name).lstat()
        assert (info.st_uid, info.st_gid) == (os.getuid(), os.getgid())
        assert stat.S_ISREG(info.st_mode) and info.st_mode & 0o7000 == 0
        modes[name] = stat.S_IMODE(info.st_mode)
    assert modes == {"root-owned": 0o755, "other-owned": 0o644}  # no group/other write


def test_links_that_stay_inside_are_restored(tmp_path: Path) -> None:
    archive, folder = tmp_path / "a.tar.zst", tmp_path / "cache"
    archive.write_bytes(accepted_links())
    ccache_archive.unpack(archive, folder)
    first = folder / "0" / "aa" / "first-entryR"
    assert (folder / "2" / "entry").read_bytes() == first.read_bytes()
    assert (folder / "2" / "root").resolve() == folder.resolve()
    assert (folder / "2" / "hard").stat().st_ino == first.stat().st_ino


def test_a_store_that_lost_its_archive_is_reseeded(tmp_path: Path) -> None:
    local = tmp_path / "local"
    first = sync_for(tmp_path, local)
    first.restore()
    make_cache(local, files=10)
    first.save()
    assert first.transfer.saved == f"saved {first.key}"
    unchanged = sync_for(tmp_path, local)
    unchanged.restore()
    unchanged.save()
    assert unchanged.transfer.saved == "unchanged: not uploaded"

    store_path(first).unlink()  # the bucket lost it (lifecycle rule, a wrong `gsutil rm`)
    later = sync_for(tmp_path, local)
    later.restore()
    later.save()  # the local cache did not change: uploaded all the same
    assert later.transfer.saved == f"saved {later.key}"
    assert later.transfer.warnings == []


def test_reseeding_never_clobbers_a_newer_archive(tmp_path: Path) -> None:
    ours, theirs = sync_for(tmp_path, tmp_path / "ours"), sync_for(tmp_path, tmp_path / "theirs")
    ours.restore()
    theirs.restore()  # both found nothing
    make_cache(tmp_path / "theirs", files=10)
    theirs.save()
    saved = ours.store.stat(ours.key)
    ours.save()
    assert ours.transfer.saved == "newer archive in store: not overwritten"
    assert ours.store.stat(ours.key) == saved


def test_keys_are_parsed_not_prefix_matched(tmp_path: Path) -> None:
    debug = sync_for(tmp_path, tmp_path / "debug", "cu128-debug")
    debug.restore()
    make_cache(tmp_path / "debug", files=10)
    debug.save()
    assert debug.transfer.saved == f"saved {debug.key}"
    plain = sync_for(tmp_path, tmp_path / "plain")
    assert debug.key.startswith(plain.prefix)  # what a prefix match took
    plain.restore()
    assert plain.transfer.restored_from is None

    older_toolchain = f"{plain.prefix}{'0' * 20}.tar.zst"  # the same variant: a fallback
    store_path(plain, older_toolchain).write_bytes(store_path(debug).read_bytes())
    fallback = sync_for(tmp_path, tmp_path / "plain")
    fallback.restore()
    assert fallback.transfer.restored_from == older_toolchain
    assert key_fields(debug.key) == ("demo", "ext", "cu128-debug")
    assert key_fields(older_toolchain) == ("demo", "ext", "cu128")
    assert key_fields("demo/ext/cu128-debug.tar.zst") is None  # no toolchain field
