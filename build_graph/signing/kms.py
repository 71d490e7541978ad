"""Google Cloud KMS keys: sign with a key version the runner may use, read its public key.

Through the KMS client library with its own credentials (Application Default Credentials:
a CI service account, workload identity, `gcloud auth application-default login`).
BUILD_GRAPH_KMS_ENDPOINT names another endpoint (a private one, or a stand-in on loopback
in tests, which is spoken to over REST without credentials). Answers are checked as
Google's integrity guide asks (https://cloud.google.com/kms/docs/data-integrity-guidelines):
the service confirms the digest's CRC32C, names the key version asked for, and the
signature's CRC32C matches; then the signature is verified with the public key here, so a
wrong or damaged answer is never published.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

import google_crc32c
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from build_graph.errors import KmsUnreachable, SigningProblem
from build_graph.log import shown
from build_graph.oci import hosts
from build_graph.signing.keys import PublicKey, algorithm
from build_graph.signing.spec import KMS_SCHEME

ENDPOINT_ENV = "BUILD_GRAPH_KMS_ENDPOINT"
_DIGESTS = {"secp256r1": "sha256", "secp384r1": "sha384"}


def _client() -> Any:
    """The KMS client: the library's default, or REST to BUILD_GRAPH_KMS_ENDPOINT."""
    try:
        from google.cloud import kms_v1
    except ImportError:
        raise SigningProblem(
            "signing with a Cloud KMS key needs google-cloud-kms: pip install google-cloud-kms"
        ) from None
    endpoint = os.environ.get(ENDPOINT_ENV)
    if not endpoint:
        return kms_v1.KeyManagementServiceClient()
    if endpoint.startswith("http://"):
        host = endpoint.removeprefix("http://").split("/")[0]
        if not hosts.is_loopback(host):
            raise SigningProblem(
                f"{ENDPOINT_ENV}={endpoint}: plain HTTP only to loopback; name an https:// endpoint"
            )
        from google.auth.credentials import AnonymousCredentials

        return kms_v1.KeyManagementServiceClient(
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            transport="rest",
            client_options={"api_endpoint": endpoint},
        )
    return kms_v1.KeyManagementServiceClient(client_options={"api_endpoint": endpoint})


def _crc(data: bytes) -> int:
    return int(google_crc32c.value(data))


def _call(what: str, name: str, request: Any) -> Any:
    try:
        return request()
    except SigningProblem:
        raise
    except Exception as exc:  # the library's errors (google.api_core, auth) are many kinds
        first = shown(str(exc).splitlines()[0][:300]) if str(exc) else type(exc).__name__
        raise KmsUnreachable(f"Cloud KMS {what} with {name}: {first}") from None


@dataclass
class KmsSigner:
    """A Cloud KMS asymmetric signing key version (EC_SIGN_P256_SHA256 or _P384_SHA384)."""

    name: str  # the gcpkms:// reference
    _public: PublicKey | None = field(default=None, repr=False)

    @property
    def version(self) -> str:
        return self.name.removeprefix(KMS_SCHEME)

    def public(self) -> PublicKey:
        if self._public is None:
            self._public = public_key(self.name)
        return self._public

    def public_key(self) -> ec.EllipticCurvePublicKey:
        return self.public().key

    def sign(self, data: bytes) -> bytes:
        key = self.public()
        digest_name = _DIGESTS[key.key.curve.name]
        digest = hashlib.new(digest_name, data).digest()
        answer = _call(
            "signing",
            self.name,
            lambda: _client().asymmetric_sign(
                request={
                    "name": self.version,
                    "digest": {digest_name: digest},
                    "digest_crc32c": _crc(digest),
                }
            ),
        )
        signature = bytes(answer.signature)
        if not answer.verified_digest_crc32c or answer.name != self.version:
            raise KmsUnreachable(
                f"Cloud KMS answered for {shown(str(answer.name or '?'))} without confirming "
                f"the digest sent for {self.version}; nothing signed"
            )
        if _crc(signature) != int(answer.signature_crc32c or 0):
            raise KmsUnreachable(f"Cloud KMS: the signature from {self.name} arrived damaged")
        if not key.verifies(signature, data):
            raise KmsUnreachable(
                f"Cloud KMS: the signature from {self.name} does not verify with its public key"
            )
        return signature


def public_key(reference: str) -> PublicKey:
    """The public key of a Cloud KMS key version, its PEM checked against its CRC32C."""
    version = reference.removeprefix(KMS_SCHEME)
    answer = _call(
        "reading the public key",
        reference,
        lambda: _client().get_public_key(request={"name": version}),
    )
    data = str(answer.pem).encode()
    if answer.name != version:
        raise KmsUnreachable(
            f"Cloud KMS answered the public key of {shown(str(answer.name))} for {reference}"
        )
    if _crc(data) != int(answer.pem_crc32c or 0):
        raise KmsUnreachable(f"Cloud KMS: the public key of {reference} arrived damaged")
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        raise KmsUnreachable(f"Cloud KMS: {reference} answered no PEM public key") from None
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise SigningProblem(
            f"{reference}: not an elliptic-curve signing key; create it with "
            "--purpose asymmetric-signing --default-algorithm ec-sign-p256-sha256"
        )
    algorithm(key, reference)
    return PublicKey(reference, key)
