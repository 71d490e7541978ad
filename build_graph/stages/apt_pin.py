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

from build_graph.aptlock import files
from build_graph.aptlock.files import AptLock, Deb, Step, deb_from_file
from build_graph.docker.apt import would_fetch
from build_graph.errors import BuildFailed, ConfigIssue
from build_graph.log import progress
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier, plan


def stale(planned: list[PlannedTier]) -> list[PlannedTier]:
    """Tiers whose apt lock is missing or was resolved from other inputs."""
    return [t for t in planned if not t.apt.fresh]


def disagreements(stack: Stack, planned: list[PlannedTier]) -> list[ConfigIssue]:
    """`check`'s words for every stale apt lock."""
    return [
        ConfigIssue(
            t.apt.path or stack.manifest,
            "",
            f"tiers.{t.spec.name}: {'no apt lock' if t.apt.lock is None else 'the apt lock'}"
            f" {'yet' if t.apt.lock is None else 'no longer answers images.toml'} "
            f"({t.key}); {files.fix(stack.manifest, t.spec.name)}",
        )
        for t in stale(planned)
    ]


def record(
    stack: Stack, update: set[str] | None = None, planned: list[PlannedTier] | None = None
) -> list[str]:
    """Resolve every missing or stale apt lock, and every tier named in `update`; lines
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
        new = resolve(tier)
        assert tier.apt.path is not None
        files.write(tier.apt.path, new)
        for line in moves(tier.apt.path.name, tier.apt.lock, new):
            progress(line)
            lines.append(line)


def resolve(tier: PlannedTier) -> AptLock:
    """The tier's lock as apt resolves it now, install by install."""
    state = tier.apt
    platform = tier.platform or state.inputs[0].removeprefix("platform ")
    have = list(state.below)
    steps = []
    for request in state.requests:
        progress(f"{tier.key}: resolving apt packages {' '.join(request)} in {state.image}")
        given = [d.pin for d in have]
        rows = would_fetch(state.image, tier.platform, [*given, *request])
        held = {(d.name, d.version) for d in have}
        debs = []
        for file, size, sha256, url in rows:
            deb = deb_from_file(file, size, sha256, url)
            if isinstance(deb, str):
                raise BuildFailed(f"apt in {state.image}: {deb}")
            if (deb.name, deb.version) not in held:
                debs.append(deb)
        debs.sort(key=lambda d: d.name)
        have += debs
        steps.append(Step(request, tuple(debs)))
    return AptLock(tier.group_key, platform, state.inputs, tuple(steps))


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
        lines.append(f"{name}: {package} {_version(was)} -> {_version(now)}")
    return lines or [f"{name}: no apt package moved"]


def _version(deb: Deb | None) -> str:
    return deb.version if deb is not None else "(none)"
