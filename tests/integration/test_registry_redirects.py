"""The quickstart to `latest` against a real distribution registry (Debian's docker-registry
2.8) that wants tokens and sends blob reads elsewhere, as registries in front of object
storage do, all of it over TLS that a CA made here vouches for.

The registry serves HTTPS only (`http.tls`: a certificate for 127.0.0.1, by IP SAN, signed by
the test CA). Its `auth: token` trusts a token service of the test's own, itself HTTPS under
the same CA, which checks Basic credentials (GET; POST's password grant for containerd) and
issues RS256 JWTs whose `x5c` certificate the same CA vouches for (the registry's
rootcertbundle), granting each scope asked. Its `redirect` storage middleware answers every
blob GET and HEAD with a 307 to a storage server on another port (plain HTTP: another
origin, and a downgrade), which serves the registry's files and records every request's
headers. Build, push, verify and promote of every tier must go through (the redirects
followed, by the daemon and by our client), no request the storage server saw may carry
credentials (no Authorization, no password, no token), and a second run changes nothing.

Nothing trusts the test CA but what is told to: the run's engine is an instance of its own
(scripts/engine.sh, ENGINE_INSTANCE=tls, purged afterwards) whose dockerd trusts it through
ENGINE_CA_DIR (Go's SSL_CERT_DIR, read once at start: the containerd image store fetches a
token with Go's default client, which reads no /etc/docker/certs.d: without it the push
fails with "x509: certificate signed by unknown authority"); the registry's CA is also in
the engine's certs.d/127.0.0.1:<port>/ca.crt, as a user would put it, though the daemon
verifies no certificate of 127.0.0.0/8, its default insecure range (the test passes without
that file). Our client trusts the CA through SSL_CERT_FILE (the system's bundle plus the
CA) and speaks HTTPS to this loopback registry because BUILD_GRAPH_TLS_REGISTRIES lists it
(oci/hosts.py). That the registry answers HTTPS only (a plain-HTTP /v2/ gets no challenge)
means every push and read of the run went over TLS.
"""

from __future__ import annotations

import base64
import datetime as dt
import http.client
import ipaddress
import json
import shutil
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from build_graph.registry import auth as registry_auth
from tests.support.engines import Engine, engine_root, start_engine, stop_engine
from tests.support.registry import Registry
from tests.support.servers import free_port
from tests.support.workspace import Workspace, built, make_workspace, pushed

pytestmark = pytest.mark.integration
TIERS = ("builder", "fastext", "base", "training", "runner")
USER, PASSWORD = "ci", f"pw-{uuid.uuid4().hex}"
SERVICE, ISSUER = "build-graph-test-registry", "build-graph-test-token-service"
INSTANCE = "tls"  # the engine of this module's own (scripts/engine.sh)
SYSTEM_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


# --- certificates ------------------------------------------------------------------------


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass
class Pki:
    """A CA of the test's own; it signs the registry's and the token service's TLS
    certificate and the certificate of the key that signs tokens."""

    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    cert: x509.Certificate = field(init=False)

    def __post_init__(self) -> None:
        self.cert = self._sign(
            _name("build-graph redirect-test CA"), self.key.public_key(), ca=True, issuer=None
        )

    def _sign(
        self,
        subject: x509.Name,
        public_key: CertificatePublicKeyTypes,
        *,
        ca: bool,
        issuer: x509.Certificate | None,
        server: bool = False,
    ) -> x509.Certificate:
        now = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer.subject if issuer else subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(
                x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        )
        if ca:
            builder = builder.add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                critical=True,
            )
        else:
            builder = builder.add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
        if server:  # for 127.0.0.1, by IP SAN: what Go and OpenSSL check
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            ).add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
        return builder.sign(self.key, hashes.SHA256())

    def issue(self, subject: str, public_key: CertificatePublicKeyTypes) -> x509.Certificate:
        return self._sign(_name(subject), public_key, ca=False, issuer=self.cert)

    def serve(self, folder: Path) -> tuple[Path, Path]:
        """(certificate, key) as PEM files in `folder`: a server certificate for 127.0.0.1."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = self._sign(
            _name("127.0.0.1"), key.public_key(), ca=False, issuer=self.cert, server=True
        )
        paths = folder / "server.pem", folder / "server.key"
        paths[0].write_bytes(_pem(cert))
        paths[1].write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return paths

    def client_context(self) -> ssl.SSLContext:
        """What trusts this CA alone (the test's own reads)."""
        return ssl.create_default_context(cadata=_pem(self.cert).decode())


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# --- the token service -------------------------------------------------------------------


class TokenService(ThreadingHTTPServer):
    """HTTPS on 127.0.0.1: trades USER:PASSWORD (Basic on GET, a password grant on POST)
    for a JWT granting every scope asked, signed as distribution's token auth checks."""

    daemon_threads = True

    def __init__(self, pki: Pki, tls: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), TokenHandler)
        self.socket = tls.wrap_socket(self.socket, server_side=True)
        self.signing_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        signing_cert = pki.issue("build-graph token signer", self.signing_key.public_key())
        self.x5c = [
            base64.b64encode(signing_cert.public_bytes(serialization.Encoding.DER)).decode()
        ]
        self.lock = threading.Lock()
        self.granted: list[str] = []  # the scopes asked by holders of the right password
        self.methods: set[str] = set()  # how they asked: GET (Basic), POST (password grant)
        self.refused = 0

    @property
    def realm(self) -> str:
        return f"https://127.0.0.1:{self.server_address[1]}/token"

    def handle_error(self, request: Any, client_address: Any) -> None:
        return

    def mint(self, scopes: list[str], subject: str = USER) -> str:
        access = []
        for scope in scopes:
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            access.append(
                {"type": kind, "name": name, "actions": [a for a in actions.split(",") if a]}
            )
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": self.x5c}
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": SERVICE,
            "exp": now + 600,
            "nbf": now - 30,
            "iat": now,
            "jti": uuid.uuid4().hex,
            "access": access,
        }
        signing_input = (
            f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        )
        signature = self.signing_key.sign(
            signing_input.encode(), padding.PKCS1v15(), hashes.SHA256()
        )
        return f"{signing_input}.{_b64url(signature)}"


class TokenHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: TokenService

    def log_message(self, *args: object) -> None:
        return

    def _answer(self, user: str | None, password: str | None, scopes: list[str]) -> None:
        if (user, password) != (USER, PASSWORD):
            with self.server.lock:
                self.server.refused += 1
            self._send(401, b'{"errors": [{"code": "UNAUTHORIZED"}]}')
            return
        with self.server.lock:
            self.server.granted.extend(scopes)
            self.server.methods.add(self.command)
        token = self.server.mint(scopes)
        self._send(
            200,
            json.dumps(
                {
                    "token": token,
                    "access_token": token,
                    "expires_in": 600,
                    "issued_at": dt.datetime.now(dt.UTC).isoformat(),
                }
            ).encode(),
        )

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        user = password = None
        scheme, _, value = (self.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() == "basic":
            user, _, password = base64.b64decode(value).decode().partition(":")
        self._answer(user, password, query.get("scope", []))

    def do_POST(self) -> None:  # containerd's OAuth2 password grant
        length = int(self.headers.get("Content-Length") or 0)
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        if form.get("grant_type") != ["password"]:
            self._send(400, b'{"error": "unsupported_grant_type"}')
            return
        self._answer(
            form.get("username", [""])[0],
            form.get("password", [""])[0],
            " ".join(form.get("scope", [])).split(),
        )


# --- the storage server ------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]


class StorageServer(ThreadingHTTPServer):
    """Plain HTTP on 127.0.0.1: serves the registry's storage files at their paths (where
    the redirect middleware sends blob reads) and records every request."""

    daemon_threads = True

    def __init__(self, root: Path) -> None:
        super().__init__(("127.0.0.1", 0), StorageHandler)
        self.root = root
        self.lock = threading.Lock()
        self.seen: list[Seen] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class StorageHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StorageServer

    def log_message(self, *args: object) -> None:
        return

    def do_HEAD(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        with self.server.lock:
            self.server.seen.append(Seen(self.command, path, dict(self.headers.items())))
        root = self.server.root.resolve()
        target = (root / path.lstrip("/")).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = target.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(data)


@contextmanager
def _serving(server: ThreadingHTTPServer) -> Iterator[None]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


# --- the registry ------------------------------------------------------------------------


@dataclass
class GuardedRegistry(Registry):
    """docker-registry over HTTPS only, with token auth (TokenService) and blob reads
    redirected to a StorageServer; read back here with tokens minted directly."""

    tokens: TokenService | None = None
    rootcertbundle: Path | None = None
    tls: tuple[Path, Path] | None = None  # its certificate and key
    trust: ssl.SSLContext | None = None  # what trusts its certificate, for the test's reads
    storage_url: str = ""
    debug_port: int = field(default_factory=free_port)

    def command(self) -> list[str]:
        assert self.tokens is not None and self.rootcertbundle is not None and self.tls
        config = self.folder / "config.yml"
        config.write_text(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
            f"    rootdirectory: {self.folder / 'data'}\n  delete:\n    enabled: true\n"
            "middleware:\n  storage:\n    - name: redirect\n      options:\n"
            f"        baseurl: {self.storage_url}\n"
            f"auth:\n  token:\n    realm: {self.tokens.realm}\n    service: {SERVICE}\n"
            f"    issuer: {ISSUER}\n    rootcertbundle: {self.rootcertbundle}\n"
            f"http:\n  addr: {self.address}\n  tls:\n    certificate: {self.tls[0]}\n"
            f"    key: {self.tls[1]}\n  debug:\n    addr: 127.0.0.1:{self.debug_port}\n"
        )
        return ["docker-registry", "serve", str(config)]

    def health_url(self) -> str:  # /v2/ wants TLS and a token: the debug server's (HTTP)
        return f"http://127.0.0.1:{self.debug_port}/debug/health"

    def _open(
        self, method: str, repo: str, path: str, accept: str | None = None
    ) -> tuple[dict[str, str], bytes]:
        assert self.tokens is not None
        headers = {"Authorization": f"Bearer {self.tokens.mint([f'repository:{repo}:pull'])}"}
        if accept:
            headers["Accept"] = accept
        request = urllib.request.Request(
            f"https://{self.address}/v2/{repo}/{path}", method=method, headers=headers
        )
        with urllib.request.urlopen(request, context=self.trust) as resp:
            return dict(resp.headers.items()), resp.read()

    def tags(self, repo: str) -> list[str]:
        try:
            return sorted(json.loads(self._open("GET", repo, "tags/list")[1]).get("tags") or [])
        except OSError:
            return []

    def manifest_head(self, repo: str, tag: str) -> tuple[str, str] | None:
        """(digest, media type) of what repo:tag names; None when absent."""
        from build_graph.oci.refs import MANIFEST_TYPES

        try:
            headers, _ = self._open("HEAD", repo, f"manifests/{tag}", ", ".join(MANIFEST_TYPES))
        except OSError:
            return None
        return headers["Docker-Content-Digest"], headers["Content-Type"]

    def digest(self, repo: str, tag: str) -> str | None:
        found = self.manifest_head(repo, tag)
        return None if found is None else found[0]


@dataclass
class Setup:
    registry: GuardedRegistry
    tokens: TokenService
    storage: StorageServer
    engine: Engine
    env: dict[str, str]  # what a run needs besides os.environ (and what the test reads with)


@contextmanager
def _trusted_by_engine(host: str, ca: bytes) -> Iterator[None]:
    """The engine's daemons trust `ca` for the registry at `host` (/etc/docker/certs.d in
    the engine's root); removed afterwards."""
    folder = engine_root() / "etc" / "docker" / "certs.d" / host
    folder.mkdir(parents=True)
    try:
        (folder / "ca.crt").write_bytes(ca)
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def guarded(folder: Path) -> Iterator[Setup]:
    """This module's engine, the token service, the storage server and the registry, running."""
    pki = Pki()
    ca = folder / "ca.pem"  # the registry's rootcertbundle: it vouches for the token signer
    ca.write_bytes(_pem(pki.cert))
    (folder / "engine-cas").mkdir()  # the daemon's ENGINE_CA_DIR: for the token realm
    (folder / "engine-cas" / "ca.crt").write_bytes(_pem(pki.cert))
    bundle = folder / "bundle.pem"  # our client's SSL_CERT_FILE: the system's CAs and ours
    bundle.write_bytes(SYSTEM_BUNDLE.read_bytes() + b"\n" + _pem(pki.cert))
    server_tls = pki.serve(folder)  # the registry's and the token service's
    serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    serving.load_cert_chain(*server_tls)
    tokens = TokenService(pki, serving)
    registry = GuardedRegistry(
        folder / "registry",
        free_port(),
        tokens=tokens,
        rootcertbundle=ca,
        tls=server_tls,
        trust=pki.client_context(),
    )
    registry.folder.mkdir()
    storage = StorageServer(registry.folder / "data")
    registry.storage_url = storage.url
    config = folder / "docker-config"  # as `docker login` leaves it; read by doit and docker
    config.mkdir()
    auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    (config / "config.json").write_text(json.dumps({"auths": {registry.address: {"auth": auth}}}))
    try:
        engine = start_engine(INSTANCE, "containerd", ca_dir=folder / "engine-cas")
        with (
            _trusted_by_engine(registry.address, _pem(pki.cert)),
            _serving(tokens),
            _serving(storage),
        ):
            registry.start()
            try:
                yield Setup(
                    registry,
                    tokens,
                    storage,
                    engine,
                    {
                        "DOCKER_HOST": engine.host,
                        "DOCKER_CONFIG": str(config),
                        "SSL_CERT_FILE": str(bundle),
                        "BUILD_GRAPH_TLS_REGISTRIES": registry.address,
                    },
                )
            finally:
                registry.stop()
    finally:
        stop_engine(INSTANCE, purge=True)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with guarded(tmp_path_factory.mktemp("redirects")) as running:
        yield running


def no_credentials_reached(storage: StorageServer) -> None:
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    for seen in storage.seen:
        assert "authorization" not in {name.lower() for name in seen.headers}, seen
        text = json.dumps(seen.headers)
        assert PASSWORD not in text and basic not in text and "Bearer" not in text, seen


def blob_reads(storage: StorageServer) -> list[Seen]:
    with storage.lock:
        return [s for s in storage.seen if s.path.startswith("/docker/registry/v2/blobs/")]


def test_the_quickstart_reaches_latest_through_tls_tokens_and_storage_redirects(
    setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry, storage = setup.registry, setup.storage
    # The registry speaks TLS only, under the test CA, and wants tokens from an HTTPS realm.
    with pytest.raises((OSError, http.client.HTTPException)) as plain:
        urllib.request.urlopen(f"http://{registry.address}/v2/", timeout=10)
    assert not isinstance(plain.value, urllib.error.HTTPError) or (
        plain.value.code != 401 and "WWW-Authenticate" not in plain.value.headers
    ), plain.value
    with pytest.raises(urllib.error.URLError) as untrusted:  # the system's CAs alone
        urllib.request.urlopen(
            f"https://{registry.address}/v2/",
            timeout=10,
            context=ssl.create_default_context(cafile=str(SYSTEM_BUNDLE)),
        )
    assert isinstance(untrusted.value.reason, ssl.SSLCertVerificationError), untrusted.value
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(
            f"https://{registry.address}/v2/", timeout=10, context=registry.trust
        )
    assert refused.value.code == 401
    assert f'Bearer realm="{setup.tokens.realm}"' in refused.value.headers["WWW-Authenticate"], (
        refused.value.headers
    )
    assert setup.tokens.realm.startswith("https://") and storage.url.startswith("http://")

    ws: Workspace = make_workspace(tmp_path, registry)
    first = ws.doit(env=setup.env)
    assert first.returncode == 0, first.stderr[-3000:]
    assert sorted(built(first)) == sorted(TIERS)
    for tier in TIERS:
        repo = f"quickstart/{tier}"
        tags = registry.tags(repo)
        hashes = [t for t in tags if len(t) == 20]
        assert "latest" in tags and hashes, (tier, tags)
        latest = registry.manifest_head(repo, "latest")
        assert latest is not None, tier
        # host-only tiers: `latest` is the very manifest a hash tag names (an index on the
        # containerd store, a plain manifest on the classic one)
        assert latest[0] in {registry.digest(repo, h) for h in hashes}, tier
    assert setup.tokens.granted and not setup.tokens.refused
    # Our client asked the HTTPS realm (GET): it pushes from the layouts, and nothing makes
    # the daemon pull here, so its password grant (POST) may never come.
    assert "GET" in setup.tokens.methods, setup.tokens.methods  # ours; the daemon no longer pushes
    # The run's blob reads (the HEADs before an artifact's blob upload) were sent to the
    # storage server and followed there, without credentials.
    assert blob_reads(storage), "no blob read was redirected to the storage server"
    no_credentials_reached(storage)

    # A blob GET through the same redirect: each tier's config, read by our client.
    for name in ("DOCKER_CONFIG", "SSL_CERT_FILE", "BUILD_GRAPH_TLS_REGISTRIES"):
        monkeypatch.setenv(name, setup.env[name])
    registry_auth.credentials.cache_clear()
    try:
        for tier in TIERS:
            config = json.loads(registry.manifest_and_config(f"quickstart/{tier}", "latest")[-1])
            assert config["rootfs"]["diff_ids"], tier
    finally:
        registry_auth.credentials.cache_clear()
    assert {s.method for s in blob_reads(storage)} == {"HEAD", "GET"}
    no_credentials_reached(storage)

    again = ws.doit(env=setup.env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert not built(again) and not pushed(again)
    no_credentials_reached(storage)
