"""Manifests and blobs in a registry, checked at the door before anything uses them.

Contracts: a digest a registry sends (a Docker-Content-Digest header) becomes a `Digest` here
or the answer is refused; a manifest or blob body read is hashed here and must equal the
digest asked for (a digest reference) and the digest header (when one came), else
UntrustedAnswer naming the registry, the digest asked for and the digest of the bytes. A
manifest's media type must be one of the kinds we asked for. An error is an error: only a
404 reads as 'absent'.
"""

from __future__ import annotations

from dataclasses import dataclass

from build_graph.errors import BuildGraphError, DeletesRefused, UntrustedAnswer
from build_graph.oci import contents, problems
from build_graph.oci.contents import Contents
from build_graph.oci.digest import Digest, maybe_digest
from build_graph.oci.documents import MANIFEST_TYPES
from build_graph.oci.refs import Answer, Presence, Ref
from build_graph.registry.transport import Response, blob_response, client

_ACCEPT = {"Accept": ", ".join(MANIFEST_TYPES)}
# What is read into memory, at most: a manifest (the distribution spec asks registries to
# take manifests of at least 4 MiB), and a blob we read whole (image configs, verify
# reports, SBOMs). A larger answer, from a registry or a storage it redirects to, is refused.
MANIFEST_LIMIT = 4 << 20
BLOB_LIMIT = 64 << 20


@dataclass(frozen=True)
class Manifest:
    """A manifest's bytes exactly as stored, its media type, and the digest of those bytes
    (computed here)."""

    body: bytes
    media_type: str
    digest: Digest


def _where(ref: Ref) -> str:
    sep = "@" if maybe_digest(ref.reference) else ":"
    return f"{ref.host}/{ref.repository}{sep}{ref.reference}"


def _header_digest(ref: Ref, response: Response) -> Digest | None:
    try:
        return response.digest_header()
    except ValueError as exc:
        raise UntrustedAnswer(
            f"the registry {ref.host} sent a Docker-Content-Digest for "
            f"{_where(ref)} that is not a digest: {exc}"
        ) from None


def _media_type(ref: Ref, response: Response) -> str:
    media_type = response.headers.get("content-type", "")
    if media_type not in MANIFEST_TYPES:
        raise UntrustedAnswer(
            f"the registry {ref.host} served {_where(ref)} as "
            f"{media_type[:80]!r}, not a manifest kind we asked for"
        )
    return media_type


def head_manifest(ref: Ref) -> Answer:
    """Is `ref` in the registry, and as which digest? An error is an error, never 'absent'."""
    try:
        response = client(ref.api_host).request(
            "HEAD", ref.repository, f"manifests/{ref.reference}", headers=_ACCEPT
        )
        if response.status == 404:
            return Answer(Presence.ABSENT)
        if response.status != 200:
            raise problems.refused(ref.host, f"a question about {_where(ref)}", response.status)
        digest = _header_digest(ref, response)
        asked = maybe_digest(ref.reference)
        if digest is not None and asked is not None and digest != asked:
            raise UntrustedAnswer(
                f"the registry {ref.host} answered {digest} for {_where(ref)}, which names {asked}"
            )
        length = response.headers.get("content-length", "")
        # isascii too: str.isdigit accepts '²', which int() refuses
        if digest is None or not (length.isascii() and length.isdigit()):  # read it
            manifest = get_manifest(ref)
            return Answer(
                Presence.PRESENT,
                digest=manifest.digest,
                media_type=manifest.media_type,
                size=len(manifest.body),
            )
        return Answer(
            Presence.PRESENT, digest=digest, media_type=_media_type(ref, response), size=int(length)
        )
    except BuildGraphError as exc:
        return Answer(Presence.ERROR, error=str(exc))


def get_manifest(ref: Ref) -> Manifest:
    """The manifest at `ref`, its bytes hashed here: they must match the digest `ref` names
    (if it names one) and the registry's digest header (if it sent one)."""
    response = client(ref.api_host).request(
        "GET", ref.repository, f"manifests/{ref.reference}", headers=_ACCEPT, limit=MANIFEST_LIMIT
    )
    if response.status != 200:
        raise problems.refused(
            ref.host, f"reading the manifest {_where(ref)}", response.status, response.body
        )
    actual = Digest.of(response.body)
    for claimed, what in (
        (maybe_digest(ref.reference), "asked for"),
        (_header_digest(ref, response), "it named in its header"),
    ):
        if claimed is not None and claimed != actual:
            raise UntrustedAnswer(
                f"the registry {ref.host} served other bytes for {ref.repository}@{claimed} "
                f"(the digest {what}): they hash to {actual}; refusing them"
            )
    return Manifest(response.body, _media_type(ref, response), actual)


def read_contents(ref: Ref) -> Contents:
    """What `ref` names (oci/contents.py), from its manifest's bytes hashed at the door.
    UntrustedAnswer when the bytes are no image manifest or index."""
    manifest = get_manifest(ref)
    try:
        return contents.parse(manifest.body, manifest.media_type, manifest.digest)
    except ValueError as exc:
        raise UntrustedAnswer(
            f"the registry {ref.host} holds {_where(ref)} as something that is not an image: {exc}"
        ) from None


