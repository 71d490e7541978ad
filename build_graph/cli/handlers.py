"""What each `python -m build_graph` command does (cli/main.py parses the arguments)."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from build_graph import settings
from build_graph.errors import ConfigError, OptionError, RegistryError
from build_graph.fs import write_if_changed
from build_graph.gpu import releases
from build_graph.layout import BuildFolder
from build_graph.manifest.model import Stack
from build_graph.plan.plan import plan
from build_graph.run.stack import load_stack


def summary(stack: Stack) -> str:
    """A human summary of the resolved stack: variants, versions, archs, tiers, notes."""
    lines = [
        f"{stack.manifest}: stack {stack.name!r} -> {stack.registry}",
        f"  cache: {stack.cache.url} (max {stack.cache.max_size_bytes / 2**30:.1f} GiB)",
        f"  layers: {stack.compression}"
        + (" (the default)" if stack.compression.is_default else " ([layers])"),
    ]
    for variant in stack.variants:
        default = " (default)" if variant.name == stack.default_variant else ""
        versions = ", ".join(f"{k} {v}" for k, v in variant.versions.items())
        lines.append(f"  variant {variant.name}{default}: {versions}")
        if variant.gpu.arch_list:
            lines.append(
                f"    TORCH_CUDA_ARCH_LIST={variant.gpu.torch_cuda_arch_list}"
                f"  targets: {', '.join(variant.gpu.targets) or '-'}"
            )
        for tier in variant.tiers:
            base = f"parent {tier.parent}" if tier.parent else f"from {tier.from_image}"
            extra = f", compiles with {tier.compile.builder}" if tier.compile else ""
            tags = f"  tags: {', '.join(tier.tags)}" if tier.tags else ""
            tags += f"  platforms: {', '.join(tier.platforms)}" if tier.platforms else ""
            lines.append(f"    {tier.name:<16} {base}{extra}{tags}")
    lines.extend(f"  note: {note}" for note in stack.notes)
    return "\n".join(lines)


def run_check(args: argparse.Namespace) -> int:
    stack = load_stack(args.manifest, releases.offline if args.offline else _index(args.manifest))
    planned = plan(stack)  # renders every template, so template errors surface here too
    from build_graph.stages.apt_pin import disagreements as apt_disagreements
    from build_graph.stages.python_pin import disagreements

    issues = disagreements(stack, planned) + apt_disagreements(stack, planned)
    if issues:
        raise ConfigError(issues)
    print(summary(stack))
    print("ok")
    return 0


def _index(manifest: Path, fresh: bool = False) -> releases.Lookup:
    """Torch pairings the shipped data lacks, asked of the index builds use
    (BUILD_GRAPH_PIP_INDEX_URL, default pypi.org); answers cached in the build folder."""
    from build_graph.pypi.lookup import IndexLookup

    cache = BuildFolder.of(manifest).index_cache(settings.without_userinfo(_index_url()))
    return IndexLookup(_index_url(), cache, fresh=fresh)


def _index_url() -> str:
    return settings.index_url(settings.DEFAULT_INDEX)


def run_outdated(args: argparse.Namespace) -> int:
    from build_graph.cli.outdated import manifest_of, outdated, registry_tags

    stack = load_stack(args.manifest, releases.offline)  # a manifest with errors stops here
    lines = outdated(
        stack,
        manifest_of(stack),
        _index_url(),
        _index(args.manifest, True),
        None if args.no_from_tags else registry_tags,
    )
    print("\n".join(lines))
    if not args.no_python:
        from build_graph.stages.python_pin import newer

        asked, pins = newer(stack)
        if asked:
            print(
                f"Python pins: all {asked} locks are at the newest images.toml allows"
                if not pins
                else f"Python pins that `lock --update` would move ({asked} locks asked):"
            )
        for line in pins:
            print(f"  {line}", flush=True)
    return 0


def run_plan(args: argparse.Namespace) -> int:
    stack = load_stack(args.manifest)
    planned = plan(stack)
    rows: list[dict[str, object]] = [
        {
            "variant": p.spec.variant,
            "tier": p.spec.name,
            "key": p.key,
            "parent": p.parent_key,
            "platform": p.platform,
            "promoted_as": p.group_key,
            "image": p.image,
            "hash": p.content_hash,
            "human_tags": list(p.human_tags),
            "dockerfile": str(p.folder.dockerfile),
        }
        for p in planned
    ]
    if not args.offline:
        from build_graph.registry.availability import describe_availability

        for row, where in zip(rows, describe_availability([p.image for p in planned]), strict=True):
            row.update(where)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        for row in rows:
            print(f"{row['key']:<24} {row['image']}  {row.get('status', '')}")
    unasked = [row for row in rows if row.get("registry") == "error"]
    if unasked:  # a plan with guesses in it is not a plan: say so, exit 3
        raise RegistryError(unasked[0]["registry_error"])
    return 0


def run_doctor(args: argparse.Namespace) -> int:
    from build_graph.cli.doctor import doctor

    return doctor(args.manifest, args.tier, args.variant, args.fail_on_mismatch, args.emit_json)


def _known_packages(stack: Stack, tier: str, packages: list[str]) -> None:
    """OptionError for a package `lock --update TIER PACKAGE` names that the tier's locks do
    not hold (uv would ignore it, and nothing would move without a word)."""
    from packaging.utils import canonicalize_name

    held = {
        p.name
        for t in plan(stack)
        if t.spec.name == tier and t.python.lock is not None
        for p in t.python.lock.pins
    }
    unknown = [p for p in packages if canonicalize_name(p) not in held]
    if unknown and held:
        raise OptionError(
            f"lock --update {tier}: {', '.join(unknown)} is not in {tier}'s Python lock "
            f"(it holds: {', '.join(sorted(held))})"
        )


def run_lock(args: argparse.Namespace) -> int:
    from build_graph.plan.lock import lock_path, read_lock
    from build_graph.stages import apt_pin, python_pin
    from build_graph.stages import pin as pins

    stack = load_stack(args.manifest)
    names: list[str] | None = args.update
    tiers = {t.name for v in stack.variants for t in v.tiers}
    python: dict[str, bool | list[str]] = {}
    if names is None:
        pins.record_missing(stack)
    elif names and names[0] in tiers:  # `--update TIER [PACKAGE...]`: that tier's Python pins
        _known_packages(stack, names[0], names[1:])
        pins.record_missing(stack)
        python = {names[0]: names[1:] or True}
    else:
        moved = pins.update(stack, names)
        for line in moved or [f"{lock_path(stack.manifest).name}: no pin moved"]:
            print(line)
        python = dict.fromkeys(tiers, True) if not names else {}
    lines = python_pin.record(stack, python)
    if python and not lines:
        print("Python locks: no pin moved")
    apt_pin.record(stack, set(python))
    lock = read_lock(lock_path(stack.manifest))
    for name, pin in sorted({**lock.images, **lock.sources}.items()):
        print(f"{name} = {pin}")
    for tier in plan(stack):
        if tier.python.lock is not None and tier.python.path is not None:
            where = tier.python.path.relative_to(stack.root).as_posix()
            print(f"{where}: {len(tier.python.lock.pins)} packages")
    return 0


def run_ci(args: argparse.Namespace) -> int:
    from build_graph.cli.ci_command import document

    return _emit(document(args), args.output)


def run_init(args: argparse.Namespace) -> int:
    from build_graph.cli.init import init

    for line in init(args.folder, args.source):
        print(line)
    return 0


SHOWN_DIFFERENCES = 100


def run_reproduce(args: argparse.Namespace) -> int:
    """Exit 0 when the rebuild has the registry's digest, 1 (a failed check) when not."""
    from build_graph.cli.artifacts import planned_tier
    from build_graph.stages.reproduce import reproduce

    stack = load_stack(args.manifest)
    tier = planned_tier(stack, args.tier)
    outcome = reproduce(stack, tier, args.scratch)
    took = f"rebuilt from scratch in {outcome.seconds:.1f} s"
    if outcome.same:
        print(f"{tier.key}: same digest {outcome.registry} as {tier.image} ({took})")
        return 0
    print(
        f"{tier.key}: differs from {tier.image}: registry {outcome.registry}, rebuilt "
        f"{outcome.rebuilt} ({took}); {len(outcome.differences)} differences:"
    )
    for line in outcome.differences[:SHOWN_DIFFERENCES]:
        print(f"  {line}")
    if len(outcome.differences) > SHOWN_DIFFERENCES:
        print(f"  ... and {len(outcome.differences) - SHOWN_DIFFERENCES} more")
    return 1


