"""A tier's OCI image layout on disk: where a reproducible build is exported and loaded from.

BuildKit's OCI exporter (the one that rewrites file times) writes the whole image, its
parents' layers too. Into a tar that costs about 18 s per GB of image on every build (the
tar streams through the buildx client); into a layout directory that already holds a blob,
nothing: the exporter skips what is there. So each tier keeps a layout in its build folder
(`build/<variant>/<tier>/oci/`) holding the blobs of its last image, seeded with hard links
to its parent's blobs before it builds, and `docker load` is given a tar, streamed, of only
the blobs this export wrote (the daemon's content store has the rest: it built or pulled
the parent); if it lacks one, the load is made again with every blob.

Measured (a child of a 1 GB parent, 2 cores): tar export 18.2 s + load 4.4 s; layout with the
parent's blobs 0.5 s + load 0.1 s; `--load` (not reproducible) 0.8 s.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from build_graph.errors import BuildFailed
from build_graph.log import last_output, log
from build_graph.oci import image_layout
from build_graph.oci.digest import Digest
from build_graph.oci.documents import (
    OCI_INDEX,
    OCI_MANIFEST,
    Descriptor,
    Index,
    parse_index,
    parse_manifest,
)

NAME_ANNOTATION = "io.containerd.image.name"  # what BuildKit's OCI exporter names it by


def blobs(layout: Path) -> Path:
    return layout / image_layout.BLOBS


def seed(layout: Path, parent: Path | None) -> None:
    """Hard-link the parent's blobs into `layout` (a copy where links cannot be made is
    skipped: the exporter then writes that blob itself)."""
    blobs(layout).mkdir(parents=True, exist_ok=True)
    if parent is None or not blobs(parent).is_dir():
        return
    for blob in blobs(parent).iterdir():
        target = blobs(layout) / blob.name
        if not target.exists():
            try:
                os.link(blob, target)
            except OSError:
                continue


def built(layout: Path) -> Descriptor:
    """The index entry of the image the last export wrote (the exporter appends to
    index.json), as the exporter wrote it."""
    try:
        return parse_index((layout / image_layout.INDEX).read_bytes()).manifests[-1]
    except (OSError, IndexError):
        raise BuildFailed(f"{layout}: the OCI exporter left no image in index.json") from None
    except ValueError as exc:
        raise BuildFailed(
            f"{layout}: the OCI exporter left no image in index.json ({exc})"
        ) from None


def load(
    exe: str, env: dict[str, str], layout: Path, entry: Descriptor, since: float, name: str
) -> None:
    """`docker load` the image `entry` names: the blobs written since `since` (the rest are
    in the daemon already), or, if the daemon says it lacks one, every blob."""
    wanted = _image_blobs(layout, entry)
    fresh = [b for b in wanted if (blobs(layout) / b.hex).stat().st_mtime >= since - 1]
    log(f"+ docker load (tier {name}: {len(fresh)} of {len(wanted)} blobs)")
    said = _load(exe, env, layout, entry, fresh)
    if said is not None:
        log(f"[{name}] the daemon lacked a blob ({said[-200:]}): loading every blob")
        said = _load(exe, env, layout, entry, wanted)
    if said is not None:
        raise BuildFailed(f"build of {name}: docker load failed; {said}")


@dataclass(frozen=True)
class LayoutImage:
    """The image a layout holds under a name: its manifest's bytes as built, their media
    type, and every blob it needs (config and layers) as files on disk."""

    manifest: bytes
    media_type: str
    blobs: tuple[tuple[Digest, Path], ...]


def image_named(layout: Path, name: str) -> LayoutImage | None:
    """The image the layout's index names `name` (the tag it was built as), if the layout
    holds it whole; None otherwise (built elsewhere, or by an older release). Our own disk,
    written by BuildKit: the manifest is hashed against its name here; each blob's digest
    is checked by the registry that receives it (a PUT names it)."""
    try:
        index = parse_index((layout / image_layout.INDEX).read_bytes())
        [entry] = [e for e in index.manifests if e.annotation(NAME_ANNOTATION) == name]
        manifest = (blobs(layout) / entry.digest.hex).read_bytes()
        document = parse_manifest(manifest)
        if document.config is None or document.layers is None:
            return None
        found = tuple(
            (d.digest, blobs(layout) / d.digest.hex) for d in (document.config, *document.layers)
        )
    except (OSError, ValueError):
        return None
    if Digest.of(manifest) != entry.digest or not all(p.is_file() for _, p in found):
        return None
    return LayoutImage(manifest, entry.media_type or OCI_MANIFEST, found)


def keep_only(layout: Path, entry: Descriptor) -> None:
    """The layout keeps this image alone: its index entry and its blobs (disk use stays one
    image; the next build of this tier or a child finds its blobs)."""
    wanted = {d.hex for d in _image_blobs(layout, entry)}
    (layout / image_layout.INDEX).write_bytes(Index((entry,), OCI_INDEX).encode("spaced"))
    for blob in blobs(layout).iterdir():
        if blob.name not in wanted:
            blob.unlink(missing_ok=True)


def _image_blobs(layout: Path, entry: Descriptor) -> list[Digest]:
    """The manifest, its config and its layers."""
    try:
        manifest = parse_manifest((blobs(layout) / entry.digest.hex).read_bytes())
    except ValueError as exc:
        raise BuildFailed(
            f"{layout}: the image manifest {entry.digest} is unreadable ({exc})"
        ) from None
    if manifest.config is None:
        raise BuildFailed(f"{layout}: the image manifest {entry.digest} names no config")
    return [entry.digest, manifest.config.digest, *(d.digest for d in manifest.layers or ())]


def _load(
    exe: str, env: dict[str, str], layout: Path, entry: Descriptor, digests: list[Digest]
) -> str | None:
    """Stream a tar of the layout (this image's entry, the blobs `digests`) into `docker
    load`; None when it loaded, else what it said."""
    with subprocess.Popen(
        [exe, "load"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            with tarfile.open(fileobj=proc.stdin, mode="w|") as tar:
                _add(tar, image_layout.MARKER, image_layout.MARKER_BODY)
                _add(tar, image_layout.INDEX, Index((entry,)).encode("spaced"))
                for digest in digests:
                    tar.add(blobs(layout) / digest.hex, arcname=image_layout.blob_name(digest))
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the daemon stopped reading: what it said follows
        output = proc.stdout.read().decode(errors="replace")
    return None if proc.returncode == 0 else last_output(output.splitlines())


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
