"""The registry's HTTP transport (the OCI distribution spec), straight from this process.

Requests, TLS, redirects and auth for registry/api.py (manifests and blobs). Written on
http.client rather than a client library: a no-op run sends a HEAD per image and must stay
fast, and `oras` alone takes 0.18 s to import here; its manifest read also re-serialises
JSON, which would change a digest that promote must keep.

Bytes only: registry/api.py is the door (digests parsed, bodies hashed against the digest
asked for before anything uses them). Whether a host is spoken to over plain HTTP, and
where credentials may go, is oci/hosts.py's rule; a failure to reach a host is a
RegistryError in words (oci/problems.py).
"""

from __future__ import annotations

import http.client
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

from build_graph.errors import UntrustedAnswer
from build_graph.oci import hosts, problems
from build_graph.oci.digest import Digest
from build_graph.registry import auth
from build_graph.registry.wire import (
    MAX_REDIRECTS,
    REDIRECTS,
    TIMEOUT_S,
    Response,
    Sink,
    body_of,
    check_hop,
    elsewhere,
    fetch,
)

__all__ = ["TOKENS", "Client", "Response", "Sink", "blob_response", "check_hop", "client"]

# A connection the server closed while it sat idle: over TLS a request with a body meets it
# while sending, as an EOF of the TLS stream (a blob upload's first chunk after a long
# build, seen against distribution over HTTPS), where plain HTTP says BrokenPipe.
_RETRYABLE = (
    http.client.RemoteDisconnected,
    BrokenPipeError,
    ConnectionResetError,
    ssl.SSLEOFError,
    ssl.SSLZeroReturnError,
)
READ_ATTEMPTS = 3
_TRANSIENT = frozenset({500, 502, 503, 504})
TOKENS = auth.Tokens()


