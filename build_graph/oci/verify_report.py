"""The verify report: one typed record, written by the verify stage and read back by this
type (registry/reports.py, from the registry or this machine's copy).

Its JSON is what is published (the predicate of an in-toto Statement, oci/attestation.py,
signed where the runner has a key) and what other runners, `gate` and policy engines read:
key names, order and values are an API, pinned by tests/unit/test_verify_report.py. A
document is read at the door: one that is not a report of this shape is None (no report),
never a record half read; keys a later release adds are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from build_graph.gpu.status import GpuStatus
from build_graph.oci.digest import Digest, parse_digest


@dataclass(frozen=True)
class Check:
    """One check's result as the report keeps it (verify/results.py's Result)."""

    name: str
    status: str  # 'pass', 'fail' or 'not checked'
    expected: str
    actual: str  # for 'not checked': why it could not be checked
    gpu: bool  # needs a GPU


@dataclass(frozen=True)
class Versions:
    """What the image says of itself, as the probe read it (a string, a list, or None)."""

    python: object
    torch: object
    cuda: object
    cudnn: object
    arch_list: object


@dataclass(frozen=True)
class MadeBy:
    host: str
    run: str  # tells reports of different runs (and runners) apart
    at: str  # ISO 8601, UTC


@dataclass(frozen=True)
class VerifyReport:
    tier: str
    variant: str
    image: str  # the hash tag's reference
    platform: str | None  # a tier built per platform: its image's; None for the build host's
    digest: Digest  # the image it is about
    content_hash: str
    passed: bool
    summary: str  # '12 passed, 0 failed, 0 not checked'
    fingerprint: str  # the verifier that made it
    fingerprints: Versions
    gpu: GpuStatus
    gpu_policy: str  # 'required' or 'optional'
    gpu_present: bool
    gpu_code_paths: tuple[str, ...]
    checks: tuple[Check, ...]
    probe: Mapping[str, Any]  # the probe's output, with what verify added on the host
    made_by: MadeBy | None = None  # set when it is published

    def json(self) -> dict[str, Any]:
        """The record as it is published and kept (verify.json)."""
        return {
            "tier": self.tier,
            "variant": self.variant,
            "image": self.image,
            **({"platform": self.platform} if self.platform else {}),
            "digest": str(self.digest),
            "content_hash": self.content_hash,
            "passed": self.passed,
            "summary": self.summary,
            "fingerprint": self.fingerprint,
            "fingerprints": asdict(self.fingerprints),
            "gpu": str(self.gpu),
            "gpu_policy": self.gpu_policy,
            "gpu_present": self.gpu_present,
            "gpu_code_paths": list(self.gpu_code_paths),
            "checks": [asdict(check) for check in self.checks],
            "probe": self.probe,
            **({"made_by": asdict(self.made_by)} if self.made_by else {}),
        }

    @classmethod
    def read(cls, document: object) -> VerifyReport | None:
        """The report `document` is (parsed JSON), or None when it is not one."""
        try:
            return _read(_Fields(document))
        except (ValueError, TypeError):
            return None


def _read(doc: _Fields) -> VerifyReport:
    gpu = GpuStatus.read(doc.text("gpu"))
    if gpu is None:
        raise ValueError("gpu: not a GPU status")
    versions = _Fields(doc.get("fingerprints", dict))
    made_by = doc.get("made_by", dict, optional=True)
    return VerifyReport(
        tier=doc.text("tier"),
        variant=doc.text("variant"),
        image=doc.text("image"),
        platform=doc.get("platform", str, optional=True),
        digest=parse_digest(doc.text("digest")),
        content_hash=doc.text("content_hash"),
        passed=doc.get("passed", bool),
        summary=doc.text("summary"),
        fingerprint=doc.text("fingerprint"),
        fingerprints=Versions(**{f.name: versions.data.get(f.name) for f in fields(Versions)}),
        gpu=gpu,
        gpu_policy=doc.text("gpu_policy"),
        gpu_present=doc.get("gpu_present", bool),
        gpu_code_paths=tuple(_texts(doc.get("gpu_code_paths", list))),
        checks=tuple(_check(_Fields(c)) for c in doc.get("checks", list)),
        probe=doc.get("probe", dict),
        made_by=None if made_by is None else _made_by(_Fields(made_by)),
    )


def _check(doc: _Fields) -> Check:
    return Check(
        doc.text("name"),
        doc.text("status"),
        doc.text("expected"),
        doc.text("actual"),
        doc.get("gpu", bool),
    )


def _made_by(doc: _Fields) -> MadeBy:
    return MadeBy(doc.text("host"), doc.text("run"), doc.text("at"))


def _texts(values: list[object]) -> list[str]:
    if not all(isinstance(v, str) for v in values):
        raise ValueError("a list of strings holds something else")
    return [str(v) for v in values]


class _Fields:
    """A JSON object's fields, each of the type asked for (ValueError otherwise)."""

    def __init__(self, data: object) -> None:
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        self.data: dict[str, Any] = data

    def get(self, key: str, kind: type[Any], optional: bool = False) -> Any:
        value = self.data.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, kind):
            raise ValueError(f"{key}: not a {kind.__name__}")
        return value

    def text(self, key: str) -> str:
        return str(self.get(key, str))
