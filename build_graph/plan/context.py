"""Which files a tier's build sees: confined to the manifest's folder, excludes honoured.

The list this module returns is both what is hashed and what is sent to the builder, so a
file that is excluded can neither reach an image nor rebuild one. Excluded always: `.git`,
`.env` files and tool caches. Also excluded: the patterns of a `.dockerignore` in a context
folder (Docker's syntax: `*`, `?`, `**`, a leading `!` re-includes, the last match wins)
and the tier's own `exclude` patterns (relative to the manifest's folder).

Never part of a context or a source, whatever a pattern re-includes: the tool's own files
(`build/` beside the manifest, `.venv`, doit's database). A context of "." would otherwise
send the plan cache and the records, and hash files that change on every run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from build_graph.fs import inside
from build_graph.layout import DOIT_DB, OWN_FOLDER, PLAN_CACHE, RUN_LOCK, BuildFolder
from build_graph.manifest.model import TierSpec

DEFAULT_EXCLUDES = (
    ".git",
    "**/.git",
    ".env",
    "**/.env",
    ".env.*",
    "**/.env.*",
    "**/__pycache__",
    "**/*.pyc",
    "**/.mypy_cache",
    "**/.pytest_cache",
    "**/.ruff_cache",
)
IGNORE_FILE = ".dockerignore"
# What a compile leaves in a source folder it builds in place (relative to the source):
# the compile stage never copied these, so they are not hashed either.
SOURCE_OUTPUTS = ("**/build", "**/*.egg-info")


class ContextError(ValueError):
    """A context entry that would reach outside the manifest's folder."""

    def __init__(self, entry: str, message: str) -> None:
        self.entry = entry
        super().__init__(f"{entry!r}: {message}")


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    include: bool  # a '!' rule re-includes what earlier rules excluded


def compile_rules(patterns: Iterable[str]) -> list[Rule]:
    rules = []
    for raw in patterns:
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        include = text.startswith("!")
        text = text.removeprefix("!").strip().strip("/")
        text = os.path.normpath(text) if text else text
        if text and text != ".":
            rules.append(Rule(re.compile(_translate(text)), include))
    return rules


def _translate(pattern: str) -> str:
    """Docker's pattern syntax (Go's filepath.Match plus '**') as a regex over a relative
    path; a match on a folder also matches everything below it."""
    parts = []
    for segment in pattern.split("/"):
        if segment == "**":
            parts.append("(?:[^/]+/)*")
            continue
        out = ""
        for char in segment:
            out += "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char)
        parts.append(out + "/")
    return "^" + "".join(parts).removesuffix("/") + "(?:/.*)?$"


# Relative to the manifest's folder; not Rules a '!' could undo: tool_owned() is asked first.
_TOOL_OWNED = (
    OWN_FOLDER,
    ".venv",
    "**/.venv",
    ".doit.db",
    ".doit.db.*",
    "**/.doit.db",
    "**/.doit.db.*",
    f"**/{PLAN_CACHE}",
    f"**/{DOIT_DB}",
    f"**/{RUN_LOCK}",
)
_TOOL_RULES = compile_rules(_TOOL_OWNED)


def tool_owned(relative: str, root: Path | None = None) -> bool:
    """True for a path (relative to the manifest's folder `root`) that is the tool's own:
    build/ beside the manifest, a .venv, doit's database files, the state files of any stack,
    and (given `root`) the build folder of a stack nested below. Never hashed, never sent."""
    normal = os.path.normpath(relative)
    return excluded(normal, _TOOL_RULES) or (
        root is not None and BuildFolder.looks_like(root / normal)
    )


def excluded(relative: str, rules: list[Rule]) -> bool:
    verdict = False
    for rule in rules:
        if rule.pattern.match(relative):
            verdict = not rule.include
    return verdict


