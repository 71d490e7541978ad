"""Credentials for a registry, as `docker login` left them, and the token dance.

Where credentials come from (the Docker CLI's own order): a credential helper for the host
(`credHelpers`), the default store (`credsStore`), else the base64 `auths` entry of
$DOCKER_CONFIG/config.json (~/.docker/config.json). A registry that answers 401 says how to
authenticate in its WWW-Authenticate header: Basic (send the credentials) or Bearer (trade
them at the realm for a token scoped to the repository and action).

Credentials go only where oci/hosts.py allows (HTTPS, or a real loopback address), never
to whatever realm a 401 names. Tokens are shared by every thread of the run: one token
request per (registry, realm, scope) until it expires, under a lock, so sixteen concurrent
HEADs with wrong credentials cost one failed login, not sixteen; a refused login is
remembered for the run and answered again without asking.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from build_graph.errors import RegistryError
from build_graph.oci import json_door
from build_graph.oci.hosts import may_send_credentials, scheme

# A token response without `expires_in` lasts 60 s (the distribution token spec); renewing
# a little early avoids sending one that expires in flight.
_DEFAULT_LIFETIME_S = 60.0
_MARGIN_S = 5.0
_TOKEN_CHARS = re.compile(r"[\x21-\x7e]{1,8192}")  # one header value: no spaces, no CR/LF

# Docker Hub's credentials live under this key (the Docker CLI's IndexServer).
_HUB_KEYS = ("https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io")


@dataclass(frozen=True)
class Challenge:
    """A parsed WWW-Authenticate header: the scheme and its parameters."""

    scheme: str
    params: dict[str, str]


def parse_challenge(header: str) -> Challenge:
    """'Bearer realm="https://auth",service="reg",scope="repository:a:pull"' -> Challenge."""
    scheme, _, rest = header.strip().partition(" ")
    params = {
        key.lower(): value for key, value in re.findall(r'([A-Za-z_]+)\s*=\s*"([^"]*)"', rest)
    }
    return Challenge(scheme.lower(), params)


def _config() -> dict[str, object]:
    folder = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker")
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _keys(host: str) -> tuple[str, ...]:
    if host in _HUB_KEYS:
        return _HUB_KEYS
    return (host, f"https://{host}", f"http://{host}")


@cache
def credentials(host: str) -> tuple[str, str] | None:
    """(username, secret) for `host`, or None for anonymous access. Asked once per run."""
    config = _config()
    helpers = config.get("credHelpers") or {}
    helper = next(
        (helpers[k] for k in _keys(host) if isinstance(helpers, dict) and k in helpers),
        config.get("credsStore"),
    )
    if isinstance(helper, str) and helper:
        found = _from_helper(helper, host)
        if found is not None:
            return found
    auths = config.get("auths") or {}
    for key in _keys(host):
        entry = auths.get(key) if isinstance(auths, dict) else None
        if isinstance(entry, dict) and entry.get("auth"):
            try:
                user, _, secret = base64.b64decode(str(entry["auth"])).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                continue
            return user, secret
    return None


def _from_helper(helper: str, host: str) -> tuple[str, str] | None:
    """`docker-credential-<helper> get`, as the Docker CLI runs it; None when it has none."""
    for key in _keys(host):
        try:
            done = subprocess.run(
                [f"docker-credential-{helper}", "get"],
                input=key,
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode == 0:
            try:
                data = json.loads(done.stdout)
                return str(data["Username"]), str(data["Secret"])
            except (ValueError, KeyError, TypeError):
                return None
    return None


def basic_header(creds: tuple[str, str]) -> str:
    return "Basic " + base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()


def token_scope(repository: str, action: str, path: str) -> str:
    """The scopes to ask a token for: this request's, and pull on the repository a
    cross-repository mount reads from (`from=` in the request's own query: a mount needs
    pull on its source, and the distribution registry and Docker Hub refuse it without).
    Taken from our own request (a POST we wrote: the transport passes no other path),
    never from the registry's 401 or an upload Location, which could name anything."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    sources = (
        [s for s in query.get("from", []) if s and s != repository] if "mount" in query else []
    )
    return " ".join(
        [
            f"repository:{repository}:{action}",
            *(f"repository:{s}:pull" for s in dict.fromkeys(sources)),
        ]
    )


