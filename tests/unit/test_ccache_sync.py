"""The compiler cache is never lost: a failed restore cannot lead to a save that replaces the
store's warm archive, and fallbacks never cross variants (a real file store, no Docker)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from build_graph.ccache import archive as ccache_archive
from build_graph.ccache.store import Found
from build_graph.ccache.sync import CacheSync
from build_graph.errors import CacheUnavailable, EnvironmentProblem
from build_graph.plan.plan import plan
from tests.helpers import MINIMAL, load_text
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

[variants.a]
[variants.b]
"""
)


def sync_for(tmp_path: Path, variant: str, folder: Path) -> CacheSync:
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "c.sh.j2").write_text("#!/bin/sh\n")
    stack = load_text(tmp_path, STACK)
    planned = {(t.spec.variant, t.spec.name): t for t in plan(stack)}
    return CacheSync(stack, planned[(variant, "ext")], planned[(variant, "base")], folder)


def warm_store(tmp_path: Path) -> tuple[Found, str]:
    """A warm archive saved under variant a's key; returns it and its fingerprint."""
    first = sync_for(tmp_path, "a", tmp_path / "seed")
    first.restore()
    make_cache(tmp_path / "seed", files=60)
    first.save()
    found = first.store.stat(first.key)
    assert found is not None and first.transfer.saved == f"saved {first.key}"
    return found, ccache_archive.fingerprint(tmp_path / "seed")


def unreachable(found: Found, dest: Path) -> None:
    """A transient network failure during the download (the store itself is real)."""
    raise CacheUnavailable("connection reset by peer")


def failed_restore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local: Path) -> CacheSync:
    """A sync on a fresh machine whose restore hit a network failure."""
    flaky = sync_for(tmp_path, "a", local)
    monkeypatch.setattr(flaky.store, "download", unreachable)
    flaky.restore()
    assert flaky.transfer.warnings and flaky.transfer.restored_from is None
    return flaky


def test_a_failed_restore_never_replaces_the_warm_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warm, warm_fingerprint = warm_store(tmp_path)
    local = tmp_path / "fresh-machine"
    flaky = failed_restore(tmp_path, monkeypatch, local)
    assert flaky.transfer.restore_s > 0
    make_cache(local, files=2)  # what a cold compile leaves behind
    flaky.save()
    assert flaky.transfer.saved == "store's warmer archive kept: not uploaded"
    assert flaky.store.stat(flaky.key) == warm  # same generation: untouched

    later = sync_for(tmp_path, "a", local)  # the next run, with a working store
    later.restore()
    assert later.transfer.restored_from == warm.key  # the state did not claim it was here
    assert ccache_archive.fingerprint(local) == warm_fingerprint


def test_a_failed_restore_still_saves_a_cache_that_holds_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warm, _ = warm_store(tmp_path)
    local = tmp_path / "fresh-machine"
    flaky = failed_restore(tmp_path, monkeypatch, local)
    shutil.copytree(tmp_path / "seed", local, dirs_exist_ok=True)
    make_cache(local / "more", files=30)
    flaky.save()
    assert flaky.transfer.saved == f"saved {flaky.key}"
    saved = flaky.store.stat(flaky.key)
    assert saved is not None and saved.generation != warm.generation


def test_fallback_never_takes_another_variants_archive(tmp_path: Path) -> None:
    warm_store(tmp_path)  # only variant a has an archive
    other = sync_for(tmp_path, "b", tmp_path / "b-cache")
    other.restore()
    assert other.transfer.restored_from is None
    assert not any((tmp_path / "b-cache").rglob("*R"))


def test_archive_keys_name_stack_tier_variant_and_toolchain(tmp_path: Path) -> None:
    sync = sync_for(tmp_path, "b", tmp_path / "cache")
    stack, tier, variant_and_toolchain = sync.key.split("/")
    assert (stack, tier) == ("demo", "ext")
    assert variant_and_toolchain.startswith("b-") and variant_and_toolchain.count("-") == 1
    assert sync.key.startswith(sync.prefix)


def test_a_folder_that_grew_here_since_its_save_is_kept_and_saved(tmp_path: Path) -> None:
    """A run killed after an interval save leaves the folder richer than the archive it
    saved: the next run on this machine keeps it (not replaced by the poorer archive) and
    its save uploads it."""
    warm_store(tmp_path)
    local = tmp_path / "local"
    first = sync_for(tmp_path, "a", local)
    first.restore()
    (local / "f" / "compiled-since-R").write_bytes(b"x")
    again = sync_for(tmp_path, "a", local)
    again.restore()
    assert again.transfer.restored_from is None and (local / "f" / "compiled-since-R").exists()
    again.save()
    assert again.transfer.saved == f"saved {again.key}"


