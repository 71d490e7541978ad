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
import json
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_graph.errors import BuildFailed
from build_graph.log import last_output, log
from build_graph.oci.digest import Digest, parse_digest

LAYOUT = "oci"
NAME_ANNOTATION = "io.containerd.image.name"  # what BuildKit's OCI exporter names it by
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def blobs(layout: Path) -> Path:
    return layout / "blobs" / "sha256"


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


def built(layout: Path) -> dict[str, Any]:
    """The index entry of the image the last export wrote (the exporter appends to
    index.json)."""
    try:
        index = json.loads((layout / "index.json").read_text())
        entry = index["manifests"][-1]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        raise BuildFailed(f"{layout}: the OCI exporter left no image in index.json") from None
    if not isinstance(entry, dict):
        raise BuildFailed(f"{layout}: index.json's last entry is not a descriptor")
    return entry


def load(
    exe: str, env: dict[str, str], layout: Path, entry: dict[str, Any], since: float, name: str
) -> None:
    """`docker load` the image `entry` names: the blobs written since `since` (the rest are
    in the daemon already), or, if the daemon says it lacks one, every blob."""
    wanted = _image_blobs(layout, entry)
    fresh = [b for b in wanted if (blobs(layout) / b).stat().st_mtime >= since - 1]
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
        index = json.loads((layout / "index.json").read_text())
        [entry] = [
            e
            for e in index["manifests"]
            if (e.get("annotations") or {}).get(NAME_ANNOTATION) == name
        ]
        manifest_digest = parse_digest(str(entry["digest"]))
        manifest = (blobs(layout) / manifest_digest.hex).read_bytes()
        document = json.loads(manifest)
        parts = [document["config"], *document["layers"]]
        digests = [parse_digest(str(part["digest"])) for part in parts]
        found = tuple((d, blobs(layout) / d.hex) for d in digests)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if Digest.of(manifest) != manifest_digest or not all(p.is_file() for _, p in found):
        return None
    return LayoutImage(manifest, str(entry.get("mediaType", OCI_MANIFEST)), found)


def keep_only(layout: Path, entry: dict[str, Any]) -> None:
    """The layout keeps this image alone: its index entry and its blobs (disk use stays one
    image; the next build of this tier or a child finds its blobs)."""
    wanted = set(_image_blobs(layout, entry))
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json"}
    (layout / "index.json").write_text(json.dumps({**index, "manifests": [entry]}))
    for blob in blobs(layout).iterdir():
        if blob.name not in wanted:
            blob.unlink(missing_ok=True)


def _image_blobs(layout: Path, entry: dict[str, Any]) -> list[str]:
    """Hex digests of the manifest, its config and its layers."""
    manifest_hex = str(entry["digest"]).removeprefix("sha256:")
    manifest = json.loads((blobs(layout) / manifest_hex).read_bytes())
    parts = [manifest["config"], *manifest.get("layers", [])]
    return [manifest_hex, *(str(p["digest"]).removeprefix("sha256:") for p in parts)]


def _load(
    exe: str, env: dict[str, str], layout: Path, entry: dict[str, Any], hexes: list[str]
) -> str | None:
    """Stream a tar of the layout (this image's entry, the blobs `hexes`) into `docker load`;
    None when it loaded, else what it said."""
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
                _add(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
                index = {"schemaVersion": 2, "manifests": [entry]}
                _add(tar, "index.json", json.dumps(index).encode())
                for hex_digest in hexes:
                    tar.add(blobs(layout) / hex_digest, arcname=f"blobs/sha256/{hex_digest}")
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the daemon stopped reading: what it said follows
        output = proc.stdout.read().decode(errors="replace")
    return None if proc.returncode == 0 else last_output(output.splitlines())


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
