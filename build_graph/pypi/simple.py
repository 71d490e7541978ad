"""A project's page of a simple index: PEP 691 JSON, or PEP 503 HTML where that is all an
index serves (a private mirror named by BUILD_GRAPH_PIP_INDEX_URL may be one).

What comes back is checked at the door: file names parse as wheels or sdists of this
project (packaging.utils), versions parse (packaging.version), URLs are absolute http(s)
after joining with the page's URL. Yanked files are left out (PEP 592): a release whose
every file is yanked is not offered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from build_graph.errors import IndexAnswerRefused
from build_graph.pypi.fetch import get
from build_graph.settings import redact

ACCEPT = (
    "application/vnd.pypi.simple.v1+json, "
    "application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
)


@dataclass(frozen=True)
class IndexFile:
    """One file of a release: its name, absolute URL, version and wheel tags."""

    filename: str
    url: str
    version: Version
    tags: frozenset[str]  # 'cp311-cp311-manylinux_2_28_x86_64', ...; empty for an sdist


@dataclass(frozen=True)
class Project:
    """The unyanked files of one project on one index, newest release first."""

    name: str
    page: str
    files: tuple[IndexFile, ...]

    def versions(self) -> list[Version]:
        return sorted({f.version for f in self.files}, reverse=True)

    def wheels(self, version: Version) -> list[IndexFile]:
        return [f for f in self.files if f.version == version and f.tags]


def project(index: str, name: str) -> Project:
    """The project's page on `index`; raises NotOnIndex, IndexUnreachable, IndexAnswerRefused."""
    page = f"{index.rstrip('/')}/{canonicalize_name(name)}/"
    body, kind = get(page, {"Accept": ACCEPT})
    if "json" in kind:
        links = _json_links(page, body)
    elif "html" in kind:
        links = _html_links(body)
    else:
        raise IndexAnswerRefused(
            f"{redact(page)}: answered {kind[:80]!r}, neither the JSON (PEP 691) "
            "nor the HTML (PEP 503) simple API"
        )
    files = [
        f for href, yanked in links if not yanked if (f := _file(page, name, href)) is not None
    ]
    return Project(canonicalize_name(name), page, tuple(files))


def _json_links(page: str, body: bytes) -> list[tuple[str, bool]]:
    try:
        data = json.loads(body)
        entries = data["files"]
        links = [(str(e["url"]), bool(e.get("yanked", False))) for e in entries]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise IndexAnswerRefused(
            f"{redact(page)}: not a PEP 691 project page ({exc!r:.120})"
        ) from None
    return links


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            found = dict(attrs)
            if found.get("href"):
                self.links.append((str(found["href"]), "data-yanked" in found))


def _html_links(body: bytes) -> list[tuple[str, bool]]:
    parser = _Anchors()
    parser.feed(body.decode("utf-8", errors="replace"))
    return parser.links


def _file(page: str, name: str, href: str) -> IndexFile | None:
    """The file a link names, or None for one that is not a file of this project (or one an
    https page links over plain http: its METADATA could be forged on the way)."""
    url = urljoin(page, href).split("#", 1)[0]
    scheme = urlsplit(url).scheme
    if scheme not in ("http", "https") or (scheme == "http" and urlsplit(page).scheme == "https"):
        return None
    filename = urlsplit(url).path.rsplit("/", 1)[-1]
    try:
        if filename.endswith(".whl"):
            project_name, version, _, tags = parse_wheel_filename(filename)
            tag_names = frozenset(str(t) for t in tags)
        else:
            project_name, version = parse_sdist_filename(filename)
            tag_names = frozenset()
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    if project_name != canonicalize_name(name):
        return None
    return IndexFile(filename, url, version, tag_names)
