"""An OCI distribution registry in this process, for the registry client's unit tests.

Written from the OCI distribution spec 1.1 (opencontainers/distribution-spec, spec.md), as
much of it as build_graph/registry/ speaks: the `/v2/` ping; manifests by tag and digest
(HEAD, GET, PUT, DELETE; stored as sent, named by the sha256 of those bytes); blobs (HEAD,
GET, DELETE); blob uploads (POST, monolithic with `?digest=`, a cross-repository mount with
`?mount=&from=`, PATCH chunks with Content-Range, GET of an upload's status, PUT `?digest=`
to close); `tags/list` with `n`, `last` and a `Link` to the next page; the referrers API
(with `OCI-Subject` on a manifest PUT naming a subject); errors as the spec's JSON. Where
the spec leaves a choice, it does what CNCF distribution does (an upload's `Range` is `0-0`
while it is empty, its Location carries a `_state` query; a manifest naming a blob the
repository lacks is refused with MANIFEST_BLOB_UNKNOWN; a mount needs `pull` on the source
repository).

Switches a test turns on to make it hostile (attributes of OciRegistry):
- `lie(digest, other)`: GETs of that blob or manifest serve `other` bytes, under the true
  digest's headers.
- `fail(pattern, status)`: the next request(s) whose path matches answer `status` once.
- `token_auth`: every /v2/ request wants a bearer token from the `/token` realm this server
  serves (scoped per repository and action, as distribution checks them); `tokens` lists
  those issued, `refuse_tokens` makes the realm refuse, `revoke_tokens()` stops honouring
  the ones issued so far, before their `expires_in`; `pull_only_tokens` grants pull alone
  (a read-only robot account).
- `redirect_blobs`: a blob GET answers 307 to `/storage/<name>/<digest>`, served here.
- `referrers_api = False`: no referrers API (404, as distribution 2.8): the client keeps
  the referrers tag itself. `deletes = False`: deletes refused (405 UNSUPPORTED).
- `hook(method, path)`: called after a request changed the stores and before its answer
  goes out (a racing writer's moment).
`requests` lists every request as answered (`Seen`).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
# The spec's grammars: a repository name, a tag, and the one digest algorithm served here.
NAME = re.compile(r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*")
TAG = re.compile(r"[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}")
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
CONTENT_RANGE = re.compile(r"([0-9]+)-([0-9]+)")
TOKEN_LIFETIME_S = 300


def digest_of(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


@dataclass(frozen=True)
class Manifest:
    body: bytes  # exactly as pushed
    media_type: str


@dataclass
class Repository:
    blobs: dict[str, bytes] = field(default_factory=dict)  # digest -> bytes
    manifests: dict[str, Manifest] = field(default_factory=dict)  # digest -> manifest
    tags: dict[str, str] = field(default_factory=dict)  # tag -> digest


@dataclass
class Upload:
    """An upload session: the repository it belongs to and the bytes received so far."""

    repository: str
    received: bytearray = field(default_factory=bytearray)


@dataclass
class Failure:
    """Answer `status` to requests whose path fully matches `pattern` (and `method`, if
    set): `times` of them, after letting `skip` through."""

    pattern: re.Pattern[str]
    status: int
    times: int
    method: str | None
    skip: int


@dataclass(frozen=True)
class Grant:
    """A token the realm issued, and the (repository, action) pairs it allows."""

    token: str
    scopes: frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Seen:
    """One request as the registry answered it."""

    method: str
    path: str  # with its query
    status: int
    authorization: str
    content_range: str
    size: int  # of the request's body


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def error(status: int, code: str, message: str, detail: object = None) -> Reply:
    """An error in the spec's format: {"errors": [{"code", "message", "detail"}]}."""
    document = {"errors": [{"code": code, "message": message, "detail": detail}]}
    return Reply(status, {"Content-Type": "application/json"}, json.dumps(document).encode())


