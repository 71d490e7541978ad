"""Pushing a multi-GB image from an OCI layout: our uploader (registry/upload.py) side by side
with crane (go-containerregistry, an independent client) pushing the same layout, and both
as a ratio to this machine's disk write speed.

The image is made here, no Docker needed: one config and N layers of incompressible bytes
(what a compressed layer is), written as an OCI image layout. Pushed to the registry on
loopback (scripts/services.sh up): cold into a new repository, again (nothing to send), and
as a child into another repository (every layer mounted from the first).

    .venv/bin/python benchmarks/push.py [--gib 2] [--layers 4] [--registry 127.0.0.1:5000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from build_graph.oci.digest import Digest
from build_graph.oci.refs import parse_ref
from build_graph.registry import api, upload

MIB = 1 << 20


def disk_write_speed(folder: Path, size: int) -> float:
    """Bytes per second of a sequential write with fsync (what unpacking a layer costs)."""
    path = folder / "speed.bin"
    block = os.urandom(8 * MIB)
    started = time.perf_counter()
    with path.open("wb") as out:
        for _ in range(size // len(block)):
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
    seconds = time.perf_counter() - started
    path.unlink()
    return size / seconds


def make_layout(
    folder: Path, layers: int, layer_size: int
) -> tuple[bytes, list[tuple[Digest, Path]]]:
    """An OCI image layout of `layers` random layers; (manifest bytes, blobs)."""
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    made: list[tuple[Digest, Path]] = []
    descriptors = []
    for _ in range(layers):
        tmp = blobs / "tmp"
        with tmp.open("wb") as out:
            for _ in range(layer_size // (8 * MIB)):
                out.write(os.urandom(8 * MIB))
        digest = Digest.of(tmp.read_bytes())
        tmp.rename(blobs / digest.hex)
        made.append((digest, blobs / digest.hex))
        descriptors.append(
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": str(digest),
                "size": layer_size,
            }
        )
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": [d["digest"] for d in descriptors]},
        }
    ).encode()
    config_digest = Digest.of(config)
    (blobs / config_digest.hex).write_bytes(config)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": str(config_digest),
                "size": len(config),
            },
            "layers": descriptors,
        }
    ).encode()
    manifest_digest = Digest.of(manifest)
    (blobs / manifest_digest.hex).write_bytes(manifest)
    (folder / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": str(manifest_digest),
                "size": len(manifest),
            }
        ],
    }
    (folder / "index.json").write_text(json.dumps(index))
    return manifest, [(config_digest, blobs / config_digest.hex), *made]


def ours(
    registry: str,
    repo: str,
    manifest: bytes,
    blobs: list[tuple[Digest, Path]],
    mount: tuple[str, ...],
    sessions: Path,
) -> tuple[float, int]:
    ref = parse_ref(f"{registry}/{repo}:bench")
    started = time.perf_counter()
    moved = upload.push_blobs(ref, blobs, mount, sessions)
    api.put_manifest(ref, manifest, "application/vnd.oci.image.manifest.v1+json")
    return time.perf_counter() - started, sum(m.sent for m in moved)


def crane(registry: str, repo: str, layout: Path) -> float | None:
    exe = shutil.which("crane")
    if exe is None:
        return None
    started = time.perf_counter()
    subprocess.run(
        [exe, "push", "--insecure", str(layout), f"{registry}/{repo}:bench"],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gib", type=float, default=2.0, help="image size in GiB (default 2)")
    parser.add_argument("--layers", type=int, default=4, help="layers (default 4)")
    parser.add_argument("--registry", default="127.0.0.1:5000")
    args = parser.parse_args()
    size = int(args.gib * 1024) * MIB
    run = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="push-bench-", dir="/var/tmp") as tmp:
        folder = Path(tmp)
        disk = disk_write_speed(folder, min(size, 1024 * MIB))
        manifest, blobs = make_layout(folder / "layout", args.layers, size // args.layers)
        sessions = folder / "sessions"
        cold, sent = ours(args.registry, f"bench/{run}-ours", manifest, blobs, (), sessions)
        again, resent = ours(args.registry, f"bench/{run}-ours", manifest, blobs, (), sessions)
        child, child_sent = ours(
            args.registry, f"bench/{run}-child", manifest, blobs, (f"bench/{run}-ours",), sessions
        )
        other = crane(args.registry, f"bench/{run}-crane", folder / "layout")
    gb = size / 1e9
    print(f"image: {gb:.2f} GB in {args.layers} layers; disk writes {disk / 1e6:.0f} MB/s")
    print(f"{'push':<34} {'seconds':>8} {'MB sent':>9} {'MB/s':>7} {'x disk':>7}")
    rows = [
        ("ours, cold", cold, sent),
        ("ours, again (nothing to send)", again, resent),
        ("ours, child (layers mounted)", child, child_sent),
    ]
    if other is not None:
        rows.append(("crane push of the same layout", other, size))
    for name, seconds, moved in rows:
        rate = moved / seconds if seconds else 0.0
        print(
            f"{name:<34} {seconds:>8.2f} {moved / 1e6:>9.1f} {rate / 1e6:>7.0f} {rate / disk:>7.2f}"
        )
    if other is not None:
        print(f"crane / ours (cold): {other / cold:.2f}")


if __name__ == "__main__":
    main()
