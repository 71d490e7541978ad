"""`python -m build_graph ci --github|--cloudbuild|--kyverno`: the engine's options checked,
its document made. An option of another engine is refused, not silently dropped."""

from __future__ import annotations

import argparse
import sys

from build_graph.cli import cloudbuild
from build_graph.cli.ci import (
    ARM64_GPU_RUNS_ON,
    ARM64_RUNS_ON,
    LOGIN_USER,
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
}


def document(args: argparse.Namespace) -> str:
    """The workflow or the Cloud Build config for `args.manifest`."""
    _refuse_the_other_engines(args)
    stack = load_stack(args.manifest)
    if args.kyverno:
        from build_graph.cli.kyverno import cluster_policy

        return cluster_policy(stack)
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
