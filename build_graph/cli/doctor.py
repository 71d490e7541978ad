"""`python -m build_graph doctor`: the verify probe and checks, run on this machine.

The CI-parity check for GPU runners and notebooks: proves the environment here matches a
tier of the pinned stack. Exit 0 when it matches (or without --fail-on-mismatch), 1 when a
check failed and --fail-on-mismatch was given, 2 for a bad manifest, tier or variant.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from build_graph.cli import options
from build_graph.errors import BuildFailed, ConfigError, ConfigIssue, did_you_mean
from build_graph.manifest.expectation import Expectation, expectation_for
from build_graph.run.stack import load_stack
from build_graph.verify import probe_output
from build_graph.verify.checks import evaluate
from build_graph.verify.device import gpu_code_paths
from build_graph.verify.probe_output import ProbeOutput
from build_graph.verify.request import PROBE, probe_request
from build_graph.verify.results import blocking, gpu_status, summary


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--tier", required=True, help="the tier whose promises to check")
    command.add_argument("--variant", help="the variant (default: the stack's default)")
    command.add_argument(
        "--fail-on-mismatch", action="store_true", help="exit 1 when any check fails"
    )
    command.add_argument("--emit-json", type=Path, help="write the report to this file")
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    return doctor(args.manifest, args.tier, args.variant, args.fail_on_mismatch, args.emit_json)


def run_local_probe(want: Expectation) -> ProbeOutput:
    """The probe in a fresh interpreter (this one), GPU checks included when a GPU is here."""
    result = subprocess.run(
        [sys.executable, str(PROBE), probe_request(want, gpu=True)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        raise BuildFailed(f"the probe failed here: {result.stderr.strip()[-1500:]}")
    try:
        data = probe_output.read(result.stdout)
    except ValueError:
        raise BuildFailed(f"the probe printed no report here: {result.stdout[-1500:]}") from None
    if data.get("gpu") is None:
        data["gpu_absent_reason"] = "no GPU: torch sees no CUDA device here"
    return data


def doctor(
    manifest: Path, tier: str, variant: str | None, fail_on_mismatch: bool, emit_json: Path | None
) -> int:
    stack = load_stack(manifest)
    name = variant or stack.default_variant
    names = [v.name for v in stack.variants]
    if name not in names:
        raise ConfigError(
            [
                ConfigIssue(
                    stack.manifest, "variants", f"no variant {name!r}{did_you_mean(name, names)}"
                )
            ]
        )
    spec = stack.variant(name)
    tiers = [t.name for t in spec.tiers]
    if tier not in tiers:
        raise ConfigError(
            [
                ConfigIssue(
                    stack.manifest,
                    "tiers",
                    f"no tier {tier!r}{did_you_mean(tier, tiers)}; known: {', '.join(tiers)}",
                )
            ]
        )
    want = expectation_for(spec, tier)
    probe = run_local_probe(want)
    results = evaluate(want, probe)
    stoppers = blocking(results, want)  # the same rule as verify: not checked never passes
    print(f"doctor: this machine against {tier} ({name}) of {stack.manifest}")
    for result in results:
        print(result.line())
    for line in gpu_code_paths(probe):
        print(f"  info {line}")
    verdict = "matches" if not stoppers else "does not match"
    print(
        f"{summary(results)}; GPU {gpu_status(results)} (policy {want.gpu_policy}); "
        f"this machine {verdict} {tier}"
    )
    if emit_json is not None:
        emit_json.write_text(
            json.dumps(
                {
                    "tier": tier,
                    "variant": name,
                    "passed": not stoppers,
                    "summary": summary(results),
                    "gpu": gpu_status(results),
                    "gpu_policy": want.gpu_policy,
                    "checks": [r.__dict__ for r in results],
                    "probe": probe,
                },
                indent=2,
            )
            + "\n"
        )
    return 1 if stoppers and fail_on_mismatch else 0
