"""Signing with a Cloud KMS key through the real KMS client library, against a stand-in
service on loopback (fake_kms.py) that answers well, and then as a damaged or confused
service would: each wrong answer is refused in words, nothing signed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from build_graph.errors import KmsUnreachable, SigningProblem
from build_graph.signing import kms
from tests.integration.fake_kms import KEY_VERSION, Kms, fake_kms
from tests.support.servers import free_port

pytestmark = pytest.mark.integration
KEY = f"gcpkms://{KEY_VERSION}"


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[Kms]:
    with fake_kms() as (endpoint, state):
        monkeypatch.setenv(kms.ENDPOINT_ENV, endpoint)
        yield state


def test_a_signature_from_kms_verifies_with_its_public_key(served: Kms) -> None:
    signer = kms.KmsSigner(KEY)
    signature = signer.sign(b"DSSEv1 payload")
    assert signer.public().verifies(signature, b"DSSEv1 payload")
    assert served.signed == 1


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("pem-crc", "the public key of .* arrived damaged"),
        ("pem-name", "answered the public key of .*0 for"),
        ("sig-crc", "the signature from .* arrived damaged"),
        ("name", "without confirming"),
        ("unverified", "without confirming"),
        ("other-key", "does not verify with its public key"),
    ],
)
def test_a_wrong_answer_signs_nothing(served: Kms, fault: str, said: str) -> None:
    served.faults = {fault}
    with pytest.raises(KmsUnreachable, match=said):
        kms.KmsSigner(KEY).sign(b"payload")


def test_no_service_is_one_line_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kms.ENDPOINT_ENV, f"http://127.0.0.1:{free_port()}")
    with pytest.raises(KmsUnreachable, match="Cloud KMS reading the public key"):
        kms.KmsSigner(KEY).sign(b"payload")


def test_plain_http_only_to_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kms.ENDPOINT_ENV, "http://kms.example.com")
    with pytest.raises(SigningProblem, match="plain HTTP only to loopback"):
        kms.public_key(KEY)
