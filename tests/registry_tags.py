"""A registry on 127.0.0.1 that answers `GET /v2/<name>/tags/list` only, as Docker Hub does:
pages of `page` tags with a `Link: <...>; rel="next"` header, in the order given (not
sorted); with `token` set, only to that bearer token, which its /token realm hands out to
anyone (Docker Hub's anonymous pull). A real HTTP server in a thread; `requests` lists
(path, Authorization) of what it was asked.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.pypi_index import Answering, loopback_server


@dataclass
class TagRegistry:
    """repository -> its tags as listed (anything JSON: the hostile entries too)."""

    repositories: dict[str, list[Any]]
    page: int = 4
    status: int = 200  # another status refuses every request
    token: str | None = None
    requests: list[tuple[str, str]] = field(default_factory=list)
    host: str = ""

    def answer(self, path: str, auth: str) -> tuple[int, bytes, dict[str, str]]:
        parts = urllib.parse.urlsplit(path)
        found = re.fullmatch(r"/v2/(.+)/tags/list", parts.path)
        if self.token and parts.path == "/token":
            return 200, json.dumps({"token": self.token}).encode(), {}
        if self.token and auth != f"Bearer {self.token}":
            challenge = f'Bearer realm="http://{self.host}/token",service="loopback"'
            return 401, b"", {"WWW-Authenticate": challenge}
        if self.status != 200:
            return self.status, b'{"errors": [{"code": "DENIED"}]}', {}
        if found is None or found[1] not in self.repositories:
            return 404, b'{"errors": [{"code": "NAME_UNKNOWN"}]}', {}
        tags = self.repositories[found[1]]
        query = urllib.parse.parse_qs(parts.query)
        start = int(query.get("last", ["0"])[0])  # our `last` is an offset: any token will do
        end = start + min(self.page, int(query.get("n", [self.page])[0]))
        headers = {"Content-Type": "application/json"}
        if end < len(tags):
            headers["Link"] = f'</v2/{found[1]}/tags/list?n={self.page}&last={end}>; rel="next"'
        return 200, json.dumps({"name": found[1], "tags": tags[start:end]}).encode(), headers


def _handler(registry: TagRegistry) -> type[BaseHTTPRequestHandler]:
    class Handler(Answering):
        def do_GET(self) -> None:
            auth = self.headers.get("Authorization", "")
            registry.requests.append((self.path, auth))
            self._send(*registry.answer(self.path, auth))

    return Handler


@contextmanager
def serving(registry: TagRegistry) -> Iterator[TagRegistry]:
    """The registry answering on 127.0.0.1 (registry.host is its host:port) until the block
    ends."""
    with loopback_server(_handler(registry)) as port:
        registry.host = f"127.0.0.1:{port}"
        yield registry
