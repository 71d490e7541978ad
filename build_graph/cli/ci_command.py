"""`python -m build_graph ci --github|--cloudbuild|--kyverno`: its options, the engine's
checked, its document made. An option of another engine is refused, not silently dropped."""

from __future__ import annotations

import argparse
import sys

from build_graph.cli import cloudbuild, options
from build_graph.cli.ci import (
    ARM64_GPU_RUNS_ON,
    ARM64_RUNS_ON,
    LOGIN_USER,
    SECRET_NAME,
    Login,
    ci_jobs,
    github_workflow,
    job_id,
)
from build_graph.errors import ConfigError, ConfigIssue, OptionError
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier, plan
from build_graph.run.stack import load_stack

# Options of one engine only: flag -> argparse dest (for Cloud Build also the keyword of
# cloudbuild_config, whose own defaults apply to what is not given); None: not given.
_CLOUD_BUILD = {
    "--step-image": "step_image",
    "--machine-type": "machine_type",
    "--timeout-hours": "hours",
    "--service-account": "service_account",
}
_GITHUB = {
    "--login-secret": "login_secret",
    "--login-user": "login_user",
    "--arm64-runs-on": "arm64_runs_on",
    "--arm64-gpu-runs-on": "arm64_gpu_runs_on",
    "--updates": "updates",
    "--updates-token-secret": "updates_token_secret",
}


def add_options(command: argparse.ArgumentParser) -> None:
    engine = command.add_mutually_exclusive_group(required=True)
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
    options.output(
        command,
        "write here (e.g. .github/workflows/images.yml, cloudbuild.yaml); default stdout",
    )
    command.add_argument(
        "--machine-type", help=f"Cloud Build machine type (default: {cloudbuild.DEFAULT_MACHINE})"
    )
    command.add_argument(
        "--timeout-hours",
        type=float,
        dest="hours",
        help="Cloud Build timeout, for a cold multi-hour compile (default: "
        f"{cloudbuild.DEFAULT_HOURS:g})",
    )
    command.add_argument(
        "--service-account",
        metavar="projects/P/serviceAccounts/EMAIL",
        help="Cloud Build: the build's service account (default: Cloud Build's)",
    )
    _runners(command)
    command.add_argument(
        "--setup",
        metavar="COMMAND",
        help="the set-up command of a fresh runner (default: a .venv with "
        "build-graph==<this version> from the runner's package index)",
    )
    command.add_argument(
        "--login-secret",
        metavar="NAME",
        help="GitHub: docker login to the stack's registry with this secret "
        "(e.g. REGISTRY_KEY); default: the runner's own credentials",
    )
    command.add_argument(
        "--login-user",
        metavar="USER",
        help=f"GitHub: the user for --login-secret (default: {LOGIN_USER}, "
        "an Artifact Registry service account key, base64)",
    )
    command.add_argument(
        "--step-image",
        metavar="IMAGE",
        help="Cloud Build: the image of every step (docker, python3, gcloud; "
        f"default: {cloudbuild.STEP_IMAGE})",
    )
    command.add_argument(
        "--updates",
        action="store_const",
        const=True,
        help="GitHub: instead, a weekly workflow that moves every pin (`lock --update`) and "
        "proposes the moves as one pull request",
    )
    command.add_argument(
        "--updates-token-secret",
        metavar="NAME",
        help="GitHub, --updates: the secret whose token opens the pull request (default: "
        "GITHUB_TOKEN, whose pull requests start no other workflow)",
    )
    options.manifest(command)


