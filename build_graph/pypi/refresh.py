"""`python -m build_graph.pypi.refresh`: add the rows of new releases to torch_releases.json.

A maintainer command (it needs the index; CI does not run it): reads the project pages of
torch, torchvision and torchaudio, and the METADATA of each release's Linux x86_64 wheel
that the file has no row for yet (torch from 2.0.0, the partners from their releases made
with it). Rows already there are kept as they are: a published wheel never changes.
`--check` reads every release again and fails (exit 1) when a shipped row differs from
what the index says now. Exit 3 when the index cannot be read.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from packaging.version import Version

from build_graph.errors import EXIT_BUILD, run_cli
from build_graph.fs import write_if_changed
from build_graph.gpu import releases
from build_graph.gpu.releases import PARTNERS, Facts, PartnerRow, TorchRow
from build_graph.pypi import facts as read
from build_graph.pypi.simple import Project, project
from build_graph.settings import DEFAULT_INDEX

# The oldest release of each project the file covers: torch 2.0.0 and its partners.
FIRST = {
    "torch": Version("2.0.0"),
    "torchvision": Version("0.15.0"),
    "torchaudio": Version("2.0.0"),
}
SHIPPED_FILE = Path(__file__).resolve().parent.parent / "gpu" / releases.SHIPPED


def releases_of(page: Project) -> list[Version]:
    """Final releases from the first one covered, oldest first (no pre/dev releases)."""
    return sorted(
        v for v in page.versions() if v >= FIRST[page.name] and not v.is_prerelease and not v.local
    )


def refresh(
    index: str, known: Facts, day: str, reread: bool = False, say: Callable[[str], None] = print
) -> Facts:
    """`known` plus a row for every release on the index it lacks (all of them, when
    `reread`); raises IndexUnreachable, IndexAnswerRefused."""
    base = Facts(index) if reread else known
    page = project(index, "torch")
    torch: list[TorchRow] = []
    for version in releases_of(page):
        if base.torch_row(str(version)) is None and (row := read.torch_row(page, version, day)):
            say(f"torch {version}: triton{row.triton} cuda {row.cuda} ({row.source})")
            torch.append(row)
    partners: list[PartnerRow] = []
    for name in PARTNERS:
        page = project(index, name)
        for version in releases_of(page):
            if base.partner(name, str(version)) is None and (
                found := read.partner_row(name, page, version, day)
            ):
                say(f"{name} {version}: torch{found.torch or ' (none required)'}")
                partners.append(found)
    return base.adding(tuple(torch), tuple(partners))


def differences(shipped: Facts, now: Facts) -> list[str]:
    """The shipped rows the index no longer says the same way (where and when they were
    read aside: a mirror serves the same wheels from other URLs)."""
    lines = []
    for row in shipped.torch:
        other = now.torch_row(row.version)
        if other is None or replace(other, source=row.source, read=row.read) != row:
            lines.append(f"torch {row.version}: shipped {row}, index says {other}")
    for partner in shipped.partners:
        found = now.partner(partner.name, partner.version)
        if found is None or replace(found, source=partner.source, read=partner.read) != partner:
            lines.append(f"{partner.name} {partner.version}: shipped {partner}, index says {found}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    options = argparse.ArgumentParser(
        prog="python -m build_graph.pypi.refresh", description=__doc__
    )
    options.add_argument(
        "--index", default=DEFAULT_INDEX, help=f"the simple index to read (default {DEFAULT_INDEX})"
    )
    options.add_argument(
        "--output",
        type=Path,
        default=SHIPPED_FILE,
        help="the file to update (default: the package's own)",
    )
    options.add_argument(
        "--check", action="store_true", help="read every release again; exit 1 when a row differs"
    )
    args = options.parse_args(argv)
    return run_cli(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    path: Path = args.output
    known = releases.from_json(path.read_text("utf-8")) if path.is_file() else Facts(args.index)
    now = refresh(
        args.index,
        known,
        read.today(),
        reread=args.check,
        say=lambda line: print(line, file=sys.stderr),
    )
    took = f"{time.monotonic() - started:.1f} s"
    if args.check:
        changed = differences(known, now)
        print("\n".join(changed) or f"{path}: every row is what the index says ({took})")
        return EXIT_BUILD if changed else 0
    added = len(now.torch) + len(now.partners) - len(known.torch) - len(known.partners)
    write_if_changed(path, now.to_json())
    print(
        f"{path}: {added} rows added, {len(now.torch)} torch and {len(now.partners)} "
        f"partner rows in all ({took})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