def run_prune(args: argparse.Namespace) -> int:
    from build_graph.manifest.values import parse_duration
    from build_graph.stages import prune

    seconds = parse_duration(args.older_than)
    if seconds is None:
        raise OptionError(
            f"--older-than {args.older_than!r}: expected a number and a unit, "
            "e.g. 14d, 12h, 30m or 0s"
        )
    older_than = datetime.timedelta(seconds=seconds)
    if args.keep < 0:
        raise OptionError(f"--keep {args.keep}: expected 0 or more builds")
    stack = load_stack(args.manifest)
    pruning = prune.judge(plan(stack), prune.policy(stack.name, args.keep, older_than))
    print("\n".join(prune.lines(pruning, deleting=args.yes)), flush=True)
    if not args.yes:
        print(prune.summary(pruning, None))
        return 0
    # DeletesRefused (a policy, not an outage) reaches the reporter as one line, exit 3
    print(prune.summary(pruning, prune.delete(pruning, lambda line: print(line, flush=True))))
    return 0


def run_sbom(args: argparse.Namespace) -> int:
    from build_graph.cli.artifacts import sbom

    text = sbom(load_stack(args.manifest), args.tier)
    return _emit(text, args.output)


def run_gate(args: argparse.Namespace) -> int:
    from build_graph.cli.gate import gate

    verdict = gate(load_stack(args.manifest), args.image, args.key, args.current)
    # With --print-ref stdout carries only the reference to deploy (nothing when refused),
    # so `image=$(... --print-ref) || exit 1` can never hand a deploy a sentence.
    print(verdict.line, file=sys.stderr if args.print_ref else sys.stdout)
    if verdict.passed and args.print_ref:
        print(verdict.pinned)
    return 0 if verdict.passed else 1


def run_keygen(args: argparse.Namespace) -> int:
    from build_graph.signing.keys import generate

    key, pub = generate(args.folder, args.name)
    print(f"wrote {key} (the private key: keep it out of the repository; a CI secret)")
    print(f"wrote {pub} (name it in images.toml's signing.public_keys)")
    return 0


def _emit(text: str, output: Path | None) -> int:
    """A generated document: to stdout, or written to `output` (only when it changed)."""
    if output is None:
        sys.stdout.write(text)
    else:
        write_if_changed(output, text)
        print(f"wrote {output}")
    return 0
