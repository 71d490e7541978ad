"""Content digests: the one typed form of 'sha256:<64 lowercase hex>' that code past the door takes.

Everything a registry (or the daemon relaying one) says about a digest is a string from
outside: a header, a manifest's descriptor, a push's answer. It becomes a `Digest` only
through `parse_digest` (which rejects anything else, path characters and other algorithms
included) or `Digest.of` (which hashes bytes in hand). A `Digest` therefore always names
itself safely: in a tag, a URL path or a file name.

Only sha256 is accepted: it is what every registry we speak to produces and what the OCI
image spec requires registries to support; a sha512 answer is refused by name rather than
half-handled.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_HEX = re.compile(r"[0-9a-f]{64}")
# The OCI spec's algorithm grammar: tells 'another algorithm' from 'not a digest at all'.
_ALGORITHM = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*")


@dataclass(frozen=True, order=True)
class Digest:
    """A sha256 content digest. Invariant: `hex` is 64 lowercase hex characters."""

    hex: str

    def __post_init__(self) -> None:
        if not _HEX.fullmatch(self.hex):
            raise ValueError(f"{self.hex[:80]!r} is not 64 lowercase hex characters")

    @classmethod
    def of(cls, data: bytes) -> Digest:
        """The digest of `data`, computed here."""
        return cls(hashlib.sha256(data).hexdigest())

    def __str__(self) -> str:
        return f"sha256:{self.hex}"

    @property
    def dashed(self) -> str:
        """'sha256-<hex>': the form used in tags and file names (no ':')."""
        return f"sha256-{self.hex}"


def parse_digest(value: object) -> Digest:
    """'sha256:<64 lowercase hex>' -> Digest; anything else raises ValueError with a
    message that says what was wrong (never echoing more than 80 characters of it)."""
    if not isinstance(value, str):
        raise ValueError(f"a digest must be a string, not {type(value).__name__}")
    algorithm, colon, encoded = value.partition(":")
    shown = repr(value[:80])
    if not colon or not _ALGORITHM.fullmatch(algorithm):
        raise ValueError(f"{shown} is not a digest (expected sha256:<64 hex characters>)")
    if algorithm != "sha256":
        raise ValueError(f"{shown} is a {algorithm} digest; only sha256 digests are accepted")
    if not _HEX.fullmatch(encoded):
        raise ValueError(
            f"{shown} is not a sha256 digest (expected 64 lowercase hex characters after 'sha256:')"
        )
    return Digest(encoded)


def maybe_digest(value: object) -> Digest | None:
    """A digest from this machine's own notes (a hint): None when it does not parse."""
    try:
        return parse_digest(value)
    except ValueError:
        return None
