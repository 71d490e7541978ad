"""The .debs a tier's apt lock names, on this machine before its build: kept, checked, handed over.

Each file is taken from the tier's folder (build/<variant>/<tier>/debs/) when its sha256 is
the locked one, else from this machine's cache (`$XDG_CACHE_HOME/build-graph/debs/`, shared
by every stack here), else from the team's store (the compiler cache's: `[cache] url`, or
build/ccache-store), keyed by sha256, else from where the archive served it when the lock
was made. Every file is hashed and held to the lock before it is used, wherever it came
from; one fetched from the archive is put in the store, so a rebuild after the archive
dropped that version needs only the store. Other bytes under a locked version stop the run
here, in one line, before anything builds. The build gets the folder in its context and
installs from it with no network (templates/_macros.j2).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from build_graph.aptlock.files import Deb
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


def machine_cache() -> Path:
    """Where this machine keeps the .debs any stack fetched, by sha256 (read back checked)."""
    home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(home) / "build-graph" / "debs"


def store_key(deb: Deb) -> str:
    """Where the team's store keeps a file: by content, so stacks and tiers share it."""
    return f"inputs/sha256/{deb.sha256}"


def gather(stack: Stack, tier: PlannedTier) -> Path | None:
    """The folder holding exactly the tier's locked .debs, each checked; None for a tier
    that installs none from a lock."""
    lock = tier.apt.lock if tier.apt.fresh else None
    if lock is None or not lock.debs:
        return None
    folder = tier.folder.debs
    folder.mkdir(parents=True, exist_ok=True)
    # Two runs (a run and `reproduce`) gathering one tier take turns.
    with (tier.folder.root / ".debs.lock").open("a") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)
        wanted = {d.file: d for d in lock.debs}
        for path in folder.iterdir():  # the context holds the lock's files and nothing else
            if path.name not in wanted:
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        store: Store | None = None
        for deb in lock.debs:
            target = folder / deb.file
            if target.is_file() and not target.is_symlink() and _sha256(target) == deb.sha256:
                continue
            cached = machine_cache() / f"sha256-{deb.sha256}.deb"
            if cached.is_file() and not cached.is_symlink() and _sha256(cached) == deb.sha256:
                shutil.copyfile(cached, target)
                log(f"[{tier.key}] {deb.file}: from this machine's cache")
                continue
            store = store or open_store(stack.cache.url)
            partial = folder / f".{deb.file}.partial"
            try:
                where = _take(tier, deb, store, partial)
                _keep(partial, cached)
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)
            log(f"[{tier.key}] {deb.file}: {where}")
    return folder


def _take(tier: PlannedTier, deb: Deb, store: Store, partial: Path) -> str:
    """Put the locked bytes of `deb` at `partial`; where they came from. A store object of
    another size is not read; one with other bytes is replaced by what the archive serves."""
    generation = 0  # the store holds nothing under the key: create it
    try:
        found = store.stat(store_key(deb))
        if found is not None:
            generation = found.generation
            if found.size == deb.size:
                store.download(found, partial)
                if _sha256(partial) == deb.sha256:
                    return f"from the team's store ({store.url})"
            progress(
                f"warning: {tier.key}: the store's {store_key(deb)} is not the locked "
                f"{deb.file}: not used; fetching it from the archive"
            )
    except CacheUnavailable as exc:
        progress(f"warning: {tier.key}: the team's store cannot be read ({exc})")
    got = _download(tier, deb, partial)
    if got != deb.sha256:
        raise _other_bytes(tier, deb, f"sha256 {got}")
    try:
        store.upload(partial, store_key(deb), if_generation=generation)
    except CacheConflict:
        pass  # another run stored it meanwhile (its bytes are checked when read)
    except CacheUnavailable as exc:
        progress(f"warning: {tier.key}: {deb.file} not kept in the team's store ({exc})")
    return f"fetched from {redact(deb.url)}, kept in the team's store"


def _keep(checked: Path, cached: Path) -> None:
    """A copy of a checked file in this machine's cache (best effort: a cache)."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        spare = cached.with_name(f".{cached.name}.{os.getpid()}")
        shutil.copyfile(checked, spare)
        os.replace(spare, cached)
    except OSError as exc:
        log(f"note: {cached} not kept ({exc.strerror})")


def _download(tier: PlannedTier, deb: Deb, out_path: Path) -> str:
    """Stream `deb.url` into `out_path`, at most the locked size; its sha256 (other bytes
    are refused by the caller, a longer file here)."""
    try:
        with out_path.open("wb") as out:
            return fetch.stream(deb.url, out, limit=deb.size, timeout=TIMEOUT_S)
    except IndexAnswerRefused as exc:
        raise _other_bytes(tier, deb, str(exc)) from None
    except (IndexUnreachable, NotOnIndex) as exc:
        raise BuildFailed(
            f"{tier.key}: cannot fetch {deb.file} ({deb.name} {deb.version}): {exc}; the "
            f"team's store does not hold it either (sha256 {deb.sha256}). "
            f"`python -m build_graph lock --update {tier.spec.name}` moves the pins to what "
            "the archive serves now (a new image), or put the file in the team's store"
        ) from None


def _other_bytes(tier: PlannedTier, deb: Deb, found: str) -> BuildFailed:
    return BuildFailed(
        f"{tier.key}: {redact(deb.url)} served other bytes for {deb.name} {deb.version} "
        f"({found}; the apt lock holds sha256 {deb.sha256}): refused before building; "
        "if the archive rebuilt the package on purpose, move the pin with "
        f"`python -m build_graph lock --update {tier.spec.name}`"
    )


def _sha256(path: Path) -> str:
    return file_digest(path.name, path).sha256