@dataclass
class OciRegistry:
    """What the registry holds, its switches, and what it was asked."""

    address: str = ""  # '127.0.0.1:PORT' once serving
    repositories: dict[str, Repository] = field(default_factory=dict)
    uploads: dict[str, Upload] = field(default_factory=dict)  # session id -> upload
    requests: list[Seen] = field(default_factory=list)
    # switches
    referrers_api: bool = True
    deletes: bool = True
    token_auth: bool = False
    refuse_tokens: bool = False
    pull_only_tokens: bool = False  # the realm grants pull and nothing else (a read-only robot)
    redirect_blobs: bool = False
    lies: dict[str, bytes] = field(default_factory=dict)  # digest -> bytes served for it
    failures: list[Failure] = field(default_factory=list)
    hook: Callable[[str, str], None] | None = None
    # the token realm's record
    tokens: list[Grant] = field(default_factory=list)
    token_requests: list[str] = field(default_factory=list)  # each request's query
    revoked: set[str] = field(default_factory=set)
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    def fail(
        self,
        pattern: str,
        status: int = 503,
        *,
        times: int = 1,
        method: str | None = None,
        skip: int = 0,
    ) -> None:
        """Answer `status` to the next `times` requests whose path (no query) fully matches
        the regular expression `pattern`, after `skip` of them went through."""
        with self.lock:
            self.failures.append(Failure(re.compile(pattern), status, times, method, skip))

    def lie(self, digest: str, other: bytes) -> None:
        """Serve `other` as the bytes of the blob or manifest `digest`."""
        with self.lock:
            self.lies[digest] = other

    def revoke_tokens(self) -> None:
        """Stop honouring every token issued so far (before its expires_in)."""
        with self.lock:
            self.revoked.update(grant.token for grant in self.tokens)

    def repository(self, name: str) -> Repository:
        with self.lock:
            return self.repositories.setdefault(name, Repository())

    def blob(self, name: str, digest: str) -> bytes | None:
        with self.lock:
            found = self.repositories.get(name)
            return None if found is None else found.blobs.get(digest)

    def resolve(self, name: str, reference: str) -> str | None:
        """The digest `reference` (a tag or a digest) names in `name`; None if none."""
        with self.lock:
            found = self.repositories.get(name)
            if found is None:
                return None
            digest = reference if DIGEST.fullmatch(reference) else found.tags.get(reference)
            return digest if digest in found.manifests else None

    def manifest(self, name: str, reference: str) -> Manifest | None:
        with self.lock:
            digest = self.resolve(name, reference)
            return None if digest is None else self.repositories[name].manifests[digest]

    def store_manifest(self, name: str, reference: str, body: bytes, media_type: str) -> str:
        """Store a manifest as a PUT would (no checks): its digest."""
        digest = digest_of(body)
        with self.lock:
            repository = self.repository(name)
            repository.manifests[digest] = Manifest(body, media_type)
            if not DIGEST.fullmatch(reference):
                repository.tags[reference] = digest
        return digest

    def tags_of(self, name: str) -> list[str]:
        with self.lock:
            found = self.repositories.get(name)
            return [] if found is None else sorted(found.tags)

    def seen(self, method: str, pattern: str = ".*") -> list[Seen]:
        """The requests of `method` whose path (no query) fully matches `pattern`."""
        with self.lock:
            return [
                r
                for r in self.requests
                if r.method == method and re.fullmatch(pattern, r.path.partition("?")[0])
            ]

    def take_failure(self, method: str, path: str) -> int | None:
        """The status a switched-on failure answers to this request, if any."""
        for failure in self.failures:
            if failure.times <= 0 or not failure.pattern.fullmatch(path):
                continue
            if failure.method is not None and failure.method != method:
                continue
            if failure.skip > 0:
                failure.skip -= 1
                continue
            failure.times -= 1
            return failure.status
        return None


