"""Resolve what images.lock pins: `from` images to digests, git sources to commits.

An image: the registry's manifest digest when it answers; else the digest the local image
was pulled with; else, for an image that exists only here (seeded or built locally), LOCAL.
A git source 'url@ref': the commit `git ls-remote` says the ref names (a 40-hex ref is a
commit already). Anything that cannot be resolved is an error naming it, never a gap.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from build_graph.errors import BuildFailed, DaemonUnreachable, RegistryError
from build_graph.log import progress
from build_graph.manifest.model import Source, Stack
from build_graph.manifest.values import COMMIT_RE, conforms
from build_graph.oci.digest import maybe_digest
from build_graph.oci.refs import Answer, Presence
from build_graph.plan.lock import (
    LOCAL,
    Lock,
    from_images,
    git_sources,
    lock_path,
    parse_lock,
    read_lock,
    write_lock,
)
from build_graph.registry import availability


def resolve(ref: str) -> str:
    """The pin of a `from` image: a digest images.lock's reader accepts, or LOCAL."""
    probe = availability.head(ref)
    if probe.presence is Presence.PRESENT and probe.digest:
        return _checked(ref, str(probe.digest), "its registry")
    from build_graph.docker import daemon  # only where the registry could not pin it

    try:
        local = daemon.local_digest(ref)
    except DaemonUnreachable as exc:  # the registry could not pin it: only the daemon can
        raise exc.needs(f"pinning {ref} ({_registry_said(probe)})") from None
    if local is not None:
        if probe.presence is Presence.ERROR:  # air-gapped hosts pin this way: say why
            progress(
                f"note: {ref}: its registry could not be asked ({probe.error}); "
                + (
                    "pinned from the Docker daemon's copy instead"
                    if local
                    else "pinned as local: the Docker daemon's copy names no registry digest "
                    "(built, imported or loaded here, or kept in the containerd image "
                    "store, which cannot say where an image came from)"
                )
            )
        return _checked(ref, local, "the Docker daemon") if local else LOCAL
    if probe.presence is Presence.ERROR:
        raise RegistryError(
            f"cannot pin {ref}: its registry did not answer ({probe.error}) "
            "and the Docker daemon has no such image; start the registry or "
            "pull the image"
        )
    raise BuildFailed(
        f"cannot pin {ref}: it is neither in its registry nor in the Docker "
        "daemon; fix `from` in images.toml"
    )


def _registry_said(probe: Answer) -> str:
    return (
        f"its registry did not answer: {probe.error}"
        if probe.presence is Presence.ERROR
        else "its registry does not hold it"
    )


def resolve_source(source: Source) -> str:
    """The commit a git source's ref names now."""
    url, ref = source.location, source.ref
    if conforms(COMMIT_RE, ref):
        return ref
    try:
        out = subprocess.run(
            ["git", "ls-remote", "--", url, ref],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildFailed(f"cannot pin {source.text}: git ls-remote failed ({exc})") from None
    commits = [line.split()[0] for line in out.stdout.splitlines() if line.strip()]
    if out.returncode != 0 or not commits:
        why = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "no such ref"
        raise BuildFailed(
            f"cannot pin {source.text}: {why}; check the URL and ref in compile.sources"
        )
    if not conforms(COMMIT_RE, commits[0]):
        raise BuildFailed(
            f"cannot pin {source.text}: git ls-remote answered {commits[0]!r}, "
            "which is not a commit"
        )
    return commits[0]


def _checked(ref: str, digest: str, where: str) -> str:
    """Only a pin images.lock would accept is written to it."""
    if maybe_digest(digest) is None:
        raise BuildFailed(
            f"cannot pin {ref}: {where} named it {digest!r}, which is not a sha256 digest"
        )
    return digest


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
        if source.text not in lock.sources:
            lock.sources[source.text] = resolve_source(source)
            progress(_line(path, source.text, lock.sources[source.text], "recorded"))
            changed = True
    if changed:
        write_lock(path, lock)
    return changed


def update(stack: Stack, names: list[str]) -> list[str]:
    """Re-resolve `names` (every image and source when empty); lines saying what moved.

    The one way out of a damaged lock: entries that are not pins (or a file that is not
    TOML) are dropped and their names pinned again, whatever `names` says."""
    path = lock_path(stack.manifest)
    old, issues = parse_lock(path)
    images = from_images(stack)
    by_text = {s.text: s for s in git_sources(stack)}
    sources = list(by_text)
    unknown = [n for n in names if n not in images and n not in sources]
    if unknown:
        raise BuildFailed(
            f"not a `from` image or git source of {stack.manifest}: "
            f"{', '.join(unknown)} (they are: {', '.join(images + sources)}); a tier's "
            "Python packages move with `lock --update TIER [PACKAGE...]` (tiers: "
            f"{', '.join(sorted({t.name for v in stack.variants for t in v.tiers}))})"
        )
    new = Lock(
        {r: p for r, p in old.images.items() if r in images},
        {s: c for s, c in old.sources.items() if s in sources},
    )
    # After damage, every name the lock lacks is pinned again, not only `names`.
    lines = [
        f"{path.name}: {issue.key or 'the file'}: dropped, {issue.message.partition('; run ')[0]}"
        for issue in issues
    ]
    todo = list(names or images + sources)
    if issues:
        todo += [
            n
            for n in images + sources
            if n not in todo and n not in old.images and n not in old.sources
        ]
    for name in todo:
        table, before = (new.images, old.images) if name in images else (new.sources, old.sources)
        table[name] = resolve(name) if name in images else resolve_source(by_text[name])
        if before.get(name) != table[name]:
            lines.append(
                _line(path, name, table[name], f"moved from {before.get(name) or 'nothing'}")
            )
    write_lock(path, new)
    return lines


def _line(path: Path, name: str, pin: str, what: str) -> str:
    if pin == LOCAL:
        return f"{path.name}: {name} exists only in this Docker daemon: {what} as local, not pinned"
    return f"{path.name}: {name} pinned to {pin} ({what})"
