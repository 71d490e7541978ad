"""`python -m build_graph check|plan|graph|size|doctor|lock|ci|init|prune|outdated|sbom|reproduce|
gate|keygen`: commands outside doit."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from build_graph.cli import graph, options, size
from build_graph.cli.ci import ARM64_GPU_RUNS_ON, ARM64_RUNS_ON, LOGIN_USER
from build_graph.cli.cloudbuild import DEFAULT_HOURS, DEFAULT_MACHINE, STEP_IMAGE
from build_graph.cli.handlers import (
    run_check,
    run_ci,
    run_doctor,
    run_gate,
    run_init,
    run_keygen,
    run_lock,
    run_outdated,
    run_plan,
    run_prune,
    run_reproduce,
    run_sbom,
)
from build_graph.errors import run_cli
from build_graph.interrupts import quiet_interrupts


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m build_graph", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate images.toml and print the resolved stack")
    check.add_argument(
        "--offline",
        action="store_true",
        help="do not ask the package index about torch pairings the shipped "
        "data lacks (they stay notes)",
    )
    check.set_defaults(run=run_check)
    show = sub.add_parser("plan", help="print each tier's hash tag and where it exists")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.add_argument(
        "--offline", action="store_true", help="do not ask the Docker daemon or the registry"
    )
    show.set_defaults(run=run_plan)
    graph.add(sub)
    size.add(sub)
    doc = sub.add_parser("doctor", help="check this machine against a tier of the stack")
    doc.add_argument("--tier", required=True, help="the tier whose promises to check")
    doc.add_argument("--variant", help="the variant (default: the stack's default)")
    doc.add_argument("--fail-on-mismatch", action="store_true", help="exit 1 when any check fails")
    doc.add_argument("--emit-json", type=Path, help="write the report to this file")
    doc.set_defaults(run=run_doctor)
    lock = sub.add_parser(
        "lock",
        help="pin every `from` image (digest) and git source (commit) in images.lock, and "
        "every tier's Python packages in images.pylock/",
    )
    lock.add_argument(
        "--update",
        nargs="*",
        metavar="NAME",
        help="move pins: `--update TIER [PACKAGE...]` moves a tier's Python packages (all of "
        "them without names) to the newest images.toml allows; `--update IMAGE|SOURCE...` "
        "re-resolves those `from` images or git sources; `--update` alone moves every pin",
    )
    lock.set_defaults(run=run_lock)
    ci = sub.add_parser(
        "ci",
        help="write a CI config: GitHub Actions (a job per tier, "
        "needs: following the tier graph) or Cloud Build (a step per tier)",
    )
    engine = ci.add_mutually_exclusive_group(required=True)
    engine.add_argument("--github", action="store_true", help="GitHub Actions")
    engine.add_argument(
        "--cloudbuild",
        action="store_true",
        help="Google Cloud Build (Artifact Registry, gs:// compiler cache)",
    )
    engine.add_argument(
        "--kyverno",
        action="store_true",
        help="a Kyverno ClusterPolicy (GKE): Pods run this stack's images only with a "
        "passing verify report signed by signing.public_keys",
    )
    ci.add_argument(
        "--output",
        type=Path,
        help="write here (e.g. .github/workflows/images.yml, cloudbuild.yaml); default stdout",
    )
    ci.add_argument("--machine-type", help=f"Cloud Build machine type (default: {DEFAULT_MACHINE})")
    ci.add_argument(
        "--timeout-hours",
        type=float,
        dest="hours",
        help=f"Cloud Build timeout, for a cold multi-hour compile (default: {DEFAULT_HOURS:g})",
    )
    ci.add_argument(
        "--service-account",
        metavar="projects/P/serviceAccounts/EMAIL",
        help="Cloud Build: the build's service account (default: Cloud Build's)",
    )
    ci.add_argument(
        "--runs-on",
        nargs="+",
        default=["ubuntu-latest"],
        metavar="LABEL",
        help="runner labels of the jobs (default: ubuntu-latest)",
    )
    ci.add_argument(
        "--gpu-runs-on",
        nargs="+",
        default=["self-hosted", "gpu"],
        metavar="LABEL",
        help="runner labels of tiers whose verify needs a GPU (default: self-hosted gpu)",
    )
    ci.add_argument(
        "--arm64-runs-on",
        nargs="+",
        metavar="LABEL",
        help="GitHub: runner labels of linux/arm64 images' jobs (default: "
        f"{' '.join(ARM64_RUNS_ON)}, GitHub's hosted Arm runner)",
    )
    ci.add_argument(
        "--arm64-gpu-runs-on",
        nargs="+",
        metavar="LABEL",
        help="GitHub: runner labels of linux/arm64 images whose verify needs a "
        "GPU (default: " + " ".join(ARM64_GPU_RUNS_ON) + "; GitHub hosts no "
        "Arm runner with a GPU: a self-hosted Grace machine, say)",
    )
    ci.add_argument(
        "--setup",
        metavar="COMMAND",
        help="the set-up command of a fresh runner (default: a .venv with "
        "build-graph==<this version> from the runner's package index)",
    )
    ci.add_argument(
        "--login-secret",
        metavar="NAME",
        help="GitHub: docker login to the stack's registry with this secret "
        "(e.g. REGISTRY_KEY); default: the runner's own credentials",
    )
    ci.add_argument(
        "--login-user",
        metavar="USER",
        help=f"GitHub: the user for --login-secret (default: {LOGIN_USER}, "
        "an Artifact Registry service account key, base64)",
    )
    ci.add_argument(
        "--step-image",
        metavar="IMAGE",
        help="Cloud Build: the image of every step (docker, python3, gcloud; "
        f"default: {STEP_IMAGE})",
    )
    ci.set_defaults(run=run_ci)
    start = sub.add_parser(
        "init",
        help="scaffold a stack in a team's repository: images.toml, "
        "a thin dodo.py, templates/ for overrides, .gitignore",
    )
    start.add_argument(
        "folder", nargs="?", type=Path, default=Path(), help="where (default: the current folder)"
    )
    start.add_argument(
        "--from",
        dest="source",
        required=True,
        choices=["quickstart", "cuda", "from-source"],
        help="quickstart: a CPU stack that builds anywhere; cuda: CUDA 13 "
        "from PyPI wheels and CUDA ops compiled with ccache; "
        "from-source: PyTorch compiled from source for your GPUs",
    )
    start.set_defaults(run=run_init)
    prune = sub.add_parser(
        "prune",
        help="delete the hash-tag images (and their reports) "
        "that nothing needs; a dry run unless --yes",
    )
    prune.add_argument(
        "--keep",
        type=int,
        default=3,
        metavar="N",
        help="the newest N builds of each tier and platform always stay (default 3)",
    )
    prune.add_argument(
        "--older-than",
        default="14d",
        metavar="AGE",
        help="only images created longer ago than this go (default 14d; e.g. 12h, 0s)",
    )
    prune.add_argument("--yes", action="store_true", help="delete (default: only print)")
    prune.set_defaults(run=run_prune)
    newer = sub.add_parser(
        "outdated",
        help="newer torch (with its partners), pip and "
        "setuptools on the package index, newer tags of the `from` "
        "images, and the images.toml edit for each; then the Python pins "
        "`lock --update` would move (exit 0)",
    )
    newer.add_argument(
        "--no-from-tags",
        action="store_true",
        help="ask the package index only, not the `from` images' registries",
    )
    newer.add_argument(
        "--no-python",
        action="store_true",
        help="leave out the Python pins (each tier's lock resolved again with every package "
        "free to move, against the builds' index: seconds to a minute per tier)",
    )
    newer.set_defaults(run=run_outdated)
    bom = sub.add_parser(
        "sbom",
        help="print (or save) a tier's SBOM, CycloneDX JSON, as "
        "stored beside its hash tag's digest",
    )
    bom.add_argument("tier", help="tier, or tier@variant (default: the stack's default)")
    bom.add_argument("--output", type=Path, help="write here instead of stdout")
    bom.set_defaults(run=run_sbom)
    again = sub.add_parser(
        "reproduce",
        help="rebuild a tier here from scratch (no build cache, nothing tagged) and compare "
        "it with the registry's image under its hash tag: the same digest (exit 0), or "
        "every file and config field that differs (exit 1)",
    )
    again.add_argument("tier", help="tier, or tier@variant (default: the stack's default)")
    again.add_argument(
        "--scratch",
        type=Path,
        help="where the two image archives are written while comparing (default: the "
        "tier's build folder; a multi-GB tier needs room for both)",
    )
    again.set_defaults(run=run_reproduce)
    gated = sub.add_parser(
        "gate",
        help="the step before a deploy: exit 0 only when the digest IMAGE names has a "
        "passing verify report, validly signed, for its tier's current promises",
    )
    gated.add_argument("image", help="an image reference: REGISTRY/REPO:TAG or REPO@sha256:...")
    gated.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="FILE|gcpkms://...",
        help="a PEM public key file or a Cloud KMS key version whose signatures count "
        "(repeatable; default: images.toml's signing.public_keys)",
    )
    gated.add_argument(
        "--current",
        action="store_true",
        help="also require the image to be what the tier's inputs and locks make now (its "
        "hash tag names it)",
    )
    gated.add_argument(
        "--print-ref",
        action="store_true",
        help="on success print only REGISTRY/REPO@DIGEST, the reference checked, for the "
        "deploy to use (the verdict goes to stderr)",
    )
    gated.set_defaults(run=run_gate)
    keys = sub.add_parser(
        "keygen",
        help="make a key pair for signed verify reports (ECDSA P-256, as cosign's): "
        "FOLDER/NAME.key and FOLDER/NAME.pub",
    )
    keys.add_argument("folder", type=Path, help="where to write them")
    keys.add_argument("--name", default="verify", help="file name stem (default: verify)")
    keys.set_defaults(run=run_keygen)
    for command in (check, show, doc, lock, ci, prune, newer, bom, again, gated):
        options.manifest(command)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    quiet_interrupts()  # Ctrl-C or SIGTERM: one line, and `finally` blocks run (scratch files)
    return run_cli(lambda: int(args.run(args)))
