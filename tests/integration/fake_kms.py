"""A stand-in for Google Cloud KMS on loopback: the REST API the KMS client library speaks
(`getPublicKey`, `asymmetricSign`) for EC_SIGN_P256_SHA256 key versions it generates.

What the library sends and expects is as documented (cloudkms v1 REST reference): a
`GET /v1/{name}/publicKey` answers `{pem, algorithm, pemCrc32c, name}`; a `POST
/v1/{name}:asymmetricSign` with `{digest: {sha256}, digestCrc32c}` answers `{signature,
signatureCrc32c, verifiedDigestCrc32c, name}`. `faults` makes it answer as a damaged or
confused service would (a wrong CRC, another key's name, an unconfirmed digest, a signature
by another key), so the signer's checks are tried against a real server.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

import google_crc32c
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

from tests.loopback_http import serving

KEY_VERSION = "projects/p/locations/global/keyRings/r/cryptoKeys/verify/cryptoKeyVersions/1"


@dataclass
class Kms:
    keys: dict[str, ec.EllipticCurvePrivateKey] = field(default_factory=dict)
    faults: set[str] = field(
        default_factory=set
    )  # pem-crc, pem-name, sig-crc, name, unverified, other-key
    signed: int = 0

    def key(self, name: str) -> ec.EllipticCurvePrivateKey:
        return self.keys.setdefault(name, ec.generate_private_key(ec.SECP256R1()))

    def public_pem(self, name: str) -> str:
        return (
            self.key(name)
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )


def _crc(data: bytes) -> str:
    return str(google_crc32c.value(data))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    kms: Kms

    def log_message(self, format: str, *args: object) -> None:
        return

    def _send(self, status: int, document: dict[str, object]) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if not (path.startswith("/v1/") and path.endswith("/publicKey")):
            self._send(404, {"error": {"code": 404, "message": "not found"}})
            return
        name = path.removeprefix("/v1/").removesuffix("/publicKey")
        pem = self.kms.public_pem(name)
        crc = "1" if "pem-crc" in self.kms.faults else _crc(pem.encode())
        said = name + "0" if "pem-name" in self.kms.faults else name
        self._send(
            200, {"pem": pem, "algorithm": "EC_SIGN_P256_SHA256", "pemCrc32c": crc, "name": said}
        )

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if not (path.startswith("/v1/") and path.endswith(":asymmetricSign")):
            self._send(404, {"error": {"code": 404, "message": "not found"}})
            return
        name = path.removeprefix("/v1/").removesuffix(":asymmetricSign")
        digest = base64.b64decode(body["digest"]["sha256"])
        key = self.kms.key(name + "-other" if "other-key" in self.kms.faults else name)
        signature = key.sign(digest, ec.ECDSA(Prehashed(hashes.SHA256())))
        self.kms.signed += 1
        faults = self.kms.faults
        self._send(
            200,
            {
                "signature": base64.b64encode(signature).decode(),
                "signatureCrc32c": "1" if "sig-crc" in faults else _crc(signature),
                "verifiedDigestCrc32c": "unverified" not in faults
                and body.get("digestCrc32c") == _crc(digest),
                "name": name + "0" if "name" in faults else name,
                "protectionLevel": "SOFTWARE",
            },
        )


@contextmanager
def fake_kms() -> Iterator[tuple[str, Kms]]:
    """(its endpoint, http://127.0.0.1:PORT; its state) for the block."""
    kms = Kms()
    with serving(type("Handler", (_Handler,), {"kms": kms})) as address:
        yield f"http://{address}", kms
