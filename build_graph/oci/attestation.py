"""in-toto Statement v1 envelopes for what we publish about an image (verify reports).

A Statement names its subject (the image repository and its sha256 digest), a predicate
type (a URI of ours) and the predicate (our report, unchanged), so in-toto libraries and
policy engines read it (https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md).
Pure: registry/reports.py wraps before publishing and unwraps what it reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from build_graph.oci.digest import Digest
from build_graph.oci.documents import IN_TOTO

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
# The layer media type in-toto tools (cosign, oras, policy engines) look for.
MEDIA_TYPE = IN_TOTO
VERIFY_PREDICATE = "https://build-graph.dev/verify-report/v1"


def statement(
    repository: str, digest: Digest, predicate_type: str, predicate: Mapping[str, object]
) -> dict[str, Any]:
    """The Statement about `repository@digest` carrying `predicate`."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": repository, "digest": {"sha256": digest.hex}}],
        "predicateType": predicate_type,
        "predicate": predicate,
    }


def predicate_of(document: object, predicate_type: str) -> dict[str, object] | None:
    """The predicate of a Statement of `predicate_type` whose subjects name exactly one
    sha256 digest, which the predicate's own 'digest' repeats; None for anything else
    (another type, a Statement about something else, a bare document)."""
    if not isinstance(document, dict) or document.get("_type") != STATEMENT_TYPE:
        return None
    predicate, subjects = document.get("predicate"), document.get("subject")
    if document.get("predicateType") != predicate_type or not isinstance(predicate, dict):
        return None
    if not isinstance(subjects, list) or len(subjects) != 1 or not isinstance(subjects[0], dict):
        return None
    named = subjects[0].get("digest")
    if not isinstance(named, dict) or f"sha256:{named.get('sha256')}" != predicate.get("digest"):
        return None
    return predicate
