"""What a repository holds, for `prune`: every tag, and for each hash tag its image's
digest, `created`, platform and layers, and for each human tag its digest and, where it
names an index, the digests the index refers to; read through registry/api.py (checked at
the door).

A registry failure (unreachable, a 5xx, a refusal) raises RegistryError: prune then
deletes nothing. An image that is definitely broken (its manifest or config gone, not
JSON, not what its digest says) is no failure of the registry: it is read as an Image with
a `problem`, which the retention rules keep.
"""

from __future__ import annotations

import dataclasses
import datetime

from build_graph.errors import RegistryError, UntrustedAnswer
from build_graph.layout import LABEL_PREFIX
from build_graph.oci import contents, documents, json_door
from build_graph.oci.digest import Digest
from build_graph.oci.documents import CREATED, OCI_INDEX, OCI_MANIFEST
from build_graph.oci.platforms import stated_platform
from build_graph.oci.refs import Presence, Ref, parse_ref
from build_graph.oci.retention import Image, Repository, tag_kind
from build_graph.registry import api
from build_graph.registry.tags import list_tags

# The label every build of ours carries (stages/build_act.py's labels).
STACK_LABEL = f"{LABEL_PREFIX}.stack"


def read_repository(repository: str) -> Repository:
    """Every tag of `repository` (<registry>/<name>) and what it names. Human tags are asked
    for their digest (and an index's entries), artifact tags for their digest and when they
    were stored; hash tags are read whole."""
    ref = parse_ref(f"{repository}:latest")
    tags = {}
    for tag in list_tags(ref):
        kind = tag_kind(tag)
        tags[tag] = (
            _image(ref.at(tag))
            if kind == "hash"
            else _with_entries(ref.at(tag))
            if kind == "human"
            else _artifact(ref.at(tag))
        )
    return Repository(repository, tags)


def _with_entries(ref: Ref) -> Image:
    """A human tag: its digest, and where it names an index (a tier built per platform, or
    any image the containerd store pushed), the manifests the index refers to, which prune
    must then keep. Judged by the body (oci/contents.py), never by the Content-Type: a
    registry or proxy that labels an index as an image manifest would otherwise hide the
    index's entries, and `prune --yes` could delete the images `latest` refers to."""
    head = _digest_only(ref)
    if head.digest is None:
        return head
    try:
        body: object = json_door.loads(api.get_manifest(ref.at(str(head.digest))).body)
    except (UntrustedAnswer, ValueError) as exc:
        return Image(head.digest, problem=f"its manifest could not be read ({exc})")
    return human_tag_image(head.digest, body)


def human_tag_image(digest: Digest, body: object) -> Image:
    """What a human tag's manifest (parsed JSON, whatever its Content-Type) refers to, read
    as its own body says (oci/contents.py); anything that is no image manifest or index is
    a `problem` (which keeps the whole repository: the tag may name any of its images)."""
    index = documents.is_index(body)
    try:
        document = documents.parse_document(body)
        kind = document.media_type or (OCI_INDEX if index else OCI_MANIFEST)
        # its own size is no question here: only what it refers to is
        named = contents.of(document, kind, digest, size=0)
    except ValueError as exc:
        return Image(
            digest,
            problem=f"an index whose entries could not be read ({exc})"
            if index
            else "its manifest is neither an image index nor an image manifest",
        )
    return Image(digest, refers_to=named.refers_to)


def _artifact(ref: Ref) -> Image:
    """An artifact tag (a verify report, an SBOM): its digest and the `created` annotation
    its manifest carries (when it was stored: a reproducible build's only date). An
    annotation that is missing or unreadable dates nothing; the digest still counts."""
    head = _digest_only(ref)
    if head.digest is None:
        return head
    try:
        body = api.get_manifest(ref.at(str(head.digest))).body
        stated = documents.parse_document(body).annotation(CREATED)
        return Image(head.digest, created=None if stated is None else _timestamp(stated))
    except (UntrustedAnswer, ValueError):
        return head


def _digest_only(ref: Ref) -> Image:
    answer = api.head_manifest(ref)
    if answer.presence is Presence.ERROR:
        raise RegistryError(answer.error or f"{ref.host}: no answer about {ref.reference}")
    if answer.digest is None:  # listed, then gone: someone else deleted it meanwhile
        return Image(None, problem=f"{ref.reference} was listed but is gone")
    return Image(answer.digest)


def _image(ref: Ref) -> Image:
    """A hash tag: one image, or an index of one image and its attestations (read through
    to the image: its layers, config and platform)."""
    head = _digest_only(ref)
    if head.digest is None:
        return head
    try:
        found = api.read_image(ref.at(str(head.digest)))
    except UntrustedAnswer as exc:
        return Image(head.digest, problem=f"its manifest could not be read ({exc})")
    assert found.image.config is not None  # read_image: an image manifest
    image = _from_config(ref, head.digest, found.image.config, found.image.layers)
    return dataclasses.replace(image, contains=found.named.refers_to)


def _from_config(
    ref: Ref, digest: Digest, config: Digest, layers: tuple[tuple[Digest, int], ...]
) -> Image:
    """The image with what its config blob says: `created`, the stack label, the platform
    ('os/architecture'; None when the config does not say)."""
    try:
        data = api.read_blob(ref, config)
    except UntrustedAnswer as exc:
        return Image(digest, layers=layers, problem=str(exc))
    if data is None:
        return Image(digest, layers=layers, problem=f"its config blob {config} is gone")
    try:
        config_data = json_door.loads(data)
        created = _timestamp(config_data["created"])
    except (ValueError, KeyError, TypeError):
        return Image(
            digest, layers=layers, problem=f"its config {config} has no readable 'created'"
        )
    labels = (config_data.get("config") or {}).get("Labels") or {}
    stack = labels.get(STACK_LABEL) if isinstance(labels, dict) else None
    return Image(
        digest,
        created,
        layers,
        stack=stack if isinstance(stack, str) else None,
        platform=stated_platform(config_data),
    )


def _timestamp(text: str) -> datetime.datetime:
    """RFC 3339 as Go writes it ('2026-11-23T13:55:39.123456789Z'): Python takes at most
    microseconds, so the fraction is cut to six digits."""
    main, dot, rest = text.partition(".")
    if dot:
        digits = "".join(c for c in rest if c.isdigit())
        rest = digits[:6] + rest[len(digits) :]
        text = f"{main}.{rest}"
    stamp = datetime.datetime.fromisoformat(text)
    if stamp.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return stamp