def context_files(
    root: Path, entries: Iterable[str], excludes: Iterable[str] = (), within: Iterable[str] = ()
) -> list[tuple[str, Path]]:
    """(name relative to root, path) of every file a build sees, sorted per entry.

    `excludes` are patterns relative to root, `within` patterns relative to each entry (as
    its .dockerignore). Raises ContextError for an entry (or a symlink inside one) that
    leaves `root`, and for an entry inside the tool's own files.
    """
    tier_rules = compile_rules([*DEFAULT_EXCLUDES, *excludes])
    found: list[tuple[str, Path]] = []
    for entry in entries:
        base = root / entry
        if os.path.isabs(entry) or ".." in Path(entry).parts or not inside(root, base):
            raise ContextError(
                entry, f"leaves the manifest's folder {root}; contexts are paths below it"
            )
        if tool_owned(entry, root):
            raise ContextError(
                entry,
                "is build-graph's own (build/ beside the manifest, "
                ".venv, doit's database): never part of a context or "
                "a source; name the folders to send instead",
            )
        if base.is_file():
            if excluded(entry, tier_rules):  # a file named outright obeys the rules too
                raise ContextError(
                    entry,
                    "is never sent (.git, .env, tool caches, or this "
                    "tier's exclude); name another file",
                )
            found.append((entry, _target(root, entry, base, tier_rules)))
            continue
        local = compile_rules([*_read_ignore(base), *within])
        for path in _walk(base, root):
            name = path.relative_to(root).as_posix()
            if excluded(name, tier_rules) or excluded(path.relative_to(base).as_posix(), local):
                continue
            if path.is_symlink() and not inside(root, path):
                raise ContextError(
                    entry,
                    f"{name} is a symlink to {path.resolve()}, outside "
                    f"the manifest's folder; copy the file in instead",
                )
            if path.is_file():
                found.append((name, _target(root, entry, path, tier_rules)))
    return found


def _target(root: Path, entry: str, path: Path, rules: list[Rule]) -> Path:
    """`path` itself; for a symlink, checked first: a link inside the manifest's folder to a
    file that is never sent (.env, the tool's own state) would send it under another name."""
    if not path.is_symlink():
        return path
    target = path.resolve().relative_to(root.resolve()).as_posix()
    if excluded(target, rules) or tool_owned(target, root):
        raise ContextError(
            entry,
            f"{path.relative_to(root).as_posix()} is a symlink to "
            f"{target}, which is never sent; copy what is needed in",
        )
    return path


def source_files(root: Path, source: str) -> list[tuple[str, Path]]:
    """The files of a local compile source: what its compile hash reads and exactly what
    the compile stage copies."""
    return context_files(root, [source], within=SOURCE_OUTPUTS)


def _read_ignore(folder: Path) -> list[str]:
    try:
        return [*(folder / IGNORE_FILE).read_text(encoding="utf-8").splitlines(), IGNORE_FILE]
    except OSError:
        return []


def _walk(folder: Path, root: Path) -> list[Path]:
    """Every file below `folder`, sorted, and every symlink to a folder (not followed:
    the caller refuses those that leave the manifest's folder and skips the rest). The
    tool's own folders are not entered (build/ may hold a whole PyTorch checkout)."""
    files: list[Path] = []
    for current, dirs, names in os.walk(folder):
        here = Path(current)
        dirs[:] = sorted(
            d for d in dirs if not tool_owned((here / d).relative_to(root).as_posix(), root)
        )
        files.extend(
            here / n for n in names if not tool_owned((here / n).relative_to(root).as_posix())
        )
        files.extend(here / d for d in dirs if (here / d).is_symlink())
    return sorted(files)


def local_sources(root: Path, tier: TierSpec) -> tuple[tuple[str, str, Path], ...]:
    """(source name, file's name relative to the manifest's folder, file) of every file of
    the compile sources that are folders below the manifest (URLs are pinned by commit or
    sha256 instead), by the context rules: `.git`, `.env`, `.dockerignore`'d files never."""
    if tier.compile is None:
        return ()
    return tuple(
        (source.name, relative, path)
        for source in tier.compile.sources
        if source.kind == "local"
        for relative, path in source_files(root, source.text)
    )