@dataclass
class Client:
    """One registry host: keep-alive connections per thread; tokens shared (TOKENS)."""

    host: str
    _local: threading.local = field(default_factory=threading.local)
    # The Authorization each token scope last needed here, sent up front from then
    # on: a registry that wants a token answers an anonymous blob upload with 401 before
    # reading its body and closes the connection, so a chunk of megabytes could never reach
    # the retry that would carry the token.
    _authorizations: dict[str, str] = field(default_factory=dict)  # by token scope

    @property
    def secure(self) -> bool:
        return not hosts.plain_http(self.host)

    def request(
        self,
        method: str,
        repository: str,
        path: str,
        *,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        limit: int | None = None,
        sink: Sink | None = None,
    ) -> Response:
        """`method` on /v2/<repository>/<path>; on a 401, authenticates (where credentials
        may go) and asks once more. Raises RegistryError, in words, when the host cannot
        be reached or a login was refused; UntrustedAnswer when a body passes `limit`
        bytes. With `sink`, a 200's body goes there as it arrives (the Response's is
        empty): a multi-GB blob never sits in memory."""
        # The token scope each method needs (distribution asks `delete` for a DELETE).
        action = {"GET": "pull", "HEAD": "pull", "DELETE": "delete"}.get(method, "pull,push")
        url = f"/v2/{repository}/{path}"
        sent = dict(headers or {})
        scope = auth.token_scope(repository, action, path if method == "POST" else "")
        known = self._authorizations.get(scope)
        if known is not None:
            sent["Authorization"] = known
        for attempt in range(1, READ_ATTEMPTS + 1):
            response = self._send(method, url, sent, body, limit, sink)
            if response.status == 401 and "www-authenticate" in response.headers:
                # The token this request carried, if any, was refused: a fresh one is asked
                # for once, and only its refusal is "credentials refused".
                granted = self._authorize(
                    response.headers["www-authenticate"], scope, sent.get("Authorization")
                )
                if granted is not None:
                    self._authorizations[scope] = granted
                    sent = {**sent, "Authorization": granted}
                    response = self._send(method, url, sent, body, limit, sink)
            if method in ("GET", "HEAD") and response.status in REDIRECTS:
                response = self._follow(method, url, sent, response, limit, sink)
            # A read that met a registry failing for a moment (distribution 2.8 answered 500
            # to a manifest read while a racing runner wrote the same tag) is asked again;
            # writes are not, and the last answer is returned as it is.
            if (
                method not in ("GET", "HEAD")
                or response.status not in _TRANSIENT
                or attempt == READ_ATTEMPTS
            ):
                return response
            time.sleep(0.25 * attempt)
        raise AssertionError("unreachable")

    def _follow(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        response: Response,
        limit: int | None,
        sink: Sink | None = None,
    ) -> Response:
        """A read the registry redirected, as the distribution spec allows (blobs sent to
        object storage, with a signed URL): followed on this host with our headers, on any
        other host (scheme, host and port compared) with none, so our credentials never
        reach a storage server. At most MAX_REDIRECTS hops."""
        origin = f"{hosts.scheme(self.host)}://{self.host}"
        here = f"{origin}{url}"
        for _ in range(MAX_REDIRECTS):
            location = response.headers.get("location")
            if response.status not in REDIRECTS or not location:
                return response
            here = check_hop(here, urllib.parse.urljoin(here, location))
            parts = urllib.parse.urlsplit(here)
            if f"{parts.scheme}://{parts.netloc}" != origin:
                return elsewhere(method, here, {}, limit=limit, sink=sink)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            response = self._send(method, path, headers, None, limit, sink)
        return response

    def _send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        limit: int | None = None,
        sink: Sink | None = None,
    ) -> Response:
        """One request on this thread's connection; a connection the server closed while
        idle is reopened once. A body over `limit` bytes is not read on (nor kept)."""
        for attempt in (1, 2):
            conn = self._connection(fresh=attempt == 2)
            try:
                conn.request(method, url, body=body, headers=headers)
                raw = conn.getresponse()
                data = body_of(raw, limit, sink)
                if limit is not None and len(data) > limit:
                    conn.close()  # the rest of the body is left unread: not reusable
                    self._local.conn = None
                    raise UntrustedAnswer(
                        f"the registry {self.host} answered {url[:120]} "
                        f"with more than {limit} bytes; refusing it"
                    )
                return Response(raw.status, {k.lower(): v for k, v in raw.getheaders()}, data)
            except _RETRYABLE as exc:
                conn.close()
                if attempt == 2:
                    raise problems.unreachable(self.host, exc) from None
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                self._local.conn = None
                raise problems.unreachable(self.host, exc) from None
        raise AssertionError("unreachable")

    def _connection(self, fresh: bool = False) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None or fresh:
            cls = http.client.HTTPSConnection if self.secure else http.client.HTTPConnection
            conn = cls(self.host, timeout=TIMEOUT_S)
            self._local.conn = conn
        return conn

    def _authorize(self, header: str, scope: str, refused: str | None = None) -> str | None:
        """The Authorization value the challenge asks for (a token for `scope`), or None to
        stay anonymous. `refused`: the Authorization the 401 answered, never handed back."""
        challenge = auth.parse_challenge(header)
        if challenge.scheme == "bearer" and "realm" in challenge.params:
            return TOKENS.bearer(self.host, challenge, scope, fetch, refused)
        creds = auth.credentials(self.host)
        here = f"{hosts.scheme(self.host)}://{self.host}/"
        if challenge.scheme == "basic" and creds and hosts.may_send_credentials(here):
            return auth.basic_header(creds)
        return None


_clients: dict[str, Client] = {}
_clients_lock = threading.Lock()


def client(host: str) -> Client:
    with _clients_lock:
        return _clients.setdefault(host, Client(host))


def blob_response(
    ref_host: str, repository: str, digest: Digest, limit: int | None = None
) -> Response:
    """GET a blob (a storage redirect is followed by Client.request, without credentials);
    UntrustedAnswer past `limit` bytes."""
    return client(ref_host).request("GET", repository, f"blobs/{digest}", limit=limit)