Fetch = Callable[[str, dict[str, str]], tuple[int, bytes]]


@dataclass
class _Grant:
    """What a realm answered for one scope: an Authorization value until `until`, or a refusal."""

    value: str | None
    refusal: RegistryError | None
    until: float
    transient: bool = False  # the realm could not answer (network, 5xx): ask it again


class Tokens:
    """Bearer tokens per (registry, realm, scope), shared by every thread of the run."""

    def __init__(self) -> None:
        self._grants: dict[tuple[str, str, str], _Grant] = {}
        self._locks: dict[tuple[str, str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def bearer(
        self, host: str, challenge: Challenge, scope: str, fetch: Fetch, refused: str | None = None
    ) -> str:
        """'Bearer <token>' for `scope` at `host`; asks the realm at most once per scope
        until the token expires, or until the registry refuses it (`refused`: the
        Authorization a 401 just answered; a registry may stop honouring a token before its
        expiry: a rotated key, a revocation, clocks apart), so the refused token is never
        handed back. `scope` is one or more scopes, space-separated. Raises RegistryError
        (the same one each time) when the realm refused, or when credentials would have to
        travel in the clear."""
        realm = challenge.params.get("realm", "")
        key = (host, realm, scope)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            grant = self._grants.get(key)
            if (
                grant is None
                or (grant.value is not None and grant.until < time.monotonic())
                or (refused is not None and grant.value == refused)
                or grant.transient
            ):
                grant = self._grants[key] = self._ask(host, challenge, scope, fetch)
        if grant.refusal is not None:
            raise grant.refusal
        assert grant.value is not None
        return grant.value

    def _ask(self, host: str, challenge: Challenge, scope: str, fetch: Fetch) -> _Grant:
        realm = challenge.params.get("realm", "")
        if urllib.parse.urlsplit(realm).scheme not in ("http", "https"):
            return _refusal(f"the registry {host} names no usable token service ({realm!r})")
        creds = credentials(host)
        # The challenge itself must have come over a channel credentials may use: a plain-HTTP
        # registry that is not loopback (BUILD_GRAPH_INSECURE_REGISTRIES) is spoken to
        # anonymously, whatever realm its 401 names (anyone on the path could write it).
        if creds is not None and not may_send_credentials(f"{scheme(host)}://{host}/"):
            creds = None
        if creds is not None and not may_send_credentials(realm):
            return _refusal(
                f"the registry {host} wants credentials sent to {realm} over plain "
                "HTTP; they are sent only over HTTPS (or to this machine)"
            )
        # one `scope` parameter per scope (the token spec's form for several)
        query = urllib.parse.urlencode(
            [("service", challenge.params.get("service", ""))]
            + [("scope", one) for one in scope.split()]
        )
        headers = {"Authorization": basic_header(creds)} if creds else {}
        try:
            status, body = fetch(f"{realm}{'&' if '?' in realm else '?'}{query}", headers)
        except RegistryError as exc:  # unreachable for now: not a refusal to remember
            return _Grant(None, exc, 0.0, transient=True)
        if status >= 500 or status == 429:
            return _Grant(
                None,
                RegistryError(
                    f"the registry {host}'s token service failed (HTTP {status}); "
                    "it is asked again on the next request"
                ),
                0.0,
                transient=True,
            )
        if status != 200:
            return _refusal(
                f"the registry {host}'s token service refused a token for {scope} "
                f"(HTTP {status}); run `docker login {host}`"
            )
        return _grant(host, body)


def _refusal(message: str) -> _Grant:
    return _Grant(None, RegistryError(message), 0.0)


def _grant(host: str, body: bytes) -> _Grant:
    try:
        data = json_door.loads(body)
        token = data.get("token") or data["access_token"]
        lifetime = float(data.get("expires_in") or _DEFAULT_LIFETIME_S)
    except (ValueError, KeyError, TypeError, AttributeError):
        return _refusal(f"the registry {host}'s token service answered no token")
    if not isinstance(token, str) or not _TOKEN_CHARS.fullmatch(token):
        return _refusal(f"the registry {host}'s token service answered a malformed token")
    return _Grant(f"Bearer {token}", None, time.monotonic() + lifetime - _MARGIN_S)
