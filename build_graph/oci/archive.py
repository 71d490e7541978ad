"""OCI image archives on disk: what BuildKit's OCI exporter writes and `docker save` writes.

An archive is a tar of an OCI image layout (index.json, blobs/sha256/<hex>). Read without
unpacking: the one platform image it holds (through an index if it has one, attestations
aside), its config, and each layer's files, streamed (a multi-GB layer is never held in
memory). Used by `reproduce` (stages/reproduce.py) to compare a rebuild with the registry's
image; every blob read is checked against its digest before it is believed.
"""

from __future__ import annotations

import hashlib
import tarfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from build_graph.errors import BuildFailed
from build_graph.oci import image_layout, json_door
from build_graph.oci.digest import Digest
from build_graph.oci.documents import (
    INDEX_TYPES,
    UNKNOWN_PLATFORM,
    Index,
    Manifest,
    parse_document,
    parse_index,
)

_CHUNK = 1 << 20
ENTRIES = 2_000_000  # a layer's entries, at most (a CUDA + torch image has about 60,000)
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class BadArchive(BuildFailed):
    """The archive is not one OCI image layout holding one platform image, or a blob in it
    is not what its digest says, or a layer cannot be read."""


@dataclass(frozen=True)
class ArchivedImage:
    """One platform image of an archive: its manifest's digest, its config (parsed) and its
    layers' digests, base first."""

    digest: Digest
    config: Mapping[str, object]
    layers: tuple[Digest, ...]


@dataclass(frozen=True)
class FileEntry:
    """What a layer says about one path: enough to tell two builds of it apart."""

    kind: str  # 'file', 'dir', 'symlink', 'hardlink', 'other'
    mode: int
    owner: tuple[int, int]
    mtime: int
    size: int
    target: str  # a link's target
    sha256: str  # a regular file's content


