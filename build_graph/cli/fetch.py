"""`python -m build_graph fetch [TIER...]`: every file the stack's locks name (each tier's
`.debs` and the wheels of its Python lock), fetched and checked before any build, and kept
in the team's store (`[cache] url`, or build/ccache-store) by sha256. A store filled so
rebuilds a year from now need neither the archive's nor the index's state of today (a
build takes each file from the store once its origin dropped it; stages/inputs.py)."""

from __future__ import annotations

import argparse

from build_graph.cli import options
from build_graph.errors import BuildFailed, CacheUnavailable, OptionError
from build_graph.layout import manifest_option


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "tiers", nargs="*", metavar="TIER", help="only these tiers (default: every tier)"
    )
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    from build_graph.plan.plan import plan
    from build_graph.run.stack import load_stack
    from build_graph.stages import debs, inputs, pywheels

    stack = load_stack(args.manifest)
    names = {t.name for v in stack.variants for t in v.tiers}
    unknown = sorted(set(args.tiers) - names)
    if unknown:
        raise OptionError(f"no tier named {', '.join(unknown)} in {args.manifest}")
    stale = []
    for tier in plan(stack):
        if args.tiers and tier.spec.name not in args.tiers:
            continue
        if not (tier.apt.fresh and tier.python.fresh):
            stale.append(tier.key)
            continue
        kept, said = 0, []
        for kind, folder, files in (
            (debs.KIND, tier.folder.debs, debs.debs(stack, tier)),
            (pywheels.KIND, tier.folder.pywheels, pywheels.wheels(tier)),
        ):
            if not files:
                continue
            try:
                lacking = inputs.missing(stack, files)
                inputs.gather(stack, tier, kind, folder, files)
                inputs.keep(stack, folder, files)
                kept += len(lacking)  # gather and keep stored each (or a run meanwhile)
            except CacheUnavailable as exc:
                raise BuildFailed(
                    f"the team's store {stack.cache.url} cannot be used ({exc}): check its "
                    "URL ([cache] url), the credentials and the network, and run again"
                ) from None
            said.append(f"{len(files)} {kind.name}")
        where = f"{tier.key}{f' ({tier.platform})' if tier.platform else ''}"
        print(f"{where}: {', '.join(said) or 'nothing locked'} checked; {kept} newly kept")
    print(f"the team's store: {stack.cache.url}")
    if stale:
        raise BuildFailed(
            f"{', '.join(stale)}: a lock is missing or stale, so what to fetch is not known: "
            f"run `python -m build_graph lock{manifest_option(args.manifest)}` first"
        )
    return 0
