"""`python -m build_graph prune`: delete the hash-tag images, and their artifacts, that
nothing needs (the rules: oci/retention.py). Dry run unless asked to delete.

Contract: every repository of the plan is read whole before anything is decided; a
registry that cannot be read raises RegistryError (exit 3) having deleted nothing. Per
image, its artifacts are deleted first (its referrers index 'sha256-<its hex>' first of
all, then verify reports, SBOMs and whatever else its referrers list, other tools'
signatures included), then the image's manifest by digest, so an interrupted prune leaves
images without reports (rebuilt or re-verified if ever needed), never reports about
nothing, and no referrers index naming what is gone.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from build_graph.errors import BuildGraphError, RegistryError
from build_graph.oci.digest import Digest
from build_graph.oci.referrers import artifact_about, fallback_tag
from build_graph.oci.refs import Presence, Ref, parse_ref
from build_graph.oci.retention import (
    Decision,
    Policy,
    Repository,
    bytes_freed,
    decide,
    tag_kind,
)
from build_graph.plan.plan import PlannedTier
from build_graph.registry import api, referrers
from build_graph.registry.catalog import read_repository
from build_graph.registry.tags import list_tags
from build_graph.stages import build


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
    """Per repository, what its hash and human tags name (and the manifests inside those
    indexes) less the images being deleted: what no artifact deletion may touch."""
    doomed = {(d.repository, x) for d in decisions if d.delete for x in (d.digest, *d.inner)}
    return {
        repo.name: {
            x
            for tag, image in repo.tags.items()
            if tag_kind(tag) != "artifact"
            for x in (image.digest, *image.contains, *image.refers_to)
            if x is not None and (repo.name, x) not in doomed
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
    """Everything about the image `d` deletes, each read first: what its referrers list
    (other tools' too: cosign's signatures, untagged) and its artifact tags name. Its
    referrers index goes first (no tool then lists an artifact that is gone), listed before
    it goes. Only what is about the image goes (oci/referrers.artifact_about) and never what
    a hash or human tag names (`protected`): a list or an artifact tag planted to name a
    kept image deletes nothing."""
    listed = [(None, r.digest) for r in referrers.listed(ref, d.digest)]
    index_tag = fallback_tag(d.digest)
    ordered = sorted(d.artifacts, key=lambda pair: pair[0] != index_tag)
    done: set[Digest] = set()
    for tag, artifact in [*ordered, *listed]:
        if artifact in done or artifact in protected:
            continue
        done.add(artifact)
        try:
            body = api.get_manifest(ref.at(str(artifact))).body
        except BuildGraphError:
            continue  # gone already, or unreadable: nothing known to delete
        if artifact_about(body, d.digest, tag or ""):
            api.delete_manifest(ref, artifact)


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
    fixed = datetime.datetime.fromtimestamp(build.SOURCE_DATE_EPOCH, datetime.UTC)
    return Policy(stack, keep, older_than, datetime.datetime.now(datetime.UTC), fixed)


def _size(count: int) -> str:
    """'123456789 bytes (117.7 MiB)': exact, for scripts and tests, and readable."""
    scaled, unit = float(count), "B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if scaled < 1024 or unit == "GiB":
            break
        scaled /= 1024
    return f"{count} bytes ({scaled:.1f} {unit})"
