"""Image builds through BuildKit: `docker buildx build --load`, or Docker's own BuildKit.

BuildKit gives builds secret mounts (credentials reach a RUN step as a file, never an image
layer, history or config) and cache mounts (apt and pip downloads kept between builds).
docker-py speaks only the classic builder, so builds go through a docker CLI: `buildx`
where it is installed, otherwise a CLI whose `build` takes `--secret` under
DOCKER_BUILDKIT=1 (Debian's docker.io 20.10 does; a 28.x client without buildx does not).
Without either, the classic builder through docker-py remains, with one warning line: the
Dockerfile it is sent has the `--mount` options taken out of its RUN lines (no caches, no
secrets; a setting with a credential is then refused). BUILD_GRAPH_BUILDER=classic forces
that path (tests, hosts with a broken BuildKit).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from functools import cache
from pathlib import Path

from build_graph.docker import cli_memory, connection, daemon, oci_layout
from build_graph.docker.build_request import Archive, BuildRequest, Layout, Loaded
from build_graph.docker.connection import check_context, endpoint
from build_graph.errors import BuildFailed, DaemonUnreachable, EnvironmentProblem, NameTaken
from build_graph.log import last_output, log
from build_graph.oci import archive as oci_archive
from build_graph.oci.compression import Compression
from build_graph.oci.platforms import emulation_hint

_CANDIDATES = ("docker", "/usr/bin/docker")


@cache
def cli() -> tuple[str, ...] | None:
    """The command line that builds with BuildKit here (without its arguments), or None when
    no docker CLI is installed at all (the classic builder then builds).

    Only a CLI the daemon accepts: one whose API version is at least the daemon's floor
    (Docker 29.0-29.2 refuse clients below 1.44, so Debian 12's 20.10 at /usr/bin/docker,
    API 1.41, is passed over there). EnvironmentProblem, naming what to install, when CLIs
    are installed but the daemon refuses every one."""
    if os.environ.get("BUILD_GRAPH_BUILDER") == "classic":
        return None
    check_context()  # as every CLI run does: said before any build, remembered answers or not
    found = [
        p for p in dict.fromkeys(shutil.which(c) or c for c in _CANDIDATES) if Path(p).is_file()
    ]
    floor = _daemon_floor()
    usable = [exe for exe in found if floor is None or _client_api(exe) >= floor]
    for exe in usable:
        if buildx_version(exe) is not None:
            return (exe, "buildx", "build", "--load")
    for exe in usable:
        if "--secret" in run([exe, "build", "--help"]).stdout:
            return (exe, "build")
    if found and floor is not None and len(usable) < len(found):
        refused = ", ".join(
            f"{exe} (API {'.'.join(map(str, _client_api(exe)))})"
            for exe in found
            if exe not in usable
        )
        raise EnvironmentProblem(
            f"the Docker daemon accepts API {'.'.join(map(str, floor))} or newer and no docker "
            f"CLI here that speaks it builds with BuildKit (refused: {refused}); install the "
            "buildx plugin (Debian: docker-buildx; Docker's packages: docker-buildx-plugin) "
            "and a current docker CLI"
        )
    return None


@cache
def buildx_version(exe: str) -> str | None:
    """What `<exe> buildx version` says ('github.com/docker/buildx v0.29.1 a32761a...'), asked
    once per process and remembered while the binaries it comes from are unchanged
    (cli_memory.py); None when that CLI has no buildx."""

    def ask() -> str | None:
        ran = run([exe, "buildx", "version"])
        return (ran.stdout.strip() or "(it did not say)") if ran.returncode == 0 else None

    return cli_memory.remembered("buildx", cli_memory.buildx_key(exe), ask)


def _daemon_floor() -> tuple[int, ...] | None:
    """The oldest API version the daemon accepts; None when no daemon answers (the build
    then fails on that, in its own words)."""
    try:
        return _version(connection.daemon_version().min_api)
    except DaemonUnreachable:
        return None


@cache
def _client_api(exe: str) -> tuple[int, ...]:
    """The API version a docker CLI speaks at most; (0,) when it cannot say. Printed even
    when the daemon then refuses that CLI (it exits 1 after the client's part). Remembered
    while the binary, its setting and the daemon are unchanged (cli_memory.py)."""

    def ask() -> str | None:
        out = run([exe, "version", "--format", "{{.Client.APIVersion}}"]).stdout.strip()
        said = out.splitlines()[0] if out else ""
        return said if _version(said) else None

    try:
        version = connection.daemon_version()
        key = cli_memory.api_key(exe, version.engine, version.min_api)
    except DaemonUnreachable:
        key = None
    return _version(cli_memory.remembered("api", key, ask) or "") or (0,)


def _version(text: str) -> tuple[int, ...] | None:
    """'1.44' -> (1, 44); None for anything else."""
    parts = text.strip().split(".")
    if not text.strip() or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def run(command: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """A docker CLI command against our daemon; a CLI that cannot start or answer in time
    reads as exit 1 with the reason on stderr."""
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=False, env=cli_env()
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(command, 1, "", str(exc))


def cli_env() -> dict[str, str]:
    """The CLI's environment: BuildKit on, and the daemon docker-py talks to named as
    DOCKER_HOST (which the CLI follows over any context), so both reach the same one."""
    check_context()
    # BUILDX_BUILDER could pick a buildx builder on another machine than DOCKER_HOST.
    env = {k: v for k, v in os.environ.items() if k not in ("DOCKER_CONTEXT", "BUILDX_BUILDER")}
    return {**env, "DOCKER_BUILDKIT": "1", "DOCKER_HOST": endpoint()}


def build(command: tuple[str, ...], request: BuildRequest) -> str:
    """Build `request` with BuildKit; returns the image id (for an `Archive`: the image
    manifest's digest).

    Secrets are written to files only this user can read, in a folder removed afterwards,
    and reach the build as `--secret id=NAME,src=FILE`. The tag is applied only when the
    whole build succeeded; a failure raises BuildFailed with the output's last lines.

    A `Layout` or an `Archive` (see reproducible_here): BuildKit's OCI exporter clamps every
    file's time in the new layers to SOURCE_DATE_EPOCH (`rewrite-timestamp`, which the
    docker driver's own image exporter refuses: "conflicts with unpack"); an image
    `docker load`ed from a layout keeps its manifest on the containerd store, so the digest
    pushed is the one built. No provenance attestation: it records when the build ran.
    """
    started = time.monotonic()
    tag, name, platform, network = request.tag, request.name, request.platform, request.network
    output = request.output
    shown = f" --platform={platform}" if platform else ""
    log(f"+ docker build (BuildKit) --network={network}{shown} -t {tag} (tier {name})")
    with tempfile.TemporaryDirectory(prefix="build-graph-") as tmp:
        folder = Path(tmp)
        args = [f"--build-arg={k}={v}" for k, v in sorted(request.buildargs.items())]
        args += [f"--platform={platform}"] if platform else []
        if isinstance(output, Loaded):
            args += ["-t", tag]
        else:
            command = tuple(part for part in command if part != "--load")
            args += _exported(output, tag, request.compression)
        if isinstance(output, Layout):
            oci_layout.seed(output.path, output.parent)
        for secret, value in request.secrets.items():
            path = folder / secret
            path.touch(mode=0o600)
            path.write_text(value)
            args.append(f"--secret=id={secret},src={path}")
        tar = folder / "context.tar"
        with tar.open("wb") as out:
            shutil.copyfileobj(request.context, out)
        iid = folder / "iid"
        full = [
            *command,
            f"--network={network}",
            "--progress=plain",
            f"--iidfile={iid}",
            *args,
            "-",
        ]
        since = time.time()
        try:
            tail = _stream(full, tar, name, offline=network == "none")
        except BuildFailed as exc:
            if f'image "{tag}": already exists' in str(exc):
                raise NameTaken(f"{tag}: another build on this daemon named it first") from None
            raise
        if isinstance(output, Archive):
            return str(oci_archive.read_image(output.path, platform).digest)
        if isinstance(output, Layout):
            entry = oci_layout.built(output.path)
            oci_layout.load(command[0], cli_env(), output.path, entry, since, name)
            oci_layout.keep_only(output.path, entry)
            log(f"[{name}] built {tag} in {time.monotonic() - started:.1f}s (reproducible)")
            return str(connection.client().images.get(tag).id)
        if not iid.is_file():
            raise BuildFailed(
                f"build of {name} failed (BuildKit); {last_output(tail)}"
                f"{emulation_hint(chr(10).join(tail))}"
            )
        image_id = iid.read_text().strip()
    log(f"[{name}] built {tag} in {time.monotonic() - started:.1f}s")
    return image_id


def _exported(output: Layout | Archive, tag: str, compression: Compression) -> list[str]:
    """The OCI exporter's arguments: into a layout folder, or an archive built uncached;
    `compression` applies to the layers this build makes (oci/compression.py)."""
    # buildx reads --output as CSV: a field with a comma or quote is quoted
    dest = f'"dest={str(output.path).replace(chr(34), chr(34) * 2)}"'
    form = ",tar=false" if isinstance(output, Layout) else ""
    return [
        f"--output=type=oci,{dest}{form},name={tag},rewrite-timestamp=true"
        + compression.exporter_fields(),
        "--provenance=false",
        "--sbom=false",
        *(["--no-cache"] if isinstance(output, Archive) else []),
    ]


def reproducible_here(command: tuple[str, ...] | None) -> bool:
    """Whether builds here come out the same on every machine: buildx (its OCI exporter
    rewrites timestamps) and a daemon on the containerd image store (a loaded archive keeps
    its manifest; the classic store unpacks it and compresses its layers again on push).
    Elsewhere builds still work, with an image that differs build to build."""
    return command is not None and command[1:2] == ("buildx",) and daemon.containerd_store()


def _stream(command: list[str], tar: Path, name: str, offline: bool = False) -> list[str]:
    """Run the build with the tar on stdin, logging each line; the last lines, for errors."""
    tail: list[str] = []
    with (
        tar.open("rb") as stdin,
        subprocess.Popen(
            command,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=cli_env(),
        ) as proc,
    ):
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                line = line.rstrip()
                log(f"[{name}]   {line}")
                tail = [*tail[-200:], line]  # BuildKit's error block names the step
        except KeyboardInterrupt:  # the CLI cancels the build on SIGINT, as in a terminal
            proc.send_signal(signal.SIGINT)
            raise
    if proc.returncode != 0:
        raise BuildFailed(
            f"build of {name} failed (BuildKit, exit {proc.returncode}); "
            f"{last_output(tail)}{emulation_hint(chr(10).join(tail))}"
            f"{offline_hint(name, tail) if offline else ''}"
        )
    return tail


def failed_step(tail: list[str]) -> str | None:
    """The step BuildKit says failed, as the Dockerfile has it (`RUN curl ...`, line 12),
    from its error block ('Dockerfile:12', then the instruction's lines marked '>>>': the
    first is where it starts); None when the output names none."""
    marks = [i for i, t in enumerate(tail) if re.match(r"^Dockerfile:\d+$", t.strip())]
    block = tail[marks[-1] :] if marks else tail
    line = next((t for t in block if re.match(r"^\s*\d+ \| >>> ", t)), None)
    if line is None:
        return None
    step = line.split(">>> ", 1)[1].strip()
    step = step if len(step) <= 120 else step[:117] + "..."
    return f"`{step}`" + (f" ({block[0].strip()})" if marks else "")


def offline_hint(name: str, tail: list[str]) -> str:
    """What a hermetic build's failure says: which step, and that it had no network."""
    step = failed_step(tail)
    said = f"step {step} of {name}" if step else f"a step of {name}"
    return (
        f"\n{said} ran with no network ([stack] hermetic = true): a RUN step installs only the "
        "files the tier's locks name (handed to it in the build context); one that fetches "
        "anything else fails here"
    )
