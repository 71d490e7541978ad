"""Image references and what a registry said about one: present (digest), absent, or error.

Tri-state on purpose: an error is never read as 'absent' (that would rebuild, or worse,
report a lost image as never built). An Answer's digest is a parsed `Digest`: whatever
the registry sent was checked where it entered (registry/api.py), never here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from build_graph.oci.digest import Digest, parse_digest
from build_graph.oci.documents import MANIFEST_TYPES

__all__ = [  # MANIFEST_TYPES is oci/documents.py's, named here as it always was
    "MANIFEST_TYPES",
    "Answer",
    "Presence",
    "Ref",
    "artifact_tag",
    "parse_ref",
    "registry_of",
]


class Presence(Enum):
    PRESENT = "present"
    ABSENT = "absent"
    ERROR = "error"


@dataclass(frozen=True)
class Answer:
    """What the registry said about one reference: never guesses on error. For a present
    manifest, its digest, media type and size (what an artifact's `subject` names)."""

    presence: Presence
    digest: Digest | None = None
    error: str | None = None
    media_type: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class Ref:
    """'127.0.0.1:5000/team/base:tag' -> host '127.0.0.1:5000', repository 'team/base',
    reference 'tag' (or a digest)."""

    host: str
    repository: str
    reference: str

    @property
    def api_host(self) -> str:
        """Where the HTTP API answers (Docker Hub's API lives on registry-1.docker.io)."""
        return "registry-1.docker.io" if self.host == "docker.io" else self.host

    def at(self, reference: str) -> Ref:
        return Ref(self.host, self.repository, reference)


def registry_of(ref: str) -> str:
    """The registry host of an image reference ('docker.io' for short names)."""
    first, slash, _ = ref.partition("/")
    if not slash:  # 'debian:bookworm': a name and a tag, no host
        return "docker.io"
    return first if ("." in first or ":" in first or first == "localhost") else "docker.io"


def parse_ref(ref: str) -> Ref:
    """A reference as the Docker CLI reads it: no host means Docker Hub (and 'library/'
    for one-part names), no tag means 'latest', '@sha256:...' names a digest."""
    host = registry_of(ref)
    rest = ref[len(host) + 1 :] if ref.startswith(f"{host}/") else ref
    name, at, digest = rest.partition("@")
    slash, colon = name.rfind("/"), name.rfind(":")
    name, tag = (name[:colon], name[colon + 1 :]) if colon > slash else (name, "latest")
    if at:  # 'name:tag@sha256:...' names the digest; the tag is only a reminder
        try:
            reference = str(parse_digest(digest))
        except ValueError as exc:
            raise ValueError(f"{ref!r}: {exc}") from None
    else:
        reference = tag
    if host == "docker.io" and "/" not in name:
        name = f"library/{name}"
    if not name:
        raise ValueError(f"{ref!r} names no repository")
    return Ref(host, name, reference)


def artifact_tag(digest: Digest, suffix: str) -> str:
    """cosign's tag scheme for something about a manifest, on registries without the OCI 1.1
    referrers API: 'sha256:abc...' + 'verify-x' -> 'sha256-abc....verify-x' (<= 128 chars)."""
    tag = f"{digest.dashed}.{suffix}"
    if len(tag) > 128:
        raise ValueError(f"artifact tag {tag!r} is longer than a registry accepts (128)")
    return tag
