"""Atomic file writes that leave unchanged files (and their mtimes) alone; JSON records.

A record is this machine's note (push.json, verify.json, ...), never the truth: the
registry answers whether an image, a report or a tag exists.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from build_graph.errors import ConfigError, ConfigIssue


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, with every symlink resolved, is `root` or below it."""
    real_root, real = root.resolve(), path.resolve()
    return real == real_root or real_root in real.parents


def write_if_changed(path: Path, text: str, mode: int | None = None) -> bool:
    """Write atomically, only when the bytes differ; returns whether it wrote.

    An unchanged file keeps its mtime, so doit's file checks see nothing new.
    """
    return write_bytes_if_changed(path, text.encode("utf-8"), mode)


def write_bytes_if_changed(path: Path, data: bytes, mode: int | None = None) -> bool:
    """Like write_if_changed for bytes: a reader sees the old file or the new, never half."""
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def replace_folder(staging: Path, folder: Path) -> None:
    """Put the complete folder `staging` where `folder` is (a sibling: one rename); the
    previous folder is set aside first and deleted only afterwards, and put back when the
    rename fails: at every moment `folder` is the old one or the new one, never half."""
    aside = folder.with_name(f".{folder.name}.old-{os.getpid()}-{staging.name[-8:]}")
    had = folder.exists()
    if had:
        folder.rename(aside)
    try:
        staging.rename(folder)
    except OSError:
        if had:
            aside.rename(folder)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def write_record(path: Path, data: Mapping[str, object]) -> None:
    write_if_changed(path, json.dumps(dict(data), indent=2, sort_keys=True) + "\n")


def read_record(path: Path) -> dict[str, Any] | None:
    """The record, or None when it is missing or unreadable (treated as 'not done')."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_toml(path: Path, fix: str) -> Mapping[str, Any] | None:
    """A TOML file this tool writes (a lock): None when there is none; a ConfigError naming
    the file, and `fix`, when it cannot be read or is not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError([ConfigIssue(path, "", f"not a valid lock ({exc}); {fix}")]) from None
