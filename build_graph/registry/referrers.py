"""A subject's referrers in a registry: listed through the referrers API where the registry
has one, else through the referrers tag that this module keeps (oci/referrers.py).

Contracts: listing is tri-state like every registry read (RegistryError is never 'none');
adding an entry writes the amended index, then reads it back SETTLE times, a moment
apart, and writes again whenever another writer's update replaced ours (a read-modify-write
has no lock on a registry: the spec leaves it to clients), up to ATTEMPTS writes, then
RegistryError, unless the entry's own manifest is gone (another runner made the same
artifact again and deleted ours: nothing is left to list); what remains possible is a
writer whose read and write straddle all of our reads, which one settling round makes
unlikely rather than impossible (the reads are spaced by at least as long as our own
read-modify-write took, so the window grows with the load).
The index an update replaces is never deleted here (a tag naming anything else is
replaced, not merged).
"""

from __future__ import annotations

import random
import time

from build_graph.errors import RegistryError, UntrustedAnswer
from build_graph.log import log
from build_graph.oci import problems
from build_graph.oci.digest import Digest
from build_graph.oci.documents import OCI_INDEX, Descriptor
from build_graph.oci.referrers import (
    Referrer,
    entries,
    fallback_tag,
    index,
    is_referrers_index,
    referrers,
    with_entries,
    without,
)
from build_graph.oci.refs import Ref
from build_graph.registry import api
from build_graph.registry.transport import client

ATTEMPTS = 12
SETTLE = 3  # reads in a row that must list an added entry
SETTLE_GAP = 0.05  # seconds between them (jittered)
_ACCEPT = {"Accept": OCI_INDEX}


def listed(image: Ref, subject: Digest) -> list[Referrer]:
    """The artifacts about `subject` in `image`'s repository: the referrers API's answer,
    or the referrers tag's entries where the registry has no API (an absent tag, or one that
    names no referrers list: none)."""
    response = client(image.api_host).request(
        "GET", image.repository, f"referrers/{subject}", headers=_ACCEPT, limit=api.MANIFEST_LIMIT
    )
    if response.status == 200:
        return referrers(_entries(image, response.body, "its referrers API"))
    if response.status != 404:
        raise problems.refused(
            image.host, f"listing the referrers of {image.repository}@{subject}", response.status
        )
    found, _ = _read_tag(image, subject)
    return referrers(found)


def attach(image: Ref, subject: Digest, *added: Referrer) -> None:
    """List each of `added` in `subject`'s referrers tag (for a registry that did not take
    the artifacts' subject itself), and see them stay listed (the module's contract): one
    round of writes and settling reads for all of them, as for one."""
    wanted, lost = list(added), None
    writes, settled, gap, paused = 0, 0, SETTLE_GAP, False
    while settled < SETTLE and wanted:
        read_at = time.monotonic()
        listed_now, _ = _read_tag(image, subject)
        amended = with_entries(listed_now, wanted)
        if amended is None:  # listed: read again a moment later, unless settled
            settled += 1
            if settled < SETTLE:
                time.sleep(gap * random.uniform(0.5, 1.5))
            continue
        settled = 0  # SETTLE reads in a row: one that lost our entry starts the count again
        if writes and not paused:  # another writer won the last round
            # Another runner made the same artifact again and deleted ours (artifacts.py's
            # supersede): nothing is left to list, and writing it back would only be
            # refused, round after round, until ATTEMPTS ran out.
            for gone in [r for r in wanted if _gone(image, r.digest)]:
                log(f"  {gone.digest} was replaced by another runner's: not listed")
                wanted.remove(gone)
            # Let the writers fall out of step, by as long as a round takes here (a loaded
            # CI machine's is far over SETTLE_GAP: jitter below it kept two racing runners
            # in step for ATTEMPTS rounds); then read afresh: a list read before the pause
            # would drop whatever the others wrote during it.
            time.sleep(random.uniform(0, max(gap, SETTLE_GAP) * writes))
            paused = True
            continue
        if writes == ATTEMPTS:
            why = f" (the last refusal: {lost})" if lost is not None else ""
            raise RegistryError(
                f"{image.host}/{image.repository}:{fallback_tag(subject)}: other writers "
                f"replaced the referrers index {ATTEMPTS} times while "
                f"{', '.join(str(r.digest) for r in wanted)} was added{why}; run again"
            )
        lost = _write_tag(image, subject, amended, may_lose=True)
        writes, settled, paused = writes + 1, 0, False
        # Another writer's read-modify-write takes about as long as ours did: on a loaded
        # machine or a slow registry the settling reads wait that long, not a fixed moment,
        # so a writer that read before our write has had the time to write back.
        gap = max(SETTLE_GAP, time.monotonic() - read_at)


