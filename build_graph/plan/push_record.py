"""push.json: what this machine last saw pushed for a tier's hash tag (a note, never proof).

Written by the push stage; read as a hint by `doit info` (what changed since) and by the
run's first round of registry questions (which report tag to ask about).
"""

from __future__ import annotations

from build_graph.fs import read_record
from build_graph.oci.digest import Digest, maybe_digest
from build_graph.plan.plan import PlannedTier


def record(tier: PlannedTier, digest: Digest) -> dict[str, object]:
    """push.json: the hash tag, its digest, and the inputs it was made of (for `doit info`)."""
    return {"image": tier.image, "digest": str(digest), "inputs": dict(tier.inputs)}


def recorded_digest(tier: PlannedTier) -> Digest | None:
    """The digest this machine last saw for the tier's hash tag (push.json): a hint only
    (None when the note is missing, for another image, or not a digest)."""
    note = read_record(tier.folder.push_record)
    if note and note.get("image") == tier.image:
        return maybe_digest(note.get("digest"))
    return None
