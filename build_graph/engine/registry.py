"""What a registry said about one reference: present (with digest), absent, or an error.

Tri-state on purpose: an error is never read as 'absent' (that would rebuild, or worse,
report a lost image as never built).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Presence(Enum):
    PRESENT = "present"
    ABSENT = "absent"
    ERROR = "error"


@dataclass(frozen=True)
class Probe:
    """What the registry said about one reference: never guesses on error."""

    presence: Presence
    digest: str | None = None
    error: str | None = None


def registry_of(ref: str) -> str:
    """The registry host of an image reference ('docker.io' for short names)."""
    first = ref.split("/", 1)[0]
    return first if ("." in first or ":" in first or first == "localhost") else "docker.io"
