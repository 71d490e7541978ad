"""`python -m build_graph lock [--update ...]`: records what images.lock, images.pylock/ and
the apt locks are missing, and moves pins on request; then prints every pin."""

from __future__ import annotations

import argparse

from build_graph.cli import options
from build_graph.errors import OptionError
from build_graph.manifest.model import Stack
from build_graph.plan.plan import plan
from build_graph.run.stack import load_stack


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--update",
        nargs="*",
        metavar="NAME",
        help="move pins: `--update TIER [PACKAGE...]` moves a tier's Python and apt packages "
        "(all of them without names) to the newest images.toml allows; `--update IMAGE|SOURCE...` "
        "re-resolves those `from` images or git sources; `--update` alone moves every pin",
    )
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    from build_graph.plan.lock import lock_path, read_lock
    from build_graph.stages import apt_pin, python_pin
    from build_graph.stages import pin as pins

    stack = load_stack(args.manifest)
    names: list[str] | None = args.update
    tiers = {t.name for v in stack.variants for t in v.tiers}
    python: dict[str, bool | list[str]] = {}
    apt_named: set[str] = set()  # `--update TIER PACKAGE...`: those of its apt lock
    if names is None:
        pins.record_missing(stack)
    elif names and names[0] in tiers:  # `--update TIER [PACKAGE...]`: that tier's pins
        python_named, apt_named = _known_packages(stack, names[0], names[1:])
        pins.record_missing(stack)
        if python_named or not names[1:]:
            python = {names[0]: python_named or True}
    else:
        moved = pins.update(stack, names)
        for line in moved or [f"{lock_path(stack.manifest).name}: no pin moved"]:
            print(line)
        python = dict.fromkeys(tiers, True) if not names else {}
    lines = python_pin.record(stack, python)
    if python and not lines:
        print("Python locks: no pin moved")
    # apt pins move with `--update TIER` (no packages named) and `--update`; with `--update
    # TIER PACKAGE...`, the named packages of the tier's apt lock
    if names and apt_named:
        apt_pin.record(stack, {names[0]}, only=frozenset(apt_named))
    else:
        apt_pin.record(stack, {tier for tier, what in python.items() if what is True})
    lock = read_lock(lock_path(stack.manifest))
    for name, pin in sorted({**lock.images, **lock.sources}.items()):
        print(f"{name} = {pin}")
    for tier in plan(stack):
        if tier.python.lock is not None and tier.python.path is not None:
            where = tier.python.path.relative_to(stack.root).as_posix()
            print(f"{where}: {len(tier.python.lock.pins)} packages")
    return 0


def _known_packages(stack: Stack, tier: str, packages: list[str]) -> tuple[list[str], set[str]]:
    """The packages `lock --update TIER PACKAGE...` names that the tier's Python locks hold,
    and those its apt locks hold (a name both hold moves in both). OptionError for a name
    neither holds (uv would ignore it, and nothing would move without a word)."""
    from packaging.utils import canonicalize_name

    planned = [t for t in plan(stack) if t.spec.name == tier]
    held = {p.name for t in planned if t.python.lock is not None for p in t.python.lock.pins}
    apt = {d.name for t in planned if t.apt.lock is not None for d in t.apt.lock.debs}
    unknown = [p for p in packages if canonicalize_name(p) not in held and p not in apt]
    if unknown and (held or apt):
        said = ", ".join(sorted(held | apt))
        raise OptionError(
            f"lock --update {tier}: {', '.join(unknown)} is in neither {tier}'s Python lock "
            f"nor its apt lock (they hold: {said})"
        )
    python = [p for p in packages if canonicalize_name(p) in held or not (held or apt)]
    return python, {p for p in packages if p in apt}
