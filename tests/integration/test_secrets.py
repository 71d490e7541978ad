"""A pip index credential reaches pip through a BuildKit secret, and nothing else.

A private index on loopback (a real HTTP server that records the Authorization header it
receives) serves one wheel; the host's BUILD_GRAPH_PIP_INDEX_URL carries user:TOKEN. The
tier's build installs the wheel (so the credential was used), and the token is in no
image layer history, config, label, pushed manifest or config blob, log file or output.
"""

from __future__ import annotations

import base64
import threading
import zipfile
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.registry import Registry
from tests.support.workspace import Workspace, image_as_stored_and_pushed, make_workspace, output_of

pytestmark = pytest.mark.integration
MARKER = "MARKER-secret-4b9"
WHEEL = "markerpkg-1.0-py3-none-any.whl"


def make_index(root: Path) -> None:
    """simple/markerpkg/ listing one hand-made pure-Python wheel."""
    (root / "files").mkdir(parents=True)
    with zipfile.ZipFile(root / "files" / WHEEL, "w") as wheel:
        files = {
            "markerpkg/__init__.py": "VALUE = 1\n",
            "markerpkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: markerpkg\n"
            "Version: 1.0\n",
            "markerpkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
            "Root-Is-Purelib: true\n"
            "Tag: py3-none-any\n",
        }
        files["markerpkg-1.0.dist-info/RECORD"] = (
            "".join(f"{n},,\n" for n in files) + "markerpkg-1.0.dist-info/RECORD,,\n"
        )
        for name, text in files.items():
            wheel.writestr(name, text)
    (root / "simple" / "markerpkg").mkdir(parents=True)
    (root / "simple" / "markerpkg" / "index.html").write_text(
        f'<html><body><a href="../../files/{WHEEL}">{WHEEL}</a></body></html>\n'
    )


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """(base URL, Authorization headers seen) of a loopback index."""
    make_index(tmp_path / "index")
    seen: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(tmp_path / "index"), **kwargs)

        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization") or "")
            super().do_GET()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()


@pytest.fixture
def ws(tmp_path: Path, registry: Registry) -> Iterator[Workspace]:
    yield make_workspace(tmp_path / "ws", registry)


def test_a_credential_reaches_pip_as_a_secret_and_nowhere_else(
    ws: Workspace, index: tuple[str, list[str]]
) -> None:
    address, seen = index
    assert ws.doit("push:fastext").returncode == 0  # the parent, from the public index
    ws.manifest.write_text(
        ws.manifest.read_text()
        + (
            '\n[tiers.private]\nparent = "fastext"\ntemplate = "python-packages.Dockerfile.j2"\n'
            'packages = ["markerpkg==1.0"]\n'
        )
    )
    env = {
        "BUILD_GRAPH_PIP_INDEX_URL": f"http://ci:{MARKER}@{address}/simple/",
        "BUILD_GRAPH_PIP_TRUSTED_HOST": "127.0.0.1",
    }
    result = ws.doit("push:private", env=env)
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-3000:]
    assert "(BuildKit)" in text
    token = base64.b64encode(f"ci:{MARKER}".encode()).decode()
    assert f"Basic {token}" in seen  # pip really used the credential
    assert MARKER not in text
    image, texts = image_as_stored_and_pushed(ws, "private")
    assert output_of(image.id, ["python3", "-c", "import markerpkg; print(1)"]).strip() == "1"
    for blob in texts:  # config, history, pushed manifest and config blob
        assert MARKER.encode() not in blob and token.encode() not in blob
    for path in (ws.root / "build").rglob("*"):
        if path.is_file():
            assert MARKER.encode() not in path.read_bytes(), path
