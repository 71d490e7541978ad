"""torch releases and the torchvision/torchaudio releases that pin them, as the index says.

The facts ship as package data, `torch_releases.json`, written by the maintainer command
`python -m build_graph.pypi.refresh` from the wheels' own METADATA (their `Requires-Dist`):

- one row per torch release: the triton and CUDA its Linux x86_64 wheel requires;
- one row per torchvision/torchaudio release: the torch its wheel requires, as written
  (`==2.9.0`; torchvision 0.29.1 on says `>=2.14.0`), or none at all (torchaudio 2.11.0).

Every row names the wheel it was read from and the day. A published wheel never changes,
so a row never changes and a refresh only adds rows. Which partner goes with which torch is
derived from the partner rows (`partner_for`), not stored: the partner of a new torch is
published later than the torch, and that must not change a torch row.

Pure: no I/O beyond reading the shipped file; the index client is build_graph.pypi.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any, Literal

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

Partner = Literal["torchvision", "torchaudio"]
PARTNERS: tuple[Partner, ...] = ("torchvision", "torchaudio")
SHIPPED = "torch_releases.json"


@dataclass(frozen=True)
class TorchRow:
    """What one torch release's Linux x86_64 wheel requires."""

    version: str
    triton: str | None  # the specifier as written: '==3.5.0', '~=3.9.0'
    cuda: str | None  # the CUDA line of the runtime it requires: '12.8'
    cuda_requirement: str | None  # as read: 'nvidia-cuda-runtime-cu12==12.8.90'
    source: str  # the wheel's URL
    read: str  # the day it was read, YYYY-MM-DD


@dataclass(frozen=True)
class PartnerRow:
    """The torch one torchvision/torchaudio release requires (None: no requirement)."""

    name: Partner
    version: str
    torch: str | None  # the specifier as written: '==2.9.0', '>=2.14.0'
    source: str
    read: str

    def pins(self) -> str | None:
        """The one torch release it requires (`==X`), or None."""
        specs = list(SpecifierSet(self.torch or ""))
        exact = len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version
        return specs[0].version if exact else None

    def admits(self, torch: str) -> bool:
        """Whether pip would install it beside that torch release."""
        return SpecifierSet(self.torch or "").contains(Version(torch).public, prereleases=True)

    def describe(self) -> str:
        return f"torch{self.torch}" if self.torch else "no particular torch"


@dataclass(frozen=True)
class Facts:
    """Everything known about torch pairings: shipped, or shipped plus what the index said."""

    index: str
    torch: tuple[TorchRow, ...] = ()
    partners: tuple[PartnerRow, ...] = ()
    # Versions each project has on the index, when it was asked; None: not asked.
    published: dict[str, frozenset[Version]] | None = field(default=None, compare=False)

    def torch_row(self, version: str) -> TorchRow | None:
        return next((r for r in self.torch if same(r.version, version)), None)

    def partner(self, name: str, version: str) -> PartnerRow | None:
        return next((r for r in self.partners if r.name == name and same(r.version, version)), None)

    def partner_for(self, name: str, torch: str) -> PartnerRow | None:
        """The newest `name` release that pins `torch` (made with it), else the newest that
        admits it; None if none does."""
        rows = sorted(
            (r for r in self.partners if r.name == name and r.admits(torch)),
            key=lambda r: Version(r.version),
            reverse=True,
        )
        pinning = [r for r in rows if (pin := r.pins()) is not None and same(pin, torch)]
        return (pinning or rows)[0] if rows else None

    def newest(self, name: str) -> PartnerRow | None:
        rows = [r for r in self.partners if r.name == name]
        return max(rows, key=lambda r: Version(r.version)) if rows else None

    def is_published(self, name: str, version: str) -> bool | None:
        """Whether the index has this release; None when it was not asked."""
        if self.published is None or name not in self.published:
            return None
        return Version(Version(version).public) in self.published[name]

    def adding(
        self, torch: tuple[TorchRow, ...] = (), partners: tuple[PartnerRow, ...] = ()
    ) -> Facts:
        """These facts plus new rows; a row already known is kept as it is (never changed)."""
        new_torch = [r for r in torch if self.torch_row(r.version) is None]
        new_partners = [r for r in partners if self.partner(r.name, r.version) is None]
        return replace(
            self,
            torch=_sorted_torch((*self.torch, *new_torch)),
            partners=_sorted_partners((*self.partners, *new_partners)),
        )

    def to_json(self) -> str:
        data = {
            "index": self.index,
            "torch": [asdict(r) for r in self.torch],
            "partners": [asdict(r) for r in self.partners],
        }
        return json.dumps(data, indent=1) + "\n"