class Handler(BaseHTTPRequestHandler):
    """The distribution API over one connection (HTTP/1.1, kept alive), on `registry`."""

    registry: ClassVar[OciRegistry]
    protocol_version = "HTTP/1.1"
    # A request line that is not HTTP (the Docker daemon's TLS hello: it tries HTTPS first,
    # even on loopback) is answered with a status line, not HTTP/0.9's bare body: Go's
    # clients fall back to plain HTTP only when the answer starts with "HTTP/".
    default_request_version = "HTTP/1.0"
    timeout = 10  # an idle kept-alive connection is closed after this many seconds
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms stall

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    # -- the request and its answer ---------------------------------------------------------

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""  # read whole: the connection lives on
        parts = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
        registry = self.registry
        with registry.lock:
            try:
                reply = self._answer(parts.path, query, body)
            except Exception as exc:  # a bug here: said to the client, not a dropped line
                reply = error(500, "INTERNAL", f"the test registry failed: {exc!r}")
            registry.requests.append(
                Seen(
                    self.command,
                    self.path,
                    reply.status,
                    self.headers.get("Authorization", ""),
                    self.headers.get("Content-Range", ""),
                    len(body),
                )
            )
        if registry.hook is not None:
            registry.hook(self.command, parts.path)
        self.send_response(reply.status)
        headers = {"Content-Length": str(len(reply.body)), **reply.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    def _answer(self, path: str, query: dict[str, list[str]], body: bytes) -> Reply:
        registry = self.registry
        if path == "/token":
            return self._token(query)
        if path.startswith("/storage/"):  # where a blob GET is redirected: a signed URL
            return self._storage(path.removeprefix("/storage/"))
        if not path.startswith("/v2/"):
            return Reply(404, {}, b"404 page not found\n")
        route = _route(path)
        if route is None:
            return Reply(404, {}, b"404 page not found\n")
        kind, name, last = route
        if name and not NAME.fullmatch(name):
            return error(400, "NAME_INVALID", "invalid repository name", name)
        if registry.token_auth:
            refused = self._authorized(name, query)
            if refused is not None:
                return refused
        status = registry.take_failure(self.command, path)
        if status is not None:
            return error(status, "UNAVAILABLE", "the registry failed, as it was told to")
        if kind == "ping":
            return Reply(200, {"Content-Type": "application/json"}, b"{}")
        if kind == "referrers" and not registry.referrers_api:
            return Reply(404, {}, b"404 page not found\n")
        method = {
            ("manifests", "GET"): self._get_manifest,
            ("manifests", "HEAD"): self._get_manifest,
            ("manifests", "PUT"): self._put_manifest,
            ("manifests", "DELETE"): self._delete_manifest,
            ("blobs", "GET"): self._get_blob,
            ("blobs", "HEAD"): self._get_blob,
            ("blobs", "DELETE"): self._delete_blob,
            ("uploads", "POST"): self._start_upload,
            ("uploads", "PATCH"): self._patch_upload,
            ("uploads", "GET"): self._upload_status,
            ("uploads", "PUT"): self._finish_upload,
            ("uploads", "DELETE"): self._cancel_upload,
            ("tags", "GET"): self._tags,
            ("referrers", "GET"): self._referrers,
        }.get((kind, self.command))
        if method is None:
            return error(405, "UNSUPPORTED", f"{self.command} is not served on {kind}")
        return method(name, last, query, body)

    # -- bearer tokens ----------------------------------------------------------------------

    def _token(self, query: dict[str, list[str]]) -> Reply:
        registry = self.registry
        registry.token_requests.append(urllib.parse.urlencode(query, doseq=True))
        failed = registry.take_failure("GET", "/token")  # a token service down for a moment
        if failed is not None:
            return error(failed, "UNAVAILABLE", "the token service failed, as it was told to")
        if registry.refuse_tokens:
            return error(401, "UNAUTHORIZED", "the token service refused")
        scopes: set[tuple[str, str]] = set()
        for scope in " ".join(query.get("scope", [])).split():
            kind, _, rest = scope.partition(":")
            repository, _, actions = rest.rpartition(":")
            if kind == "repository" and repository:
                granted = [a for a in actions.split(",") if a]
                if registry.pull_only_tokens:
                    granted = [a for a in granted if a == "pull"]
                scopes.update((repository, action) for action in granted)
        grant = Grant(f"tok{len(registry.tokens)}-{secrets.token_hex(8)}", frozenset(scopes))
        registry.tokens.append(grant)
        document = {"token": grant.token, "expires_in": TOKEN_LIFETIME_S}
        return Reply(200, {"Content-Type": "application/json"}, json.dumps(document).encode())

    def _authorized(self, name: str, query: dict[str, list[str]]) -> Reply | None:
        """None when the request carries a live token for what it needs (distribution's
        access records); else the 401 that names the realm and the scope it needs."""
        registry = self.registry
        needed: set[tuple[str, str]] = set()
        if name:
            actions = {"GET": ["pull"], "HEAD": ["pull"], "DELETE": ["delete"]}
            needed.update((name, a) for a in actions.get(self.command, ["pull", "push"]))
            for source in query.get("from", []):  # a mount reads the source repository
                needed.add((source, "pull"))
        said = self.headers.get("Authorization", "")
        token = said.removeprefix("Bearer ") if said.startswith("Bearer ") else None
        grant = next((g for g in registry.tokens if g.token == token), None)
        if grant is not None and token not in registry.revoked and needed <= grant.scopes:
            return None
        wanted: dict[str, list[str]] = {}
        for repository, action in sorted(needed):
            wanted.setdefault(repository, []).append(action)
        scope = " ".join(f"repository:{r}:{','.join(a)}" for r, a in wanted.items())
        challenge = f'Bearer realm="http://{registry.address}/token",service="oci-registry"'
        if scope:
            challenge += f',scope="{scope}"'
        if token is not None:
            why = (
                "insufficient_scope"
                if grant is not None and token not in registry.revoked
                else "invalid_token"
            )
            challenge += f',error="{why}"'
        refused = error(401, "UNAUTHORIZED", "authentication required", sorted(needed))
        return Reply(401, {**refused.headers, "WWW-Authenticate": challenge}, refused.body)

    # -- manifests --------------------------------------------------------------------------

    def _get_manifest(
        self, name: str, reference: str, _q: dict[str, list[str]], _b: bytes
    ) -> Reply:
        registry = self.registry
        if name not in registry.repositories:
            return error(404, "NAME_UNKNOWN", "repository name not known to registry", name)
        digest = registry.resolve(name, reference)
        if digest is None:
            return error(404, "MANIFEST_UNKNOWN", "manifest unknown", reference)
        stored = registry.repositories[name].manifests[digest]
        headers = {"Content-Type": stored.media_type, "Docker-Content-Digest": digest}
        if self.command == "HEAD":
            return Reply(200, {**headers, "Content-Length": str(len(stored.body))})
        return Reply(200, headers, registry.lies.get(digest, stored.body))

    def _put_manifest(
        self, name: str, reference: str, _q: dict[str, list[str]], body: bytes
    ) -> Reply:
        registry = self.registry
        media_type = self.headers.get("Content-Type", "").partition(";")[0].strip()
        digest = digest_of(body)
        if DIGEST.fullmatch(reference):
            if reference != digest:
                return error(400, "DIGEST_INVALID", "the manifest's bytes are not that digest")
        elif not TAG.fullmatch(reference):
            return error(400, "MANIFEST_INVALID", "invalid tag", reference)
        try:
            document = json.loads(body)
        except ValueError:
            return error(400, "MANIFEST_INVALID", "the manifest is not JSON")
        if not isinstance(document, dict):
            return error(400, "MANIFEST_INVALID", "the manifest is not a JSON object")
        if document.get("mediaType", media_type) != media_type:
            return error(400, "MANIFEST_INVALID", "mediaType differs from the Content-Type")
        try:
            missing = self._missing(name, document)
        except (AttributeError, TypeError):
            return error(400, "MANIFEST_INVALID", "the manifest's descriptors are malformed")
        if missing:
            return error(
                400, "MANIFEST_BLOB_UNKNOWN", "the manifest names content unknown here", missing
            )
        registry.store_manifest(name, reference, body, media_type)
        headers = {"Location": f"/v2/{name}/manifests/{digest}", "Docker-Content-Digest": digest}
        subject = document.get("subject")
        if registry.referrers_api and isinstance(subject, dict) and "digest" in subject:
            headers["OCI-Subject"] = str(subject["digest"])
        return Reply(201, headers)

    def _missing(self, name: str, document: dict[str, Any]) -> list[str]:
        """The blobs (of an image manifest) or manifests (of an index) it names that the
        repository lacks; a `subject` may name anything."""
        repository = self.registry.repositories.get(name, Repository())
        if "manifests" in document:
            named = [str(entry.get("digest")) for entry in document["manifests"]]
            return [d for d in named if d not in repository.manifests]
        named = [str(document.get("config", {}).get("digest"))]
        named += [str(layer.get("digest")) for layer in document.get("layers", [])]
        return [d for d in named if d not in repository.blobs]

    def _delete_manifest(
        self, name: str, reference: str, _q: dict[str, list[str]], _b: bytes
    ) -> Reply:
        registry = self.registry
        if not registry.deletes:
            return error(405, "UNSUPPORTED", "deletes are disabled")
        digest = registry.resolve(name, reference)
        if digest is None:
            return error(404, "MANIFEST_UNKNOWN", "manifest unknown", reference)
        repository = registry.repositories[name]
        if DIGEST.fullmatch(reference):
            del repository.manifests[digest]
            for tag in [t for t, d in repository.tags.items() if d == digest]:
                del repository.tags[tag]
        else:
            del repository.tags[reference]
        return Reply(202)

    # -- blobs ------------------------------------------------------------------------------

    def _get_blob(self, name: str, digest: str, _q: dict[str, list[str]], _b: bytes) -> Reply:
        registry = self.registry
        data = registry.blob(name, digest)
        if data is None:
            return error(404, "BLOB_UNKNOWN", "blob unknown to registry", digest)
        headers = {"Content-Type": "application/octet-stream", "Docker-Content-Digest": digest}
        if self.command == "HEAD":
            return Reply(200, {**headers, "Content-Length": str(len(data))})
        if registry.redirect_blobs:
            return Reply(307, {"Location": f"/storage/{name}/{digest}"})
        return Reply(200, headers, registry.lies.get(digest, data))

    def _storage(self, where: str) -> Reply:
        name, _, digest = where.rpartition("/")
        data = self.registry.blob(name, digest)
        if data is None:
            return Reply(404, {}, b"no such object\n")
        return Reply(
            200, {"Content-Type": "application/octet-stream"}, self.registry.lies.get(digest, data)
        )

    def _delete_blob(self, name: str, digest: str, _q: dict[str, list[str]], _b: bytes) -> Reply:
        registry = self.registry
        if not registry.deletes:
            return error(405, "UNSUPPORTED", "deletes are disabled")
        if registry.blob(name, digest) is None:
            return error(404, "BLOB_UNKNOWN", "blob unknown to registry", digest)
        del registry.repositories[name].blobs[digest]
        return Reply(202)

    # -- uploads ----------------------------------------------------------------------------

    def _session(self, name: str, upload_id: str) -> Reply:
        """The answer that names an upload session: its Location and how much it holds."""
        upload = self.registry.uploads[upload_id]
        size = len(upload.received)
        return Reply(
            202,
            {
                "Location": f"/v2/{name}/blobs/uploads/{upload_id}?_state={size}",
                "Range": f"0-{max(size - 1, 0)}",  # distribution's: 0-0 while empty
                "Docker-Upload-UUID": upload_id,
            },
        )

    def _stored_blob(self, name: str, digest: str, data: bytes) -> Reply:
        self.registry.repository(name).blobs[digest] = data
        return Reply(
            201, {"Location": f"/v2/{name}/blobs/{digest}", "Docker-Content-Digest": digest}
        )

    def _start_upload(self, name: str, _id: str, query: dict[str, list[str]], body: bytes) -> Reply:
        registry = self.registry
        mount, source = query.get("mount", [""])[0], query.get("from", [""])[0]
        if mount and source:
            found = registry.blob(source, mount)
            if found is not None:
                return self._stored_blob(name, mount, found)
        if "digest" in query:  # a monolithic upload in one POST
            digest = query["digest"][0]
            if digest != digest_of(body):
                return error(400, "DIGEST_INVALID", "the bytes sent are not that digest", digest)
            return self._stored_blob(name, digest, body)
        upload_id = uuid.uuid4().hex
        registry.repository(name)
        registry.uploads[upload_id] = Upload(name)
        return self._session(name, upload_id)

    def _upload(self, name: str, upload_id: str) -> Upload | None:
        upload = self.registry.uploads.get(upload_id)
        return upload if upload is not None and upload.repository == name else None

    def _append(self, name: str, upload_id: str, body: bytes) -> Reply | None:
        """Append a chunk to the session; the 416 when its Content-Range is out of order."""
        upload = self._upload(name, upload_id)
        assert upload is not None
        said = self.headers.get("Content-Range")
        if said is not None:
            span = CONTENT_RANGE.fullmatch(said.strip())
            if (
                span is None
                or int(span[1]) != len(upload.received)
                or int(span[2]) - int(span[1]) + 1 != len(body)
            ):
                refused = self._session(name, upload_id)
                return Reply(416, refused.headers, b"")
        upload.received += body
        return None

    def _patch_upload(
        self, name: str, upload_id: str, _q: dict[str, list[str]], body: bytes
    ) -> Reply:
        if self._upload(name, upload_id) is None:
            return error(404, "BLOB_UPLOAD_UNKNOWN", "blob upload unknown to registry", upload_id)
        refused = self._append(name, upload_id, body)
        return refused if refused is not None else self._session(name, upload_id)

    def _upload_status(
        self, name: str, upload_id: str, _q: dict[str, list[str]], _b: bytes
    ) -> Reply:
        if self._upload(name, upload_id) is None:
            return error(404, "BLOB_UPLOAD_UNKNOWN", "blob upload unknown to registry", upload_id)
        return Reply(204, self._session(name, upload_id).headers)

    def _finish_upload(
        self, name: str, upload_id: str, query: dict[str, list[str]], body: bytes
    ) -> Reply:
        registry = self.registry
        upload = self._upload(name, upload_id)
        if upload is None:
            return error(404, "BLOB_UPLOAD_UNKNOWN", "blob upload unknown to registry", upload_id)
        if body:
            refused = self._append(name, upload_id, body)
            if refused is not None:
                return refused
        digest = query.get("digest", [""])[0]
        data = bytes(upload.received)
        del registry.uploads[upload_id]  # closed, whatever comes of it (distribution too)
        if digest != digest_of(data):
            return error(400, "DIGEST_INVALID", "the bytes sent are not that digest", digest)
        return self._stored_blob(name, digest, data)

    def _cancel_upload(
        self, name: str, upload_id: str, _q: dict[str, list[str]], _b: bytes
    ) -> Reply:
        if self.registry.uploads.pop(upload_id, None) is None:
            return error(404, "BLOB_UPLOAD_UNKNOWN", "blob upload unknown to registry", upload_id)
        return Reply(204)

    # -- listings ---------------------------------------------------------------------------

    def _tags(self, name: str, _last: str, query: dict[str, list[str]], _b: bytes) -> Reply:
        registry = self.registry
        if name not in registry.repositories:
            return error(404, "NAME_UNKNOWN", "repository name not known to registry", name)
        tags = registry.tags_of(name)
        after = query.get("last", [""])[0]
        if after:
            tags = [t for t in tags if t > after]
        headers = {"Content-Type": "application/json"}
        if "n" in query:
            n = int(query["n"][0])
            if 0 < n < len(tags):
                headers["Link"] = f'</v2/{name}/tags/list?n={n}&last={tags[n - 1]}>; rel="next"'
            tags = tags[:n]
        return Reply(200, headers, json.dumps({"name": name, "tags": tags}).encode())

    def _referrers(self, name: str, subject: str, query: dict[str, list[str]], _b: bytes) -> Reply:
        if not DIGEST.fullmatch(subject):
            return error(400, "DIGEST_INVALID", "not a digest", subject)
        wanted = query.get("artifactType", [""])[0]
        listed = []
        repository = self.registry.repositories.get(name, Repository())
        for digest, stored in sorted(repository.manifests.items()):
            try:
                document = json.loads(stored.body)
                if document["subject"]["digest"] != subject:
                    continue
            except (ValueError, KeyError, TypeError):
                continue  # not JSON, or no subject
            entry: dict[str, Any] = {
                "mediaType": stored.media_type,
                "digest": digest,
                "size": len(stored.body),
            }
            artifact_type = document.get("artifactType")
            if not artifact_type and "config" in document:
                artifact_type = document["config"].get("mediaType")
            if artifact_type:
                entry["artifactType"] = artifact_type
            if document.get("annotations"):
                entry["annotations"] = document["annotations"]
            if not wanted or artifact_type == wanted:
                listed.append(entry)
        headers = {"Content-Type": OCI_INDEX}
        if wanted:
            headers["OCI-Filters-Applied"] = "artifactType"
        index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": listed}
        return Reply(200, headers, json.dumps(index).encode())


def _route(path: str) -> tuple[str, str, str] | None:
    """(kind, repository name, last part) of a /v2/ path; None for no route."""
    if path == "/v2/":
        return "ping", "", ""
    for kind, pattern in (
        ("uploads", r"/v2/(.+)/blobs/uploads/([^/]*)"),
        ("manifests", r"/v2/(.+)/manifests/([^/]+)"),
        ("blobs", r"/v2/(.+)/blobs/([^/]+)"),
        ("tags", r"/v2/(.+)/tags/(list)"),
        ("referrers", r"/v2/(.+)/referrers/([^/]+)"),
    ):
        found = re.fullmatch(pattern, path)
        if found is not None:
            return kind, found[1], found[2]
    return None


@contextmanager
def running_registry(
    registry: OciRegistry | None = None, handler: type[Handler] | None = None
) -> Iterator[OciRegistry]:
    """A registry serving on 127.0.0.1 (a free port: `.address`) until the block ends;
    `handler`: a subclass of Handler that records or answers more. (tests/loopback_http.py's
    `serving`, but polled every 20 ms, not 500: a unit test that starts one per test must
    not wait half a second to stop it.)"""
    registry = registry or OciRegistry()

    class Bound(handler or Handler):  # type: ignore[misc]
        pass

    Bound.registry = registry
    server = ThreadingHTTPServer(("127.0.0.1", 0), Bound)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    registry.address = f"127.0.0.1:{server.server_address[1]}"
    try:
        yield registry
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
