"""DSSE envelopes inside Sigstore bundles: what cosign writes and reads for an attestation.

Pure. A verify report's in-toto Statement is signed over DSSE's pre-authentication encoding
(https://github.com/secure-systems-lab/dsse/blob/master/protocol.md) and wrapped as a
Sigstore bundle v0.3 (https://github.com/sigstore/protobuf-specs, `Bundle`): the envelope,
and as verification material only a hint of the public key (the base64 SHA-256 of its DER
form, as cosign's own key-signed bundles carry). No transparency-log entry: `cosign
verify-attestation --key PUB --insecure-ignore-tlog` verifies it offline.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from build_graph.oci import json_door
from build_graph.oci.documents import IN_TOTO

BUNDLE_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
PAYLOAD_TYPE = IN_TOTO  # the statement a DSSE envelope carries
MAX_SIGNATURES = 8


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what is signed, never the payload alone."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


@dataclass(frozen=True)
class Envelope:
    """A bundle's DSSE envelope, decoded: the statement's bytes and each signature."""

    payload: bytes
    payload_type: str
    signatures: tuple[bytes, ...]
    hint: str  # the bundle's public-key hint ('' when none)

    @property
    def signed_bytes(self) -> bytes:
        return pae(self.payload_type, self.payload)


def bundle(statement: bytes, signature: bytes, hint: str) -> bytes:
    """The Sigstore bundle of `statement` signed with `signature` (over its PAE)."""
    document = {
        "mediaType": BUNDLE_TYPE,
        "verificationMaterial": {"publicKey": {"hint": hint}},
        "dsseEnvelope": {
            "payload": base64.b64encode(statement).decode(),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [{"sig": base64.b64encode(signature).decode()}],
        },
    }
    return json.dumps(document, indent=1, sort_keys=True).encode()


def envelope(statement: bytes, signature: bytes) -> bytes:
    """The bare DSSE envelope (what cosign's older `.att` layout stores as a layer)."""
    document = {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(statement).decode(),
        "signatures": [{"keyid": "", "sig": base64.b64encode(signature).decode()}],
    }
    return json.dumps(document, sort_keys=True).encode()


def open_bundle(data: bytes) -> Envelope:
    """The envelope of a bundle as stored; ValueError, in words, for anything else (not a
    bundle, not an in-toto DSSE envelope, no signature, bad base64)."""
    try:
        document = json_door.loads(data)
    except ValueError:
        raise ValueError("not JSON") from None
    if not isinstance(document, dict) or document.get("mediaType") != BUNDLE_TYPE:
        raise ValueError(f"not a Sigstore bundle ({BUNDLE_TYPE})")
    envelope = document.get("dsseEnvelope")
    if not isinstance(envelope, dict) or envelope.get("payloadType") != PAYLOAD_TYPE:
        raise ValueError("the bundle holds no in-toto DSSE envelope")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        raise ValueError("the envelope carries no signature")
    if len(signatures) > MAX_SIGNATURES:  # each is an ECDSA verification per key
        raise ValueError(
            f"the envelope carries {len(signatures)} signatures (at most {MAX_SIGNATURES})"
        )
    material = document.get("verificationMaterial")
    key = material.get("publicKey") if isinstance(material, dict) else None
    hint = key.get("hint") if isinstance(key, dict) else None
    return Envelope(
        _b64(envelope.get("payload")),
        PAYLOAD_TYPE,
        tuple(_b64(s.get("sig") if isinstance(s, dict) else None) for s in signatures),
        hint if isinstance(hint, str) else "",
    )


def _b64(value: object) -> bytes:
    if not isinstance(value, str):
        raise ValueError("a payload or signature is not a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ValueError("a payload or signature is not valid base64") from None
