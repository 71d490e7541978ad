"""Signed reports, pure: DSSE's encoding, the bundle cosign reads, key files, and which
signatures count (signing/)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from build_graph.errors import SigningProblem
from build_graph.oci.attestation import VERIFY_PREDICATE, statement
from build_graph.oci.digest import Digest
from build_graph.signing import dsse, keys, policy
from build_graph.signing.spec import SigningSpec

DIGEST = Digest.of(b"image manifest")
REPORT = {"digest": str(DIGEST), "passed": True, "fingerprint": "f1"}
STATEMENT = statement("127.0.0.1:5000/q/runner", DIGEST, VERIFY_PREDICATE, REPORT)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    return keys.generate(tmp_path / "keys")


def spec(*public: Path, key: Path | None = None, required: bool = False) -> SigningSpec:
    return SigningSpec(str(key) if key else None, tuple(str(p) for p in public), required)


def test_pae_is_dsse_s_encoding() -> None:
    # The DSSE protocol's own example (secure-systems-lab/dsse, protocol.md).
    assert (
        dsse.pae("http://example.com/HelloWorld", b"hello world")
        == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_a_sealed_report_is_a_bundle_signed_over_the_pae(pair: tuple[Path, Path]) -> None:
    key, pub = pair
    sealed = policy.seal(spec(pub, key=key), STATEMENT, {"a": "b"})
    assert sealed.media_type == dsse.BUNDLE_TYPE
    assert sealed.annotations["dev.sigstore.bundle.predicateType"] == VERIFY_PREDICATE
    assert sealed.annotations["dev.sigstore.bundle.content"] == "dsse-envelope"
    envelope = dsse.open_bundle(sealed.payload)
    assert json.loads(envelope.payload) == STATEMENT
    public = keys.load_public_file(pub)
    assert public.verifies(envelope.signatures[0], dsse.pae(dsse.PAYLOAD_TYPE, envelope.payload))
    assert not public.verifies(envelope.signatures[0], envelope.payload)  # the PAE, not the body
    # cosign's key hint: the base64 SHA-256 of the public key's DER form
    der = public.key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert envelope.hint == base64.b64encode(hashlib.sha256(der).digest()).decode()


def test_without_a_key_the_statement_goes_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(policy.SIGNING_KEY_ENV, raising=False)
    sealed = policy.seal(SigningSpec(), STATEMENT, {})
    assert sealed.media_type == policy.STATEMENT_TYPE and sealed.signed_by is None
    assert json.loads(sealed.payload) == STATEMENT


def test_the_environment_s_key_wins(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    key, pub = pair
    monkeypatch.setenv(policy.SIGNING_KEY_ENV, str(key))
    sealed = policy.seal(spec(pub, key=Path("/nowhere/else.key")), STATEMENT, {})
    assert sealed.signed_by == str(key)


def test_only_a_trusted_signature_counts(tmp_path: Path, pair: tuple[Path, Path]) -> None:
    key, pub = pair
    _, other_pub = keys.generate(tmp_path / "other")
    sealed = policy.seal(spec(pub, key=key), STATEMENT, {}).payload
    opened = policy.open_payload(spec(pub, required=True), sealed)
    assert opened.signed_by == str(pub) and opened.document == STATEMENT
    assert policy.counts(spec(pub, required=True), opened) is None
    wrong = policy.open_payload(spec(other_pub, required=True), sealed)
    assert wrong.problem and "none of signing.public_keys" in wrong.problem
    # a report signed by another key is refused whether or not signatures are required
    assert policy.counts(spec(other_pub), wrong) is not None
    # unjudged where no public key is named: counts as unsigned
    assert policy.open_payload(SigningSpec(), sealed).signed_by is None


def test_an_altered_statement_is_no_report(pair: tuple[Path, Path]) -> None:
    key, pub = pair
    document = json.loads(policy.seal(spec(pub, key=key), STATEMENT, {}).payload)
    forged = {**STATEMENT, "predicate": {**REPORT, "passed": True, "summary": "forged"}}
    document["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(forged).encode()).decode()
    opened = policy.open_payload(spec(pub), json.dumps(document).encode())
    assert opened.problem and "none of signing.public_keys" in opened.problem


def test_unsigned_reports_count_only_where_signatures_are_not_required(
    pair: tuple[Path, Path],
) -> None:
    _, pub = pair
    plain = json.dumps(STATEMENT).encode()
    assert policy.counts(spec(pub), policy.open_payload(spec(pub), plain)) is None
    why = policy.counts(spec(pub, required=True), policy.open_payload(spec(pub), plain))
    assert why == "it is unsigned, and signing.required is set"
    assert policy.open_payload(spec(pub), b"\x00not json").problem


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d.pop("dsseEnvelope"),
        lambda d: d["dsseEnvelope"].update(signatures=[]),
        lambda d: d["dsseEnvelope"].update(payload="%%%"),
        lambda d: d["dsseEnvelope"].update(payloadType="text/plain"),
        lambda d: d["dsseEnvelope"].update(signatures=d["dsseEnvelope"]["signatures"] * 9),
    ],
    ids=["no envelope", "no signature", "bad base64", "another payload type", "9 signatures"],
)
def test_a_damaged_bundle_is_no_report(pair: tuple[Path, Path], damage: object) -> None:
    key, pub = pair
    document = json.loads(policy.seal(spec(pub, key=key), STATEMENT, {}).payload)
    damage(document)  # type: ignore[operator]
    opened = policy.open_payload(spec(pub), json.dumps(document).encode())
    assert opened.problem and opened.problem.startswith("the stored bundle is unreadable")


def test_required_without_a_key_fails_before_anything_runs(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, pub = pair
    monkeypatch.delenv(policy.SIGNING_KEY_ENV, raising=False)
    with pytest.raises(SigningProblem, match="BUILD_GRAPH_SIGNING_KEY"):
        policy.ready(spec(pub, required=True))


def test_a_key_whose_reports_would_not_count_is_refused(
    tmp_path: Path, pair: tuple[Path, Path]
) -> None:
    _, pub = pair
    stranger, _ = keys.generate(tmp_path / "stranger")
    with pytest.raises(SigningProblem, match="does not name its public key"):
        policy.ready(spec(pub, key=stranger))


def test_keygen_writes_a_private_key_only_its_owner_reads(pair: tuple[Path, Path]) -> None:
    key, pub = pair
    assert key.stat().st_mode & 0o777 == 0o600
    assert pub.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    with pytest.raises(SigningProblem, match="exists"):
        keys.generate(key.parent)


def test_key_files_that_cannot_sign_are_refused_in_words(tmp_path: Path) -> None:
    cosign = tmp_path / "cosign.key"
    cosign.write_text("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nabc\n")
    with pytest.raises(SigningProblem, match="a cosign key file"):
        keys.load_signer_file(cosign)
    edwards = tmp_path / "ed.key"
    edwards.write_bytes(
        ed25519.Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(SigningProblem, match="not an ECDSA key"):
        keys.load_signer_file(edwards)
    big = tmp_path / "p521.key"
    big.write_bytes(
        ec.generate_private_key(ec.SECP521R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pw"),
        )
    )
    with pytest.raises(SigningProblem, match="BUILD_GRAPH_SIGNING_KEY_PASSWORD"):
        keys.load_signer_file(big)
    with pytest.raises(SigningProblem, match="cannot read"):
        keys.load_signer_file(tmp_path / "missing.key")
    with pytest.raises(SigningProblem, match="not a PEM public key"):
        keys.load_public_file(cosign)


def test_an_encrypted_key_opens_with_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "enc.key"
    path.write_bytes(
        ec.generate_private_key(ec.SECP384R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"s3cret"),
        )
    )
    monkeypatch.setenv(keys.PASSWORD_ENV, "s3cret")
    signer = keys.load_signer_file(path)
    public = keys.PublicKey("p", signer.public_key())
    assert public.verifies(signer.sign(b"data"), b"data")


def test_a_runner_that_signs_wants_signed_reports(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    key, pub = pair
    plain = policy.open_payload(spec(pub), json.dumps(STATEMENT).encode())
    monkeypatch.setenv(policy.SIGNING_KEY_ENV, str(key))
    assert policy.counts(spec(pub), plain) == "it is unsigned, and this runner signs its reports"
    monkeypatch.delenv(policy.SIGNING_KEY_ENV)
    assert policy.counts(spec(pub), plain) is None  # a runner without a key adopts it


def test_a_payload_nested_too_deep_is_no_report(pair: tuple[Path, Path]) -> None:
    _, pub = pair
    deep = b"[" * 200_000 + b"]" * 200_000
    assert policy.open_payload(spec(pub), deep).problem == "the stored report is not JSON"
    with pytest.raises(ValueError):
        dsse.open_bundle(deep)


def test_a_password_for_a_key_without_one_is_said(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    key, _ = pair
    monkeypatch.setenv(keys.PASSWORD_ENV, "unneeded")
    with pytest.raises(SigningProblem, match="not encrypted; unset"):
        keys.load_signer_file(key)
