"""BuildKit's own checks of each Dockerfile a run will build, for pre-flight
(stages/preflight.py): `docker buildx build --call check` (parse errors, unknown
instructions, and the rules a Dockerfile makes errors with `# check=error=true`); a parent
tier not built yet is checked against its chain's root image, since the check resolves every
FROM. Warnings are printed, not failed on.

A Dockerfile that passed is remembered on this machine (layout.machine_cache), keyed by
what decides the answer: the text checked, the platform, what buildx says its version is,
the builder it uses (`docker buildx use`), and the daemon's engine version, API floor and
machine (the default builder is the daemon's BuildKit, which runs the Dockerfile frontend);
the same again print the same notes and ask nothing. Only passes are kept: a Dockerfile
that fails, or that could not be checked, is asked again every run, and so is one whose
`# syntax=` names a frontend by a tag (its rules may move under the same text). What a
pass cannot see is a moved `from` tag whose new image would change a rule's answer (a
variable it defines): the build itself checks again, and `# check=error=true` fails it
there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path

from build_graph import layout
from build_graph.docker import buildkit
from build_graph.docker.connection import daemon_info, daemon_version
from build_graph.errors import BuildGraphError
from build_graph.fs import write_if_changed
from build_graph.log import progress
from build_graph.plan.plan import PlannedTier

_KEPT = "dockerfile-checks"
# A parser directive naming a frontend image by a tag that may move (`# syntax=docker/
# dockerfile:1`): its rules can change under the same text, so such a pass is not kept.
_MOVING_FRONTEND = re.compile(r"^#\s*syntax\s*=\s*(?!\S*@sha256:)\S+", re.IGNORECASE | re.MULTILINE)


def failures(pending: list[PlannedTier]) -> list[str]:
    """One line per Dockerfile among `pending` that BuildKit refuses, naming its template."""
    try:
        machine = daemon_info().architecture
        version = daemon_version()
    except BuildGraphError:  # the build says so, in its one line naming the daemon
        return []
    command = buildkit.cli()
    if command is None or "buildx" not in command:
        progress("note: pre-flight: Dockerfile checks not run (no docker buildx here)")
        return []
    build_command = list(command[: command.index("buildx") + 2])
    buildx = buildkit.buildx_version(command[0]) or "?"
    if not _has_checks(build_command, buildx):
        progress(
            "note: pre-flight: Dockerfile checks not run (docker buildx before 0.15 has no --call)"
        )
        return []
    check = [*build_command, "--call", "check"]
    images = {image.image for image in pending}
    asked = "\n".join([buildx, _builder(), version.engine, version.min_api, str(machine)])
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=4) as pool:
        empty = Path(tmp) / "context"
        empty.mkdir()
        jobs = [
            pool.submit(_check_one, check, image, images, Path(tmp), empty, asked)
            for image in pending
        ]
        return [line for job in jobs if (line := job.result()) is not None]


def _has_checks(build_command: list[str], version: str) -> bool:
    """Whether this buildx's build takes `--call` (0.15 and later), read from its help once
    per buildx version on this machine."""
    kept = layout.machine_cache(_KEPT) / f"calls-{_digest(version)}"
    with suppress(OSError, ValueError):
        said = kept.read_text()
        if said in ("yes", "no"):
            return said == "yes"
    ran = buildkit.run([*build_command, "--help"])
    has = "--call" in ran.stdout
    if ran.returncode == 0:  # a CLI that could not answer is asked again next run
        with suppress(OSError):
            write_if_changed(kept, "yes" if has else "no")
    return has


def _check_one(
    check: list[str], image: PlannedTier, pending: set[str], tmp: Path, empty: Path, asked: str
) -> str | None:
    """None when the Dockerfile passes (warnings are notes), or BuildKit could not check it
    (said, not failed: only what BuildKit says of the Dockerfile itself fails the run)."""
    text, stand_in = image.dockerfile, image.base_image in pending
    if stand_in:  # not built yet: its chain's root stands in for it
        text = text.replace(image.base_image, image.root_image)
    key = _digest("\n".join([asked, str(image.platform), text]))
    kept = layout.machine_cache(_KEPT) / f"{key}.json"
    remembered = _passed(kept)
    if remembered is not None:
        _notes(image, remembered)
        return None
    dockerfile = tmp / f"{image.key.replace('/', '-')}.Dockerfile"
    dockerfile.write_text(text)
    platform = ["--platform", image.platform] if image.platform else []
    # a CLI that cannot start or answer reads as exit 1, its reason said below as a note
    ran = buildkit.run([*check, *platform, "-f", str(dockerfile), str(empty)], timeout=120)
    output = ran.stdout + ran.stderr
    lines = output.splitlines()
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    warnings = [line.removeprefix("WARNING: ") for line in lines if line.startswith("WARNING:")]
    if ran.returncode == 0 or (not errors and "Check complete" in output):
        _notes(image, warnings)
        if not _MOVING_FRONTEND.search(text):
            with suppress(OSError):
                write_if_changed(kept, json.dumps({"warnings": warnings}))
        return None
    about_the_file = (
        any(e.startswith(("dockerfile parse error", "lint violation")) for e in errors)
        or f"{dockerfile}:" in output
    )
    unresolved = "failed to resolve source metadata" in output  # a FROM not reachable here
    # A rule about variables may be the stand-in's doing (the parent's ENV is not there).
    if not about_the_file or unresolved or (stand_in and "UndefinedVar" in output):
        progress(f"note: {image.key}: Dockerfile checks not run: {(errors or lines or ['?'])[-1]}")
        return None
    said = "; ".join([*errors[:1], *warnings[:2]])
    return (
        f"{image.key}: its Dockerfile fails BuildKit's checks: {said}; fix the template "
        f"{image.spec.template} (lines as in {image.folder.dockerfile})"
    )


def _builder() -> str:
    """Which buildx builder builds here: the one `docker buildx use` chose (its record in
    the CLI's config folder; BUILDX_BUILDER is not passed on: buildkit.cli_env), '' for the
    default, the daemon's own BuildKit. A docker-container builder has a BuildKit of its
    own, upgraded apart from the daemon."""
    folder = os.environ.get("DOCKER_CONFIG") or str(Path.home() / ".docker")
    with suppress(OSError, ValueError):
        return (Path(folder) / "buildx" / "current").read_text()
    return ""


def _passed(kept: Path) -> list[str] | None:
    """The warnings of a remembered pass; None when there is none (or it is unreadable)."""
    with suppress(OSError, ValueError, RecursionError):
        found = json.loads(kept.read_text())
        warnings = found.get("warnings") if isinstance(found, dict) else None
        if isinstance(warnings, list) and all(isinstance(w, str) for w in warnings):
            return warnings
    return None


def _notes(image: PlannedTier, warnings: list[str]) -> None:
    for warning in warnings:
        progress(f"note: {image.key}: Dockerfile check: {warning}")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
