"""Record missing and stale apt locks, and move them on request.

A run and `python -m build_graph lock` resolve every tier whose apt lock is missing or no
longer answers images.toml (a package added, the `from` pin moved, a tier below relocked),
tiers below first: each install the template renders is asked of the real apt in the
pinned `from` image (docker/apt.py), with what the tiers below and the earlier installs
locked given as `name=version`, so the lock holds what this install adds and nothing the
image already has. `lock --update TIER` resolves that tier again: every package to the
newest the archive serves now. `check` (stale()) says which tiers disagree, offline.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from build_graph.aptlock import files, snapshot
from build_graph.aptlock.files import AptLock, Deb, Step, deb_from_file
from build_graph.errors import BuildFailed, ConfigIssue
from build_graph.layout import manifest_option
from build_graph.log import progress
from build_graph.manifest.model import Stack
from build_graph.plan.hashing import instructions
from build_graph.plan.plan import PlannedTier, plan
from build_graph.settings import redact


def stale(planned: list[PlannedTier]) -> list[PlannedTier]:
    """Tiers whose apt lock is missing or was resolved from other inputs."""
    return [t for t in planned if not t.apt.fresh]


# An install a locked stack's template runs itself, outside the macros (not of /tmp/debs).
_UNLOCKED = re.compile(r"\b(?:apt-get|apt|aptitude)\s+(?:-\S+\s+)*install\b(?![^\n]*/tmp/debs/)")


def unlocked(stack: Stack, planned: list[PlannedTier]) -> list[ConfigIssue]:
    """Tiers of a locked stack whose Dockerfile installs packages apt resolves on the day."""
    if not stack.apt_locked:
        return []
    issues: dict[str, ConfigIssue] = {}  # one per tier and variant, whatever its platforms
    for t in planned:
        found = _UNLOCKED.findall(instructions(t.dockerfile))
        if found and t.group_key not in issues:
            issues[t.group_key] = ConfigIssue(
                stack.manifest,
                f"tiers.{t.spec.name}.template",
                f"{t.spec.template} runs `{found[0]}` outside the locked install "
                f"({t.group_key}): what it installs is not in the apt lock; list the "
                "packages in system_packages and install them with the shipped macros "
                "(m.apt_install, m.system_python)",
            )
    return list(issues.values())


def disagreements(stack: Stack, planned: list[PlannedTier]) -> list[ConfigIssue]:
    """`check`'s words for every stale apt lock, and every install outside the lock."""
    return unlocked(stack, planned) + [
        ConfigIssue(
            t.apt.path or stack.manifest,
            "",
            f"tiers.{t.spec.name}: {'no apt lock' if t.apt.lock is None else 'the apt lock'}"
            f" {'yet' if t.apt.lock is None else 'no longer answers images.toml'} "
            f"({t.key}); run `python -m build_graph lock{manifest_option(stack.manifest)}` "
            "to resolve it",
        )
        for t in stale(planned)
    ]


def unused_snapshots(stack: Stack, planned: list[PlannedTier]) -> list[str]:
    """`check`'s note for each `[apt] snapshots` key no locked file's URL starts with
    (`https://` for `http://`, another host, a port archive: never asked, without a word)."""
    urls = {d.url for t in planned if t.apt.lock is not None for d in t.apt.lock.debs}
    archives = sorted({u.split("/pool/", 1)[0] for u in urls})
    return [
        f"[apt] snapshots: {redact(key)!r} matches no file of the apt locks; their archives: "
        f"{', '.join(map(redact, archives)) or 'none yet'}"
        for key, _ in stack.apt_snapshots
        if not any(u.startswith(key.rstrip("/") + "/") for u in urls)
    ]


def record(
    stack: Stack,
    update: set[str] | None = None,
    planned: list[PlannedTier] | None = None,
    only: frozenset[str] = frozenset(),
) -> list[str]:
    """Resolve every missing or stale apt lock, and every tier named in `update` (all its
    packages to the newest, or with `only`, those packages and what they must pull); lines
    saying what moved. Does nothing for a stack that does not lock apt, nor (without
    planning again) where `planned`, the caller's plan, has every lock fresh."""
    if not stack.apt_locked or (planned is not None and not update and not stale(planned)):
        return []
    todo = set(update or ())
    lines: list[str] = []
    done: set[str] = set()
    while True:
        # Planned again after each write: a tier above takes the new pins as its base.
        waiting = [
            t
            for t in plan(stack)
            if t.apt.requests and t.key not in done and (not t.apt.fresh or t.spec.name in todo)
        ]
        if not waiting:
            return lines
        tier = waiting[0]
        done.add(tier.key)
        moving = tier.spec.name in todo
        held = {d.name for d in tier.apt.lock.debs} if tier.apt.lock is not None else set()
        if moving and only and tier.apt.fresh and not held & only:
            continue  # a lock of the tier (another platform) without the named packages
        new = resolve(tier, keep=not moving or bool(only), move=only if moving else frozenset())
        assert tier.apt.path is not None
        files.write(tier.apt.path, new)
        for line in moves(tier.apt.path.name, tier.apt.lock, new):
            progress(line)
            lines.append(line)


