"""`python -m build_graph ci --github|--cloudbuild`: the engine's options checked, its
document made. An option of the other engine is refused, not silently dropped."""

from __future__ import annotations

import argparse
import sys

from build_graph.cli import cloudbuild
from build_graph.cli.ci import Login, github_workflow
from build_graph.errors import EXIT_CONFIG, BuildGraphError
from build_graph.manifest.load import load
from build_graph.plan.plan import plan


class CiOptionError(BuildGraphError):
    exit_code = EXIT_CONFIG


def document(args: argparse.Namespace) -> str:
    """The workflow or the Cloud Build config for `args.manifest`."""
    _refuse_the_other_engines(args)
    stack = load(args.manifest)
    if args.cloudbuild:
        text = cloudbuild.cloudbuild_config(
            stack, plan(stack), str(args.manifest), machine_type=args.machine_type,
            hours=args.timeout_hours, service_account=args.service_account, setup=args.setup,
            step_image=args.step_image)
        note = cloudbuild.cache_note(stack)
        if note:
            print(note, file=sys.stderr)
        return text
    try:
        login = Login(args.login_secret, args.login_user) if args.login_secret else None
    except ValueError as exc:
        raise CiOptionError(str(exc)) from None
    return github_workflow(stack, plan(stack), str(args.manifest), args.runs_on,
                           args.gpu_runs_on, setup=args.setup, login=login)


def _refuse_the_other_engines(args: argparse.Namespace) -> None:
    given = {"--login-secret": args.login_secret is not None,
             "--login-user": args.login_user != "_json_key_base64",
             "--step-image": args.step_image != cloudbuild.STEP_IMAGE,
             "--machine-type": args.machine_type != cloudbuild.DEFAULT_MACHINE,
             "--timeout-hours": args.timeout_hours != cloudbuild.DEFAULT_HOURS,
             "--service-account": args.service_account is not None}
    other = ("--step-image", "--machine-type", "--timeout-hours", "--service-account") \
        if args.github else ("--login-secret", "--login-user")
    wrong = [name for name in other if given[name]]
    if wrong:
        engine, them = ("--github", "Cloud Build") if args.github else ("--cloudbuild", "GitHub")
        raise CiOptionError(f"{', '.join(wrong)}: an option for {them}, not {engine}; "
                            "drop it or write the other engine's config")
