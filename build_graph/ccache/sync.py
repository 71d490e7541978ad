"""Restore a tier's compiler cache from the store before a compile, save it back after.

One archive per (stack, tier, variant, platform, toolchain) key, the toolchain being the
builder image's content hash. Restore falls back to the newest archive of the same tier *and
variant and platform* (another variant's objects are of other CUDA versions and archs: tens of GB of
misses); keys are parsed into their fields for that, since variant names may contain '-'
('cu128' must not take 'cu128-debug'). Save uploads when the cache changed, or when the
store has no readable archive under our key (it lost it, or restore rejected it), always
under a generation precondition, so an older cache never replaces a newer one; after a
download that failed, a save never replaces the archive it could not fetch with a smaller
one (the store's warm cache is never lost to a network blip). Nothing here fails a build:
each problem is one warning line.
"""

from __future__ import annotations

import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from build_graph.ccache import archive as ccache_archive
from build_graph.ccache.keys import cache_key, key_fields, tier_prefix
from build_graph.ccache.store import Found, Store, open_store, store_problem
from build_graph.errors import CacheConflict, CacheUnavailable, EnvironmentProblem
from build_graph.fs import read_record, write_record
from build_graph.log import log, progress
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier


@dataclass
class Transfer:
    """What moved and how long it took; reported after every compile."""

    restored_from: str | None = None
    bytes_down: int = 0
    restore_s: float = 0.0
    bytes_up: int = 0
    save_s: float = 0.0
    saved: str = "not saved"
    warnings: list[str] = field(default_factory=list)


