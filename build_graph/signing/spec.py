"""What images.toml's [signing] resolves to: plain values, no keys loaded."""

from __future__ import annotations

from dataclasses import dataclass

KMS_SCHEME = "gcpkms://"  # a Cloud KMS key version, where a PEM file path could stand


@dataclass(frozen=True)
class SigningSpec:
    key: str | None = None  # an absolute PEM path or a gcpkms:// key version; None: unsigned
    public_keys: tuple[str, ...] = ()  # absolute PEM paths or gcpkms:// key versions
    required: bool = False  # only a report signed by one of public_keys counts


NO_SIGNING = SigningSpec()
