"""Why an image is big, over layers read as oci/archive.py reads them: sizes, the folders
that hold the bytes, what an image adds over another, and the bytes stored twice."""

from __future__ import annotations

import hashlib

from build_graph.oci.archive import FileEntry
from build_graph.oci.digest import Digest
from build_graph.oci.image_size import Layer, heavy_folders, measure, overwritten, same_content

MB = 1 << 20


def file(size: int, content: str = "") -> FileEntry:
    sha = hashlib.sha256((content or f"{size}").encode()).hexdigest()
    return FileEntry("file", 0o644, (0, 0), 0, size, "", sha)


def folder() -> FileEntry:
    return FileEntry("dir", 0o755, (0, 0), 0, 0, "", "")


def whiteout() -> FileEntry:
    return FileEntry("whiteout", 0o644, (0, 0), 0, 0, "", "")


def layer(n: int, files: dict[str, FileEntry], compressed: int = 100, step: str = "") -> Layer:
    return Layer(Digest(f"{n:064x}"), compressed, step, files)


def test_a_wheel_copied_then_removed_is_named_with_both_layers() -> None:
    layers = [
        layer(1, {"/usr": folder(), "/usr/bin/python3": file(6 * MB)}),
        layer(2, {"/tmp/wheels": folder(), "/tmp/wheels/torch.whl": file(900 * MB, "whl")}),
        layer(3, {"/tmp/.wh.wheels": whiteout(), "/usr/lib/torch.so": file(2000 * MB, "so")}),
    ]
    [twice] = overwritten(layers)
    assert (twice.path, twice.size, twice.layer, twice.how) == (
        "/tmp/wheels/torch.whl",
        900 * MB,
        1,
        "removed in layer 3",
    )


def test_an_opaque_folder_hides_only_what_the_layers_below_put_there() -> None:
    layers = [
        layer(1, {"/opt/a": file(3 * MB, "a"), "/opt/keep/b": file(2 * MB, "b")}),
        layer(2, {"/opt/.wh..wh..opq": whiteout(), "/opt/new": file(MB, "new")}),
        layer(3, {"/srv/x": file(MB, "x")}),
    ]
    found = {(t.path, t.how) for t in overwritten(layers)}
    assert found == {
        ("/opt/a", "hidden by an opaque folder in layer 2"),
        ("/opt/keep/b", "hidden by an opaque folder in layer 2"),
    }


def test_a_chmod_that_restores_a_file_unchanged_says_so() -> None:
    layers = [
        layer(1, {"/app/model.bin": file(50 * MB, "weights")}),
        layer(2, {"/app/model.bin": file(50 * MB, "weights")}),  # chown -R, same bytes
        layer(3, {"/app/model.bin": file(60 * MB, "other")}),
    ]
    hows = [(t.layer, t.how) for t in overwritten(layers)]
    assert hows == [(0, "stored again unchanged in layer 2"), (1, "replaced in layer 3")]


def test_the_same_bytes_at_two_paths_in_two_layers_are_named_once() -> None:
    layers = [
        layer(1, {"/data/big.bin": file(5 * MB, "same"), "/data/small": file(10, "s")}),
        layer(2, {"/opt/copy.bin": file(5 * MB, "same"), "/opt/small": file(10, "s")}),
        layer(3, {"/opt/copy2.bin": file(5 * MB, "same")}),
    ]
    found = [(t.path, t.layer, t.how) for t in same_content(layers, least=MB)]
    assert found == [
        ("/opt/copy.bin", 1, "same bytes as /data/big.bin in layer 1"),
        ("/opt/copy2.bin", 2, "same bytes as /data/big.bin in layer 1"),
    ]
    assert same_content(layers, least=0)[0].path == "/opt/copy.bin"
    assert len(same_content(layers, least=0)) == 3  # the small file too, when asked


def test_folders_are_named_where_the_bytes_are() -> None:
    files = {
        "/usr/local/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so": file(700 * MB, "t"),
        "/usr/local/lib/python3.11/site-packages/torch/lib/libc10.so": file(50 * MB, "c"),
        "/usr/local/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so": file(300 * MB),
        "/usr/share/doc/x": file(MB, "d"),
        "/etc/hostname": file(10, "h"),
    }
    named = [name for name, _ in heavy_folders(files, 3)]
    # /usr, /usr/local, ... each hold most of what is below them: the deepest such folder
    # names the bytes; site-packages splits into torch and nvidia, so it is named itself
    assert named == [
        "/usr/local/lib/python3.11/site-packages",
        "/usr/local/lib/python3.11/site-packages/torch/lib",
        "/usr/local/lib/python3.11/site-packages/nvidia/cudnn/lib",
    ]
    assert heavy_folders({"/workspace/train.py": file(10, "t")}, 3) == [("/workspace", 10)]


def test_measure_adds_up_and_says_what_the_image_adds_over_another() -> None:
    base = layer(1, {"/usr/bin/a": file(10 * MB, "a"), "/usr": folder()}, compressed=4 * MB)
    mine = layer(2, {"/app/b": file(3 * MB, "b")}, compressed=MB, step="COPY app /app")
    found = measure([base, mine], other=[base.digest], top=2)
    assert (found.compressed, found.unpacked) == (5 * MB, 13 * MB)
    assert [a.index for a in found.added] == [1]
    assert found.layers[0].shared and not found.layers[1].shared
    assert found.layers[0].files == 1  # folders are not files
    assert found.largest is not None and found.largest.index == 0
    assert found.layers[1].largest == [("/app/b", 3 * MB)]
    assert found.twice == []


def test_a_folder_replaced_by_a_link_hides_what_was_below_it() -> None:
    layers = [
        layer(1, {"/opt/d": folder(), "/opt/d/big": file(5 * MB, "big")}),
        layer(2, {"/opt/d": FileEntry("symlink", 0o777, (0, 0), 0, 0, "/srv", "")}),
    ]
    [twice] = overwritten(layers)
    assert (twice.path, twice.how) == ("/opt/d/big", "replaced in layer 2")


def test_a_file_moved_to_another_layer_is_one_extra_copy_not_two() -> None:
    layers = [
        layer(1, {"/tmp/w.whl": file(9 * MB, "wheel")}),
        layer(2, {"/tmp/.wh.w.whl": whiteout(), "/opt/w.whl": file(9 * MB, "wheel")}),
    ]
    found = measure(layers).twice
    assert [(t.path, t.how) for t in found] == [("/tmp/w.whl", "removed in layer 2")]
    assert sum(t.size for t in found) == 9 * MB
