"""A blob streamed into a file (registry/download.py), against a registry on loopback that
serves the right bytes, other bytes, too many, a redirect to storage, or drops the
connection half-way once: only the right bytes are kept, and nothing else stays on disk."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import pytest

from build_graph.errors import RegistryError, UntrustedAnswer
from build_graph.oci.digest import Digest
from build_graph.oci.refs import parse_ref
from build_graph.registry.download import download_blob
from tests.loopback_http import serving

pytestmark = pytest.mark.integration

BLOB = os.urandom(3 << 20)  # past one read of the sink (1 MiB): the body arrives in pieces
DIGEST = Digest(hashlib.sha256(BLOB).hexdigest())


class Registry(BaseHTTPRequestHandler):
    serve: ClassVar[str] = "right"  # right | other | longer | storage | drop-once | missing
    dropped: ClassVar[int] = 0

    def do_GET(self) -> None:
        if self.path.startswith("/storage/"):
            return self._send(BLOB)
        if self.serve == "missing":
            return self._send(b'{"errors":[{"code":"BLOB_UNKNOWN"}]}', 404)
        if self.serve == "storage":
            self.send_response(307)
            self.send_header("Location", f"/storage/{DIGEST.hex}?sig=x")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if self.serve == "drop-once" and Registry.dropped == 0:
            Registry.dropped += 1
            self.send_response(200)
            self.send_header("Content-Length", str(len(BLOB)))
            self.end_headers()
            self.wfile.write(BLOB[: 1 << 20])
            self.wfile.flush()
            self.connection.shutdown(2)
            return None
        body = {"other": BLOB[::-1], "longer": BLOB + b"x"}.get(self.serve, BLOB)
        return self._send(body)

    def _send(self, body: bytes, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def registry() -> Iterator[str]:
    Registry.dropped = 0
    with serving(Registry) as address:
        yield address


def fetch(address: str, dest: Path) -> None:
    download_blob(parse_ref(f"{address}/team/base:x"), DIGEST, len(BLOB), dest)


@pytest.mark.parametrize("serve", ["right", "storage"])
def test_the_right_bytes_land_in_the_file(registry: str, serve: str, tmp_path: Path) -> None:
    Registry.serve = serve
    fetch(registry, tmp_path / "blob")
    assert (tmp_path / "blob").read_bytes() == BLOB


@pytest.mark.parametrize(
    ("serve", "size", "says"),
    [
        ("other", len(BLOB), "other bytes"),
        ("longer", len(BLOB), f"passed the {len(BLOB)} bytes its descriptor states"),
        ("right", len(BLOB) - 1, f"passed the {len(BLOB) - 1} bytes its descriptor states"),
        ("right", len(BLOB) + 1, f"{len(BLOB)} bytes where its descriptor says {len(BLOB) + 1}"),
    ],
)
def test_other_or_more_bytes_are_refused_and_removed(
    registry: str, serve: str, size: int, says: str, tmp_path: Path
) -> None:
    Registry.serve = serve
    with pytest.raises(UntrustedAnswer, match=says):
        download_blob(parse_ref(f"{registry}/team/base:x"), DIGEST, size, tmp_path / "blob")
    assert not (tmp_path / "blob").exists()


def test_a_blob_the_registry_lacks_is_an_error_and_no_file(registry: str, tmp_path: Path) -> None:
    Registry.serve = "missing"
    with pytest.raises(RegistryError, match="404"):
        fetch(registry, tmp_path / "blob")
    assert not (tmp_path / "blob").exists()


def test_a_connection_dropped_half_way_is_an_error_and_leaves_nothing(
    registry: str, tmp_path: Path
) -> None:
    """A body that ends short is an error in words (never 'other bytes'), and the part
    that came is not kept."""
    Registry.serve = "drop-once"
    with pytest.raises(RegistryError, match=r"127\.0\.0\.1") as caught:
        fetch(registry, tmp_path / "blob")
    assert "ended 2097152 bytes before the body did" in str(caught.value)
    assert not (tmp_path / "blob").exists()
    fetch(registry, tmp_path / "blob")  # asked again, the whole blob
    assert (tmp_path / "blob").read_bytes() == BLOB
