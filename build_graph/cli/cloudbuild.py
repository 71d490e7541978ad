"""`python -m build_graph ci --cloudbuild`: a Cloud Build config (cloudbuild.yaml) that runs
the stack on one Cloud Build machine, a step per (variant, tier).

How it maps the tier graph: the steps of one build share one machine, one /workspace (the
checkout, the virtualenv, build/) and one Docker daemon, and a stack takes one doit run at a
time (the run lock), so the steps run one after another in the order of the plan (parents
first), each `doit promote:<tier>`: Cloud Build's page shows each tier's log and time, and a
failed tier stops the build there. On GitHub (cli/ci.py) every tier is a job of its own on
its own runner and independent branches run at once; here one machine runs them in turn
(a bigger machine type makes each compile faster instead).

A tier built per platform (images.toml `platforms`) is a step per platform image, `doit
<tier>/<arch>` (its build, push and verify), then one step `doit promote:<tier>` (promote is
one task per tier: it writes the index). Cloud Build's workers are amd64: linux/arm64 images
build and verify there under QEMU user emulation, which a first step registers (binfmt_misc,
`tonistiigi/binfmt --install arm64`) when the stack has any.

Credentials are the build's service account's, never a secret in the config: the first step
has gcloud register itself as Docker's credential helper for the registry's host (Artifact
Registry), which the registry client reads from ~/.docker/config.json like any `docker
login`; the compiler cache's gs:// store is reached through Application Default
Credentials, which a Cloud Build step has from the metadata server. HOME (/builder/home) and
/workspace persist between steps. The YAML is written by hand: every scalar is a JSON string
(valid YAML), so no value can change the document's structure.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence

from build_graph.cli.ci import ci_jobs, is_arm64, setup_command
from build_graph.log import shown
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier

# The step image needs gcloud (Docker's credential helper), python3 and the docker CLI.
# The full gcloud image has all three (its Dockerfile copies docker's static CLI in,
# https://github.com/GoogleCloudPlatform/cloud-sdk-docker); `:stable` has no docker CLI.
# The first step checks the three and names what a --step-image lacks.
STEP_IMAGE = "gcr.io/google.com/cloudsdktool/google-cloud-cli:latest"
_TOOLS_CHECK = (
    'for tool in docker python3 gcloud; do command -v "$$tool" >/dev/null || '
    '{ echo "the step image has no $$tool: pass ci --step-image IMAGE with '
    'docker, python3 and gcloud" >&2; exit 1; }; done'
)
# Registers QEMU's aarch64 interpreter in the worker's kernel (binfmt_misc, with the F flag
# that lets it run inside containers); it needs --privileged. A tag, not a digest (no digest
# of it can be looked up from here): pin it as the step image is pinned.
BINFMT_IMAGE = "tonistiigi/binfmt:latest"
EMULATION_STEP = "register arm64 emulation"
DEFAULT_MACHINE = "E2_HIGHCPU_32"  # a cold PyTorch compile is CPU-bound for hours
DEFAULT_HOURS = 12.0  # a cold multi-arch compile plus the rest; Cloud Build allows 24 h


def step_id(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", key)


def registry_host(stack: Stack) -> str:
    """'us-docker.pkg.dev/team/gpu' -> 'us-docker.pkg.dev'."""
    return stack.registry.split("/", 1)[0]


def cloudbuild_config(
    stack: Stack,
    planned: Sequence[PlannedTier],
    manifest: str,
    *,
    machine_type: str = DEFAULT_MACHINE,
    hours: float = DEFAULT_HOURS,
    service_account: str | None = None,
    setup: str | None = None,
    step_image: str = STEP_IMAGE,
) -> str:
    q = json.dumps
    install = (setup or setup_command()).replace("$", "$$")  # Cloud Build substitutes $X
    host = registry_host(stack)
    lines = [
        f"# Written by `python -m build_graph ci --cloudbuild` from {shown(manifest)}; "
        "regenerate it",
        "# after adding or removing tiers. One step per (variant, tier), parents first, on",
        "# one machine; every step promotes its tier against the shared registry. A tier",
        "# built per platform: a step per platform image (build, push, verify), then one",
        "# step that promotes the tier (one index per human tag).",
        "steps:",
        f"  - id: {q('set up build-graph')}",
        f"    name: {q(step_image)}",
        f"    entrypoint: {q('bash')}",
        # The registry's credentials: the build's service account, through gcloud as
        # Docker's credential helper for the registry host (no key, no token in the config).
        f"    args: [{q('-c')}, "
        f"{q(f'{_TOOLS_CHECK} && {install} && gcloud auth configure-docker {host} --quiet')}]",
    ]
    previous = "set up build-graph"
    if any(is_arm64(tier) for tier in planned):
        # The worker is amd64: arm64 images build and verify under QEMU. After the set-up
        # step (which names a tool the step image lacks, docker among them), before any
        # image; it runs in the step image, whose docker CLI talks to the worker's daemon.
        lines += [
            f"  - id: {q(EMULATION_STEP)}",
            f"    name: {q(step_image)}",
            f"    entrypoint: {q('docker')}",
            "    args: ["
            + ", ".join(
                q(a) for a in ("run", "--privileged", "--rm", BINFMT_IMAGE, "--install", "arm64")
            )
            + "]",
            f"    # {BINFMT_IMAGE}: a tag, not a digest (none can be looked up offline); pin it",
            "    # (tonistiigi/binfmt@sha256:...) as the step image can be pinned.",
            f"    waitFor: [{q(previous)}]",
        ]
        previous = EMULATION_STEP
    for job in ci_jobs(planned):
        # Shell-quoted for bash, then `$` doubled: Cloud Build substitutes $NAME in args.
        quoted = shlex.quote(f"manifest={manifest}").replace("$", "$$")
        command = f".venv/bin/doit {quoted} {job.target}"
        lines += [
            f"  - id: {q(step_id(job.key))}",
            f"    name: {q(step_image)}",
            f"    entrypoint: {q('bash')}",
            f"    args: [{q('-c')}, {q(command)}]",
            f"    waitFor: [{q(previous)}]",  # one doit run per stack at a time
            f"    env: [{q('DOCKER_BUILDKIT=1')}]",
        ]
        previous = step_id(job.key)
    lines += [
        f"timeout: {q(f'{round(hours * 3600)}s')}",
        "options:",
        f"  machineType: {q(machine_type)}",
        f"  diskSizeGb: {q('500')}",  # CUDA images and the compiler cache
        # A user-managed service account needs its logs somewhere it may write.
        f"  logging: {q('CLOUD_LOGGING_ONLY')}",
    ]
    if service_account:
        lines.append(f"serviceAccount: {q(service_account)}")
    return "\n".join(lines) + "\n"


def cache_note(stack: Stack) -> str | None:
    """A line for stderr when the compiler cache would not outlive the build."""
    if stack.cache.url.startswith("gs://"):
        return None
    return (
        f"note: {stack.manifest}: [cache] url is {stack.cache.url}: every Cloud Build "
        'starts with a cold compiler cache; set url = "gs://BUCKET/ccache" (reached '
        "through the build's service account)"
    )