def newer(stack: Stack) -> tuple[int, list[str]]:
    """What `lock --update TIER` would move in each fresh apt lock, nothing written: how
    many locks were asked, and lines 'app.linux-amd64.toml: curl 7.88.1-10 -> 7.88.1-10+deb12u5
    (security update)' (a child asked on its parent's pins as locked)."""
    asked, lines = 0, []
    for tier in plan(stack) if stack.apt_locked else ():
        if not tier.apt.requests or not tier.apt.fresh or tier.apt.path is None:
            continue
        asked += 1
        try:
            moved = moves(tier.apt.path.name, tier.apt.lock, resolve(tier, keep=False))
        except BuildFailed as exc:  # a pin below it gone: the others are still said
            lines.append(f"{tier.apt.path.name}: could not be asked: {exc}")
            continue
        if not moved[0].endswith(_NOTHING):
            lines += [*moved, f"  -> python -m build_graph lock --update {tier.spec.name}"]
    return asked, lines


def resolve(tier: PlannedTier, keep: bool = True, move: frozenset[str] = frozenset()) -> AptLock:
    """The tier's lock as apt resolves it now, install by install. `keep`: where the old
    lock's version of a package still installs, it stays (a package added moves what it
    must pull, nothing else), but for the packages in `move`, which go to the newest;
    without it, every package goes to the newest."""
    state = tier.apt
    platform = state.inputs[0].removeprefix("platform ")
    old = state.lock.steps if keep and state.lock is not None else ()
    have = list(state.below)
    steps = []
    for index, request in enumerate(state.requests):
        progress(f"{tier.key}: resolving apt packages {' '.join(request)} in {state.image}")
        debs = _ask(tier, platform, have, list(request))
        kept = (
            {d.name: d.pin for d in old[index].debs if d.name not in move}
            if index < len(old)
            else {}
        )
        prefer = {n: p for n, p in kept.items() if any(d.name == n for d in debs)}
        if prefer and prefer != {d.name: d.pin for d in debs if d.name in prefer}:
            asked = [prefer.pop(r, r) for r in request] + sorted(prefer.values())
            try:
                debs = _ask(tier, platform, have, asked)
            except BuildFailed as exc:
                if move:  # named packages that need others to move: never all, unasked
                    raise BuildFailed(
                        f"{tier.key}: moving {', '.join(sorted(move))} alone does not install "
                        f"with the rest of the lock as it is ({exc}); name the packages that "
                        f"must move with it too, or move them all: `python -m build_graph "
                        f"lock --update {tier.spec.name}`"
                    ) from None
                # an old version gone or no longer fitting: the newest, as resolved
        have += debs
        steps.append(Step(request, tuple(debs)))
    # when a snapshot held every file: kept while the files are the same (a lock written
    # again for nothing does not change)
    was = state.lock
    same = was is not None and was.resolved and was.steps == tuple(steps)
    resolved = was.resolved if same and was is not None else snapshot.now()
    return AptLock(tier.group_key, platform, state.inputs, tuple(steps), resolved)


def _ask(tier: PlannedTier, platform: str, have: list[Deb], request: list[str]) -> list[Deb]:
    """What installing `request` adds over `have` (the tiers below and the earlier installs,
    given to apt as name=version), sorted by name."""
    from build_graph.docker.apt import would_fetch  # a container: only when a lock moves

    held = {(d.name, d.version) for d in have}
    try:
        rows = would_fetch(tier.apt.image, platform, [*(d.pin for d in have), *request])
    except BuildFailed as exc:
        if have and tier.spec.parent and "was not found" in str(exc):
            raise BuildFailed(
                f"{tier.key}: {exc}; if a version the tiers below locked is gone from the "
                f"archive, move them first: `python -m build_graph lock --update "
                f"{tier.spec.parent}`"
            ) from None
        raise
    debs = []
    for file, size, sha256, url in rows:
        deb = deb_from_file(file, size, sha256, url)
        if isinstance(deb, str):
            raise BuildFailed(f"apt in {tier.apt.image}: {deb}")
        if (deb.name, deb.version) not in held:
            debs.append(deb)
    return sorted(debs, key=lambda d: d.name)


def moves(name: str, old: AptLock | None, new: AptLock) -> list[str]:
    """'builder.linux-amd64.toml: gcc 12.2.0-14 -> 12.2.0-14+deb12u1' per moved package."""
    if old is None:
        return [f"{name}: recorded {len(new.debs)} apt packages"]
    before = {d.name: d for d in old.debs}
    after = {d.name: d for d in new.debs}
    lines = []
    for package in sorted(before.keys() | after.keys()):
        was, now = before.get(package), after.get(package)
        if was is not None and now is not None and was.version == now.version:
            if was.sha256 != now.sha256:
                lines.append(f"{name}: {package} {now.version}: other bytes ({now.sha256[:12]})")
            continue
        lines.append(f"{name}: {package} {_version(was)} -> {_version(now)}{_security(now)}")
    return lines or [f"{name}: {_NOTHING}"]


_NOTHING = "no apt package moved"


def _version(deb: Deb | None) -> str:
    return deb.version if deb is not None else "(none)"


def _security(deb: Deb | None) -> str:
    """' (security update)' where the archive served the new file from its security
    archive: Debian's debian-security, Ubuntu's security.ubuntu.com (the lock keeps where
    each file came from). Said only where the URL says so, never guessed from a version."""
    if deb is None:
        return ""
    parts = urlsplit(deb.url)
    if parts.hostname and parts.hostname.startswith("security."):
        return " (security update)"
    return " (security update)" if "/debian-security/" in parts.path else ""
