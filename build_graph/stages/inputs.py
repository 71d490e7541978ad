"""Locked files on this machine before a build: kept, checked, handed over.

A lock names each file a build installs by its sha256: the `.debs` of an apt lock
(stages/debs.py) and, in a hermetic stack, the wheels of a Python lock (stages/pywheels.py).
Each file is taken from the tier's folder when its sha256 is the locked one, else from this
machine's cache (`$XDG_CACHE_HOME/build-graph/<kind>/`, shared by every stack here), else
from the team's store (the compiler cache's: `[cache] url`, or build/ccache-store), keyed by
sha256, else from where it was served when the lock was made. Every file is hashed and held
to the lock before it is used, wherever it came from; one fetched from its origin is put in
the store, so a rebuild after the archive or index dropped it needs only the store. Other
bytes under a locked name stop the run here, in one line, before anything builds.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from build_graph import layout
from build_graph.ccache.store import Store, open_store
from build_graph.errors import (
    BuildFailed,
    CacheConflict,
    CacheUnavailable,
    IndexAnswerRefused,
    IndexUnreachable,
    NotOnIndex,
)
from build_graph.log import log, progress
from build_graph.manifest.model import Stack
from build_graph.plan.hashing import file_digest
from build_graph.plan.plan import PlannedTier
from build_graph.pypi import fetch
from build_graph.settings import redact

TIMEOUT_S = 60


@dataclass(frozen=True)
class Locked:
    """One file a lock names: where the build finds it, its bytes' sha256 and size (None:
    the lock does not say; the download is then not cut short), what it is, and how to
    find where it is served (asked only when no copy of ours holds it)."""

    file: str
    sha256: str
    size: int | None
    what: str  # 'gcc-12 12.2.0-14', 'numpy 2.3.5'
    origin: Callable[[], str]
    elsewhere: tuple[str, ...] = ()  # tried in turn when the origin has it no more: snapshots


@dataclass(frozen=True)
class Kind:
    """What is gathered: the machine cache's folder and file suffix, the lock command that
    moves its pins, and what a file of it is called in messages."""

    name: str  # 'debs', 'wheels'
    suffix: str  # '.deb', '.whl'
    lock: str  # 'apt lock', 'Python lock'


def machine_cache(kind: Kind) -> Path:
    """Where this machine keeps the files any stack fetched, by sha256 (read back checked)."""
    return layout.machine_cache(kind.name)


def store_key(sha256: str) -> str:
    """Where the team's store keeps a file: by content, so stacks, tiers and kinds share it."""
    return f"inputs/sha256/{sha256}"


def gather(
    stack: Stack, tier: PlannedTier, kind: Kind, folder: Path, files: Sequence[Locked]
) -> Path:
    """`folder` holding exactly `files`, each checked."""
    folder.mkdir(parents=True, exist_ok=True)
    # Two runs (a run and `reproduce`) gathering one tier take turns.
    with (folder.parent / f".{folder.name}.lock").open("a") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)
        wanted = {f.file for f in files}
        for path in folder.iterdir():  # the context holds the lock's files and nothing else
            if path.name not in wanted:
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        store: Store | None = None
        for locked in files:
            target = folder / locked.file
            if _holds(target, locked.sha256):
                continue
            cached = machine_cache(kind) / f"sha256-{locked.sha256}{kind.suffix}"
            partial = folder / f".{locked.file}.partial"
            try:  # written beside and renamed over: a link at `target` is replaced, not followed
                if _holds(cached, locked.sha256):
                    shutil.copyfile(cached, partial)
                    where = "from this machine's cache"
                else:
                    store = store or open_store(stack.cache.url)
                    where = _take(tier, kind, locked, store, partial)
                    _keep(partial, cached)
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)
            log(f"[{tier.key}] {locked.file}: {where}")
    return folder


def missing(stack: Stack, files: Sequence[Locked]) -> set[str]:
    """The sha256s of `files` the team's store holds nothing under."""
    store = open_store(stack.cache.url)
    return {f.sha256 for f in files if store.stat(store_key(f.sha256)) is None}


