"""A compile's sources on the build host: local folders staged, archives downloaded.

Local sources are copied from the plan's hashed file list (`stage_sources`). Archives
(`compile.sources` entries `https://.../name-1.0.tar.gz#sha256=<hex>`) are downloaded once
on the build host (its CA store and proxy settings: the compile container needs no network
for them) into the source cache, keyed by the pinned sha256, and kept between compiles. The
bytes are checked against the pin before they are kept: a wrong or changed archive is an
error naming the URL and both digests, never a silent compile of other code.

A download is written to a file of its own under `.downloading/` (unique name, locked while
it is written) and renamed into its sha256-<hex>/ folder once checked, so that folder only
ever holds the complete archive: the compile script takes the file it finds there, and a
partial file of a killed process once sat beside the archive and broke every later compile.
Concurrent downloads of one archive each write their own file and the last rename wins
(same bytes). Leftovers are swept: those in `.downloading/` once no live download holds
their lock, and `.partial-*` files that earlier versions left in the sha256 folders.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import IO
from urllib.parse import urlsplit

from build_graph.errors import BuildFailed, IndexAnswerRefused, IndexUnreachable, NotOnIndex
from build_graph.log import progress
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier
from build_graph.pypi import fetch
from build_graph.settings import redact

TIMEOUT_S = 60
DOWNLOADING = ".downloading"
# A file there younger than this is never swept: between its creation and its lock, a
# download has not taken the lock yet.
STALE_S = 60


def split_pin(source: str) -> tuple[str, str]:
    """'https://h/p/a-1.tar.gz#sha256=abc' -> ('https://h/p/a-1.tar.gz', 'abc')."""
    url, _, digest = source.partition("#sha256=")
    return url, digest


def cached_archive(cache: Path, source: str) -> Path:
    """The archive in the cache (sha256-<hex>/<file name>), downloaded if it is not there."""
    url, digest = split_pin(source)
    name = os.path.basename(urlsplit(url).path)
    target = cache / f"sha256-{digest}" / name
    for legacy in target.parent.glob(".partial-*"):  # no download of ours writes there now
        if not legacy.is_dir():
            legacy.unlink(missing_ok=True)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    downloading = cache / DOWNLOADING
    downloading.mkdir(exist_ok=True)
    _sweep(downloading)
    progress(f"sources: downloading {redact(url)}")
    fd, name = tempfile.mkstemp(dir=downloading, prefix=f"{digest[:16]}-")
    partial = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            fcntl.flock(out, fcntl.LOCK_EX)  # held until closed: _sweep leaves it alone
            got = _download(url, out)
            if got != digest:
                raise BuildFailed(
                    f"{redact(url)}: sha256 is {got}, but compile.sources pins "
                    f"{digest}: the archive changed upstream or the pin is "
                    "wrong; check the file's published sha256 and fix the "
                    "#sha256= in images.toml"
                )
            out.flush()
            os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _sweep(downloading: Path) -> None:
    """Delete the files of downloads that died: unlocked and untouched for STALE_S."""
    for path in downloading.iterdir():
        try:
            if time.time() - path.lstat().st_mtime < STALE_S:
                continue
            with path.open("rb") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                path.unlink()
        except OSError:  # locked by a live download, gone already, or not a file
            continue


def _download(url: str, out: IO[bytes]) -> str:
    try:
        return fetch.stream(url, out, timeout=TIMEOUT_S)
    except (IndexUnreachable, IndexAnswerRefused, NotOnIndex) as exc:
        raise BuildFailed(
            f"cannot download {exc}; check the URL in compile.sources and this machine's "
            "network or proxy, and run again"
        ) from None


def stage_sources(stack: Stack, tier: PlannedTier) -> None:
    """Put a tier's compile sources where its compile container finds them.

    Local sources: a fresh copy, under staged_sources/<name>/, of exactly the files the
    compile hash was computed from (PlannedTier.source_files): a file the hash left out
    (.git, .env, a .dockerignore'd file) never reaches the compile. Archives: downloaded
    into the source cache and checked against their sha256 (the script unpacks them). Git
    sources are fetched by the script itself, by the commit images.lock pins.
    """
    assert tier.spec.compile is not None
    src = tier.folder.staged_sources
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    stack.build_folder.sources.mkdir(parents=True, exist_ok=True)
    roots = {s.name: s.location for s in tier.spec.compile.sources}
    for name, relative, path in tier.source_files:
        inner = PurePosixPath(relative).relative_to(roots[name])
        target = src / name / inner if inner.parts else src / name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    for source in tier.spec.compile.sources:
        if source.kind == "archive":
            cached_archive(stack.build_folder.sources, source.text)
