"""Why an image is big: its layers' sizes, what fills each, what it adds over another image,
and the bytes it stores twice. Pure over what oci/archive.py reads of each layer.

Stored twice means one of: a file a later layer replaces or removes (its bytes still ship in
the earlier layer: a wheel copied in one step and deleted in the next, a chmod or chown
that re-stores every file it touches), and the same content at more than one place across
layers. Whiteouts follow the OCI image spec's layer rules: `.wh.NAME` removes NAME and all
below it, `.wh..wh..opq` hides everything the layers below put in its folder.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from build_graph.oci.archive import FileEntry
from build_graph.oci.digest import Digest

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
DOMINANT = 0.8  # a folder whose one subfolder holds this share of it is named by that subfolder
DEEPEST = 32  # folders deeper than this are counted in their ancestor this deep


@dataclass(frozen=True)
class Layer:
    """One layer as read: its digest, compressed size, the step that made it, its files."""

    digest: Digest
    compressed: int
    step: str
    files: Mapping[str, FileEntry]


@dataclass(frozen=True)
class LayerSize:
    index: int  # 0-based, base first
    digest: Digest
    compressed: int
    unpacked: int  # the bytes of its regular files
    files: int
    step: str
    shared: bool  # the other image has this very layer
    folders: list[tuple[str, int]]  # where its bytes are, largest first
    largest: list[tuple[str, int]]  # its largest files


@dataclass(frozen=True)
class Twice:
    """Bytes an image stores more than once: `path` in layer `layer` (0-based), and `how`."""

    path: str
    size: int
    layer: int
    how: str
    first: tuple[str, int] | None = None  # same bytes: the first copy's (path, layer)


@dataclass(frozen=True)
class ImageSize:
    layers: list[LayerSize]
    twice: list[Twice] = field(default_factory=list)

    @property
    def compressed(self) -> int:
        return sum(layer.compressed for layer in self.layers)

    @property
    def unpacked(self) -> int:
        return sum(layer.unpacked for layer in self.layers)

    @property
    def added(self) -> list[LayerSize]:
        """The layers the other image does not have: what this image adds over it."""
        return [layer for layer in self.layers if not layer.shared]

    @property
    def largest(self) -> LayerSize | None:
        return max(self.layers, key=lambda layer: layer.compressed, default=None)


def measure(
    layers: Sequence[Layer], other: Iterable[Digest] = (), top: int = 5, least: int = 1 << 20
) -> ImageSize:
    """The sizes of `layers` (base first); `other`: the layers of the image to compare with;
    `top`: how many folders and files to name per layer; `least`: the smallest file whose
    second copy is worth naming."""
    theirs = set(other)
    sizes = [
        LayerSize(
            index=i,
            digest=layer.digest,
            compressed=layer.compressed,
            unpacked=sum(e.size for e in layer.files.values() if e.kind == "file"),
            files=sum(1 for e in layer.files.values() if e.kind == "file"),
            step=layer.step,
            shared=layer.digest in theirs,
            folders=heavy_folders(layer.files, top),
            largest=largest_files(layer.files, top),
        )
        for i, layer in enumerate(layers)
    ]
    gone = overwritten(layers, least)
    # a copy that is also the first one's removal counts once (the wheel removed from /tmp
    # and the same bytes at /opt are one extra copy, not two)
    dropped = {(t.path, t.layer) for t in gone}
    copies = [t for t in same_content(layers, least) if t.first not in dropped]
    twice = sorted(gone + copies, key=lambda t: (-t.size, t.path))
    return ImageSize(sizes, twice)


def largest_files(files: Mapping[str, FileEntry], top: int) -> list[tuple[str, int]]:
    found = ((path, e.size) for path, e in files.items() if e.kind == "file")
    return sorted(found, key=lambda item: (-item[1], item[0]))[:top]


def heavy_folders(files: Mapping[str, FileEntry], top: int) -> list[tuple[str, int]]:
    """Up to `top` folders that hold the layer's bytes, largest first: a folder whose one
    subfolder holds most of it is named by that subfolder instead (/usr/local/lib/python3.11
    /site-packages/torch/lib, not /usr), and a folder is left out where a deeper one named
    already holds half of it."""
    sizes: Counter[str] = Counter()
    for path, entry in files.items():
        if entry.kind != "file" or not entry.size:
            continue
        parts = path.strip("/").split("/")[:-1][:DEEPEST]
        for depth in range(1, len(parts) + 1):
            sizes["/" + "/".join(parts[:depth])] += entry.size
    children: defaultdict[str, list[str]] = defaultdict(list)
    for folder in sizes:
        children[folder.rsplit("/", 1)[0] or "/"].append(folder)

    def dominated(folder: str) -> bool:
        return any(sizes[c] >= DOMINANT * sizes[folder] for c in children.get(folder, ()))

    # Folders two deep at least (/usr/lib, not /usr), unless the layer has no other
    deep = [f for f in sizes if f.count("/") >= 2] or list(sizes)
    chosen: list[str] = []
    for folder in sorted(deep, key=lambda f: (-sizes[f], f)):
        if len(chosen) == top:
            break
        if dominated(folder) or any(
            c.startswith(folder + "/") and sizes[c] * 2 >= sizes[folder] for c in chosen
        ):
            continue
        chosen.append(folder)
    return [(folder, sizes[folder]) for folder in chosen]


def overwritten(layers: Sequence[Layer], least: int = 0) -> list[Twice]:
    """Files a later layer replaces or removes: their bytes still ship in their layer."""
    live: dict[str, tuple[int, FileEntry]] = {}
    below: defaultdict[str, set[str]] = defaultdict(set)  # folder -> its live entries
    found: list[Twice] = []

    def remove(top: str, by: int, how: str) -> None:
        """`top` and everything below it (a loop, not recursion: a layer's depth is the
        image's choice)."""
        below[top.rsplit("/", 1)[0] or "/"].discard(top)
        todo = [top]
        while todo:
            path = todo.pop()
            todo.extend(below.pop(path, ()))
            held = live.pop(path, None)
            if held is not None and held[1].kind == "file" and held[1].size >= max(least, 1):
                found.append(Twice(path, held[1].size, held[0], f"{how} in layer {by + 1}"))

    for i, layer in enumerate(layers):
        for path in layer.files:  # a layer's whiteouts hide what the layers below put
            folder, _, name = path.rpartition("/")
            if name == OPAQUE:
                for child in list(below.get(folder or "/", ())):
                    remove(child, i, "hidden by an opaque folder")
            elif name.startswith(WHITEOUT) and name != WHITEOUT:  # '.wh.' alone names nothing
                remove(f"{folder}/{name[len(WHITEOUT) :]}", i, "removed")
        for path, entry in layer.files.items():
            if path.rpartition("/")[2].startswith(WHITEOUT):
                continue
            if entry.kind != "dir" and below.get(path):  # a folder replaced by a file or link
                for child in list(below[path]):
                    remove(child, i, "replaced")
            held = live.get(path)
            if held is not None and held[1].kind == "file" and held[1].size >= max(least, 1):
                again = entry.kind == "file" and entry.sha256 == held[1].sha256
                how = (
                    "stored again unchanged"  # a chmod, chown or touch re-stores the file
                    if again
                    else "replaced"
                )
                found.append(Twice(path, held[1].size, held[0], f"{how} in layer {i + 1}"))
            live[path] = (i, entry)
            while path != "/":  # every folder above it, stated in the layer or not
                parent = path.rsplit("/", 1)[0] or "/"
                if path in below[parent]:
                    break
                below[parent].add(path)
                path = parent
    return found


def same_content(layers: Sequence[Layer], least: int) -> list[Twice]:
    """The same bytes at more than one path, in different layers (a file copied, then
    installed or moved in a later step): each copy after the first, by content."""
    first: dict[str, tuple[int, str]] = {}
    found: list[Twice] = []
    for i, layer in enumerate(layers):
        for path, entry in sorted(layer.files.items()):
            if entry.kind != "file" or entry.size < max(least, 1):
                continue
            seen = first.setdefault(entry.sha256, (i, path))
            if seen[0] != i and seen[1] != path:
                how = f"same bytes as {seen[1]} in layer {seen[0] + 1}"
                found.append(Twice(path, entry.size, i, how, (seen[1], seen[0])))
    return found
