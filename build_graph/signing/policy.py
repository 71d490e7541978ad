"""Which signatures count, and sealing a verify report's Statement for the registry.

A runner signs with BUILD_GRAPH_SIGNING_KEY (a PEM file or a gcpkms:// key version) when
set, else with images.toml's `signing.key`; with neither, reports go unsigned. Opening a
stored payload: a Sigstore bundle counts as signed by the first of `signing.public_keys`
whose signature verifies it; a bundle that none verifies is no report at all (altered, or
another key's), whatever `required` says. An unsigned Statement (or a report from before
Statements) counts only where signatures are not required. With no public keys named, a
bundle's signature cannot be judged and counts as unsigned.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from build_graph.errors import SigningProblem
from build_graph.oci import json_door
from build_graph.signing import dsse
from build_graph.signing.spec import KMS_SCHEME, SigningSpec

if TYPE_CHECKING:  # keys and KMS (cryptography, crc32c: ~45 ms) load where a key is used:
    # a stack that signs nothing reads its unsigned reports without them
    from build_graph.signing.keys import PublicKey, Signer

SIGNING_KEY_ENV = "BUILD_GRAPH_SIGNING_KEY"
STATEMENT_TYPE = dsse.PAYLOAD_TYPE  # an unsigned report's layer: the Statement itself


@dataclass(frozen=True)
class Opened:
    """A stored payload, opened: the document inside (a Statement, or an old bare report),
    the trusted key that signed it (None: unsigned, or unjudged), or why it is no report."""

    document: object = None
    signed_by: str | None = None
    problem: str | None = None


@dataclass(frozen=True)
class Sealed:
    """A report as it goes to the registry: the payload, its media type, its annotations."""

    payload: bytes
    media_type: str
    annotations: dict[str, str]
    signed_by: str | None
    envelope: bytes | None = None  # the bare DSSE envelope, for cosign's `.att` layout


def signer_reference(spec: SigningSpec) -> str | None:
    return os.environ.get(SIGNING_KEY_ENV) or spec.key


@cache
def signer(reference: str) -> Signer:
    """The signer a reference names (loaded once per process)."""
    from build_graph.signing import kms
    from build_graph.signing.keys import load_signer_file

    if reference.startswith(KMS_SCHEME):
        return kms.KmsSigner(reference)
    return load_signer_file(Path(reference))


@cache
def trusted(spec: SigningSpec) -> tuple[PublicKey, ...]:
    """The public keys whose signatures count (read once per process)."""
    from build_graph.signing import kms
    from build_graph.signing.keys import load_public_file

    return tuple(
        kms.public_key(ref) if ref.startswith(KMS_SCHEME) else load_public_file(Path(ref))
        for ref in spec.public_keys
    )


def ready(spec: SigningSpec) -> Signer | None:
    """The signer this runner uses, checked before any probe runs: SigningProblem when
    signatures are required and there is no key, or when its public key is not one that
    counts (its reports would be no reports)."""
    reference = signer_reference(spec)
    if reference is None:
        if spec.required:
            raise SigningProblem(
                f"signing.required: this runner has no key to sign verify reports with; set "
                f"{SIGNING_KEY_ENV} to a PEM key file or a gcpkms:// key version (or "
                "signing.key in images.toml)"
            )
        return None
    found = signer(reference)
    keys = trusted(spec)
    if keys and keys_hint(found) not in {k.hint for k in keys}:
        raise SigningProblem(
            f"{found.name} signs verify reports, but signing.public_keys does not name its "
            "public key, so its reports would not count; add its public key"
        )
    return found


def keys_hint(found: Signer) -> str:
    from build_graph.signing.keys import PublicKey

    return PublicKey(found.name, found.public_key()).hint


def seal(spec: SigningSpec, statement: Mapping[str, object], annotations: dict[str, str]) -> Sealed:
    """The Statement as stored: a signed bundle when this runner has a key, else as it is."""
    body = json.dumps(dict(statement), indent=1, sort_keys=True).encode()
    found = ready(spec)
    if found is None:
        return Sealed(body, STATEMENT_TYPE, annotations, None)
    signature = found.sign(dsse.pae(dsse.PAYLOAD_TYPE, body))
    bundle = dsse.bundle(body, signature, keys_hint(found))
    labels = {
        **annotations,
        "dev.sigstore.bundle.content": "dsse-envelope",
        "dev.sigstore.bundle.predicateType": str(statement.get("predicateType", "")),
    }
    return Sealed(bundle, dsse.BUNDLE_TYPE, labels, found.name, dsse.envelope(body, signature))


def open_payload(spec: SigningSpec, payload: bytes) -> Opened:
    """The document in a stored payload and who signed it (the module's rules)."""
    try:
        document = json_door.loads(payload)
    except ValueError:
        return Opened(problem="the stored report is not JSON")
    if not (isinstance(document, dict) and document.get("mediaType") == dsse.BUNDLE_TYPE):
        return Opened(document)
    try:
        envelope = dsse.open_bundle(payload)
        statement = json_door.loads(envelope.payload)
    except ValueError as exc:
        return Opened(problem=f"the stored bundle is unreadable: {exc}")
    keys = trusted(spec)
    if not keys:
        return Opened(statement)
    for key in keys:
        if any(key.verifies(sig, envelope.signed_bytes) for sig in envelope.signatures):
            return Opened(statement, signed_by=key.name)
    return Opened(
        problem="its signature verifies with none of signing.public_keys (altered, or "
        "signed with another key)"
    )


def counts(spec: SigningSpec, opened: Opened) -> str | None:
    """Why an opened report does not count here; None when it does. A runner that signs,
    where public keys are named, also wants signed reports: an unsigned one (forged, or
    made before signing began) is verified again and signed, never adopted as it is."""
    if opened.problem is not None:
        return opened.problem
    if opened.signed_by is None and spec.required:
        return "it is unsigned, and signing.required is set"
    if opened.signed_by is None and spec.public_keys and signer_reference(spec):
        return "it is unsigned, and this runner signs its reports"
    return None
