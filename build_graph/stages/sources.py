"""A compile's sources on the build host: local folders staged, archives downloaded.

Local sources are copied from the plan's hashed file list (`stage_sources`). Archives
(`compile.sources` entries `https://.../name-1.0.tar.gz#sha256=<hex>`) are downloaded once
on the build host (its CA store and proxy settings: the compile container needs no network
for them) into the source cache, keyed by the pinned sha256, and kept between compiles. The
bytes are checked against the pin before they are kept: a wrong or changed archive is an
error naming the URL and both digests, never a silent compile of other code. Writes go to a
temporary file renamed into place, so an interrupted download leaves nothing that looks
complete.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path, PurePosixPath
from typing import IO
from urllib.parse import urlsplit

from build_graph.errors import BuildFailed
from build_graph.log import progress
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier

TIMEOUT_S = 60
_CHUNK = 1 << 20


def split_pin(source: str) -> tuple[str, str]:
    """'https://h/p/a-1.tar.gz#sha256=abc' -> ('https://h/p/a-1.tar.gz', 'abc')."""
    url, _, digest = source.partition("#sha256=")
    return url, digest


def cached_archive(cache: Path, source: str) -> Path:
    """The archive in the cache (sha256-<hex>/<file name>), downloaded if it is not there."""
    url, digest = split_pin(source)
    name = os.path.basename(urlsplit(url).path)
    target = cache / f"sha256-{digest}" / name
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    progress(f"sources: downloading {url}")
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".partial-",
                                     delete=False) as handle:
        partial = Path(handle.name)
    try:
        with partial.open("wb") as out:
            got = _download(url, out)
        if got != digest:
            raise BuildFailed(f"{url}: sha256 is {got}, but compile.sources pins {digest}: "
                              "the archive changed upstream or the pin is wrong; check the "
                              "file's published sha256 and fix the #sha256= in images.toml")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _download(url: str, out: IO[bytes]) -> str:
    digest, received, expected = hashlib.sha256(), 0, None
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            length = response.headers.get("Content-Length")
            expected = int(length) if length and length.isdigit() else None
            while chunk := response.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
                received += len(chunk)
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        raise BuildFailed(f"cannot download {url}: {exc}; check the URL in compile.sources "
                          "and this machine's network or proxy") from None
    if expected is not None and received != expected:
        raise BuildFailed(f"cannot download {url}: the connection ended after {received} of "
                          f"{expected} bytes; run again")
    return digest.hexdigest()


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
