"""A repository's tags, read page by page (`GET /v2/<name>/tags/list`, `Link: <...>;
rel="next"`) and checked at the door. The order of the list is never trusted.

Two readers of one pagination. `list_tags` (prune, our own repository): a tag that breaks
the grammar means the registry is not to be trusted, so the whole list is refused.
`read_tags` (outdated, someone else's repository, e.g. Docker Hub's nvidia/cuda): bounded
in pages and in bytes per page, and a malformed tag is left out and counted.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass

from build_graph.errors import UntrustedAnswer
from build_graph.oci import json_door, problems
from build_graph.oci.refs import Ref
from build_graph.oci.tags import TAG
from build_graph.registry.transport import client

PAGE = 1000  # tags asked per page (`n`); a registry may send fewer, and a Link for more
# Docker Hub's nvidia/cuda, the largest `from` we know, has a few thousand tags; a registry
# that sends 100 a page (the spec's minimum) takes tens of pages for it.
MAX_PAGES = 200
MAX_PAGE_BYTES = 512 * 2**10  # a page of 1000 tags at the grammar's 128 characters: ~130 KB


@dataclass(frozen=True)
class Tags:
    """The well-formed tags a registry listed (each once), and how many it listed that break
    the tag grammar (left out)."""

    tags: tuple[str, ...]
    malformed: int = 0


def list_tags(ref: Ref) -> list[str]:
    """Every tag of `ref`'s repository; [] when the repository does not exist. The body must
    be the spec's {"tags": [tag, ...]}, every tag in the grammar, else UntrustedAnswer."""
    tags: list[str] = []
    for listed in _pages(ref, None, None):
        if not all(isinstance(t, str) and TAG.fullmatch(t) for t in listed):
            raise _not_a_list(ref)
        tags.extend(str(t) for t in listed)
    return tags


def read_tags(ref: Ref, max_pages: int = MAX_PAGES) -> Tags:
    """The tags of someone else's repository, at most `max_pages` pages of at most
    MAX_PAGE_BYTES each (more is UntrustedAnswer: no partial list is passed on as whole);
    RegistryError when it cannot be asked or refuses; empty when it does not exist."""
    good: list[str] = []
    malformed = 0
    for listed in _pages(ref, max_pages, MAX_PAGE_BYTES):
        ok = [t for t in listed if isinstance(t, str) and TAG.fullmatch(t)]
        malformed += len(listed) - len(ok)
        good.extend(ok)
    return Tags(tuple(dict.fromkeys(good)), malformed)


def _pages(ref: Ref, max_pages: int | None, limit: int | None) -> Iterator[list[object]]:
    """Each page's list, as sent; a page asked twice (a Link loop) is UntrustedAnswer."""
    path: str | None = f"tags/list?n={PAGE}"
    asked: set[str] = set()
    while path is not None:
        if path in asked or (max_pages is not None and len(asked) == max_pages):
            raise UntrustedAnswer(
                f"the registry {ref.host} listed the tags of "
                f"{ref.repository} in more than {len(asked)} pages "
                "(or in a loop); refusing the list"
            )
        asked.add(path)
        response = client(ref.api_host).request("GET", ref.repository, path, limit=limit)
        if response.status == 404 and len(asked) == 1:
            return
        if response.status != 200:
            raise problems.refused(
                ref.host, f"listing the tags of {ref.repository}", response.status, response.body
            )
        yield _tag_page(ref, response.body)
        path = _next_page(ref, response.headers.get("link", ""))


def _not_a_list(ref: Ref) -> UntrustedAnswer:
    return UntrustedAnswer(
        f"the registry {ref.host} answered a tag list of "
        f'{ref.repository} that is not {{"tags": [tag, ...]}}'
    )


def _tag_page(ref: Ref, body: bytes) -> list[object]:
    try:
        listed = json_door.loads(body).get("tags") or []
    except (ValueError, AttributeError):
        raise _not_a_list(ref) from None
    if not isinstance(listed, list):
        raise _not_a_list(ref)
    return listed


def _next_page(ref: Ref, link: str) -> str | None:
    """The next page's path relative to /v2/<repository>/, or None on the last page."""
    # Every link-value, not only the first: a registry may list rel="prev" before "next",
    # and a page silently skipped would hide tags (human ones sort after the hash tags).
    match = next(
        (
            m
            for m in re.finditer(r'<([^>]*)>\s*;\s*rel="?([^",;]+)"?', link)
            if m[2].strip() == "next"
        ),
        None,
    )
    if match is None:
        if link.strip() and "next" in link:
            raise UntrustedAnswer(
                f"the registry {ref.host} sent a Link header we cannot read: {link[:120]!r}"
            )
        return None
    url = urllib.parse.urlsplit(match[1])
    prefix = f"/v2/{ref.repository}/"
    if not url.path.startswith(prefix) or ".." in url.path:
        raise UntrustedAnswer(
            f"the registry {ref.host} sent a next page outside {prefix}: {match[1][:200]!r}"
        )
    return url.path[len(prefix) :] + (f"?{url.query}" if url.query else "")
