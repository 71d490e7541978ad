"""Where compiler-cache archives live: gs:// through google-cloud-storage, or file://.

Both stores give each object a generation and write only under a precondition on it, so a
build never overwrites an archive newer than the one it started from. Every problem is a
CacheUnavailable (or CacheConflict for a lost precondition): callers warn and go on cold.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from build_graph.errors import CacheConflict, CacheUnavailable

# Bounded waits: a cache problem must cost seconds, not the client's default two minutes.
TIMEOUT_S = 20.0
DEADLINE_S = 8.0


@dataclass(frozen=True)
class Found:
    key: str
    generation: int
    size: int


class Store(Protocol):
    url: str

    def stat(self, key: str) -> Found | None: ...
    def newest(self, prefix: str, accept: Callable[[str], bool]) -> Found | None:
        """The newest archive whose key starts with `prefix` and that `accept` takes (the
        store knows no key grammar: names in a bucket are anyone's)."""
        ...

    def download(self, found: Found, dest: Path) -> None: ...
    def upload(self, src: Path, key: str, if_generation: int) -> Found: ...


def open_store(url: str) -> Store:
    """A store for a validated cache URL (config checked its grammar)."""
    if url.startswith("gs://"):
        bucket, _, prefix = url.removeprefix("gs://").partition("/")
        return GcsStore(url, bucket, prefix.strip("/"))
    return FileStore(url, Path(url.removeprefix("file://")))


class FileStore:
    """Archives as files; the generation is the file's mtime in ns, checked under a lock."""

    def __init__(self, url: str, root: Path) -> None:
        self.url, self.root = url, root

    def stat(self, key: str) -> Found | None:
        path = self.root / key
        try:
            info = path.stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CacheUnavailable(f"{path}: {exc.strerror}") from None
        return Found(key, info.st_mtime_ns, info.st_size)

    def newest(self, prefix: str, accept: Callable[[str], bool]) -> Found | None:
        head, _, start = prefix.rpartition("/")
        folder = self.root / head
        if not folder.is_dir():
            return None
        keys = (str(p.relative_to(self.root)) for p in folder.glob(f"{start}*.tar.zst"))
        found = [self.stat(key) for key in keys if accept(key)]
        return max((f for f in found if f), key=lambda f: f.generation, default=None)

    def download(self, found: Found, dest: Path) -> None:
        try:
            shutil.copyfile(self.root / found.key, dest)
        except OSError as exc:
            raise CacheUnavailable(f"{self.root / found.key}: {exc.strerror}") from None

    def upload(self, src: Path, key: str, if_generation: int) -> Found:
        target = self.root / key
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with (self.root / ".lock").open("a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                current = self.stat(key)
                if (current.generation if current else 0) != if_generation:
                    raise CacheConflict(f"{target} changed since it was read")
                fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
                os.close(fd)
                shutil.copyfile(src, tmp)
                os.chmod(tmp, 0o644)
                os.replace(tmp, target)
        except OSError as exc:
            raise CacheUnavailable(f"{target}: {exc.strerror}") from None
        saved = self.stat(key)
        assert saved is not None
        return saved


class GcsStore:
    """Archives as objects in a bucket (Application Default Credentials, or the emulator
    named by STORAGE_EMULATOR_HOST, which the client library honours)."""

    def __init__(self, url: str, bucket: str, prefix: str) -> None:
        self.url, self.bucket_name, self.prefix = url, bucket, prefix
        self._bucket: Any = None

    def _name(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run one client call, turning every failure into CacheUnavailable/Conflict."""
        from google.api_core import exceptions, retry

        try:
            if self._bucket is None:
                import google.cloud.storage as storage

                self._bucket = storage.Client().bucket(self.bucket_name)
            return fn(*args, retry=retry.Retry(deadline=DEADLINE_S), timeout=TIMEOUT_S, **kwargs)
        except exceptions.PreconditionFailed:
            raise CacheConflict(
                f"gs://{self.bucket_name}: a newer archive was saved meanwhile"
            ) from None
        except exceptions.NotFound:
            raise CacheUnavailable(
                f"{what}: no such bucket or object (or not visible to these credentials)"
            ) from None
        except Exception as exc:  # auth, network, quota: all mean 'no cache this time'
            text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            raise CacheUnavailable(f"{what}: {type(exc).__name__}: {text}") from None

    def stat(self, key: str) -> Found | None:
        blob = self._call(
            f"gs://{self.bucket_name}", lambda **kw: self._bucket.get_blob(self._name(key), **kw)
        )
        return None if blob is None else Found(key, int(blob.generation), int(blob.size or 0))

    def newest(self, prefix: str, accept: Callable[[str], bool]) -> Found | None:
        def listing(**kw: Any) -> list[Any]:
            return list(self._bucket.list_blobs(prefix=self._name(prefix), **kw))

        start = f"{self.prefix}/" if self.prefix else ""
        blobs = [
            b
            for b in self._call(f"gs://{self.bucket_name}", listing)
            if b.name.startswith(start) and accept(b.name.removeprefix(start))
        ]
        if not blobs:
            return None
        best = max(blobs, key=lambda b: b.updated)
        return Found(best.name.removeprefix(start), int(best.generation), int(best.size or 0))

    def download(self, found: Found, dest: Path) -> None:
        self._call(
            f"{self.url}/{found.key}",
            lambda **kw: self._bucket.blob(
                self._name(found.key), generation=found.generation
            ).download_to_filename(str(dest), **kw),
        )

    def upload(self, src: Path, key: str, if_generation: int) -> Found:
        def put(**kw: Any) -> Any:
            blob = self._bucket.blob(self._name(key))
            blob.upload_from_filename(str(src), if_generation_match=if_generation, **kw)
            return blob

        blob = self._call(f"{self.url}/{key}", put)
        return Found(key, int(blob.generation), int(blob.size or src.stat().st_size))


def store_problem(store: Store, stack_name: str, scratch: Path, write: bool = True) -> str | None:
    """None when `store` can be read (and, with `write`, written), else why not: a small
    marker under the stack's prefix, outside every tier's archives, is read (stat) and
    written, so a run learns before its compile, not after it, that the cache it builds
    cannot be saved. `scratch`: a local folder for the marker's file."""
    key = f"{stack_name}/.write-check"
    try:
        there = store.stat(key)
    except CacheUnavailable as exc:
        return f"{store.url} cannot be read ({exc})"
    if not write:
        return None
    try:
        scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=scratch) as tmp:
            marker = Path(tmp) / "write-check"
            marker.write_text(f"{time.time():.0f}\n")
            store.upload(marker, key, there.generation if there else 0)
    except CacheConflict:
        return None  # another runner wrote it meanwhile: writes are taken
    except (CacheUnavailable, OSError) as exc:
        return f"{store.url} cannot be written ({exc})"
    return None
