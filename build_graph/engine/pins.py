"""Resolve what images.lock pins: `from` images to digests, git sources to commits.

An image: the registry's manifest digest when it answers; else the digest the local image
was pulled with; else, for an image that exists only here (seeded or built locally), LOCAL.
A git source 'url@ref': the commit `git ls-remote` says the ref names (a 40-hex ref is a
commit already). Anything that cannot be resolved is an error naming it, never a gap.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from build_graph.engine import availability, daemon
from build_graph.engine.registry import Presence
from build_graph.errors import BuildFailed, RegistryError
from build_graph.log import progress
from build_graph.manifest.grammar import split_git_source
from build_graph.manifest.model import Stack
from build_graph.plan.lock import LOCAL, Lock, lock_path, read_lock, write_lock
from build_graph.plan.plan import from_images, git_sources

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def resolve(ref: str) -> str:
    probe = availability.head(ref)
    if probe.presence is Presence.PRESENT and probe.digest:
        return str(probe.digest)
    local = daemon.local_digest(ref)
    if local is not None:
        return local or LOCAL
    if probe.presence is Presence.ERROR:
        raise RegistryError(f"cannot pin {ref}: its registry did not answer ({probe.error}) "
                            "and the Docker daemon has no such image; start the registry or "
                            "pull the image")
    raise BuildFailed(f"cannot pin {ref}: it is neither in its registry nor in the Docker "
                      "daemon; fix `from` in images.toml")


def resolve_source(source: str) -> str:
    """The commit a git source's ref names now."""
    url, ref = split_git_source(source)
    if _COMMIT.match(ref):
        return ref
    try:
        out = subprocess.run(["git", "ls-remote", "--", url, ref], capture_output=True,
                             text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildFailed(f"cannot pin {source}: git ls-remote failed ({exc})") from None
    commits = [line.split()[0] for line in out.stdout.splitlines() if line.strip()]
    if out.returncode != 0 or not commits:
        why = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "no such ref"
        raise BuildFailed(f"cannot pin {source}: {why}; check the URL and ref in "
                          "compile.sources")
    return commits[0]


def record_missing(stack: Stack) -> bool:
    """Pin every `from` image and git source the lock does not know yet; True if it changed."""
    path = lock_path(stack.manifest)
    lock = read_lock(path)
    changed = False
    for ref in from_images(stack):
        if ref not in lock.images:
            lock.images[ref] = resolve(ref)
            progress(_line(path, ref, lock.images[ref], "recorded"))
            changed = True
    for source in git_sources(stack):
        if source not in lock.sources:
            lock.sources[source] = resolve_source(source)
            progress(_line(path, source, lock.sources[source], "recorded"))
            changed = True
    if changed:
        write_lock(path, lock)
    return changed


def update(stack: Stack, names: list[str]) -> list[str]:
    """Re-resolve `names` (every image and source when empty); lines saying what moved."""
    path = lock_path(stack.manifest)
    old = read_lock(path)
    images, sources = from_images(stack), git_sources(stack)
    unknown = [n for n in names if n not in images and n not in sources]
    if unknown:
        raise BuildFailed(f"not a `from` image or git source of {stack.manifest}: "
                          f"{', '.join(unknown)} (they are: {', '.join(images + sources)})")
    new = Lock({r: p for r, p in old.images.items() if r in images},
               {s: c for s, c in old.sources.items() if s in sources})
    lines = []
    for name in names or images + sources:
        table, before = (new.images, old.images) if name in images else (new.sources,
                                                                         old.sources)
        table[name] = resolve(name) if name in images else resolve_source(name)
        if before.get(name) != table[name]:
            lines.append(_line(path, name, table[name],
                               f"moved from {before.get(name) or 'nothing'}"))
    write_lock(path, new)
    return lines


def _line(path: Path, name: str, pin: str, what: str) -> str:
    if pin == LOCAL:
        return f"{path.name}: {name} exists only in this Docker daemon: {what} as local, " \
               "not pinned"
    return f"{path.name}: {name} pinned to {pin} ({what})"
