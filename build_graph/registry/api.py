"""The registry's HTTP API (the OCI distribution spec), straight from this process.

Manifest HEADs for the up-to-date checks (many at once, no Docker daemon in the way),
manifests copied byte for byte under new tags (promote moves no layer), and small blobs for
artifacts such as verify reports. Written on http.client rather than a client library: a
no-op run sends a HEAD per image and must stay near 0.1 s, and `oras` alone takes 0.18 s to
import here (benchmarks/README figures); its manifest read also re-serialises JSON, which
would change a digest that promote must keep.

Loopback registries (and BUILD_GRAPH_INSECURE_REGISTRIES, comma-separated hosts) are spoken
to over plain HTTP, every other one over HTTPS, as the Docker daemon does by default.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import threading
import urllib.parse
from dataclasses import dataclass, field

from build_graph.errors import RegistryError
from build_graph.registry import auth as registry_auth
from build_graph.registry.refs import MANIFEST_TYPES, Presence, Probe, Ref

TIMEOUT_S = 30.0
_LOOPBACK = ("127.", "localhost", "[::1]")


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def digest(self) -> str:
        """The registry's Docker-Content-Digest, else the sha256 of the body."""
        return self.headers.get("docker-content-digest") or \
            f"sha256:{hashlib.sha256(self.body).hexdigest()}"


@dataclass
class Client:
    """One registry host: keep-alive connections per thread, tokens per repository scope."""

    host: str
    _tokens: dict[tuple[str, str], str] = field(default_factory=dict)
    _local: threading.local = field(default_factory=threading.local)

    @property
    def secure(self) -> bool:
        insecure = {h.strip() for h in
                    os.environ.get("BUILD_GRAPH_INSECURE_REGISTRIES", "").split(",") if h}
        return not (self.host.startswith(_LOOPBACK) or self.host in insecure)

    def request(self, method: str, repository: str, path: str, *,
                headers: dict[str, str] | None = None, body: bytes | None = None) -> Response:
        """`method` on /v2/<repository>/<path>; authenticates on a 401 and asks once more."""
        action = "pull" if method in ("GET", "HEAD") else "pull,push"
        url = f"/v2/{repository}/{path}"
        sent = dict(headers or {})
        key = (repository, action)
        if key in self._tokens:
            sent["Authorization"] = self._tokens[key]
        response = self._send(method, url, sent, body)
        if response.status == 401 and "www-authenticate" in response.headers:
            auth = self._authorize(response.headers["www-authenticate"], repository, action)
            if auth is not None:
                self._tokens[key] = sent["Authorization"] = auth
                response = self._send(method, url, sent, body)
        return response

    def _send(self, method: str, url: str, headers: dict[str, str],
              body: bytes | None) -> Response:
        """One request on this thread's connection; a connection the server closed while
        idle is reopened once."""
        for attempt in (1, 2):
            conn = self._connection(fresh=attempt == 2)
            try:
                conn.request(method, url, body=body, headers=headers)
                raw = conn.getresponse()
                data = raw.read()
                return Response(raw.status, {k.lower(): v for k, v in raw.getheaders()}, data)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                conn.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _connection(self, fresh: bool = False) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None or fresh:
            cls = http.client.HTTPSConnection if self.secure else http.client.HTTPConnection
            conn = cls(self.host, timeout=TIMEOUT_S)
            self._local.conn = conn
        return conn

    def _authorize(self, header: str, repository: str, action: str) -> str | None:
        challenge = registry_auth.parse_challenge(header)
        creds = registry_auth.credentials(self.host)
        if challenge.scheme == "basic":
            return registry_auth.basic_header(creds) if creds else None
        if challenge.scheme != "bearer" or "realm" not in challenge.params:
            return None
        query = {"service": challenge.params.get("service", ""),
                 "scope": f"repository:{repository}:{action}"}
        url = f"{challenge.params['realm']}?{urllib.parse.urlencode(query)}"
        extra = {"Authorization": registry_auth.basic_header(creds)} if creds else {}
        status, body = fetch(url, extra)
        if status != 200:
            raise RegistryError(f"{self.host} refused a token for {repository} ({action}): "
                                f"HTTP {status}; run `docker login {self.host}`")
        try:
            data = json.loads(body)
            return f"Bearer {data.get('token') or data['access_token']}"
        except (ValueError, KeyError, TypeError):
            raise RegistryError(f"{self.host}'s token service answered no token") from None


_clients: dict[str, Client] = {}
_clients_lock = threading.Lock()


def client(host: str) -> Client:
    with _clients_lock:
        return _clients.setdefault(host, Client(host))