def read_image(archive: Path, platform: str | None = None) -> ArchivedImage:
    """The platform image `archive` holds (the one for `platform`, when several)."""
    try:
        return _read_image(archive, platform)
    except (OSError, tarfile.TarError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BadArchive(f"{archive.name}: not an OCI image archive we can read ({exc})") from None


def _read_image(archive: Path, platform: str | None) -> ArchivedImage:
    with tarfile.open(archive) as tar:
        index = parse_index(_member(tar, image_layout.INDEX))
        digest, manifest = _image_manifest(tar, index, platform)
        if manifest.config is None:
            raise BadArchive(f"{archive}: the image manifest {digest} names no config")
        config = json_door.loads(_blob(tar, manifest.config.digest))
        layers = tuple(layer.digest for layer in manifest.layers or ())
    if not isinstance(config, dict):
        raise BadArchive(f"{archive}: the image config is not a JSON object")
    return ArchivedImage(digest, config, layers)


def layer_files(archive: Path, layer: Digest) -> dict[str, FileEntry]:
    """Every path the layer writes (whiteouts as kind 'whiteout'), each file's content hashed
    while it streams by; the layer blob itself is hashed too and must match `layer`. gzip,
    zstd and uncompressed layers are read."""
    try:
        with tarfile.open(archive) as outer, _blob_stream(outer, layer) as raw:
            return read_layer(raw, layer)
    except (OSError, tarfile.TarError) as exc:
        raise BadArchive(f"layer {layer}: not a tar we can read ({exc})") from None


def read_layer(raw: IO[bytes], layer: Digest, most: int = ENTRIES) -> dict[str, FileEntry]:
    """layer_files of a layer blob read from `raw` (a file, a stream): every path, each
    file's content hashed; the blob's bytes must hash to `layer`; more than `most` entries
    and the layer is refused (each one is held in memory)."""
    try:
        checked = _Hashing(raw)
        files: dict[str, FileEntry] = {}
        with _unpacked(checked) as stream, tarfile.open(fileobj=stream, mode="r|*") as tar:
            for member in tar:
                files["/" + member.name.removeprefix("./").lstrip("/")] = _entry(tar, member)
                if len(files) > most:
                    raise BadArchive(f"layer {layer}: more than {most} entries; refusing it")
        checked.drain()
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise BadArchive(f"layer {layer}: not a tar we can read ({exc})") from None
    if checked.digest != layer:
        raise BadArchive(f"layer {layer}: its bytes hash to {checked.digest}")
    return files


@contextmanager
def _unpacked(raw: _Hashing) -> Iterator[IO[bytes]]:
    """The layer's tar stream: zstd (its frame magic) decompressed here, gzip and plain tar
    left to tarfile (Python's tarfile reads no zstd before 3.14)."""
    head = raw.peek(4)
    if head == _ZSTD_MAGIC:
        import zstandard

        with zstandard.ZstdDecompressor().stream_reader(cast("IO[bytes]", raw)) as stream:
            yield cast("IO[bytes]", stream)
    else:
        yield cast("IO[bytes]", raw)


def _entry(tar: tarfile.TarFile, member: tarfile.TarInfo) -> FileEntry:
    name = member.name.rsplit("/", 1)[-1]
    kind = (
        "whiteout"
        if name.startswith(".wh.")
        else "file"
        if member.isfile()
        else "dir"
        if member.isdir()
        else "symlink"
        if member.issym()
        else "hardlink"
        if member.islnk()
        else "other"
    )
    content = ""
    if member.isfile():
        data = tar.extractfile(member)
        digest = hashlib.sha256()
        while data is not None and (chunk := data.read(_CHUNK)):
            digest.update(chunk)
        content = digest.hexdigest()
    return FileEntry(
        kind,
        member.mode,
        (member.uid, member.gid),
        int(member.mtime),
        member.size,
        member.linkname,
        content,
    )


def _image_manifest(
    tar: tarfile.TarFile, index: Index, platform: str | None
) -> tuple[Digest, Manifest]:
    """Follow index.json (and an index inside it) to the one image manifest for `platform`,
    BuildKit's attestations (platform unknown/unknown) aside."""
    entries = [e for e in index.manifests if e.platform != UNKNOWN_PLATFORM]
    if platform is not None and len(entries) > 1:
        entries = [e for e in entries if e.platform == platform]
    if len(entries) != 1:
        raise BadArchive(f"expected one image in the archive, found {len(entries)}")
    digest = entries[0].digest
    body = _blob(tar, digest)
    document = parse_document(body)
    if isinstance(document, Index) or document.media_type in INDEX_TYPES:
        return _image_manifest(tar, parse_index(body), platform)
    return digest, document


def _member(tar: tarfile.TarFile, name: str) -> bytes:
    member = tar.extractfile(name)
    if member is None:
        raise BadArchive(f"no {name} in the archive")
    with member:
        return member.read()


def _blob(tar: tarfile.TarFile, digest: Digest) -> bytes:
    with _blob_stream(tar, digest) as stream:
        data = stream.read()
    if Digest.of(data) != digest:
        raise BadArchive(f"blob {digest}: its bytes hash to {Digest.of(data)}")
    return data


@contextmanager
def _blob_stream(tar: tarfile.TarFile, digest: Digest) -> Iterator[IO[bytes]]:
    try:
        stream = tar.extractfile(image_layout.blob_name(digest))
    except KeyError:
        stream = None
    if stream is None:
        raise BadArchive(f"blob {digest} is not in the archive")
    with stream:
        yield stream


class _Hashing:
    """A read-only stream that hashes what passes through it (read in order, once)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._sha = hashlib.sha256()
        self._ahead = b""

    def peek(self, size: int) -> bytes:
        """The next `size` bytes, still to be read."""
        self._ahead += self._raw.read(size - len(self._ahead))
        return self._ahead[:size]

    def read(self, size: int = -1) -> bytes:
        ahead, self._ahead = self._ahead, b""
        if size >= 0 and len(ahead) >= size:
            ahead, self._ahead = ahead[:size], ahead[size:]
            data = ahead
        else:
            data = ahead + self._raw.read(-1 if size < 0 else size - len(ahead))
        self._sha.update(data)
        return data

    def drain(self) -> None:
        while self.read(_CHUNK):
            pass

    @property
    def digest(self) -> Digest:
        return Digest(self._sha.hexdigest())
