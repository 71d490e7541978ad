"""OCI archives read without unpacking, and what differs between two images of one tier.

The archives are real files in the OCI image layout (as BuildKit's OCI exporter and
`docker save` write them): gzip layers, an index, an index inside an index with an
attestation beside the image; a tampered blob is refused by its digest.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from build_graph.oci.archive import BadArchive, layer_files, read_image
from build_graph.oci.digest import Digest
from build_graph.oci.image_diff import archive_reader, differences

Files = dict[str, tuple[bytes, int]]  # path -> (content, mtime)


def layer(files: Files, zstd: bool = False) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, (data, mtime) in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            tar.addfile(info, io.BytesIO(data))
    if zstd:
        import zstandard

        return zstandard.ZstdCompressor().compress(raw.getvalue())
    return gzip.compress(raw.getvalue(), mtime=0)


def archive(
    path: Path,
    layers: list[Files],
    labels: dict[str, str],
    nested: bool = False,
    zstd: bool = False,
) -> Digest:
    """Write an OCI archive of one image; returns its manifest's digest."""
    blobs: dict[Digest, bytes] = {}

    def put(data: bytes) -> dict[str, object]:
        blobs[Digest.of(data)] = data
        return {"digest": str(Digest.of(data)), "size": len(data)}

    layer_blobs = [layer(f, zstd) for f in layers]
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": [str(Digest.of(b)) for b in layer_blobs]},
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": put(json.dumps(config).encode()),
        "layers": [put(b) for b in layer_blobs],
    }
    body = json.dumps(manifest).encode()
    entry = {**put(body), "platform": {"os": "linux", "architecture": "amd64"}}
    index = {"schemaVersion": 2, "manifests": [entry]}
    if nested:  # docker save of a containerd-store image: an index, with an attestation
        attestation = {**put(b"{}"), "platform": {"os": "unknown", "architecture": "unknown"}}
        inner = json.dumps({"schemaVersion": 2, "manifests": [entry, attestation]}).encode()
        index = {
            "schemaVersion": 2,
            "manifests": [{"mediaType": "application/vnd.oci.image.index.v1+json", **put(inner)}],
        }
    with tarfile.open(path, "w") as tar:
        for name, data in [("index.json", json.dumps(index).encode())] + [
            (f"blobs/sha256/{d.hex}", b) for d, b in blobs.items()
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return Digest.of(body)


BASE: Files = {"etc/os-release": (b"debian", 315532800)}
APP: Files = {
    "usr/local/lib/app.py": (b"print(1)", 315532800),
    "var/log/dpkg.log": (b"2026-11-26 install", 315532800),
}


def test_the_same_image_twice_has_the_same_digest_and_no_differences(tmp_path: Path) -> None:
    first = archive(tmp_path / "a.tar", [BASE, APP], {"x": "1"})
    second = archive(tmp_path / "b.tar", [BASE, APP], {"x": "1"}, nested=True)
    assert first == second
    mine, other = read_image(tmp_path / "a.tar"), read_image(tmp_path / "b.tar")
    assert mine.digest == other.digest == first  # through the index and past the attestation
    read = archive_reader(tmp_path / "a.tar", mine, tmp_path / "b.tar", other)
    assert differences(mine, other, read) == []


def test_a_file_written_at_build_time_and_a_label_are_named(tmp_path: Path) -> None:
    changed = {**APP, "var/log/dpkg.log": (b"2026-11-27 install", 315532800)}
    changed["opt/built-at"] = (b"20:41", 1764190000)
    archive(tmp_path / "a.tar", [BASE, changed], {"x": "1", "when": "now"})
    archive(tmp_path / "b.tar", [BASE, APP], {"x": "1"})
    mine, other = read_image(tmp_path / "a.tar"), read_image(tmp_path / "b.tar")
    found = differences(
        mine, other, archive_reader(tmp_path / "a.tar", mine, tmp_path / "b.tar", other)
    )
    assert found == [
        "config.config.Labels.when: rebuilt 'now', registry None",
        "layer 2 of 2: /opt/built-at: only in the rebuild",
        "layer 2 of 2: /var/log/dpkg.log: content differs (18 vs 18 bytes)",
    ]  # the base layer is the same digest on both sides: not opened


def test_a_time_or_mode_difference_is_named(tmp_path: Path) -> None:
    later = {**APP, "usr/local/lib/app.py": (b"print(1)", 1764190000)}
    archive(tmp_path / "a.tar", [BASE, later], {})
    archive(tmp_path / "b.tar", [BASE, APP], {})
    mine, other = read_image(tmp_path / "a.tar"), read_image(tmp_path / "b.tar")
    found = differences(
        mine, other, archive_reader(tmp_path / "a.tar", mine, tmp_path / "b.tar", other)
    )
    assert found == ["layer 2 of 2: /usr/local/lib/app.py: time 1764190000 vs 315532800"]


def test_a_blob_that_is_not_what_its_digest_says_is_refused(tmp_path: Path) -> None:
    archive(tmp_path / "a.tar", [BASE, APP], {})
    image = read_image(tmp_path / "a.tar")
    tampered = tmp_path / "t.tar"
    with tarfile.open(tmp_path / "a.tar") as src, tarfile.open(tampered, "w") as out:
        for member in src.getmembers():
            data = src.extractfile(member)
            assert data is not None
            body = data.read()
            if member.name.endswith(image.layers[1].hex):
                body = layer({**APP, "evil": (b"x", 0)})
            member.size = len(body)
            out.addfile(member, io.BytesIO(body))
    with pytest.raises(BadArchive, match="its bytes hash to"):
        layer_files(tampered, image.layers[1])


def test_an_archive_of_no_single_image_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "e.tar"
    with tarfile.open(empty, "w") as tar:
        data = json.dumps({"schemaVersion": 2, "manifests": []}).encode()
        info = tarfile.TarInfo("index.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(BadArchive, match="expected one image in the archive, found 0"):
        read_image(empty)


def test_zstd_layers_and_dot_files_are_read_as_they_are(tmp_path: Path) -> None:
    dotted = {**APP, ".hidden": (b"a", 0), "hidden": (b"b", 0), ".wh.opt": (b"", 0)}
    archive(tmp_path / "a.tar", [BASE, dotted], {}, zstd=True)
    image = read_image(tmp_path / "a.tar")
    files = layer_files(tmp_path / "a.tar", image.layers[1])
    assert {"/.hidden", "/hidden", "/.wh.opt"} <= set(files)
    assert files["/.wh.opt"].kind == "whiteout" and files["/hidden"].kind == "file"
    changed = {**dotted, ".hidden": (b"c", 0)}
    archive(tmp_path / "b.tar", [BASE, changed], {}, zstd=True)
    other = read_image(tmp_path / "b.tar")
    read = archive_reader(tmp_path / "a.tar", image, tmp_path / "b.tar", other)
    assert differences(image, other, read) == [
        "layer 2 of 2: /.hidden: content differs (1 vs 1 bytes)"
    ]


def test_a_layer_that_is_not_a_tar_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "a.tar"
    archive(path, [BASE], {})
    image = read_image(path)
    broken = tmp_path / "broken.tar"
    with tarfile.open(path) as src, tarfile.open(broken, "w") as out:
        for member in src.getmembers():
            data = src.extractfile(member)
            assert data is not None
            body = data.read()
            if member.name.endswith(image.layers[0].hex):
                body = gzip.compress(b"not a tar at all" * 100, mtime=0)
                member.name = f"blobs/sha256/{Digest.of(body).hex}"
            member.size = len(body)
            out.addfile(member, io.BytesIO(body))
    with pytest.raises(BadArchive, match="not a tar we can read"):
        layer_files(broken, Digest.of(gzip.compress(b"not a tar at all" * 100, mtime=0)))