class CacheSync:
    def __init__(self, stack: Stack, tier: PlannedTier, builder: PlannedTier, folder: Path) -> None:
        self.store: Store = open_store(stack.cache.url)
        self.key = cache_key(stack, tier, builder)
        self.prefix = tier_prefix(stack, tier)
        self.folder = folder
        # ccache overshoots max_size between cleanups; a bucket archive that unpacks to more
        # than twice it is no cache of ours (a zstd bomb must not fill the disk).
        self.unpack_limit = 2 * stack.cache.max_size_bytes
        self.state_path = folder.with_name(folder.name + ".state.json")
        self.name = tier.key
        self.stack_name = stack.name
        self.required = stack.cache.required
        self.transfer = Transfer()
        self._restore_warnings = 0  # how many of transfer.warnings the restore gave
        self._exact_generation = 0  # generation of our key when restored; 0 = absent
        self._unread: Found | None = None  # an archive restore could not fetch, kept safe
        self._reseed = False  # the store lacks a readable archive of ours: save regardless
        self._uploaded = False  # by this run, so far
        self._times_behind = False  # the store's archive lacks the compile's kept times
        self._saving = threading.Lock()  # interval saves, the final one, an interrupt's

    def _warn(self, message: str) -> None:
        line = f"[{self.name}] warning: compiler cache: {message}; compiling without it"
        self.transfer.warnings.append(message)
        progress(line)

    def restore(self) -> None:
        """Bring the local cache folder up to the store's newest fitting archive. With
        `[cache] required`, a store that cannot be read or written fails here, before the
        compile, in one line (EnvironmentProblem, exit 3)."""
        try:
            self._restore()
        except OSError as exc:  # local disk trouble: still never fail the build for it
            self._exact_generation = -1
            self._warn(f"local cache folder unusable ({exc})")
        self._restore_warnings = len(self.transfer.warnings)
        if self.required:
            # Unreadable (no store, no credentials, a local folder unusable): fail. A rejected
            # archive (corrupt, over the limit) is not the store's fault: the compile goes on
            # and its save replaces it.
            if self._exact_generation < 0 or self._unread is not None:
                raise EnvironmentProblem(self._refusal(self.transfer.warnings[-1]))
            problem = self.writable()
            if problem is not None:
                raise EnvironmentProblem(self._refusal(problem))

    def _refusal(self, problem: str) -> str:
        return (
            f"compiler cache of {self.name}: {problem}; [cache] required = true, so nothing "
            "was compiled: fix the store's credentials or permissions (or set required = "
            "false to compile cold with a warning)"
        )

    def writable(self) -> str | None:
        """None when the store takes a write, else why not (store_problem)."""
        return store_problem(self.store, self.stack_name, self.folder.parent)

    def _restore(self) -> None:
        started = time.monotonic()
        try:
            self._restore_from_store()
        finally:  # every path, failures too, reports the time it really took
            self.transfer.restore_s = time.monotonic() - started

    def _restore_from_store(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            exact = self.store.stat(self.key)
            self._exact_generation = exact.generation if exact else 0
            self._reseed = exact is None
            found = exact or self.store.newest(self.prefix, self._same_tier)
        except CacheUnavailable as exc:
            self._exact_generation = -1  # unknown: never upload blindly
            self._warn(f"{self.store.url} unavailable ({exc})")
            return
        state = read_record(self.state_path) or {}
        current: str | None = None  # the folder's fingerprint, once known and still valid
        if found is None:
            log(f"[{self.name}] compiler cache: no archive in {self.store.url} yet (cold)")
        elif (
            state.get("key") == found.key
            and state.get("generation") == found.generation
            and (current := ccache_archive.fingerprint(self.folder)) == state.get("fingerprint")
        ):
            log(f"[{self.name}] compiler cache: local copy is {found.key}")
        elif self._grew_here(state, found):
            # What this machine saved, and compiled on since (a run killed after an interval
            # save): richer than the archive. The state keeps the old fingerprint: its save
            # sees the difference and uploads.
            log(f"[{self.name}] compiler cache: local copy is {found.key} and more")
            return
        else:
            outcome = self._download(found)
            # Unless restored, the folder does not hold `found`: the state must not claim it,
            # or the next run would skip the download and its save would replace the archive.
            if outcome == "unavailable":  # not read: it may be warm, keep it safe
                self._unread = found
            elif outcome == "rejected" and found.key == self.key:
                self._reseed = True  # unreadable: replace it (its generation, no newer one)
            found, current = (found, None) if outcome == "restored" else (None, current)
        self._write_state(found, current)

    def _grew_here(self, state: dict[str, object], found: Found) -> bool:
        """The folder held `found` (the state says so) and holds at least as much now."""
        held = state.get("bytes")
        return (
            state.get("key") == found.key
            and state.get("generation") == found.generation
            and isinstance(held, int)
            and ccache_archive.folder_size(self.folder) >= held
        )

    def _same_tier(self, key: str) -> bool:
        """A fallback candidate: the same stack, tier and variant, parsed, not prefixed."""
        return key_fields(key) == key_fields(self.key)

    def _download(self, found: Found) -> Literal["restored", "unavailable", "rejected"]:
        """Fetch and unpack `found`; the folder is unchanged unless 'restored'."""
        with tempfile.TemporaryDirectory(dir=self.folder.parent) as tmp:
            archive = Path(tmp) / "cache.tar.zst"
            try:
                self.store.download(found, archive)
            except CacheUnavailable as exc:
                self._warn(f"could not restore {found.key} from {self.store.url} ({exc})")
                return "unavailable"
            try:
                ccache_archive.unpack(archive, self.folder, limit=self.unpack_limit)
            except ccache_archive.ArchiveError as exc:
                self._warn(
                    f"could not restore {found.key} from {self.store.url}: archive rejected ({exc})"
                )
                return "rejected"
        self.transfer.restored_from = found.key
        self.transfer.bytes_down = found.size
        log(f"[{self.name}] compiler cache: restored {found.key} ({found.size / 2**20:.1f} MiB)")
        return "restored"

    def _write_state(self, found: Found | None, fingerprint: str | None = None) -> None:
        """Record what the local folder holds; `fingerprint` if already computed for it
        (a walk of every cache file, so never done twice for the same folder state)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        write_record(
            self.state_path,
            {
                "key": found.key if found else None,
                "generation": found.generation if found else 0,
                "fingerprint": fingerprint or ccache_archive.fingerprint(self.folder),
                "bytes": ccache_archive.folder_size(self.folder),
            },
        )

    def times_kept(self) -> None:
        """The compile's times were just written into the folder (they are not in its
        fingerprint). If this run already uploaded during the compile, that archive lacks
        them: the next save uploads whatever the fingerprint says."""
        self._times_behind = self._uploaded

    def save(self) -> None:
        """Upload the cache if it changed or the store needs it, never over a newer archive.

        Never raises: any failure (store, local disk, packing) is one warning line, because
        the compile it follows has its result either way.
        """
        with self._saving:
            try:
                self._save()
            except Exception as exc:  # the cache must never fail the build (README)
                self._save_failed(f"{type(exc).__name__}: {exc}")

    def _save_failed(self, cause: str) -> None:
        progress(f"[{self.name}] warning: compiler cache not saved: {self.store.url}: {cause}")
        self.transfer.warnings.append(f"not saved: {cause}")
        self.transfer.saved = "save failed"

    def _save(self) -> None:
        state = read_record(self.state_path) or {}
        current = ccache_archive.fingerprint(self.folder)
        if current == state.get("fingerprint") and not (self._reseed or self._times_behind):
            self.transfer.saved = "unchanged: not uploaded"
            return
        if self._exact_generation < 0:
            self.transfer.saved = "store unavailable: not uploaded"
            return
        started = time.monotonic()
        with tempfile.TemporaryDirectory(dir=self.folder.parent) as tmp:
            archive = Path(tmp) / "cache.tar.zst"
            try:
                size = ccache_archive.pack(self.folder, archive)
                if self._keeps_warmer(size):
                    return
                saved = self.store.upload(archive, self.key, self._exact_generation)
            except CacheConflict:
                log(
                    f"[{self.name}] compiler cache: another build saved {self.key} meanwhile; "
                    "kept theirs (not overwritten)"
                )
                self.transfer.saved = "newer archive in store: not overwritten"
                return
            except (CacheUnavailable, OSError) as exc:
                self._save_failed(str(exc))
                return
        self._exact_generation, self._reseed, self._times_behind = saved.generation, False, False
        self._uploaded = True
        later = self.transfer.warnings[self._restore_warnings :]  # an interval save's blip
        self.transfer.warnings[self._restore_warnings :] = [
            w for w in later if not w.startswith("not saved: ")
        ]
        self.transfer.bytes_up, self.transfer.save_s = saved.size, time.monotonic() - started
        self.transfer.saved = f"saved {saved.key}"
        self._write_state(saved, current)  # packing read the folder; it did not change it

    def _keeps_warmer(self, size: int) -> bool:
        """After a failed download of our own key, keep the store's archive unless ours holds
        at least as much (a cold compile's cache must not replace a warm one)."""
        unread = self._unread
        if unread is None or unread.key != self.key or size >= unread.size:
            return False
        log(
            f"[{self.name}] compiler cache: kept {unread.key} ({unread.size / 2**20:.1f} MiB) "
            f"in the store: this run could not restore it, and its own cache is smaller "
            f"({size / 2**20:.1f} MiB)"
        )
        self.transfer.saved = "store's warmer archive kept: not uploaded"
        return True

    def summary(self) -> dict[str, object]:
        return asdict(self.transfer)

    def shortfall(self) -> str:
        """What the run summary's cache cell adds when the cache did not do its job: why
        the compile ran cold, or why its result was not saved; '' when it did."""
        moved = self.transfer
        restore, save = (
            moved.warnings[: self._restore_warnings],
            moved.warnings[self._restore_warnings :],
        )
        said = f"; cold: {restore[0]}" if restore and moved.restored_from is None else ""
        return said + "".join(f"; {warning}" for warning in save[:1])
