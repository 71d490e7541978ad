"""TLS stays verified behind a proxy: the build host's CA bundle reaches pip as a secret.

A loopback HTTPS package index (a real stdlib server) whose certificate is signed by a CA
that only the build host's bundle holds serves one wheel. With that bundle, the tier's pip
step installs it with verification on (no --trusted-host anywhere); with a bundle that
lacks the CA (withheld), the same build fails on the certificate. The bundle is in no
layer, history or config, and the tier's hash tag is the same either way. A compile whose
script downloads from the same index (pip and Python's ssl) likewise succeeds only with it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import os
import ssl
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.helpers import REPO
from tests.support.registry import Registry
from tests.support.workspace import Workspace, image_as_stored_and_pushed, make_workspace, output_of

pytestmark = pytest.mark.integration
WHEEL = "tlsprobe-1.0-py3-none-any.whl"


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def make_ca_and_server(folder: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) as PEM files: a CA of its own, and
    a certificate for 127.0.0.1 it signed."""
    now = dt.datetime.now(dt.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("build-graph test CA"))
        .issuer_name(_name("build-graph test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    server = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def make_index(root: Path) -> None:
    """simple/tlsprobe/ listing one hand-made pure-Python wheel (with its sha256)."""
    (root / "files").mkdir(parents=True)
    with zipfile.ZipFile(root / "files" / WHEEL, "w") as wheel:
        files = {
            "tlsprobe/__init__.py": "VALUE = 1\n",
            "tlsprobe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tlsprobe\n"
            "Version: 1.0\n",
            "tlsprobe-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
            "Root-Is-Purelib: true\n"
            "Tag: py3-none-any\n",
        }
        files["tlsprobe-1.0.dist-info/RECORD"] = (
            "".join(f"{n},,\n" for n in files) + "tlsprobe-1.0.dist-info/RECORD,,\n"
        )
        for name, text in files.items():
            wheel.writestr(name, text)
    digest = hashlib.sha256((root / "files" / WHEEL).read_bytes()).hexdigest()
    (root / "simple" / "tlsprobe").mkdir(parents=True)
    (root / "simple" / "tlsprobe" / "index.html").write_text(
        f'<html><body><a href="../../files/{WHEEL}#sha256={digest}">{WHEEL}</a></body></html>\n'
    )


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """(index URL, CA certificate, paths asked) of a loopback HTTPS index."""
    ca, cert, key = make_ca_and_server(tmp_path)
    make_index(tmp_path / "index")
    asked: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(tmp_path / "index"), **kwargs)

        def do_GET(self) -> None:
            asked.append(self.path)
            super().do_GET()

        def log_message(self, *args: Any) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/simple/", ca, asked
    server.shutdown()


@pytest.fixture
def ws(tmp_path: Path, registry: Registry) -> Iterator[Workspace]:
    yield make_workspace(tmp_path / "ws", registry)


def system_bundle() -> Path:
    found = ssl.get_default_verify_paths()
    return Path(next(p for p in (found.cafile, found.openssl_cafile) if p and Path(p).is_file()))


def lock(ws: Workspace, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`python -m build_graph lock` for the workspace's stack."""
    done = subprocess.run(
        [sys.executable, "-m", "build_graph", "lock", "--manifest", str(ws.manifest)],
        env={**os.environ, **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    print(done.stdout[-5000:], done.stderr[-5000:])
    return done


def test_pip_verifies_tls_with_the_hosts_ca_bundle_and_fails_without_it(
    ws: Workspace, index: tuple[str, Path, list[str]], tmp_path: Path
) -> None:
    url, ca, asked = index
    # No site script: no trusted hosts. The parent's pip steps reach PyPI through this
    # host's TLS interception with the host's own bundle, found by default.
    plain = {"BUILD_GRAPH_PIP_TRUSTED_HOST": "", "BUILD_GRAPH_CA_BUNDLE": ""}
    first = ws.doit("push:fastext", env=plain)
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    ws.manifest.write_text(
        ws.manifest.read_text()
        + (
            '\n[tiers.private]\nparent = "fastext"\ntemplate = "python-packages.Dockerfile.j2"\n'
            'packages = ["tlsprobe==1.0"]\n'
        )
    )
    with_ca = tmp_path / "host-bundle.pem"  # the host's bundle, as a host behind a proxy has
    with_ca.write_text(system_bundle().read_text() + ca.read_text())
    env = {**plain, "BUILD_GRAPH_PIP_INDEX_URL": url}

    # The tier's Python lock is resolved on this host before anything builds, over the same
    # verified TLS: without the CA it is refused there (exit 3, naming the certificate), with
    # it recorded; the build's own pip is held to the same bundle next.
    refused = ws.doit("build:private", env={**env, "BUILD_GRAPH_CA_BUNDLE": str(system_bundle())})
    assert refused.returncode == 3, (refused.stdout + refused.stderr)[-3000:]
    assert "invalid peer certificate" in refused.stderr and "Traceback" not in refused.stderr
    assert lock(ws, {**env, "BUILD_GRAPH_CA_BUNDLE": str(with_ca)}).returncode == 0

    # Withheld first: BuildKit caches a RUN step whatever secrets it had.
    withheld = ws.doit("build:private", env={**env, "BUILD_GRAPH_CA_BUNDLE": str(system_bundle())})
    text = withheld.stdout + withheld.stderr
    assert withheld.returncode == 1, text[-3000:]
    assert "CERTIFICATE_VERIFY_FAILED" in text and "Traceback" not in text
    dockerfile = (ws.root / "build" / "default" / "private" / "Dockerfile").read_text()

    done = ws.doit("push:private", env={**env, "BUILD_GRAPH_CA_BUNDLE": str(with_ca)})
    text = done.stdout + done.stderr
    assert done.returncode == 0, text[-3000:]
    assert any(p.startswith(f"/files/{WHEEL}") for p in asked)  # fetched over verified TLS
    assert "--trusted-host" not in text
    # Same Dockerfile, same hash tag, with and without the CA.
    assert (ws.root / "build" / "default" / "private" / "Dockerfile").read_text() == dockerfile
    image, texts = image_as_stored_and_pushed(ws, "private")
    assert (
        output_of(image.id, ["python3", "-c", "import tlsprobe; print(tlsprobe.VALUE)"]).strip()
        == "1"
    )
    pem_line = ca.read_text().splitlines()[1].encode()  # a line of the CA's base64
    for blob in texts:  # config, history, pushed manifest and config blob
        assert pem_line not in blob
    # The secret's file is gone with its RUN (BuildKit 20.10 may leave the empty mount
    # point behind: a name, no bytes).
    assert (
        output_of(
            image.id, ["sh", "-c", "cat /run/build-graph/host-ca.pem 2>/dev/null | wc -c"]
        ).strip()
        == "0"
    )

    # The compile container gets the same bundle, read-only, for the compile script's own
    # downloads: pip (PIP_CERT) and Python's ssl (SSL_CERT_FILE) inside the builder image.
    (ws.root / "templates" / "tlsfetch.sh.j2").write_text(
        "#!/usr/bin/env bash\nset -euo pipefail\n"
        'python3 -c "import os, urllib.request; '
        "urllib.request.urlopen(os.environ['PIP_INDEX_URL'] + 'tlsprobe/').read()\"\n"
        "python3 -m pip download --no-deps --dest {{ paths.out }} tlsprobe==1.0\n"
    )
    ws.manifest.write_text(
        ws.manifest.read_text()
        + (
            '\n[tiers.fetched]\nfrom = "debian:{debian}-slim"\n'
            'template = "python-runtime.Dockerfile.j2"\n'
            'compile = { builder = "builder", script = "tlsfetch.sh.j2" }\n'
        )
    )
    # Its Python lock (pip, setuptools) from PyPI first, as the parent's was: the loopback
    # index serves only tlsprobe, and what is checked here is the compile's own TLS.
    assert lock(ws, plain).returncode == 0
    withheld = ws.doit(
        "compile:fetched", env={**env, "BUILD_GRAPH_CA_BUNDLE": str(system_bundle())}
    )
    text = withheld.stdout + withheld.stderr
    assert withheld.returncode == 1, text[-3000:]
    assert "CERTIFICATE_VERIFY_FAILED" in text
    done = ws.doit("compile:fetched", env={**env, "BUILD_GRAPH_CA_BUNDLE": str(with_ca)})
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert (ws.root / "build" / "default" / "fetched" / "wheels" / WHEEL).is_file()