def named_version(specifier: str) -> str | None:
    """The one release a single-clause requirement names: '==3.2.0', '~=3.8.0' or '>=3.8.0'
    -> its version (the oldest it accepts, a published one); None for anything else."""
    try:
        clauses = list(SpecifierSet(specifier))
    except ValueError:
        return None
    if (
        len(clauses) != 1
        or clauses[0].operator not in ("==", "~=", ">=")
        or "*" in clauses[0].version
    ):
        return None
    return clauses[0].version


def same(a: str, b: str) -> bool:
    """Whether two versions name one release ('2.6.0+cu124' is '2.6.0')."""
    try:
        return Version(Version(a).public) == Version(Version(b).public)
    except InvalidVersion:
        return False


def from_json(text: str) -> Facts:
    """Facts from the file's text; ValueError naming the row when a row is malformed."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("index"), str):
        raise ValueError("not a torch releases file (no 'index')")
    torch = tuple(_row(TorchRow, r) for r in data.get("torch", []))
    partners = tuple(_row(PartnerRow, r) for r in data.get("partners", []))
    for row in partners:
        if row.name not in PARTNERS:
            raise ValueError(f"partner row {row.version}: unknown project {row.name!r}")
    return Facts(data["index"], torch, partners)


def _row(kind: type[Any], data: object) -> Any:
    names = list(kind.__dataclass_fields__)
    if not isinstance(data, dict) or set(data) != set(names):
        raise ValueError(f"{kind.__name__}: expected keys {names}, got {data!r:.200}")
    if not all(v is None or isinstance(v, str) for v in data.values()):
        raise ValueError(f"{kind.__name__}: values must be strings: {data!r:.200}")
    Version(data["version"])  # InvalidVersion and InvalidSpecifier are ValueErrors
    if kind is PartnerRow and data["torch"] is not None:
        SpecifierSet(data["torch"])
    return kind(**data)


# (torch, {partner: version}) -> (facts, why the index was not asked or None); the default
# is `shipped_only`; `check` passes build_graph.pypi.lookup.IndexLookup.
Lookup = Callable[[str, Mapping[str, str]], tuple[Facts, str | None]]
NOT_ASKED = "only `python -m build_graph check` asks the index"


def shipped_only(torch: str, given: Mapping[str, str]) -> tuple[Facts, str | None]:
    """The Lookup of plans and doit runs: the shipped facts, no network."""
    return shipped(), NOT_ASKED


def offline(torch: str, given: Mapping[str, str]) -> tuple[Facts, str | None]:
    """The Lookup of `check --offline`."""
    return shipped(), "--offline: the index was not asked"


@cache
def shipped() -> Facts:
    """The facts shipped with the package (build_graph/gpu/torch_releases.json)."""
    return from_json(resources.files(__package__).joinpath(SHIPPED).read_text("utf-8"))


def _sorted_torch(rows: tuple[TorchRow, ...]) -> tuple[TorchRow, ...]:
    return tuple(sorted(rows, key=lambda r: Version(r.version)))


def _sorted_partners(rows: tuple[PartnerRow, ...]) -> tuple[PartnerRow, ...]:
    return tuple(sorted(rows, key=lambda r: (r.name, Version(r.version))))
