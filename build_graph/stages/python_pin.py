"""Record missing and stale Python locks, and move pins on request.

A run and `python -m build_graph lock` resolve every tier whose lock is missing or no longer
answers images.toml (a package added, a pin bumped, a parent's lock moved), parents before
children, keeping every pin that still satisfies (the old lock is the resolver's preference):
a one-line bump moves that package and what it must pull, nothing else. `lock --update TIER
[PACKAGE...]` moves the named packages of one tier (all of them without names) to the newest
the requirements allow. `check` (stale()) says which tiers disagree, without resolving.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from build_graph.errors import ConfigIssue
from build_graph.layout import manifest_option
from build_graph.log import progress
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier, plan
from build_graph.pylock import files
from build_graph.pylock.files import Pin, PythonLock

if TYPE_CHECKING:
    from build_graph.pylock.request import Request


def resolve(request: Request, previous: PythonLock | None, upgrade: bool | list[str]) -> list[Pin]:
    """pylock/resolve.py's resolver (uv's run), imported when a lock is resolved: a run whose
    locks answer images.toml never loads it."""
    from build_graph.pylock import resolve as resolver

    return resolver.resolve(request, previous, upgrade)


def stale(planned: list[PlannedTier]) -> list[PlannedTier]:
    """Tiers whose lock is missing or was resolved from other inputs."""
    return [t for t in planned if not t.python.fresh]


def record(
    stack: Stack,
    update: dict[str, bool | list[str]] | None = None,
    planned: list[PlannedTier] | None = None,
) -> list[str]:
    """Resolve every missing or stale lock, and the tiers in `update` (tier name -> True for
    every package, or the packages to move); lines saying what moved. `planned`: the
    stack's plan as the caller has it (a run's, from the plan cache), read before any write
    instead of planning again."""
    todo = dict(update or {})
    lines: list[str] = []
    done: set[str] = set()
    while True:
        # Planned again after each write: a child's request holds its parent's new pins.
        current = planned if planned is not None and not done else plan(stack)
        waiting = [
            t
            for t in current
            if t.python.request is not None
            and t.python.request.key not in done
            and (not t.python.fresh or t.spec.name in todo)
        ]
        if not waiting:
            return lines
        tier = waiting[0]
        request, path = tier.python.request, tier.python.path
        assert request is not None and path is not None
        upgrade = todo.get(tier.spec.name, False)
        previous = tier.python.lock
        pins = resolve(request, previous, upgrade)
        new = PythonLock(request.key, request.platform, tuple(request.inputs()), tuple(pins))
        files.write(path, new, request.python)
        done.add(request.key)
        lines += moves(path.name, previous, new)


def newer(stack: Stack) -> tuple[int, list[str]]:
    """What `lock --update TIER` would move, tier by tier, without writing anything: each
    recorded lock resolved again with every package free to move (a child on its parent's
    pins as recorded). How many locks were asked, and lines 'base.linux-amd64.toml:
    datasets 3.3.2 -> 3.4.0'."""
    lines: list[str] = []
    asked = 0
    for tier in plan(stack):
        request, old = tier.python.request, tier.python.lock
        if request is None or old is None or not tier.python.fresh:
            continue
        assert tier.python.path is not None
        asked += 1
        pins = resolve(request, old, True)
        new = PythonLock(request.key, request.platform, old.inputs, tuple(pins))
        moved = _moved(tier.python.path.name, old, new)
        if moved:
            lines += [*moved, f"  -> python -m build_graph lock --update {tier.spec.name}"]
    return asked, lines


def moves(name: str, old: PythonLock | None, new: PythonLock) -> list[str]:
    """One line per package added, moved or dropped; one line for a new lock."""
    if old is None:
        line = f"{name}: recorded {len(new.pins)} packages"
        progress(line)
        return [line]
    lines = _moved(name, old, new)
    for line in lines:
        progress(line)
    return lines


def _moved(name: str, old: PythonLock, new: PythonLock) -> list[str]:
    before, after = old.versions(), new.versions()
    return [
        f"{name}: {n} {before.get(n, '(new)')} -> {after.get(n, '(dropped)')}"
        for n in sorted({*before, *after})
        if before.get(n) != after.get(n)
    ]


def disagreements(stack: Stack, planned: list[PlannedTier]) -> list[ConfigIssue]:
    """One issue per tier whose Python lock no longer answers images.toml (a missing one is a
    note),
    naming what changed (`check` exits 2 with these; a run resolves them itself)."""
    issues = []
    for tier in stale(planned):
        request, path = tier.python.request, tier.python.path
        assert request is not None and path is not None
        where = path.relative_to(stack.root).as_posix()
        if tier.python.lock is None:  # recorded by the next run, as images.lock's pins are
            progress(
                f"note: {request.key}: {where} is not recorded yet (the next run or "
                "`python -m build_graph lock` resolves it)"
            )
            continue
        elif tier.python.unmet and list(tier.python.lock.inputs) == request.inputs():
            said = (
                f"{where} holds versions its requirements exclude "
                f"({'; '.join(tier.python.unmet)[:600]}: edited by hand, or merged?)"
            )
        else:
            now, then = request.inputs(), list(tier.python.lock.inputs)
            changed = [f"now {i}" for i in now if i not in then]
            changed += [f"was {i}" for i in then if i not in now]
            said = f"{where} was resolved from other inputs ({'; '.join(changed)[:600]})"
        issues.append(
            ConfigIssue(
                stack.manifest,
                f"tiers.{tier.spec.name}.packages",
                f"{request.key}: {said}; run `python -m build_graph lock"
                f"{manifest_option(stack.manifest)}` "
                "(moves only what must move)",
            )
        )
    return issues
