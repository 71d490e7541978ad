"""Which hash-tag images `prune` may delete: a pure decision over what the registry holds.

Plain data in (each repository's tags, what each hash tag's image is, the plan's hash tags),
decisions out; registry/catalog.py reads the registry into these types, stages/prune.py
acts. Everything is decided per digest, because a registry deletes a manifest by digest
and with it every tag that names it: a digest is deleted only when every tag naming it is
an unneeded hash tag.

Kept, whatever else holds: an image another stack built, or one no stack of ours labelled
(repositories are `<registry>/<tier>`: two stacks with a `base` tier on one registry share
one, and only this stack's plan is known here); a digest a human tag names; a digest of
the current plan (every variant); an image a multi-platform index under a human tag refers
to (one platform of a promoted tier); the newest `keep` builds of each platform in each
repository; anything built less than `older_than` ago; anything whose state could not be
read (an error is never 'unused'). A build's time is its image's `created`, or, for a
reproducible build (whose `created` is a fixed time), the newest record the registry keeps
about it (a verify report's or SBOM's `created` annotation); a build nothing dates is kept.
A repository with a human tag that could not be read keeps everything: that tag may name
any of its digests.

Builds are ranked per platform (the image config's os/architecture, Image.platform): a tier
built for linux/amd64 and linux/arm64 keeps the newest `keep` builds of each, so when every
build makes one image per platform, a kept build keeps all its platforms' images however
their `created` times interleave. Builds whose platform is unknown (a config that does not
say) are ranked among themselves, as one more platform: they neither take a `keep` place
from a build of a known platform nor lose theirs to one, so an unknown platform only ever
keeps more. A single-platform stack has one group: `keep` means what it meant before.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from build_graph.oci.digest import Digest

# What plan/hashing.py makes (TAG_LENGTH hex digits), what artifact_tag makes and a referrers
# tag ('sha256-<hex>', oci/referrers.py); any other tag was set by a person or by promote.
_HASH_TAG = re.compile(r"[0-9a-f]{20}")
_ARTIFACT_TAG = re.compile(r"sha256-([0-9a-f]{64})(?:\.[A-Za-z0-9_.-]+)?")


def tag_kind(tag: str) -> str:
    """'hash', 'artifact' or 'human'."""
    if _HASH_TAG.fullmatch(tag):
        return "hash"
    return "artifact" if _ARTIFACT_TAG.fullmatch(tag) else "human"


def artifact_subject(tag: str) -> Digest | None:
    """The digest an artifact tag ('sha256-<hex>.<suffix>', 'sha256-<hex>') is about."""
    match = _ARTIFACT_TAG.fullmatch(tag)
    return Digest(match[1]) if match else None


@dataclass(frozen=True)
class Image:
    """What one tag names, as read: its digest, the image's `created` (an artifact tag's:
    its manifest's `created` annotation, when it was stored), its layers (digest,
    size). `problem` says why the rest could not be read (then only `digest` may be known)."""

    digest: Digest | None
    created: datetime.datetime | None = None
    layers: tuple[tuple[Digest, int], ...] = ()
    problem: str | None = None
    stack: str | None = None  # the stack its label names (stages/build_act.py's labels)
    # for a tag naming a multi-platform index: the digests of the images it refers to
    refers_to: tuple[Digest, ...] = ()
    # 'linux/arm64': the config's os/architecture (hash tags); None when unknown
    platform: str | None = None
    # for a hash tag naming an index of one image (the containerd image store pushes so):
    # the manifests inside it (the platform image, its attestations), deleted with it
    contains: tuple[Digest, ...] = ()


@dataclass(frozen=True)
class Repository:
    name: str  # <registry>/<tier>
    tags: Mapping[str, Image]  # every tag of the repository (artifacts: digest, created)


@dataclass(frozen=True)
class Policy:
    stack: str  # the stack being pruned: only images labelled with it are judged
    keep: int  # the newest builds of each platform in each repository that stay
    older_than: datetime.timedelta  # younger builds stay
    now: datetime.datetime
    # What every reproducible build states as `created` (stages/build_act.SOURCE_DATE_EPOCH)
    fixed_created: datetime.datetime | None = None


@dataclass(frozen=True)
class Decision:
    repository: str
    digest: Digest
    tags: tuple[str, ...]  # the hash tags that name it
    delete: bool
    why: str
    artifacts: tuple[tuple[str, Digest], ...] = ()  # (tag, manifest digest) to delete with it
    # manifests inside the image's index, deleted after it (none that a kept image shares)
    inner: tuple[Digest, ...] = ()


def decide(repo: Repository, planned: Iterable[str], policy: Policy) -> list[Decision]:
    """One decision per digest that a hash tag of `repo` names, newest first."""
    planned_tags = set(planned)
    by_digest: dict[Digest, list[str]] = {}
    unread: list[str] = []
    for tag, image in sorted(repo.tags.items()):
        if tag_kind(tag) == "human" and image.problem:  # an index whose entries are unknown
            unread.append(tag)
        elif tag_kind(tag) != "artifact" and image.digest is not None:
            by_digest.setdefault(image.digest, []).append(tag)
        elif tag_kind(tag) == "human" or (image.digest is None and tag_kind(tag) == "hash"):
            unread.append(tag)
    # An index a human tag names keeps every platform image it refers to.
    indexed = {
        digest: tag
        for tag, image in sorted(repo.tags.items())
        if tag_kind(tag) == "human"
        for digest in image.refers_to
    }
    # A digest only human tags name is not a build of ours: kept, and not judged.
    builds = [d for d, tags in by_digest.items() if any(tag_kind(t) == "hash" for t in tags)]
    # Ranked among builds whose age is known: an unreadable one is kept anyway and must not
    # take one of the `keep` places from a readable build.
    when = {d: _built_at(repo, d, by_digest[d], policy) for d in builds}
    known = [d for d in builds if when[d] is not None]
    newest = sorted(known, key=lambda d: when[d] or _EPOCH, reverse=True)
    newest += [d for d in builds if d not in known]
    decisions = []
    ranks: dict[str | None, int] = {}  # builds of each platform seen so far, newest first
    for digest in newest:
        tags = by_digest[digest]
        platform = _platform(repo, tags)
        rank = ranks[platform] = ranks.get(platform, -1) + 1
        inside = _contains(repo, tags)
        index_tag = next((indexed[d] for d in (digest, *inside) if d in indexed), None)
        why = (
            f"kept: the index under the human tag {index_tag!r} refers to it"
            if index_tag is not None
            else _keeps(repo, tags, (rank, platform), planned_tags, policy, unread, when[digest])
        )
        hashes = tuple(t for t in tags if tag_kind(t) == "hash")
        decisions.append(
            Decision(
                repo.name,
                digest,
                hashes,
                delete=why is None,
                why=why or _old(when[digest], policy),
                artifacts=_artifacts_of(repo, digest),
                inner=inside,
            )
        )
    return _shared_inner_kept(repo, decisions)


def _contains(repo: Repository, tags: list[str]) -> tuple[Digest, ...]:
    return tuple(dict.fromkeys(d for t in tags for d in repo.tags[t].contains))


def _shared_inner_kept(repo: Repository, decisions: list[Decision]) -> list[Decision]:
    """A manifest inside a deleted image's index stays when anything staying names it or
    holds it (identical builds share their platform manifest)."""
    doomed = {d.digest for d in decisions if d.delete}
    staying = {
        x
        for image in repo.tags.values()
        if image.digest not in doomed
        for x in (image.digest, *image.contains, *image.refers_to)
        if x is not None
    }
    return [
        dataclasses.replace(d, inner=tuple(x for x in d.inner if x not in staying))
        if d.delete
        else dataclasses.replace(d, inner=())
        for d in decisions
    ]


def _keeps(
    repo: Repository,
    tags: list[str],
    rank: tuple[int, str | None],
    planned: set[str],
    policy: Policy,
    unread: list[str],
    built: datetime.datetime | None,
) -> str | None:
    """Why the digest named by `tags` stays, or None when nothing keeps it. `rank`: its
    place among the builds of its platform (newest first), and that platform."""
    images = [repo.tags[t] for t in tags]
    if unread:
        return f"kept: the tag {unread[0]!r} could not be read, it may name this image"
    if problems := [i.problem for i in images if i.problem]:
        return f"kept: its state could not be read ({problems[0]})"
    if human := [t for t in tags if tag_kind(t) == "human"]:
        return f"kept: the human tag {human[0]!r} names it"
    if in_plan := [t for t in tags if t in planned]:
        return f"kept: the current plan builds it ({in_plan[0]})"
    builds = [repo.tags[t] for t in tags if tag_kind(t) == "hash"]
    if others := [i.stack for i in builds if i.stack != policy.stack]:
        return (
            f"kept: built by the stack {others[0]!r}, not this one"
            if others[0]
            else "kept: no build-graph stack label: not a build of this stack"
        )
    if rank[0] < policy.keep:
        of = f"for {rank[1]}" if rank[1] else "whose platform is unknown"
        return f"kept: one of the newest {policy.keep} builds {of}"
    if built is None:
        return (
            "kept: nothing says when it was built (its `created` is the fixed time of "
            "reproducible builds, and no verify report or SBOM is stored for it)"
        )
    if policy.now - built < policy.older_than:
        return f"kept: younger than {_days(policy.older_than)} (built {built:%Y-%m-%d %H:%M})"
    return None


_EPOCH = datetime.datetime.min.replace(tzinfo=datetime.UTC)


def _built_at(
    repo: Repository, digest: Digest, tags: list[str], policy: Policy
) -> datetime.datetime | None:
    """When the build `digest` happened: the newest of its images' `created` (but the fixed
    time of reproducible builds) and of its artifacts' (verify reports, SBOMs); or None."""
    known = [
        i.created
        for t in tags
        if (i := repo.tags[t]).created is not None and i.created != policy.fixed_created
    ]
    known += [
        i.created
        for t, i in repo.tags.items()
        if i.created is not None and artifact_subject(t) == digest
    ]
    return max(known) if known else None