@dataclass(frozen=True)
class PlatformImage:
    """The one platform image a reference names: `ref` names it by its manifest's digest,
    `image` is that manifest's contents (config, layers), `named` what the reference itself
    names (the same, or the index around it, with the image's attestations)."""

    ref: Ref
    image: Contents
    named: Contents


def read_image(ref: Ref) -> PlatformImage:
    """The platform image `ref` names: an image manifest, or the one image of an index of
    one (attestations aside: the containerd image store pushes every image so).
    UntrustedAnswer for an index of several images, or an index inside an index."""
    named = read_contents(ref)
    try:
        inner = named.single_image()
    except ValueError as exc:
        raise UntrustedAnswer(f"{_where(ref)}: {exc}, not one platform's image") from None
    if inner is None:
        return PlatformImage(ref.at(str(named.digest)), named, named)
    at = ref.at(str(inner.digest))
    image = read_contents(at)
    if image.is_index:
        raise UntrustedAnswer(
            f"{_where(at)} is an index inside the index {named.digest}, not one platform's image"
        )
    return PlatformImage(at, image, named)


def put_manifest(ref: Ref, body: bytes, media_type: str) -> Digest:
    """Store `body` under `ref` (a tag); returns its digest, computed here. The digest the
    registry answers, if any, must be the same, else UntrustedAnswer."""
    return put_referrer(ref, body, media_type)[0]


def put_referrer(ref: Ref, body: bytes, media_type: str) -> tuple[Digest, bool]:
    """put_manifest, and whether the registry said it processed the manifest's `subject`
    (an `OCI-Subject` header: it lists referrers itself, distribution spec 1.1)."""
    response = client(ref.api_host).request(
        "PUT",
        ref.repository,
        f"manifests/{ref.reference}",
        headers={"Content-Type": media_type},
        body=body,
    )
    if response.status not in (200, 201):
        raise problems.refused(
            ref.host, f"writing the manifest {_where(ref)}", response.status, response.body
        )
    ours, stored = Digest.of(body), _header_digest(ref, response)
    if stored is not None and stored != ours:
        raise UntrustedAnswer(
            f"the registry {ref.host} stored {_where(ref)} as {stored}, "
            f"but the bytes sent hash to {ours}; check the registry"
        )
    return ours, "oci-subject" in response.headers


def put_blob(ref: Ref, data: bytes) -> Digest:
    """Upload `data` to `ref`'s repository (monolithic upload, through upload.py's session
    and its checks) unless it is there already."""
    digest = Digest.of(data)
    api = client(ref.api_host)
    there = api.request("HEAD", ref.repository, f"blobs/{digest}")
    if there.status == 200:
        return digest
    if there.status != 404:
        raise problems.refused(
            ref.host, f"a question about blob {digest} in {ref.repository}", there.status
        )
    from build_graph.registry import upload  # its sessions: only for a blob to send

    upload.finish(ref, upload.start(ref), digest, data)
    return digest


def get_blob(ref: Ref, digest: Digest, limit: int = BLOB_LIMIT) -> bytes:
    """The blob `digest` of `ref`'s repository; its bytes must hash to `digest`."""
    data = read_blob(ref, digest, limit)
    if data is None:
        raise problems.refused(ref.host, f"reading blob {digest} of {ref.repository}", 404)
    return data


def read_blob(ref: Ref, digest: Digest, limit: int = BLOB_LIMIT) -> bytes | None:
    """get_blob, but None when the registry definitely lacks the blob (a 404)."""
    response = blob_response(ref.api_host, ref.repository, digest, limit)
    if response.status == 404:
        return None
    if response.status != 200:
        raise problems.refused(
            ref.host, f"reading blob {digest} of {ref.repository}", response.status, response.body
        )
    actual = Digest.of(response.body)
    if actual != digest:
        raise UntrustedAnswer(
            f"the registry {ref.host} served other bytes for blob {digest} "
            f"of {ref.repository}: they hash to {actual}; refusing them"
        )
    return response.body


def delete_manifest(ref: Ref, digest: Digest) -> bool:
    """Delete the manifest `digest` (and so every tag naming it) from `ref`'s repository.
    True when deleted, False when it was already gone; DeletesRefused when the registry
    does not allow deletes, RegistryError for any other failure."""
    response = client(ref.api_host).request("DELETE", ref.repository, f"manifests/{digest}")
    if response.status in (200, 202):
        return True
    if response.status == 404:
        return False
    if response.status in (400, 405) or b"UNSUPPORTED" in response.body:
        raise DeletesRefused(
            f"the registry {ref.host} does not allow deletes (HTTP {response.status} to "
            f"deleting {ref.repository}@{digest}); enable them (distribution: "
            "storage.delete.enabled: true) or delete with the registry's own tools"
        )
    raise problems.refused(
        ref.host, f"deleting {ref.repository}@{digest}", response.status, response.body
    )
