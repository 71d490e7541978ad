"""`python -m build_graph check|plan|doctor|lock|ci|init|prune|outdated|sbom`: commands outside
doit."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from build_graph import settings
from build_graph.cli.ci import ARM64_GPU_RUNS_ON, ARM64_RUNS_ON, LOGIN_USER
from build_graph.cli.cloudbuild import DEFAULT_HOURS, DEFAULT_MACHINE, STEP_IMAGE
from build_graph.errors import EXIT_CONFIG, EXIT_ENVIRONMENT, DeletesRefused, run_cli
from build_graph.fs import write_if_changed
from build_graph.gpu import releases
from build_graph.layout import DEFAULT_MANIFEST, BuildFolder
from build_graph.manifest.load import load
from build_graph.manifest.model import Stack
from build_graph.plan.plan import plan


def summary(stack: Stack) -> str:
    """A human summary of the resolved stack: variants, versions, archs, tiers, notes."""
    lines = [f"{stack.manifest}: stack {stack.name!r} -> {stack.registry}",
             f"  cache: {stack.cache.url} (max {stack.cache.max_size_bytes / 2**30:.1f} GiB)"]
    for variant in stack.variants:
        default = " (default)" if variant.name == stack.default_variant else ""
        versions = ", ".join(f"{k} {v}" for k, v in variant.versions.items())
        lines.append(f"  variant {variant.name}{default}: {versions}")
        if variant.gpu.arch_list:
            lines.append(f"    TORCH_CUDA_ARCH_LIST={variant.gpu.torch_cuda_arch_list}"
                         f"  targets: {', '.join(variant.gpu.targets) or '-'}")
        for tier in variant.tiers:
            base = f"parent {tier.parent}" if tier.parent else f"from {tier.from_image}"
            extra = f", compiles with {tier.compile.builder}" if tier.compile else ""
            tags = f"  tags: {', '.join(tier.tags)}" if tier.tags else ""
            tags += f"  platforms: {', '.join(tier.platforms)}" if tier.platforms else ""
            lines.append(f"    {tier.name:<16} {base}{extra}{tags}")
    lines.extend(f"  note: {note}" for note in stack.notes)
    return "\n".join(lines)


def _check(args: argparse.Namespace) -> int:
    stack = load(args.manifest, releases.offline if args.offline else _index(args.manifest))
    plan(stack)  # renders every template, so template errors surface here too
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
    from build_graph.pypi.simple import DEFAULT_INDEX

    return settings.index_url(DEFAULT_INDEX)


def _outdated(args: argparse.Namespace) -> int:
    from build_graph.cli.outdated import manifest_of, outdated, registry_tags

    stack = load(args.manifest, releases.offline)  # a manifest with errors stops here
    lines = outdated(stack, manifest_of(stack), _index_url(), _index(args.manifest, True),
                     None if args.no_from_tags else registry_tags)
    print("\n".join(lines))
    return 0


def _plan(args: argparse.Namespace) -> int:
    stack = load(args.manifest)
    planned = plan(stack)
    rows: list[dict[str, object]] = [{
        "variant": p.spec.variant, "tier": p.spec.name, "key": p.key, "parent": p.parent_key,
        "platform": p.platform, "promoted_as": p.group_key,
        "image": p.image, "hash": p.content_hash, "human_tags": list(p.human_tags),
        "dockerfile": str(p.folder.dockerfile),
    } for p in planned]
    if not args.offline:
        from build_graph.registry.availability import describe_availability

        for row, where in zip(rows, describe_availability([p.image for p in planned]),
                              strict=True):
            row.update(where)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        for row in rows:
            print(f"{row['key']:<24} {row['image']}  {row.get('status', '')}")
    unasked = [row for row in rows if row.get("registry") == "error"]
    if unasked:  # a plan with guesses in it is not a plan: say so, exit 3
        print(f"error: {unasked[0]['registry_error']}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from build_graph.cli.doctor import doctor

    return doctor(args.manifest, args.tier, args.variant, args.fail_on_mismatch,
                  args.emit_json)


def _lock(args: argparse.Namespace) -> int:
    from build_graph.plan.lock import lock_path, read_lock
    from build_graph.stages import pin as pins

    stack = load(args.manifest)
    if args.update is None:
        pins.record_missing(stack)
    else:
        moved = pins.update(stack, args.update)
        for line in moved or [f"{lock_path(stack.manifest).name}: no pin moved"]:
            print(line)
    lock = read_lock(lock_path(stack.manifest))
    for name, pin in sorted({**lock.images, **lock.sources}.items()):
        print(f"{name} = {pin}")
    return 0


def _ci(args: argparse.Namespace) -> int:
    from build_graph.cli.ci_command import document

    return _emit(document(args), args.output)


def _init(args: argparse.Namespace) -> int:
    from build_graph.cli.init import init

    for line in init(args.folder, args.source):
        print(line)
    return 0


def _prune(args: argparse.Namespace) -> int:
    from build_graph.oci.retention import parse_age
    from build_graph.stages import prune

    try:
        older_than = parse_age(args.older_than)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if args.keep < 0:
        print(f"error: --keep {args.keep}: expected 0 or more builds", file=sys.stderr)
        return EXIT_CONFIG
    stack = load(args.manifest)
    pruning = prune.judge(plan(stack), prune.policy(stack.name, args.keep, older_than))
    print("\n".join(prune.lines(pruning, deleting=args.yes)), flush=True)
    if not args.yes:
        print(prune.summary(pruning, None))
        return 0
    try:
        print(prune.summary(pruning, prune.delete(pruning, lambda line: print(line,
                                                                              flush=True))))
    except DeletesRefused as exc:  # a policy, not an outage: one line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    return 0


def _sbom(args: argparse.Namespace) -> int:
    from build_graph.cli.artifacts import sbom

    text = sbom(load(args.manifest), args.tier)
    return _emit(text, args.output)


def _emit(text: str, output: Path | None) -> int:
    """A generated document: to stdout, or written to `output` (only when it changed)."""
    if output is None:
        sys.stdout.write(text)
    else:
        write_if_changed(output, text)
        print(f"wrote {output}")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m build_graph", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate images.toml and print the resolved stack")
    check.add_argument("--offline", action="store_true",
                       help="do not ask the package index about torch pairings the shipped "
                            "data lacks (they stay notes)")
    check.set_defaults(run=_check)
    show = sub.add_parser("plan", help="print each tier's hash tag and where it exists")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.add_argument("--offline", action="store_true",
                      help="do not ask the Docker daemon or the registry")
    show.set_defaults(run=_plan)
    doc = sub.add_parser("doctor", help="check this machine against a tier of the stack")
    doc.add_argument("--tier", required=True, help="the tier whose promises to check")
    doc.add_argument("--variant", help="the variant (default: the stack's default)")
    doc.add_argument("--fail-on-mismatch", action="store_true",
                     help="exit 1 when any check fails")
    doc.add_argument("--emit-json", type=Path, help="write the report to this file")
    doc.set_defaults(run=_doctor)
    lock = sub.add_parser("lock", help="pin every `from` image (digest) and git source "
                          "(commit) in the manifest's lock (images.lock)")
    lock.add_argument("--update", nargs="*", metavar="NAME",
                      help="re-resolve these `from` images or git sources (all when none "
                           "is named)")
    lock.set_defaults(run=_lock)
    ci = sub.add_parser("ci", help="write a CI config: GitHub Actions (a job per tier, "
                        "needs: following the tier graph) or Cloud Build (a step per tier)")
    engine = ci.add_mutually_exclusive_group(required=True)
    engine.add_argument("--github", action="store_true", help="GitHub Actions")
    engine.add_argument("--cloudbuild", action="store_true",
                        help="Google Cloud Build (Artifact Registry, gs:// compiler cache)")
    ci.add_argument("--output", type=Path,
                    help="write here (e.g. .github/workflows/images.yml, cloudbuild.yaml); "
                         "default stdout")
    ci.add_argument("--machine-type",
                    help=f"Cloud Build machine type (default: {DEFAULT_MACHINE})")
    ci.add_argument("--timeout-hours", type=float, dest="hours",
                    help="Cloud Build timeout, for a cold multi-hour compile (default: "
                         f"{DEFAULT_HOURS:g})")
    ci.add_argument("--service-account", metavar="projects/P/serviceAccounts/EMAIL",
                    help="Cloud Build: the build's service account (default: Cloud Build's)")
    ci.add_argument("--runs-on", nargs="+", default=["ubuntu-latest"], metavar="LABEL",
                    help="runner labels of the jobs (default: ubuntu-latest)")
    ci.add_argument("--gpu-runs-on", nargs="+", default=["self-hosted", "gpu"],
                    metavar="LABEL", help="runner labels of tiers whose verify needs a GPU "
                    "(default: self-hosted gpu)")
    ci.add_argument("--arm64-runs-on", nargs="+", metavar="LABEL",
                    help="GitHub: runner labels of linux/arm64 images' jobs (default: "
                         f"{' '.join(ARM64_RUNS_ON)}, GitHub's hosted Arm runner)")
    ci.add_argument("--arm64-gpu-runs-on", nargs="+", metavar="LABEL",
                    help="GitHub: runner labels of linux/arm64 images whose verify needs a "
                         "GPU (default: " + " ".join(ARM64_GPU_RUNS_ON) + "; GitHub hosts no "
                         "Arm runner with a GPU: a self-hosted Grace machine, say)")
    ci.add_argument("--setup", metavar="COMMAND",
                    help="the set-up command of a fresh runner (default: a .venv with "
                         "build-graph==<this version> from the runner's package index)")
    ci.add_argument("--login-secret", metavar="NAME",
                    help="GitHub: docker login to the stack's registry with this secret "
                         "(e.g. REGISTRY_KEY); default: the runner's own credentials")
    ci.add_argument("--login-user", metavar="USER",
                    help=f"GitHub: the user for --login-secret (default: {LOGIN_USER}, "
                         "an Artifact Registry service account key, base64)")
    ci.add_argument("--step-image", metavar="IMAGE",
                    help="Cloud Build: the image of every step (docker, python3, gcloud; "
                         f"default: {STEP_IMAGE})")
    ci.set_defaults(run=_ci)
    start = sub.add_parser("init", help="scaffold a stack in a team's repository: images.toml, "
                           "a thin dodo.py, templates/ for overrides, .gitignore")
    start.add_argument("folder", nargs="?", type=Path, default=Path(),
                       help="where (default: the current folder)")
    start.add_argument("--from", dest="source", required=True,
                       choices=["quickstart", "cuda", "from-source"],
                       help="quickstart: a CPU stack that builds anywhere; cuda: CUDA 13 "
                            "from PyPI wheels and CUDA ops compiled with ccache; "
                            "from-source: PyTorch compiled from source for your GPUs")
    start.set_defaults(run=_init)
    prune = sub.add_parser("prune", help="delete the hash-tag images (and their reports) "
                           "that nothing needs; a dry run unless --yes")
    prune.add_argument("--keep", type=int, default=3, metavar="N",
                       help="the newest N builds of each tier and platform always stay "
                            "(default 3)")
    prune.add_argument("--older-than", default="14d", metavar="AGE",
                       help="only images created longer ago than this go (default 14d; "
                            "e.g. 12h, 0s)")
    prune.add_argument("--yes", action="store_true", help="delete (default: only print)")
    prune.set_defaults(run=_prune)
    newer = sub.add_parser("outdated", help="newer torch (with its partners), pip and "
                           "setuptools on the package index, newer tags of the `from` "
                           "images, and the images.toml edit for each (exit 0)")
    newer.add_argument("--no-from-tags", action="store_true",
                       help="ask the package index only, not the `from` images' registries")
    newer.set_defaults(run=_outdated)
    bom = sub.add_parser("sbom", help="print (or save) a tier's SBOM, CycloneDX JSON, as "
                         "stored beside its hash tag's digest")
    bom.add_argument("tier", help="tier, or tier@variant (default: the stack's default)")
    bom.add_argument("--output", type=Path, help="write here instead of stdout")
    bom.set_defaults(run=_sbom)
    for command in (check, show, doc, lock, ci, prune, newer, bom):
        command.add_argument("--manifest", type=Path, default=Path(DEFAULT_MANIFEST),
                             help="the stack's images.toml (default: ./images.toml)")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return run_cli(lambda: int(args.run(args)))
