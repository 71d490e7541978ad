"""What differs between two images of one tier: a rebuild and the registry's, file by file.

The answer `reproduce` prints when the digests differ, in the manner of diffoci: the config's
differing fields (a label, the history, the environment), then per layer the paths only one
side has and the paths whose content, mode, owner, time or link target differ. Layers whose
digests agree are not opened. Pure over what oci/archive.py reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from build_graph.oci.archive import ArchivedImage, FileEntry, layer_files

LayerReader = Callable[[int], tuple[dict[str, FileEntry], dict[str, FileEntry]]]


def config_differences(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> list[str]:
    """'config.Labels.x: rebuilt "a", registry "b"' for every leaf that differs; the layers'
    diff_ids are left to the layer comparison."""
    lines: list[str] = []
    for path, mine, other in _leaves(ours, theirs, "config"):
        if not path.startswith("config.rootfs.diff_ids") and mine != other:
            lines.append(f"{path}: rebuilt {_shown(mine)}, registry {_shown(other)}")
    return lines


def file_differences(ours: Mapping[str, FileEntry], theirs: Mapping[str, FileEntry]) -> list[str]:
    """'PATH: what differs' for every path of one layer pair that is not the same."""
    lines: list[str] = []
    for path in sorted(ours.keys() | theirs.keys()):
        mine, other = ours.get(path), theirs.get(path)
        if other is None:
            lines.append(f"{path}: only in the rebuild")
        elif mine is None:
            lines.append(f"{path}: only in the registry's image")
        elif mine != other:
            lines.append(f"{path}: {_how(mine, other)}")
    return lines


def differences(ours: ArchivedImage, theirs: ArchivedImage, read: LayerReader) -> list[str]:
    """Everything that differs; `read(i)` gives layer i's files of both sides."""
    lines = config_differences(ours.config, theirs.config)
    if len(ours.layers) != len(theirs.layers):
        lines.append(
            f"layers: the rebuild has {len(ours.layers)}, the registry's image {len(theirs.layers)}"
        )
    for i, (mine, other) in enumerate(zip(ours.layers, theirs.layers, strict=False)):
        if mine == other:
            continue
        files = file_differences(*read(i))
        where = f"layer {i + 1} of {len(ours.layers)}"
        lines += [f"{where}: {line}" for line in files] or [
            f"{where}: same files, other bytes (order or compression: {mine} vs {other})"
        ]
    return lines


def archive_reader(
    ours: Path, mine: ArchivedImage, theirs: Path, other: ArchivedImage
) -> LayerReader:
    """read(i) over two archives on disk."""

    def read(i: int) -> tuple[dict[str, FileEntry], dict[str, FileEntry]]:
        return layer_files(ours, mine.layers[i]), layer_files(theirs, other.layers[i])

    return read


def _how(mine: FileEntry, other: FileEntry) -> str:
    parts = []
    if mine.kind != other.kind:
        parts.append(f"a {mine.kind} in the rebuild, a {other.kind} in the registry's")
    if mine.sha256 != other.sha256:
        parts.append(f"content differs ({mine.size} vs {other.size} bytes)")
    if mine.mode != other.mode:
        parts.append(f"mode {mine.mode:o} vs {other.mode:o}")
    if mine.owner != other.owner:
        parts.append(f"owner {mine.owner[0]}:{mine.owner[1]} vs {other.owner[0]}:{other.owner[1]}")
    if mine.mtime != other.mtime:
        parts.append(f"time {mine.mtime} vs {other.mtime}")
    if mine.target != other.target:
        parts.append(f"link target {mine.target!r} vs {other.target!r}")
    return "; ".join(parts)


def _leaves(a: Any, b: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(a.keys() | b.keys()):
            yield from _leaves(a.get(key), b.get(key), f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _leaves(x, y, f"{path}[{i}]")
    else:
        yield path, a, b


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
