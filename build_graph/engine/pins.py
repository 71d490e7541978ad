"""Resolve `from` images to the digests images.lock pins them to (the registry's answer).

The registry's manifest digest when it answers; else the digest the local image was pulled
with; else, for an image that exists only here (seeded or built locally), LOCAL. An image
that is neither in its registry nor here, or whose registry errs while no local copy
exists, cannot be pinned: that is an error naming the image, never a silent gap.
"""

from __future__ import annotations

from pathlib import Path

from build_graph.engine import daemon
from build_graph.engine.registry import Presence
from build_graph.errors import BuildFailed, RegistryError
from build_graph.log import progress
from build_graph.manifest.model import Stack
from build_graph.plan.lock import LOCAL, lock_path, read_lock, write_lock
from build_graph.plan.plan import from_images


def resolve(ref: str) -> str:
    probe = daemon.probe_registry(ref)
    if probe.presence is Presence.PRESENT and probe.digest:
        return probe.digest
    local = daemon.local_digest(ref)
    if local is not None:
        return local or LOCAL
    if probe.presence is Presence.ERROR:
        raise RegistryError(f"cannot pin {ref}: its registry did not answer ({probe.error}) "
                            "and the Docker daemon has no such image; start the registry or "
                            "pull the image")
    raise BuildFailed(f"cannot pin {ref}: it is neither in its registry nor in the Docker "
                      "daemon; fix `from` in images.toml")


def record_missing(stack: Stack) -> bool:
    """Pin every `from` image the lock does not know yet; True when the lock changed."""
    path = lock_path(stack.manifest)
    pins = read_lock(path)
    missing = [ref for ref in from_images(stack) if ref not in pins]
    for ref in missing:
        pins[ref] = resolve(ref)
        progress(_line(path, ref, pins[ref], "recorded"))
    if missing:
        write_lock(path, pins)
    return bool(missing)


def update(stack: Stack, refs: list[str]) -> list[str]:
    """Re-resolve `refs` (all `from` images when empty); the lines saying what moved."""
    path = lock_path(stack.manifest)
    pins = read_lock(path)
    known = from_images(stack)
    unknown = [r for r in refs if r not in known]
    if unknown:
        raise BuildFailed(f"not a `from` image of {stack.manifest}: {', '.join(unknown)} "
                          f"(they are: {', '.join(known)})")
    lines = []
    for ref in refs or known:
        new = resolve(ref)
        if pins.get(ref) != new:
            lines.append(_line(path, ref, new, f"moved from {pins.get(ref) or 'nothing'}"))
        pins[ref] = new
    write_lock(path, {r: p for r, p in pins.items() if r in known})
    return lines


def _line(path: Path, ref: str, pin: str, what: str) -> str:
    if pin == LOCAL:
        return f"{path.name}: {ref} exists only in this Docker daemon: {what} as local, not pinned"
    return f"{path.name}: {ref} pinned to {pin} ({what})"
