"""Verify reports as in-toto Statements: what in-toto's own bindings read, and what our
reader refuses."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement

from build_graph.oci.attestation import VERIFY_PREDICATE, predicate_of, statement
from build_graph.oci.digest import Digest

DIGEST = Digest.of(b"image manifest")
REPORT = {"digest": str(DIGEST), "passed": True, "fingerprint": "f1", "checks": [{"n": 1}]}


def parsed_by_in_toto(document: dict[str, Any]) -> Statement:
    proto = json_format.Parse(json.dumps(document), statement_pb2.Statement())
    parsed = Statement.copy_from_pb(proto)
    parsed.validate()  # raises ValueError on a malformed Statement
    return parsed


def test_a_report_is_a_statement_that_in_toto_reads() -> None:
    document = statement("127.0.0.1:5000/quickstart/runner", DIGEST, VERIFY_PREDICATE, REPORT)
    parsed = parsed_by_in_toto(document)
    assert parsed.pb.predicate_type == VERIFY_PREDICATE
    assert parsed.pb.subject[0].name == "127.0.0.1:5000/quickstart/runner"
    assert parsed.pb.subject[0].digest["sha256"] == DIGEST.hex
    assert predicate_of(json.loads(json.dumps(document)), VERIFY_PREDICATE) == REPORT


def test_the_reader_refuses_statements_about_something_else() -> None:
    other = statement("r/x", Digest.of(b"another image"), VERIFY_PREDICATE, REPORT)
    assert predicate_of(other, VERIFY_PREDICATE) is None
    typed = statement("r/x", DIGEST, "https://slsa.dev/provenance/v1", REPORT)
    assert predicate_of(typed, VERIFY_PREDICATE) is None
    assert (
        predicate_of({**typed, "_type": "https://in-toto.io/Statement/v0.1"}, VERIFY_PREDICATE)
        is None
    )
    two = {**statement("r/x", DIGEST, VERIFY_PREDICATE, REPORT)}
    two["subject"] = two["subject"] * 2
    assert predicate_of(two, VERIFY_PREDICATE) is None
