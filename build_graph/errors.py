"""One error hierarchy, and the one place where errors become a message and an exit code."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

# Exit codes are part of the CLI contract: scripts branch on them.
EXIT_CONFIG = 2
EXIT_ENVIRONMENT = 3  # a daemon, registry or tool is missing or refuses
EXIT_BUILD = 1  # a build, push or verification failed (doit's own code for a failed task)
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports it (128 + SIGINT)
EXIT_TERMINATED = 143  # SIGTERM (128 + 15): how CI cancels a job and a job timeout ends it


class BuildGraphError(Exception):
    """Base of every error a user can cause or fix; printed without a traceback."""

    exit_code = EXIT_BUILD


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in a manifest: where it is and what to change."""

    file: Path
    key: str  # dotted key path such as "tiers.base.parent"; "" for the whole file
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}" if self.key else str(self.file)
        return f"{where}: {self.message}"


class ConfigError(BuildGraphError):
    """images.toml is invalid; carries every issue found, not just the first."""

    exit_code = EXIT_CONFIG

    def __init__(self, issues: Iterable[ConfigIssue], notes: Iterable[str] = ()) -> None:
        self.issues = tuple(issues)
        self.notes = tuple(notes)  # what was not checked is said beside what failed
        super().__init__("\n".join(str(i) for i in self.issues))


class TemplateError(BuildGraphError):
    """A Jinja template failed to render (undefined name, syntax error)."""

    exit_code = EXIT_CONFIG


class EnvironmentProblem(BuildGraphError):
    """Docker daemon, registry or a tool is missing, stopped or refusing."""

    exit_code = EXIT_ENVIRONMENT


class DaemonUnreachable(EnvironmentProblem):
    """The Docker daemon did not answer. Planning never needs it; whatever builds, runs,
    compiles, pulls or pins from it says so, naming itself (`needs`)."""

    def needs(self, what: str) -> DaemonUnreachable:
        """The same problem, said as `what` needing the daemon: one line for the user."""
        return DaemonUnreachable(f"{what} needs the Docker daemon: {self}")


class RegistryError(EnvironmentProblem):
    """The registry could not answer; never to be read as 'image absent'."""


class PullFailed(RegistryError):
    """A pull the engine gave up on; `said` is the engine's own words."""

    def __init__(self, message: str, said: str) -> None:
        super().__init__(message)
        self.said = said


class DeletesRefused(RegistryError):
    """The registry does not allow deleting manifests (a policy, not an outage)."""


class BuildFailed(BuildGraphError):
    """A docker build, push, compile or verification failed."""


class NameTaken(BuildFailed):
    """BuildKit built the image but could not name it: the daemon's image store already
    holds that name (another build on the same daemon named it first; the containerd store
    refuses, where the classic store moved the name)."""


class UntrustedAnswer(BuildFailed):
    """A registry (or whatever stands between us and it) answered something that fails its
    check: bytes that do not hash to the digest asked for, a malformed digest. Never used."""


class NotAnArtifact(UntrustedAnswer):
    """A tag where an artifact of ours belongs names something else (pushed by anyone with
    push rights): no report, not a failure of the run."""


# Raised by one module each, reported here like the rest (one reporter, `report`).


class SigningProblem(BuildGraphError):
    """A signing key or public key cannot be used (missing, unreadable, another kind of
    key), or signatures are required and this runner has no key to sign with."""

    exit_code = EXIT_CONFIG


class KmsUnreachable(EnvironmentProblem):
    """The key management service did not answer, or refused the request."""


class CredentialInSetting(BuildGraphError):
    """A site setting (an index URL, a pip option) carries a credential where it would
    be written into an image or a log."""

    exit_code = EXIT_CONFIG


class BadSiteSetting(BuildGraphError):
    """A site setting (BUILD_GRAPH_*, PIP_*) that cannot be used as given."""

    exit_code = EXIT_CONFIG


class IndexUnreachable(BuildGraphError):
    """The index (or its file host) could not be asked: network, DNS, timeout, 5xx."""

    exit_code = EXIT_ENVIRONMENT


class IndexAnswerRefused(BuildGraphError):
    """The index answered something that fails its check (size, format, range)."""

    exit_code = EXIT_ENVIRONMENT


class RangesUnsupported(IndexUnreachable):
    """The file host answers a Range request with the whole file: METADATA cannot be read
    without downloading every wheel, so the index cannot be asked (not a lie about it)."""


class NotOnIndex(BuildGraphError):
    """The index answered 404: no such project or file."""

    exit_code = EXIT_ENVIRONMENT


class OptionError(BuildGraphError):
    """A command-line option that cannot be used as given (`ci`, `prune`, ...)."""

    exit_code = EXIT_CONFIG


class CacheUnavailable(Exception):
    """The store could not be used (no bucket, no credentials, network down, ...)."""


class CacheConflict(CacheUnavailable):
    """Another build saved a newer archive since ours was restored."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ' (did you mean 'x'?)' suffix for the closest choice, or ''."""
    import difflib  # a mistyped name only: not on every run's path

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def run_cli(main: Callable[[], int]) -> int:
    """Run `main`, turning a BuildGraphError into its message and exit code.

    Set BUILD_GRAPH_DEBUG=1 to see the traceback as well.
    """
    try:
        return main()
    except BuildGraphError as exc:
        return report(exc)


def report(exc: BuildGraphError) -> int:
    """Print `exc` as 'error: ...' lines on stderr; returns its exit code."""
    if os.environ.get("BUILD_GRAPH_DEBUG"):
        traceback.print_exception(exc)
    for line in str(exc).splitlines() or [type(exc).__name__]:
        print(f"error: {line}", file=sys.stderr)
    for note in getattr(exc, "notes", ()):
        print(f"note: {note}", file=sys.stderr)
    return exc.exit_code


class Unresolvable(BuildGraphError):
    """No set of Python packages satisfies a tier's requirements (the resolver says why)."""

    exit_code = EXIT_CONFIG
