"""`python -m build_graph prune`: delete the hash-tag images, and their artifacts, that
nothing needs (the rules: oci/retention.py). Dry run unless asked to delete.

Contract: every repository of the plan is read whole before anything is decided; a
registry that cannot be read raises RegistryError (exit 3) having deleted nothing. Per
image, its artifacts are deleted first (its referrers index 'sha256-<its hex>' first of
all, then verify reports, SBOMs and whatever else its referrers list, other tools'
signatures included), then the image's manifest by digest, so an interrupted prune leaves
images without reports (rebuilt or re-verified if ever needed), never reports about
nothing, and no referrers index naming what is gone. An artifact is deleted only when it is
read as about the image (its `subject`, or every envelope of cosign's `.att` image), and
never when any other tag names it: someone with push rights who points the doomed image's
tags at a kept image's manifests (or lists them in its referrers index) deletes nothing.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from build_graph.errors import BuildGraphError, RegistryError
from build_graph.oci.digest import Digest
from build_graph.oci.referrers import (
    entries,
    envelope_layers,
    envelope_subject,
    fallback_tag,
    is_referrers_index,
    subject_of,
)
from build_graph.oci.refs import Presence, Ref, parse_ref
from build_graph.oci.retention import (
    Decision,
    Policy,
    Repository,
    artifact_subject,
    bytes_freed,
    decide,
    tag_kind,
)
from build_graph.plan.plan import PlannedTier
from build_graph.registry import api, referrers
from build_graph.registry.catalog import read_repository
from build_graph.registry.tags import list_tags
from build_graph.stages import build_act


@dataclass(frozen=True)
class Pruning:
    decisions: list[Decision]
    freed: int  # layer bytes the deletes free (once the registry collects its garbage)
    # per repository: what its hash and human tags name that stays; never deleted as an
    # artifact, whatever an artifact tag or a referrers list says
    protected: dict[str, set[Digest]] = field(default_factory=dict)


def judge(planned: list[PlannedTier], policy: Policy) -> Pruning:
    """Read every repository of the plan (all variants) and decide. Raises RegistryError
    when any read fails: nothing is judged on a partial picture."""
    wanted: dict[str, set[str]] = {}
    for tier in planned:
        wanted.setdefault(tier.repository, set()).add(tier.content_hash)
    repos: list[Repository] = [read_repository(name) for name in wanted]
    decisions = [d for repo in repos for d in decide(repo, wanted[repo.name], policy)]
    return Pruning(decisions, bytes_freed(decisions, repos), protected(repos, decisions))


def protected(repos: Iterable[Repository], decisions: Iterable[Decision]) -> dict[str, set[Digest]]:
    """Per repository, every manifest a tag names (and what those indexes hold), but the
    images being deleted and what only their own artifact tags name: what no deletion of
    an artifact may touch (an artifact of a kept image re-tagged under a doomed image's
    tags stays, named by its own)."""
    decided = list(decisions)
    doomed = {(d.repository, d.digest) for d in decided if d.delete}
    gone = doomed | {(d.repository, x) for d in decided if d.delete for x in d.inner}
    return {
        repo.name: {
            x
            for tag, image in repo.tags.items()
            if (repo.name, artifact_subject(tag)) not in doomed
            for x in (image.digest, *image.contains, *image.refers_to)
            if x is not None and (repo.name, x) not in gone
        }
        for repo in repos
    }


def lines(pruning: Pruning, deleting: bool) -> list[str]:
    """A line per image: its fate and why (when deleting, the kept ones only: `delete`
    says each deletion once it happened)."""
    out = []
    for d in pruning.decisions:
        if deleting and d.delete:
            continue
        verb = "would delete" if d.delete else "keep"
        extra = f" and {len(d.artifacts)} artifact(s)" if d.delete and d.artifacts else ""
        out.append(
            f"{verb:<12} {d.repository}:{','.join(d.tags)} ({d.digest.hex[:12]}){extra}  {d.why}"
        )
    return out


def summary(pruning: Pruning, deleted: int | None) -> str:
    """The last line: how many images went (None: a dry run) and the layer bytes freed."""
    count = sum(d.delete for d in pruning.decisions)
    if deleted is None:
        return f"{count} image(s) to delete, {_size(pruning.freed)} of layers to free" + (
            "; run with --yes to delete" if count else ""
        )
    freed = _size(pruning.freed) if deleted == count else "fewer bytes"
    return (
        f"{deleted} image(s) deleted, {freed} of layers freed once the registry "
        "collects its garbage"
    )


def delete(pruning: Pruning, say: Callable[[str], None]) -> int:
    """Delete what `pruning` decided, each image's artifacts first, saying each deletion
    once it happened; returns how many images went. Just before each, the repository's tags
    are asked again: a tag that came to name the image since it was judged keeps it (a
    delete by digest would take that tag too). Raises DeletesRefused (the caller says it in
    one line) when the registry does not allow deletes, RegistryError when it fails."""
    deleted = 0
    inner: dict[str, set[Digest]] = {}
    for d in (d for d in pruning.decisions if d.delete):
        ref = parse_ref(d.repository)
        if tagged := _tagged_now(ref, d):
            say(
                f"{'keep':<12} {d.repository}:{','.join(d.tags)} ({d.digest.hex[:12]})  "
                f"kept: {tagged!r} came to name it while prune ran"
            )
            continue
        _delete_artifacts(ref, d, pruning.protected.get(d.repository, set()))
        api.delete_manifest(ref, d.digest)
        inner.setdefault(d.repository, set()).update(d.inner)
        deleted += 1
        extra = f" and {len(d.artifacts)} artifact(s)" if d.artifacts else ""
        say(
            f"{'deleted':<12} {d.repository}:{','.join(d.tags)} ({d.digest.hex[:12]})"
            f"{extra}  {d.why}"
        )
    for repository, digests in inner.items():
        _delete_untagged(repository, digests)
    return deleted


def _delete_artifacts(ref: Ref, d: Decision, protected: set[Digest]) -> None:
    """Everything about the image `d` deletes, each read first (module docstring): what
    names the image as its `subject`; cosign's `.att` image when every envelope in it is
    about the image; its referrers index (first, so no tool lists what is gone) when every
    entry is one of those or gone already. Never what any other tag names (`protected`).
    What cannot be tied to the image stays: garbage at worst, never another image's."""
    index_tag = fallback_tag(d.digest)
    about: list[Digest] = []
    index: Digest | None = None
    listed = [r.digest for r in referrers.listed(ref, d.digest)]
    for tag, artifact in [*d.artifacts, *((None, r) for r in listed)]:
        if artifact in protected or artifact in about or artifact == index:
            continue
        body = _manifest(ref, artifact)
        if body is None:
            continue
        if subject_of(body) == d.digest or (
            (tag or "").endswith(".att") and _envelopes_about(ref, body, d.digest)
        ):
            about.append(artifact)
        elif tag == index_tag and _is_referrers_list(body):
            index = artifact
    if index is not None and set(listed) <= set(about) | _gone(ref, listed):
        api.delete_manifest(ref, index)
    for artifact in about:
        api.delete_manifest(ref, artifact)


