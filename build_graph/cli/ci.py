"""`python -m build_graph ci --github`: a GitHub Actions workflow that runs the stack on
many machines, one job per (variant, tier), `needs:` following the tier graph.

A tier built for the build host only is one job, `doit promote:<tier>[@variant]`. A tier
built per platform (images.toml `platforms`) is one job per platform image, `doit
<tier>/<arch>` (that image's build, push and verify, on a runner of that platform: arm64
jobs on Arm runners), and one promote job for the tier, `doit promote:<tier>`, which waits
for every platform job of the tier and writes the index: promote is one task per tier (there
is no `promote:<tier>/arm64`). A platform job waits for its parent's and builder's image of
the same platform only: it builds on the parent's hash tag, which the parent's platform job
pushed, not on the parent's human tags.

Every job runs against the shared registry and compiler cache store named in images.toml;
the registry is the truth (README, "Records"), so a job finds its parents' images and
reports there and rebuilds nothing another job made. A tier whose verify needs a GPU (it
promises device code and verify.gpu = "required") runs on the GPU runner labels of its
platform. The YAML is written by hand: every scalar is a JSON string (valid YAML), so no
value can change the document's structure.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata

from build_graph.log import shown
from build_graph.manifest.expectation import expectation_for
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier, groups
from build_graph.stages import pipeline

SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # GitHub's rule for secret names
LOGIN_USER = "_json_key_base64"  # --login-user's default: an Artifact Registry key, base64
_LOGIN_USER = re.compile(r"[A-Za-z0-9_.@+-]+")
# Pinned to a commit, not a tag: a tag can be moved to other code (zizmor: unpinned-uses).
CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"  # v4.2.2
# Runner labels of linux/arm64 images' jobs: GitHub's hosted Arm runner builds and verifies
# them natively (no emulation). No hosted Arm runner has a GPU: an arm64 image whose verify
# needs one (a Grace host: GH200, GB200) goes to a self-hosted Arm GPU runner by default.
ARM64_RUNS_ON = ("ubuntu-24.04-arm",)
ARM64_GPU_RUNS_ON = ("self-hosted", "linux", "ARM64", "gpu")


def setup_command() -> str:
    """A fresh runner's set-up: a virtualenv with this very version of build-graph, from
    the runner's package index (a team's repository has no bootstrap script of ours; this
    repository's own CI passes `--setup scripts/bootstrap.sh`). Debian's python3 may lack
    venv: the step installs python3-venv then, where apt-get is there."""
    try:
        version = metadata.version("build-graph")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        version = None
    pin = f"build-graph=={version}" if version else "build-graph"
    # pyproject's requires-python: a runner's older python3 (Ubuntu 22.04: 3.10) is said
    # in one line, not as pip's "no matching distribution".
    return (
        "python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "
        '"build-graph needs Python >= 3.11 on the runner; python3 here is $(python3 -V '
        '2>&1)" >&2; exit 1; } && (python3 -m venv .venv || { apt-get update -q && '
        "apt-get install -y -q python3-venv && python3 -m venv .venv; }) && "
        f".venv/bin/pip install -q '{pin}'"
    )


@dataclass(frozen=True)
class Login:
    """`docker login` to the stack's registry with a GitHub secret: the secret reaches the
    step as an environment variable, never as text in `run:` (zizmor: template-injection)."""

    secret: str
    user: str

    def __post_init__(self) -> None:
        if not SECRET_NAME.fullmatch(self.secret):
            raise ValueError(
                f"--login-secret {self.secret!r}: a GitHub secret name is "
                "letters, digits and '_', not starting with a digit"
            )
        if not _LOGIN_USER.fullmatch(self.user):
            raise ValueError(
                f"--login-user {self.user!r}: letters, digits and _ . @ + - only "
                "(e.g. _json_key_base64 for an Artifact Registry key)"
            )


def job_id(key: str) -> str:
    """'runner@cu124' -> 'runner-cu124' (GitHub job ids: letters, digits, '-' and '_')."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", key)


def needs_gpu(stack: Stack, tier: PlannedTier) -> bool:
    want = expectation_for(stack.variant(tier.spec.variant), tier.spec.name)
    return want.wants_gpu and want.gpu_policy == "required"


@dataclass(frozen=True)
class CiJob:
    """One job (GitHub) or step (Cloud Build): what it runs and the jobs it waits for."""

    key: str  # a tier's key ('base', 'base/arm64'), or a per-platform tier's group key
    target: str  # the doit task it runs: 'promote:base', 'base/arm64'
    needs: tuple[str, ...]  # the keys of the jobs it waits for
    tier: PlannedTier  # its image; for a promote job, the group's first image
    what: str  # its step's name

    @property
    def per_platform(self) -> bool:
        """A platform image's job (build, push, verify): it runs on that platform's runner."""
        return self.tier.platform is not None and self.key == self.tier.key