def _runners(command: argparse.ArgumentParser) -> None:
    """The runner labels of the jobs, per platform and GPU."""
    command.add_argument(
        "--runs-on",
        nargs="+",
        default=["ubuntu-latest"],
        metavar="LABEL",
        help="runner labels of the jobs (default: ubuntu-latest)",
    )
    command.add_argument(
        "--gpu-runs-on",
        nargs="+",
        default=["self-hosted", "gpu"],
        metavar="LABEL",
        help="runner labels of tiers whose verify needs a GPU (default: self-hosted gpu)",
    )
    command.add_argument(
        "--arm64-runs-on",
        nargs="+",
        metavar="LABEL",
        help="GitHub: runner labels of linux/arm64 images' jobs (default: "
        f"{' '.join(ARM64_RUNS_ON)}, GitHub's hosted Arm runner)",
    )
    command.add_argument(
        "--arm64-gpu-runs-on",
        nargs="+",
        metavar="LABEL",
        help="GitHub: runner labels of linux/arm64 images whose verify needs a "
        "GPU (default: " + " ".join(ARM64_GPU_RUNS_ON) + "; GitHub hosts no "
        "Arm runner with a GPU: a self-hosted Grace machine, say)",
    )


def run(args: argparse.Namespace) -> int:
    return options.emit(document(args), args.output)


def document(args: argparse.Namespace) -> str:
    """The workflow or the Cloud Build config for `args.manifest`."""
    _refuse_the_other_engines(args)
    stack = load_stack(args.manifest)
    if args.kyverno:
        from build_graph.cli.kyverno import cluster_policy

        return cluster_policy(stack)
    if args.updates_token_secret and not args.updates:
        raise OptionError("--updates-token-secret: an option of --updates; add it or drop this")
    if args.updates:
        from build_graph.cli.ci_updates import updates_workflow

        secret = args.updates_token_secret or "GITHUB_TOKEN"
        if not SECRET_NAME.fullmatch(secret):
            raise OptionError(f"--updates-token-secret {secret!r}: not a GitHub secret name")
        return updates_workflow(
            stack, str(args.manifest), args.runs_on, setup=args.setup, token_secret=secret
        )
    planned = plan(stack)
    _refuse_twin_ids(stack, planned)
    if args.cloudbuild:
        given = {
            dest: getattr(args, dest)
            for dest in _CLOUD_BUILD.values()
            if getattr(args, dest) is not None
        }
        text = cloudbuild.cloudbuild_config(
            stack, planned, str(args.manifest), setup=args.setup, **given
        )
        note = cloudbuild.cache_note(stack)
        if note:
            print(note, file=sys.stderr)
        return text
    try:
        login = (
            Login(args.login_secret, args.login_user or LOGIN_USER) if args.login_secret else None
        )
    except ValueError as exc:
        raise OptionError(str(exc)) from None
    return github_workflow(
        stack,
        planned,
        str(args.manifest),
        args.runs_on,
        args.gpu_runs_on,
        setup=args.setup,
        login=login,
        arm64_runs_on=args.arm64_runs_on or ARM64_RUNS_ON,
        arm64_gpu_runs_on=args.arm64_gpu_runs_on or ARM64_GPU_RUNS_ON,
    )


def _refuse_the_other_engines(args: argparse.Namespace) -> None:
    other = _CLOUD_BUILD if args.github else _GITHUB if args.cloudbuild else _CLOUD_BUILD | _GITHUB
    wrong = [flag for flag, dest in other.items() if getattr(args, dest) is not None]
    if wrong:
        engine, them = (
            ("--github", "Cloud Build")
            if args.github
            else ("--cloudbuild", "GitHub")
            if args.cloudbuild
            else ("--kyverno", "a CI engine")
        )
        raise OptionError(
            f"{', '.join(wrong)}: an option for {them}, not {engine}; "
            "drop it or write the other engine's config"
        )


def _refuse_twin_ids(stack: Stack, planned: list[PlannedTier]) -> None:
    """Two jobs whose ids come out the same ('base/arm64' and a tier named 'base-arm64')
    would make one file with a job twice: refused, naming both."""
    seen: dict[str, str] = {}
    for job in ci_jobs(planned):
        taken = seen.setdefault(job_id(job.key), job.key)
        if taken != job.key:
            raise ConfigError(
                [
                    ConfigIssue(
                        stack.manifest,
                        "tiers",
                        f"{taken!r} and "
                        f"{job.key!r} would both be the CI job "
                        f"{job_id(job.key)!r}; rename one of the tiers",
                    )
                ]
            )