def keep(stack: Stack, folder: Path, files: Sequence[Locked]) -> None:
    """Every file of `folder` (gathered: each checked) in the team's store, as `fetch` fills
    it: put where the store holds nothing or an object of another size (replaced under its
    generation: a run that stored it meanwhile wins, its bytes are checked when read)."""
    store = open_store(stack.cache.url)
    for locked in files:
        path = folder / locked.file
        found = store.stat(store_key(locked.sha256))
        if found is None or found.size != path.stat().st_size:
            with suppress(CacheConflict):
                store.upload(path, store_key(locked.sha256), found.generation if found else 0)


def _holds(path: Path, sha256: str) -> bool:
    return path.is_file() and not path.is_symlink() and _sha256(path) == sha256


def _take(tier: PlannedTier, kind: Kind, locked: Locked, store: Store, partial: Path) -> str:
    """Put the locked bytes at `partial`; where they came from. A store object of another
    size is not read; one with other bytes is replaced by what the origin serves."""
    generation = 0  # the store holds nothing under the key: create it
    key = store_key(locked.sha256)
    try:
        found = store.stat(key)
        if found is not None:
            generation = found.generation
            if locked.size is None or found.size == locked.size:
                store.download(found, partial)
                if _sha256(partial) == locked.sha256:
                    return f"from the team's store ({store.url})"
            progress(
                f"warning: {tier.key}: the store's {key} is not the locked "
                f"{locked.file}: not used; fetching it from where it was served"
            )
    except CacheUnavailable as exc:
        progress(f"warning: {tier.key}: the team's store cannot be read ({exc})")
    url, got = _download(tier, kind, locked, partial)
    if got != locked.sha256:
        raise other_bytes(tier, kind, locked, url, f"sha256 {got}")
    try:
        store.upload(partial, key, if_generation=generation)
    except CacheConflict:
        pass  # another run stored it meanwhile (its bytes are checked when read)
    except CacheUnavailable as exc:
        progress(f"warning: {tier.key}: {locked.file} not kept in the team's store ({exc})")
    return f"fetched from {redact(url)}, kept in the team's store"


def _keep(checked: Path, cached: Path) -> None:
    """A copy of a checked file in this machine's cache (best effort: a cache)."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        spare = cached.with_name(f".{cached.name}.{os.getpid()}")
        shutil.copyfile(checked, spare)
        os.replace(spare, cached)
    except OSError as exc:
        log(f"note: {cached} not kept ({exc.strerror})")


def _download(tier: PlannedTier, kind: Kind, locked: Locked, out_path: Path) -> tuple[str, str]:
    """Stream the file from where it is served into `out_path`, at most the locked size
    (other bytes are refused by the caller, a longer file here); the URL and the sha256.
    Where the origin has it no more (or cannot be reached), each snapshot in turn; other
    bytes from any of them stop the run, never send it on to the next."""
    said: list[str] = []
    try:  # where it is served: an index that cannot say is not one that served other bytes
        urls = [locked.origin(), *locked.elsewhere]
    except (IndexUnreachable, NotOnIndex, IndexAnswerRefused) as exc:
        said.append(str(exc))
        urls = list(locked.elsewhere)
    for url in urls:
        try:
            with out_path.open("wb") as out:
                return url, fetch.stream(url, out, limit=locked.size, timeout=TIMEOUT_S)
        except IndexAnswerRefused as exc:
            raise other_bytes(tier, kind, locked, url, str(exc)) from None
        except (IndexUnreachable, NotOnIndex) as exc:
            said.append(str(exc))
    raise _cannot_fetch(tier, locked, "; ".join(said))


def _cannot_fetch(tier: PlannedTier, locked: Locked, said: str) -> BuildFailed:
    return BuildFailed(
        f"{tier.key}: cannot fetch {locked.file} ({locked.what}): {said}; the team's "
        f"store does not hold it either (sha256 {locked.sha256}). "
        f"`python -m build_graph lock --update {tier.spec.name}` moves the pins to what "
        "is served now (a new image), or put the file in the team's store"
    )


def other_bytes(tier: PlannedTier, kind: Kind, locked: Locked, url: str, found: str) -> BuildFailed:
    return BuildFailed(
        f"{tier.key}: {redact(url) or 'its origin'} served other bytes for {locked.what} "
        f"({found}; the {kind.lock} holds sha256 {locked.sha256}): refused before "
        "building; if it was rebuilt on purpose, move the pin with "
        f"`python -m build_graph lock --update {tier.spec.name}`"
    )


def _sha256(path: Path) -> str:
    return file_digest(path.name, path).sha256
