"""What a repository holds, for `prune`: every tag, and for each hash tag its image's
digest, `created` and layers, read through registry/api.py (checked at the door).

A registry failure (unreachable, a 5xx, a refusal) raises RegistryError: prune then
deletes nothing. An image that is definitely broken (its manifest or config gone, not
JSON, not what its digest says) is no failure of the registry: it is read as an Image with
a `problem`, which the retention rules keep.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from build_graph.errors import RegistryError, UntrustedAnswer
from build_graph.oci.digest import Digest, parse_digest
from build_graph.oci.refs import Presence, Ref, parse_ref
from build_graph.oci.retention import Image, Repository, tag_kind
from build_graph.registry import api
from build_graph.registry.tags import list_tags

# The label every build of ours carries (stages/build.py's labels: LABEL_PREFIX + ".stack").
STACK_LABEL = "io.build-graph.stack"
_INDEXES = ("application/vnd.oci.image.index.v1+json",
            "application/vnd.docker.distribution.manifest.list.v2+json")

def read_repository(repository: str) -> Repository:
    """Every tag of `repository` (<registry>/<name>) and what it names. Artifact and human
    tags are asked only for their digest; hash tags are read whole."""
    ref = parse_ref(f"{repository}:latest")
    tags = {}
    for tag in list_tags(ref):
        kind = tag_kind(tag)
        tags[tag] = (_image(ref.at(tag)) if kind == "hash" else
                     _with_entries(ref.at(tag)) if kind == "human" else _digest_only(ref.at(tag)))
    return Repository(repository, tags)


def _with_entries(ref: Ref) -> Image:
    """A human tag: its digest, and where it names an index (a tier built per platform),
    the platform images the index refers to, which prune must then keep."""
    answer = api.head_manifest(ref)
    if answer.presence is Presence.ERROR:
        raise RegistryError(answer.error or f"{ref.host}: no answer about {ref.reference}")
    if answer.digest is None:
        return Image(None, problem=f"{ref.reference} was listed but is gone")
    if answer.media_type not in _INDEXES:
        return Image(answer.digest)
    try:
        body: dict[str, Any] = json.loads(api.get_manifest(ref.at(str(answer.digest))).body)
        entries = tuple(parse_digest(m["digest"]) for m in body["manifests"])
    except (UntrustedAnswer, ValueError, KeyError, TypeError) as exc:
        return Image(answer.digest, problem=f"an index whose entries could not be read ({exc})")
    return Image(answer.digest, refers_to=entries)


def _digest_only(ref: Ref) -> Image:
    answer = api.head_manifest(ref)
    if answer.presence is Presence.ERROR:
        raise RegistryError(answer.error or f"{ref.host}: no answer about {ref.reference}")
    if answer.digest is None:  # listed, then gone: someone else deleted it meanwhile
        return Image(None, problem=f"{ref.reference} was listed but is gone")
    return Image(answer.digest)


def _image(ref: Ref) -> Image:
    head = _digest_only(ref)
    if head.digest is None:
        return head
    try:
        manifest = api.get_manifest(ref.at(str(head.digest)))
        if manifest.media_type in _INDEXES:
            return Image(head.digest, problem="a multi-platform index (prune reads single "
                                              "images only)")
        body: dict[str, Any] = json.loads(manifest.body)
        layers = tuple((parse_digest(layer["digest"]), int(layer["size"]))
                       for layer in body["layers"])
        config_digest = parse_digest(body["config"]["digest"])
    except (UntrustedAnswer, ValueError, KeyError, TypeError) as exc:
        return Image(head.digest, problem=f"its manifest is not an image manifest ({exc})")
    return Image(head.digest, *_created(ref, config_digest, layers))


def _created(ref: Ref, config: Digest, layers: tuple[tuple[Digest, int], ...]
             ) -> tuple[datetime.datetime | None, tuple[tuple[Digest, int], ...], str | None,
                        str | None]:
    """(created, layers, problem, stack label) from the image's config blob."""
    try:
        data = api.read_blob(ref, config)
    except UntrustedAnswer as exc:
        return None, layers, str(exc), None
    if data is None:
        return None, layers, f"its config blob {config} is gone", None
    try:
        config_data = json.loads(data)
        created = _timestamp(config_data["created"])
    except (ValueError, KeyError, TypeError):
        return None, layers, f"its config {config} has no readable 'created'", None
    labels = (config_data.get("config") or {}).get("Labels") or {}
    stack = labels.get(STACK_LABEL) if isinstance(labels, dict) else None
    return created, layers, None, stack if isinstance(stack, str) else None


def _timestamp(text: str) -> datetime.datetime:
    """RFC 3339 as Go writes it ('2026-11-23T13:55:39.123456789Z'): Python takes at most
    microseconds, so the fraction is cut to six digits."""
    main, dot, rest = text.partition(".")
    if dot:
        digits = "".join(c for c in rest if c.isdigit())
        rest = digits[:6] + rest[len(digits):]
        text = f"{main}.{rest}"
    stamp = datetime.datetime.fromisoformat(text)
    if stamp.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return stamp