def detach(image: Ref, subject: Digest, gone: set[Digest]) -> None:
    """Remove `gone` from `subject`'s referrers tag."""
    listed_now, old = _read_tag(image, subject)
    if old is None:
        return
    kept = without(listed_now, gone)
    if len(kept) != len(listed_now):
        _write_tag(image, subject, kept)


def _read_tag(image: Ref, subject: Digest) -> tuple[list[Descriptor], Digest | None]:
    """The referrers tag's entries and its index's digest; ([], None) when there is none,
    and when the tag names something that is no referrers list (an image's index planted
    there): it is replaced, never merged, and never deleted."""
    ref = image.at(fallback_tag(subject))
    answer = api.head_manifest(ref)
    if answer.error is not None:
        raise RegistryError(answer.error)
    if answer.digest is None:
        return [], None
    manifest = api.get_manifest(ref)
    try:
        if manifest.media_type != OCI_INDEX:
            raise ValueError(f"it is served as {manifest.media_type}, not an OCI image index")
        found = entries(manifest.body)
    except ValueError as exc:
        where = f"{image.host}/{image.repository}:{fallback_tag(subject)}"
        log(f"  {where} is unreadable ({exc}): replaced")
        return [], None
    if not is_referrers_index(found):
        log(
            f"  {image.host}/{image.repository}:{fallback_tag(subject)} names no referrers list "
            "(an entry without an artifact type, or a platform image): replaced"
        )
        return [], None
    return found, manifest.digest


def _write_tag(
    image: Ref, subject: Digest, listed_now: list[Descriptor], may_lose: bool = False
) -> RegistryError | None:
    """The amended list under the referrers tag. The index it replaces is left as it is
    (untagged; `prune` takes it with the image): deleting it by digest would trust that no
    one pointed this tag at something else to have it deleted.

    A refused write whose list names a manifest the registry no longer holds (a runner
    beside us replaced its artifact and deleted the old one after we read the list: the
    registry refuses an index naming what is gone, MANIFEST_BLOB_UNKNOWN) is written once
    more without those entries. Refused so while every entry is still found (a deletion
    the registry's reads had not caught up with, seen under racing runners), or refused
    again without them (another entry deleted meanwhile), the refusal is returned, nothing
    written, where the caller `may_lose` the round (attach reads again,
    ATTEMPTS times at most); any other refusal stands."""
    ref = image.at(fallback_tag(subject))
    try:
        api.put_manifest(ref, index(listed_now), OCI_INDEX)
    except RegistryError as exc:
        refused = exc
        held = [entry for entry in listed_now if not _gone(image, entry.digest)]
        if len(held) < len(listed_now):
            try:
                api.put_manifest(ref, index(held), OCI_INDEX)
                return None
            except RegistryError as again:  # another entry went meanwhile (racing runners)
                refused = again
        if may_lose and "MANIFEST_BLOB_UNKNOWN" in str(refused):
            return refused
        raise refused from None
    return None


def _gone(image: Ref, digest: Digest) -> bool:
    """The registry says the manifest `digest` is absent (404): an unanswered question is
    not 'gone'."""
    answer = api.head_manifest(image.at(str(digest)))
    return answer.error is None and answer.digest is None


def _entries(image: Ref, body: bytes, where: str) -> list[Descriptor]:
    try:
        return entries(body)
    except ValueError as exc:
        raise UntrustedAnswer(
            f"the registry {image.host} answered the referrers of {image.repository} through "
            f"{where} with something unreadable: {exc}"
        ) from None