def test_a_folder_that_lost_entries_since_its_restore_is_restored_again(tmp_path: Path) -> None:
    warm_store(tmp_path)
    local = tmp_path / "local"
    first = sync_for(tmp_path, "a", local)
    first.restore()
    entry = next(p for p in local.rglob("*") if p.is_file() and p.stat().st_size > 0)
    entry.unlink()  # `ccache -C`, a disk cleanup: poorer than the archive
    again = sync_for(tmp_path, "a", local)
    again.restore()
    assert again.transfer.restored_from == again.key and entry.exists()
    again.save()
    assert again.transfer.saved == "unchanged: not uploaded"


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """`folder` and all in it unwritable, for root too: without write bits, and where that
    does not bind (root, CAP_DAC_OVERRIDE) immutable as well (chattr +i)."""
    paths = [folder, *folder.rglob("*")]
    modes = {p: p.stat().st_mode for p in paths}
    for path in paths:
        path.chmod(modes[path] & ~0o222)
    probe, immutable = folder / ".probe", False
    try:
        try:
            probe.touch()
        except PermissionError:
            pass
        else:
            probe.unlink()
            immutable = (
                subprocess.run(
                    ["chattr", "+i", *map(str, paths)], capture_output=True, check=False
                ).returncode
                == 0
            )
            if not immutable:
                pytest.skip(
                    "running as root where chattr +i does not work: no way to make "
                    "a folder read-only"
                )
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
        for path in paths:
            path.chmod(modes[path])


def test_a_read_only_store_means_one_warning_and_no_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warm, _ = warm_store(tmp_path)
    local = tmp_path / "fresh-machine"
    sync = sync_for(tmp_path, "a", local)
    sync.restore()
    make_cache(local / "more", files=30)
    capsys.readouterr()
    with read_only(tmp_path / "store"):
        sync.save()  # raises nothing
    [line] = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    prefix = f"[{sync.name}] warning: compiler cache not saved: {sync.store.url}: "
    assert line.startswith(prefix), line
    cause = line.removeprefix(prefix)  # the path, and EPERM (immutable) or EACCES (mode)
    assert cause.startswith(str(tmp_path / "store")), cause
    assert cause.endswith(("Operation not permitted", "Permission denied")), cause
    assert sync.transfer.saved == "save failed"
    assert sync.store.stat(sync.key) == warm


def sync_required(tmp_path: Path, local: Path) -> CacheSync:
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "c.sh.j2").write_text("#!/bin/sh\n")
    stack = load_text(
        tmp_path, STACK.replace('url = "file://store"', 'url = "file://store"\nrequired = true')
    )
    assert stack.cache.required
    planned = {(t.spec.variant, t.spec.name): t for t in plan(stack)}
    return CacheSync(stack, planned[("a", "ext")], planned[("a", "base")], local)


def test_a_cold_compile_for_want_of_a_store_says_why_in_the_summary_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not required: the compile goes on cold, and the run summary's cache cell says why
    (llm-d ran cold for days on invalid cache credentials and nothing said so)."""
    warm_store(tmp_path)
    flaky = failed_restore(tmp_path, monkeypatch, tmp_path / "fresh")
    assert flaky.shortfall() == f"; cold: {flaky.transfer.warnings[0]}"
    assert "connection reset by peer" in flaky.shortfall()
    healthy = sync_for(tmp_path, "a", tmp_path / "healthy")
    healthy.restore()
    assert healthy.transfer.restored_from is not None and healthy.shortfall() == ""


def test_a_required_store_that_cannot_be_read_fails_before_the_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warm_store(tmp_path)
    sync = sync_required(tmp_path, tmp_path / "fresh")
    monkeypatch.setattr(sync.store, "download", unreachable)
    with pytest.raises(EnvironmentProblem) as caught:
        sync.restore()
    message = str(caught.value)
    assert message.startswith(f"compiler cache of {sync.name}: ")
    assert "connection reset by peer" in message and "required = true" in message
    assert caught.value.exit_code == 3


def test_a_required_store_that_cannot_be_written_fails_before_the_compile(
    tmp_path: Path,
) -> None:
    warm, _ = warm_store(tmp_path)
    sync = sync_required(tmp_path, tmp_path / "fresh")
    with read_only(tmp_path / "store"), pytest.raises(EnvironmentProblem) as caught:
        sync.restore()  # the archive reads fine; the write check does not pass
    assert f"{sync.store.url} cannot be written" in str(caught.value)
    assert sync.store.stat(sync.key) == warm  # nothing of the warm archive was touched
    sync_required(tmp_path, tmp_path / "again").restore()  # writable again: no error


def test_a_required_store_whose_archive_is_rejected_still_compiles(tmp_path: Path) -> None:
    """A corrupt archive is not the store's fault: a required cache compiles (cold) and its
    save replaces the archive; refusing would block every compile for good."""
    warm_store(tmp_path)
    sync = sync_required(tmp_path, tmp_path / "fresh")
    found = sync.store.stat(sync.key)
    assert found is not None
    archive = tmp_path / "store" / sync.key
    archive.write_bytes(b"not a zstd frame")  # corrupt, in place
    sync.restore()  # no EnvironmentProblem
    assert sync.transfer.warnings and sync.transfer.restored_from is None
    assert sync.shortfall().startswith("; cold: ")