def ci_jobs(planned: Sequence[PlannedTier]) -> list[CiJob]:
    """The jobs of a plan, parents first. A host-only tier: one job through promote. A tier
    built per platform: a job per platform image (`doit <tier>/<arch>`: through verify),
    waiting for its parent's and builder's images of that platform; then its promote job
    (`promote:<tier>`, one per tier: it writes the index), waiting for every platform job
    of the tier and for the parent's promote (promote:<tier> depends on it in doit too)."""
    by_key = {t.key: t for t in planned}
    by_group = groups(list(planned))
    jobs: list[CiJob] = []
    for tier in planned:
        after = tuple(dict.fromkeys(k for k in (tier.parent_key, tier.builder_key) if k))
        if tier.platform is None:
            jobs.append(
                CiJob(
                    tier.key,
                    f"{pipeline.final()}:{tier.key}",
                    after,
                    tier,
                    f"build, push, verify, promote {tier.key}",
                )
            )
            continue
        jobs.append(CiJob(tier.key, tier.key, after, tier, f"build, push, verify {tier.key}"))
        images = by_group[tier.group_key]
        if tier is images[-1]:  # plan order: a tier's platforms are next to each other
            parent = [by_key[tier.parent_key].group_key] if tier.parent_key else []
            jobs.append(
                CiJob(
                    tier.group_key,
                    f"{pipeline.final()}:{tier.group_key}",
                    (*(t.key for t in images), *parent),
                    images[0],
                    f"promote {tier.group_key} ({', '.join(str(t.platform) for t in images)})",
                )
            )
    return jobs


def is_arm64(tier: PlannedTier) -> bool:
    return tier.target is not None and tier.target.architecture == "arm64"


def github_workflow(
    stack: Stack,
    planned: Sequence[PlannedTier],
    manifest: str,
    runs_on: Sequence[str],
    gpu_runs_on: Sequence[str],
    *,
    setup: str | None = None,
    login: Login | None = None,
    arm64_runs_on: Sequence[str] = ARM64_RUNS_ON,
    arm64_gpu_runs_on: Sequence[str] = ARM64_GPU_RUNS_ON,
) -> str:
    q = json.dumps
    host = stack.registry.split("/", 1)[0]
    # The login's docker config lives in the job's temp folder, which the runner empties
    # after the job: on a self-hosted runner ~/.docker/config.json would keep the token
    # for every later job of any workflow (the docker CLI and build-graph read DOCKER_CONFIG).
    config_env = (
        []
        if login is None
        else ["        env:", f"          DOCKER_CONFIG: {q('${{ runner.temp }}/docker-config')}"]
    )
    login_steps = (
        []
        if login is None
        else [
            f"      - name: {q('log in to ' + host)}",
            "        env:",
            f"          DOCKER_CONFIG: {q('${{ runner.temp }}/docker-config')}",
            f"          REGISTRY_USER: {q(login.user)}",
            f"          REGISTRY_TOKEN: {q('${{ secrets.' + login.secret + ' }}')}",
            "        run: "
            + q(
                "printf '%s' \"$REGISTRY_TOKEN\" | docker login "
                f'{shlex.quote(host)} --username "$REGISTRY_USER" '
                "--password-stdin"
            ),
        ]
    )
    target = shlex.quote(f"manifest={manifest}")  # a path is shell text in `run:`
    lines = [
        f"# Written by `python -m build_graph ci --github` from {shown(manifest)}; regenerate it",
        "# after adding or removing tiers. One job per (variant, tier); needs: follow the",
        "# tier graph; every job promotes its tier against the shared registry. A tier built",
        "# per platform: a job per platform image (build, push, verify on that platform's",
        "# runner), then one job that promotes the tier (one index per human tag).",
        f"name: {q('images: ' + stack.name)}",
        '"on":',
        "  push:",
        f"    branches: [{q('main')}]",
        "  workflow_dispatch: {}",
        "# Jobs read the repository and nothing else. Registry credentials: the runner's own",
        "# (docker login) or the secret named by --login-secret; the compiler cache bucket:",
        "# Application Default Credentials.",
        "permissions:",
        f"  contents: {q('read')}",
        "jobs:",
    ]
    for job in ci_jobs(planned):
        tier = job.tier
        gpu = needs_gpu(stack, tier)
        if job.per_platform and is_arm64(tier):
            labels = arm64_gpu_runs_on if gpu else arm64_runs_on
        elif job.per_platform or tier.platform is None:
            labels = gpu_runs_on if gpu else runs_on
        else:
            # A per-platform tier's promote verifies nothing itself: its platform jobs
            # stored their reports (a CPU runner counts a GPU runner's), and it writes the
            # index from the registry alone.
            labels = runs_on
        after = [job_id(k) for k in job.needs]  # GitHub's schema refuses an empty needs: list
        lines += [
            f"  {job_id(job.key)}:",
            f"    name: {q(job.key)}",
            f"    runs-on: [{', '.join(q(label) for label in labels)}]",
            *([f"    needs: [{', '.join(q(n) for n in after)}]"] if after else []),
            "    steps:",
            *first_steps(setup, login_steps),
            f"      - name: {q(job.what)}",
            *config_env,
            f"        run: {q(f'.venv/bin/doit {target} {job.target}')}",
        ]
    return "\n".join(lines) + "\n"


def first_steps(setup: str | None, between: Sequence[str] = ()) -> list[str]:
    """Every job's first steps: the checkout, `between` (a login), build-graph set up."""
    q = json.dumps
    return [
        f"      - uses: {q(CHECKOUT)}  # v4.2.2",
        "        with:",
        # No token left in .git/config for later steps to find (zizmor: artipacked).
        "          persist-credentials: false",
        *between,
        f"      - name: {q('set up build-graph')}",
        f"        run: {q(setup or setup_command())}",
    ]