def _platform(repo: Repository, tags: list[str]) -> str | None:
    """The platform of the hash-tag images `tags` name (one digest: one image)."""
    return next(
        (p for t in tags if tag_kind(t) == "hash" and (p := repo.tags[t].platform) is not None),
        None,
    )


def _old(built: datetime.datetime | None, policy: Policy) -> str:
    return (
        f"unused: not in the plan, no human tag, older than {_days(policy.older_than)} "
        f"(built {(built or _EPOCH):%Y-%m-%d %H:%M})"
    )


def _days(span: datetime.timedelta) -> str:
    return f"{span.days}d" if span.days and not span.seconds else f"{span.total_seconds():g}s"


def _artifacts_of(repo: Repository, digest: Digest) -> tuple[tuple[str, Digest], ...]:
    return tuple(
        (tag, image.digest)
        for tag, image in sorted(repo.tags.items())
        if artifact_subject(tag) == digest and image.digest is not None
    )


def bytes_freed(decisions: Iterable[Decision], repos: Iterable[Repository]) -> int:
    """The layer bytes that deleting the `delete` decisions frees: layers that no image
    staying in any of `repos` (tiers share their parents' layers) still uses."""
    doomed = {(d.repository, d.digest) for d in decisions if d.delete}
    kept: set[Digest] = set()
    freed: dict[Digest, int] = {}
    for repo in repos:
        for tag, image in repo.tags.items():
            if image.digest is None or tag_kind(tag) == "artifact":
                continue
            target = freed if (repo.name, image.digest) in doomed else None
            for layer, size in image.layers:
                if target is None:
                    kept.add(layer)
                else:
                    target[layer] = size
    return sum(size for layer, size in freed.items() if layer not in kept)
