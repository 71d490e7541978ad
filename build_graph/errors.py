"""One error hierarchy, and the one place where errors become a message and an exit code."""

from __future__ import annotations

import difflib
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

# Exit codes are part of the CLI contract: scripts branch on them.
EXIT_CONFIG = 2
EXIT_ENVIRONMENT = 3  # a daemon, registry or tool is missing or refuses
EXIT_BUILD = 4  # a build, push or verification failed


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

    def __init__(self, issues: Iterable[ConfigIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__("\n".join(str(i) for i in self.issues))


class TemplateError(BuildGraphError):
    """A Jinja template failed to render (undefined name, syntax error)."""

    exit_code = EXIT_CONFIG


class EnvironmentProblem(BuildGraphError):
    """Docker daemon, registry or a tool is missing, stopped or refusing."""

    exit_code = EXIT_ENVIRONMENT


class RegistryError(EnvironmentProblem):
    """The registry could not answer; never to be read as 'image absent'."""


class BuildFailed(BuildGraphError):
    """A docker build, push, compile or verification failed."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ' (did you mean 'x'?)' suffix for the closest choice, or ''."""
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
    return exc.exit_code