def _is_referrers_list(body: bytes) -> bool:
    try:
        return is_referrers_index(entries(body))
    except ValueError:
        return False


def _manifest(ref: Ref, digest: Digest) -> bytes | None:
    try:
        return api.get_manifest(ref.at(str(digest))).body
    except BuildGraphError:
        return None  # gone already, or unreadable: nothing known to delete


def _envelopes_about(ref: Ref, body: bytes, subject: Digest) -> bool:
    """Whether cosign's `.att` image `body` holds only envelopes about `subject`."""
    layers = envelope_layers(body)
    if not layers:
        return False
    for layer in layers:
        try:
            if envelope_subject(api.get_blob(ref, layer)) != subject:
                return False
        except BuildGraphError:
            return False
    return True


def _gone(ref: Ref, digests: list[Digest]) -> set[Digest]:
    """Those of `digests` the registry definitely no longer holds."""
    return {d for d in digests if api.head_manifest(ref.at(str(d))).presence is Presence.ABSENT}


def _delete_untagged(repository: str, digests: set[Digest]) -> None:
    """The manifests inside deleted images' indexes (a platform image, its attestations):
    untagged now, and a registry's plain garbage collection keeps every manifest, so their
    layers too. Last, and only those that nothing tagged in the repository names or holds
    as the registry reads now (an image kept while prune ran, an identical build pushed
    meanwhile)."""
    now = read_repository(repository)
    if any(i.problem and not (i.contains or i.refers_to) for i in now.tags.values()):
        return  # a tag whose contents could not be read may hold any of them
    staying = {
        x
        for image in now.tags.values()
        for x in (image.digest, *image.contains, *image.refers_to)
        if x is not None
    }
    ref = parse_ref(repository)
    for digest in sorted(digests - staying, key=str):
        api.delete_manifest(ref, digest)


def _tagged_now(ref: Ref, decision: Decision) -> str | None:
    """A tag, other than the hash tags judged, that names the image now (None if none)."""
    for tag in list_tags(ref):
        if tag in decision.tags or tag_kind(tag) == "artifact":
            continue
        answer = api.head_manifest(ref.at(tag))
        if answer.presence is Presence.ERROR:
            raise RegistryError(answer.error or f"{ref.host}: no answer about {tag}")
        if answer.digest == decision.digest:
            return tag
    return None


def policy(stack: str, keep: int, older_than: datetime.timedelta) -> Policy:
    fixed = datetime.datetime.fromtimestamp(build_act.SOURCE_DATE_EPOCH, datetime.UTC)
    return Policy(stack, keep, older_than, datetime.datetime.now(datetime.UTC), fixed)


def _size(count: int) -> str:
    """'123456789 bytes (117.7 MiB)': exact, for scripts and tests, and readable."""
    scaled, unit = float(count), "B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if scaled < 1024 or unit == "GiB":
            break
        scaled /= 1024
    return f"{count} bytes ({scaled:.1f} {unit})"