def fetch(url: str, headers: dict[str, str] | None = None, redirects: int = 5) -> tuple[int, bytes]:
    """GET an absolute URL (a token service, a blob's storage redirect); follows redirects."""
    parts = urllib.parse.urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.netloc, timeout=TIMEOUT_S)
    try:
        conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""),
                     headers=headers or {})
        raw = conn.getresponse()
        body = raw.read()
        location = raw.getheader("Location")
    finally:
        conn.close()
    if raw.status in (301, 302, 303, 307, 308) and location and redirects > 0:
        # Storage redirects are signed URLs: the registry's credentials do not follow.
        return fetch(urllib.parse.urljoin(url, location), None, redirects - 1)
    return raw.status, body


def _failed(ref: Ref, what: str, response: Response) -> RegistryError:
    text = response.body[:300].decode("utf-8", "replace").strip()
    return RegistryError(f"{what} {ref.host}/{ref.repository}:{ref.reference} failed: "
                         f"HTTP {response.status} {text}")


def head_manifest(ref: Ref) -> Probe:
    """Is `ref` in the registry, and as which digest? An error is an error, never 'absent'."""
    try:
        response = client(ref.api_host).request(
            "HEAD", ref.repository, f"manifests/{ref.reference}",
            headers={"Accept": ", ".join(MANIFEST_TYPES)})
    except (OSError, http.client.HTTPException, RegistryError) as exc:
        return Probe(Presence.ERROR, error=f"{type(exc).__name__}: {exc}")
    if response.status == 404:
        return Probe(Presence.ABSENT)
    if response.status != 200:
        return Probe(Presence.ERROR, error=f"HTTP {response.status} from {ref.host}")
    digest = response.headers.get("docker-content-digest")
    length = response.headers.get("content-length", "")
    if digest is None or not length.isdigit():  # not every registry says: read the manifest
        try:
            body, media_type, digest = get_manifest(ref)
        except (OSError, http.client.HTTPException, RegistryError) as exc:
            return Probe(Presence.ERROR, error=str(exc))
        return Probe(Presence.PRESENT, digest=digest, media_type=media_type, size=len(body))
    return Probe(Presence.PRESENT, digest=digest,
                 media_type=response.headers.get("content-type"), size=int(length))


def get_manifest(ref: Ref) -> tuple[bytes, str, str]:
    """(the manifest's bytes exactly as stored, its media type, its digest)."""
    response = client(ref.api_host).request("GET", ref.repository, f"manifests/{ref.reference}",
                                            headers={"Accept": ", ".join(MANIFEST_TYPES)})
    if response.status != 200:
        raise _failed(ref, "reading the manifest of", response)
    return response.body, response.headers.get("content-type", ""), response.digest()


def put_manifest(ref: Ref, body: bytes, media_type: str) -> str:
    """Store `body` under `ref` (a tag); returns the digest the registry gave it."""
    response = client(ref.api_host).request("PUT", ref.repository, f"manifests/{ref.reference}",
                                            headers={"Content-Type": media_type}, body=body)
    if response.status not in (200, 201):
        raise _failed(ref, "writing the manifest", response)
    return response.headers.get("docker-content-digest") or \
        f"sha256:{hashlib.sha256(body).hexdigest()}"


def put_blob(ref: Ref, data: bytes) -> str:
    """Upload `data` to `ref`'s repository (monolithic upload) unless it is there already."""
    digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
    api = client(ref.api_host)
    if api.request("HEAD", ref.repository, f"blobs/{digest}").status == 200:
        return digest
    started = api.request("POST", ref.repository, "blobs/uploads/", body=b"")
    location = started.headers.get("location")
    if started.status != 202 or not location:
        raise _failed(ref, "starting an upload to", started)
    parts = urllib.parse.urlsplit(location)
    prefix = f"/v2/{ref.repository}/"
    if not parts.path.startswith(prefix):
        raise RegistryError(f"{ref.host} sent an upload location outside {prefix}: {location}")
    query = urllib.parse.urlencode({"digest": digest})
    path = parts.path[len(prefix):] + f"?{parts.query}&{query}" if parts.query else \
        parts.path[len(prefix):] + f"?{query}"
    done = api.request("PUT", ref.repository, path, body=data,
                       headers={"Content-Type": "application/octet-stream"})
    if done.status != 201:
        raise _failed(ref, "uploading a blob to", done)
    return digest


def get_blob(ref: Ref, digest: str) -> bytes:
    response = client(ref.api_host).request("GET", ref.repository, f"blobs/{digest}")
    if response.status in (301, 302, 303, 307, 308) and "location" in response.headers:
        status, body = fetch(urllib.parse.urljoin(
            f"{'https' if client(ref.api_host).secure else 'http'}://{ref.api_host}/",
            response.headers["location"]))
        response = Response(status, {}, body)
    if response.status != 200:
        raise _failed(ref, f"reading blob {digest} of", response)
    if f"sha256:{hashlib.sha256(response.body).hexdigest()}" != digest:
        raise RegistryError(f"blob {digest} of {ref.host}/{ref.repository} does not match "
                            "its digest")
    return response.body
