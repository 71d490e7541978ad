"""`python -m build_graph size` on an image made here, layer by layer, and pushed to a real
registry (no Docker): it names the file a later layer removes, the same bytes stored at
a second path, each layer's step, what the image adds over the image it is built on, and
a layer past `[layers] max_size`. The quickstart's own `fastext` is read in
tests/integration/test_graph_runs.py."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from build_graph.oci.digest import Digest
from build_graph.oci.refs import parse_ref
from build_graph.registry import api
from tests.helpers import REPO
from tests.support.registry import Registry

pytestmark = pytest.mark.integration

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
BIG = os.urandom(2 << 20)  # incompressible: its layer is as big compressed
SCRATCH = os.urandom(1 << 20)


def tar_layer(files: dict[str, bytes]) -> tuple[bytes, bytes]:
    """(gzip blob, uncompressed tar) of a layer holding `files` (an empty body and a name
    starting '.wh.' make a whiteout)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name.lstrip("/"))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    plain = raw.getvalue()
    return gzip.compress(plain, mtime=0), plain


def push_image(registry: str, repository: str, layers: list[tuple[str, dict[str, bytes]]]) -> str:
    """An image of `layers` ((step, files), base first) under `repository:t`; its ref."""
    ref = parse_ref(f"{registry}/{repository}:t")
    descriptors, diff_ids, history = [], [], []
    for step, files in layers:
        blob, plain = tar_layer(files)
        digest = api.put_blob(ref, blob)
        descriptors.append(
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": str(digest),
                "size": len(blob),
            }
        )
        diff_ids.append("sha256:" + hashlib.sha256(plain).hexdigest())
        history.append({"created_by": step})
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
            "history": history,
        }
    ).encode()
    config_digest = api.put_blob(ref, config)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": str(config_digest),
                "size": len(config),
            },
            "layers": descriptors,
        }
    ).encode()
    digest = api.put_manifest(ref, manifest, OCI_MANIFEST)
    assert digest == Digest.of(manifest)
    return f"{registry}/{repository}@{digest}"


def size(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "build_graph", "size", *args, "--manifest", "images.toml"],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )


def test_size_names_what_a_later_layer_removes_and_bytes_stored_twice(
    registry: Registry, tmp_path: Path
) -> None:
    base = [("ADD rootfs.tar / # buildkit", {"/etc/os-release": b"ID=test\n"})]
    built_on = push_image(registry.address, "sizes/base", base)
    image = push_image(
        registry.address,
        "sizes/app",
        [
            *base,
            (
                "COPY big.bin tmp.bin /data/ # buildkit",
                {"/data/big.bin": BIG, "/data/tmp.bin": SCRATCH},
            ),
            ("RUN |1 A=1 /bin/sh -c cp /data/big.bin /opt/copy.bin", {"/opt/copy.bin": BIG}),
            ("RUN /bin/sh -c rm /data/tmp.bin", {"/data/.wh.tmp.bin": b""}),
        ],
    )
    (tmp_path / "images.toml").write_text(
        f'[stack]\nname = "sizes"\nregistry = "{registry.address}/sizes"\n\n'
        '[versions]\npython = "3.11"\n\n'
        '[tiers.app]\nfrom = "debian:bookworm-slim"\ntemplate = "python-runtime.Dockerfile.j2"\n\n'
        '[layers]\nmax_size = "1M"\n'
    )
    done = size(tmp_path, "app", "--image", image, "--over", built_on)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "4 layers" in out and "the registry takes 1.0 MB per layer ([layers] max_size)" in out
    # layers 2 and 3 hold the same 2 MiB (random: as big compressed), a few bytes apart
    assert re.search(
        r"largest layer: 2 of 4, 3\.1 MB compressed \(past the registry's limit\)", out
    )
    assert "COPY big.bin tmp.bin /data/" in out and "RUN cp /data/big.bin /opt/copy.bin" in out
    assert f"over {built_on}: adds 3 of 4 layers" in out
    assert "/data/tmp.bin 1.0 MB: in layer 2, removed in layer 4" in out
    assert "/opt/copy.bin 2.1 MB: in layer 3, same bytes as /data/big.bin in layer 2" in out
    assert "stored twice: 3.1 MB in 2 files" in out
    machine = size(tmp_path, "app", "--image", image, "--json")
    record = json.loads(machine.stdout)
    assert [layer["compressed"] for layer in record["layers"]][1] > 2 << 20
    assert {t["path"] for t in record["twice"]} == {"/data/tmp.bin", "/opt/copy.bin"}
    assert record["over"] is None  # a root tier compares with nothing unless told


def test_size_of_a_tier_the_registry_lacks_says_how_to_get_it(
    registry: Registry, tmp_path: Path
) -> None:
    (tmp_path / "images.toml").write_text(
        f'[stack]\nname = "sizes"\nregistry = "{registry.address}/sizes"\n\n'
        '[versions]\npython = "3.11"\n\n'
        '[tiers.app]\nfrom = "debian:bookworm-slim"\ntemplate = "python-runtime.Dockerfile.j2"\n'
    )
    done = size(tmp_path, "app")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "is not in the registry: run `doit push:app`" in done.stderr
    unknown = size(tmp_path, "nope")
    assert unknown.returncode == 2 and "no tier 'nope'" in unknown.stderr
