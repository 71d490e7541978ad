"""Signing keys and public keys: PEM files, or Google Cloud KMS keys (signing/kms.py).

A key is named by a reference: a path to a PEM file (relative to images.toml's folder), or
`gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K/cryptoKeyVersions/N`. The curves
are cosign's and Cloud KMS's: ECDSA P-256 with SHA-256 (cosign's default, KMS
EC_SIGN_P256_SHA256) and P-384 with SHA-384. A signature is DER, over the DSSE PAE.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from build_graph.errors import SigningProblem

PASSWORD_ENV = "BUILD_GRAPH_SIGNING_KEY_PASSWORD"
_HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    "secp256r1": hashes.SHA256,
    "secp384r1": hashes.SHA384,
}
KEYGEN_HINT = "python -m build_graph keygen DIR"


class Signer(Protocol):
    """Signs bytes with a private key this process can use."""

    @property
    def name(self) -> str:
        """The reference, for messages."""
        ...

    def public_key(self) -> ec.EllipticCurvePublicKey: ...

    def sign(self, data: bytes) -> bytes:
        """The DER ECDSA signature of `data` (hashed by the curve's hash)."""
        ...


@dataclass(frozen=True)
class PublicKey:
    """A public key whose signatures count, and the reference it was named by."""

    name: str
    key: ec.EllipticCurvePublicKey

    @property
    def hint(self) -> str:
        return hint(self.key)

    def verifies(self, signature: bytes, data: bytes) -> bool:
        try:
            self.key.verify(signature, data, ec.ECDSA(algorithm(self.key, self.name)()))
        except InvalidSignature:
            return False
        return True


def hint(key: ec.EllipticCurvePublicKey) -> str:
    """cosign's key hint: the base64 SHA-256 of the key's DER SubjectPublicKeyInfo."""
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def pem(key: ec.EllipticCurvePublicKey) -> str:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def algorithm(
    key: ec.EllipticCurvePublicKey | ec.EllipticCurvePrivateKey, name: str
) -> type[hashes.HashAlgorithm]:
    found = _HASHES.get(key.curve.name)
    if found is None:
        raise SigningProblem(
            f"{name}: an ECDSA key on {key.curve.name}; use P-256 (cosign's default) or "
            f"P-384 ({KEYGEN_HINT} makes one)"
        )
    return found


@dataclass(frozen=True)
class FileSigner:
    """A PEM private key file (PKCS#8 or SEC1; encrypted ones take PASSWORD_ENV)."""

    name: str
    key: ec.EllipticCurvePrivateKey

    def public_key(self) -> ec.EllipticCurvePublicKey:
        return self.key.public_key()

    def sign(self, data: bytes) -> bytes:
        return self.key.sign(data, ec.ECDSA(algorithm(self.key, self.name)()))


def load_signer_file(path: Path) -> FileSigner:
    """The private key in `path`; SigningProblem naming the file and the fix otherwise."""
    data = _read(path, "signing key")
    if b"SIGSTORE PRIVATE KEY" in data or b"COSIGN PRIVATE KEY" in data:
        raise SigningProblem(
            f"{path}: a cosign key file (its own encrypted format); build-graph reads PEM "
            f"keys: make one with `{KEYGEN_HINT}` (cosign verifies with its .pub), or sign "
            "with a Cloud KMS key"
        )
    password = os.environ.get(PASSWORD_ENV)
    try:
        key = serialization.load_pem_private_key(
            data, password=password.encode() if password else None
        )
    except TypeError:
        raise SigningProblem(
            f"{path}: the key is not encrypted; unset {PASSWORD_ENV}"
            if password
            else f"{path}: the key is encrypted; set {PASSWORD_ENV} to its password"
        ) from None
    except ValueError:
        raise SigningProblem(
            f"{path}: not a PEM private key (or a wrong {PASSWORD_ENV}); make one with "
            f"`{KEYGEN_HINT}`"
        ) from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise SigningProblem(f"{path}: not an ECDSA key; make one with `{KEYGEN_HINT}`")
    algorithm(key, str(path))
    return FileSigner(str(path), key)


def load_public_file(path: Path) -> PublicKey:
    """The public key in `path` (PEM SubjectPublicKeyInfo, as cosign writes cosign.pub)."""
    data = _read(path, "public key")
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        raise SigningProblem(f"{path}: not a PEM public key (-----BEGIN PUBLIC KEY-----)") from None
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise SigningProblem(f"{path}: not an ECDSA public key")
    algorithm(key, str(path))
    return PublicKey(str(path), key)


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SigningProblem(f"{path}: cannot read the {what}: {exc.strerror}") from None


def generate(folder: Path, name: str = "verify") -> tuple[Path, Path]:
    """A new P-256 key pair as FOLDER/NAME.key (PKCS#8, mode 0600) and FOLDER/NAME.pub;
    refuses to overwrite either."""
    key_path, pub_path = folder / f"{name}.key", folder / f"{name}.pub"
    for existing in (key_path, pub_path):
        if existing.exists():
            raise SigningProblem(f"{existing} exists; move it away or name another folder")
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(private)
    pub_path.write_text(pem(key.public_key()))
    return key_path, pub_path
