"""What `check` asks the index when the shipped torch data cannot answer a pairing.

Only `python -m build_graph check` asks (a plan or a doit run never does: a build must not
start depending on the index being up, and the plan cache must not change with it), and
only for what the shipped data lacks: a torch release with no row, a torchvision/torchaudio
release with no row. It reads the projects' pages (every time: new releases appear) and
the METADATA of the partner releases newer than the data's newest plus the one asked for
(at most MAX_READS per project). A partner row is cached under the stack's build folder
(BuildFolder.index_cache), since a published wheel never changes.

An index that cannot be reached, or whose file host does not answer Range requests, leaves
the pairing a note ("not checked"); an answer that fails its check is an error (exit 3),
never read as "not published".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path

from packaging.version import InvalidVersion, Version

from build_graph import settings
from build_graph.errors import IndexUnreachable, NotOnIndex
from build_graph.fs import write_if_changed
from build_graph.gpu import releases
from build_graph.gpu.releases import PARTNERS, Facts, Partner, PartnerRow
from build_graph.layout import BuildFolder
from build_graph.pypi import facts as read
from build_graph.pypi.simple import Project, project
from build_graph.settings import redact

MAX_READS = 8


class IndexLookup:
    """A `releases.Lookup` that asks `index` for what `known` lacks (see the module)."""

    def __init__(
        self, index: str, cache: Path, known: Facts | None = None, fresh: bool = False
    ) -> None:
        """`fresh`: ask about every partner named, known or not (`outdated` wants the
        releases made since the data was read)."""
        self.index, self.cache, self.fresh = index, cache, fresh
        self.known = known if known is not None else releases.shipped()
        self._pages: dict[str, Project] = {}
        self._answers: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[Facts, str | None]]
        self._answers = {}

    def __call__(self, torch: str, given: Mapping[str, str]) -> tuple[Facts, str | None]:
        key = (torch, tuple(sorted(given.items())))
        if key not in self._answers:
            self._answers[key] = self._answer(torch, given)
        return self._answers[key]

    def _answer(self, torch: str, given: Mapping[str, str]) -> tuple[Facts, str | None]:
        known = self.known  # as read from its own index (pypi.org), until this one answers
        new_torch = known.torch_row(torch) is None
        asking: list[str] = ["torch"] if new_torch else []
        asking += [
            n
            for n in PARTNERS
            if n in given and (self.fresh or new_torch or known.partner(n, given[n]) is None)
        ]
        if not asking:
            return known, None
        try:
            published = {name: frozenset(self._page(name).versions()) for name in asking}
            rows = [
                row
                for name in PARTNERS
                if name in asking
                for row in self._partner_rows(known, name, given[name])
            ]
        except IndexUnreachable as exc:
            return known, f"the index could not be asked: {exc}"
        answered = replace(known, index=redact(self.index), published=published)
        return answered.adding(partners=tuple(rows)), None

    def _page(self, name: str) -> Project:
        if name not in self._pages:
            try:
                self._pages[name] = project(self.index, name)
            except NotOnIndex:  # the index has no such project: nothing of it is published
                self._pages[name] = Project(name, self.index, ())
        return self._pages[name]

    def _partner_rows(self, known: Facts, name: Partner, version: str) -> list[PartnerRow]:
        page = self._page(name)
        newest = known.newest(name)
        floor = Version(newest.version) if newest else Version("0")
        wanted = [v for v in page.versions() if v > floor and not v.is_prerelease][:MAX_READS]
        try:
            asked = Version(version)
        except InvalidVersion:
            asked = None
        if (
            asked in page.versions()
            and asked not in wanted
            and known.partner(name, version) is None
        ):
            wanted.append(asked)
        return [row for v in wanted if (row := self._row(name, page, v)) is not None]

    def _row(self, name: Partner, page: Project, version: Version) -> PartnerRow | None:
        path = self.cache / f"{name}-{version}.json"
        try:
            kept = releases.from_json(path.read_text("utf-8")).partner(name, str(version))
        except (OSError, ValueError):  # missing or damaged: read it again
            kept = None
        if kept is not None:
            return kept
        row = read.partner_row(name, page, version, read.today())
        if row is not None:
            text = json.dumps({"index": redact(self.index), "partners": [asdict(row)]})
            write_if_changed(path, text + "\n")
        return row


def builds_index() -> str:
    """The index builds use (BUILD_GRAPH_PIP_INDEX_URL, default pypi.org): the one `check`
    and `outdated` ask."""
    return settings.index_url(settings.DEFAULT_INDEX)


def for_stack(manifest: Path, fresh: bool = False) -> IndexLookup:
    """A lookup of the builds' index, its answers cached in the stack's build folder."""
    cache = BuildFolder.of(manifest).index_cache(settings.without_userinfo(builds_index()))
    return IndexLookup(builds_index(), cache, fresh=fresh)
