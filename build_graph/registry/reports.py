"""The verify reports of one image repository: found, read and stored in the registry.

A report (oci/verify_report.py's record, written and read back by that type) is the
predicate of an in-toto Statement (oci/attestation.py) stored as an OCI artifact about the
image's manifest (registry/artifacts.py), tagged
`sha256-<image digest>.verify-<verifier fingerprint>`: a Sigstore bundle of it, signed, where
the runner has a key (signing/policy.py), the Statement itself where it has none. The store
takes plain values: the repository, the fingerprints the caller trusts (stages/trust.py
decides which), the signing rules, and the tier folder where this machine keeps the payloads
it read by artifact digest (a cache the registry's answer validates on every run: a
signature is checked again on every read, so a key dropped from signing.public_keys stops
counting at once) and the latest report as verify.json.
"""

from __future__ import annotations

import datetime
import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from build_graph.errors import BuildGraphError, NotAnArtifact, RegistryError
from build_graph.fs import write_bytes_if_changed, write_record
from build_graph.gpu.status import GpuStatus
from build_graph.layout import TierFolder
from build_graph.log import log, shown
from build_graph.oci import attestation
from build_graph.oci.contents import CREATED
from build_graph.oci.digest import Digest
from build_graph.oci.referrers import Referrer
from build_graph.oci.refs import Answer, Presence, Ref, artifact_tag, parse_ref
from build_graph.oci.verify_report import MadeBy, VerifyReport
from build_graph.registry import api, artifacts, cosign_legacy
from build_graph.registry.availability import Availability
from build_graph.signing import dsse, policy
from build_graph.signing.spec import NO_SIGNING, SigningSpec

# Reports were bare JSON of this type until issue 22; they are now in-toto Statements
# (oci/attestation.py). The reader takes both: the tag and the verifier fingerprint did not
# change, because the fingerprint covers what was checked (probe, checks, promises, GPU), not
# the envelope it is stored in; so no image is re-verified for the new format, and the old
# reports go when prune deletes their images.
OLD_ARTIFACT_TYPE = "application/vnd.build-graph.verify-report.v1+json"
ARTIFACT_TYPE = attestation.MEDIA_TYPE
REPORT_TYPES = (dsse.BUNDLE_TYPE, ARTIFACT_TYPE, OLD_ARTIFACT_TYPE)
SBOM_TYPE = "application/vnd.cyclonedx+json"
SBOM_SUFFIX = "sbom"  # one SBOM per digest: what is installed does not depend on the verifier
RUN_ID = os.urandom(6).hex()  # tells reports of different runs (and runners) apart


@dataclass(frozen=True)
class StoredReport:
    """A passing report as read back (from the registry, or this machine's copy of it),
    with what its readers show made printable (log.shown: it came from outside)."""

    report: VerifyReport
    signed_by: str | None = None  # the trusted public key that verified its signature

    @classmethod
    def of(
        cls, report: VerifyReport, digest: Digest, fingerprint: str, signed_by: str | None = None
    ) -> StoredReport | None:
        """The report if it passed, for `digest` and `fingerprint`; None otherwise."""
        if not (report.passed and report.digest == digest and report.fingerprint == fingerprint):
            return None
        return cls(report, signed_by)

    @property
    def digest(self) -> Digest:  # the image it is about
        return self.report.digest

    @property
    def fingerprint(self) -> str:  # the verifier that made it
        return self.report.fingerprint

    @property
    def summary(self) -> str:  # '12 passed, 0 failed, 0 not checked'
        return shown(self.report.summary)

    @property
    def gpu(self) -> GpuStatus:
        """The GPU's status, its sentence as `shown` makes it."""
        said = self.report.gpu
        return GpuStatus(said.state, shown(said)[len(f"{said.state}: ") :])

    @property
    def made_on(self) -> str:  # the host that ran it
        return shown(self.report.made_by.host if self.report.made_by else "?")

    @property
    def made_at(self) -> str:  # when (ISO 8601, UTC)
        return shown(self.report.made_by.at if self.report.made_by else "?")

    @property
    def record(self) -> dict[str, Any]:
        """The whole report as it is stored, for those who show it."""
        return self.report.json()


@contextmanager
def _listing_after(image: Ref, subject: Answer, pending: list[Referrer]) -> Iterator[None]:
    """Add `pending` to the subject's referrers tag once the block is done, and when it
    fails too (that listing's own error then gives way to the block's): what was stored
    before a failure (the SBOM before its report) is listed as it was before the report."""
    try:
        yield
    except Exception:
        with suppress(BuildGraphError):
            artifacts.list_in_tag(image, subject, pending)
        raise
    artifacts.list_in_tag(image, subject, pending)


@dataclass(frozen=True)
class ReportStore:
    repository: str  # <registry>/<tier>
    folder: TierFolder  # where copies are kept (reports/, verify.json)
    name: str  # the tier's key, for log lines
    signing: SigningSpec = NO_SIGNING

    def ref(self, digest: Digest, fingerprint: str) -> str:
        """The tag of the report about `digest` made by the verifier `fingerprint`."""
        return f"{self.repository}:{artifact_tag(digest, f'verify-{fingerprint}')}"

    def find(
        self,
        digest: Digest,
        fingerprints: Sequence[str],
        holdings: Availability,
        fresh: bool = False,
    ) -> StoredReport | None:
        """A passing report for `digest` under one of `fingerprints`, or None when the
        registry definitely holds none that counts. `fresh` asks the registry again (before
        acting on the answer). Raises RegistryError when the registry could not say (an
        error is never 'no report'), UntrustedAnswer when what it served fails its hash."""
        return self.look(digest, fingerprints, holdings, fresh)[0]

    def look(
        self,
        digest: Digest,
        fingerprints: Sequence[str],
        holdings: Availability,
        fresh: bool = False,
    ) -> tuple[StoredReport | None, list[str]]:
        """find(), and why each report that was there did not count."""
        refused: list[str] = []
        for fp in fingerprints:
            ref = self.ref(digest, fp)
            probe = holdings.require(ref) if fresh else holdings.answer(ref)
            if probe.presence is Presence.ABSENT or probe.digest is None:
                continue
            try:
                payload, fetched = self._payload(probe.digest)
            except NotAnArtifact as exc:
                log(f"[{self.name}] {ref} does not count: {exc}")
                refused.append("it is not a verify report")
                continue
            opened = policy.open_payload(self.signing, payload)
            why = policy.counts(self.signing, opened)
            report = _report_of(opened.document)
            if fetched:
                self._said(report)
            if why is None and report is None:
                why = "it is not a verify report"
            if why is not None:
                log(f"[{self.name}] the report {ref} does not count: {why}")
                refused.append(why)
                continue
            assert report is not None
            found = StoredReport.of(report, digest, fp, opened.signed_by)
            if found is not None:
                write_record(self.folder.verify_record, report.json())
                return found, refused
            refused.append(
                f"it did not pass ({shown(report.summary)})"
                if not report.passed
                else "it is about another digest or verifier than its tag says"
            )
        return None, refused

    def publish(
        self,
        image: Answer,
        report: VerifyReport,
        holdings: Availability,
        unlisted: list[Referrer] | None = None,
    ) -> None:
        """Store `report` in the registry, bound to the image's digest, and keep it here;
        listed in the image's referrers tag (where the registry keeps none itself) together
        with the artifacts published before it that were left `unlisted` (the SBOM)."""
        pending = [] if unlisted is None else unlisted
        with _listing_after(parse_ref(self.repository), image, pending):
            made_by = MadeBy(
                socket.gethostname(),
                RUN_ID,
                datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            )
            record = replace(report, made_by=made_by).json()
            image_digest = image.digest
            if image_digest is None:
                raise RegistryError(
                    f"{self.repository}: the registry named no digest for the image the "
                    "report is about"
                )
            document = attestation.statement(
                self.repository, image_digest, attestation.VERIFY_PREDICATE, record
            )
            annotations = {
                CREATED: made_by.at,
                "dev.build-graph.passed": str(report.passed).lower(),
                "dev.build-graph.summary": report.summary,
            }
            sealed = policy.seal(self.signing, document, annotations)
            write_record(self.folder.verify_record, record)  # kept even if the registry refuses
            if sealed.envelope is not None:  # first: the report's tag is what marks verify done
                cosign_legacy.attach(
                    parse_ref(self.repository),
                    image_digest,
                    sealed.envelope,
                    attestation.VERIFY_PREDICATE,
                    report.fingerprint,
                )
            tag, artifact = artifacts.publish(
                parse_ref(self.repository),
                image,
                f"verify-{report.fingerprint}",
                sealed.media_type,
                sealed.payload,
                sealed.annotations,
                pending,
            )
        holdings.forget(f"{self.repository}:{tag}")
        write_bytes_if_changed(self._copy(artifact), sealed.payload)
        signed = f", signed with {sealed.signed_by}" if sealed.signed_by else ", unsigned"
        log(f"[{self.name}] report stored in the registry as {self.repository}:{tag}{signed}")

    def sbom_ref(self, digest: Digest) -> str:
        """The tag of the SBOM of `digest`."""
        return f"{self.repository}:{artifact_tag(digest, SBOM_SUFFIX)}"

    def publish_sbom(
        self, image: Answer, sbom: str, unlisted: list[Referrer] | None = None
    ) -> None:
        """Store the image's SBOM (CycloneDX JSON) beside its report, bound to its digest;
        with `unlisted`, its referrers-tag entry is left there for the report's publish."""
        stored = {CREATED: datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
        tag, _ = artifacts.publish(
            parse_ref(self.repository),
            image,
            SBOM_SUFFIX,
            SBOM_TYPE,
            sbom.encode(),
            stored,
            unlisted,
        )
        log(f"[{self.name}] SBOM stored in the registry as {self.repository}:{tag}")

    def sbom(self, digest: Digest) -> bytes | None:
        """The SBOM of `digest` as stored (hashed on the way in), or None when the registry
        definitely holds none. Raises RegistryError when it could not say."""
        ref = parse_ref(self.sbom_ref(digest))
        answer = api.head_manifest(ref)
        if answer.presence is Presence.ERROR:
            raise RegistryError(f"{self.sbom_ref(digest)}: {answer.error}")
        if answer.digest is None:
            return None
        return artifacts.read(ref, answer.digest, (SBOM_TYPE,))

    def _copy(self, artifact: Digest) -> Path:
        """This machine's copy of the payload `artifact`: the name comes from a parsed
        digest, so it stays inside reports/."""
        return self.folder.reports / f"{artifact.dashed}.payload"

    def _payload(self, artifact: Digest) -> tuple[bytes, bool]:
        """The payload of the report artifact `artifact`, and whether it came from the
        registry: this machine's copy (written once its bytes were hashed), else the
        registry's, hashed on the way in and kept."""
        copy = self._copy(artifact)
        try:
            return copy.read_bytes(), False
        except OSError:
            pass
        payload = artifacts.read(parse_ref(self.repository), artifact, REPORT_TYPES)
        write_bytes_if_changed(copy, payload)
        return payload, True

    def _said(self, report: VerifyReport | None) -> None:
        """Log a report another run (or runner) published, as it was read."""
        by = report.made_by if report is not None else None
        log(
            f"[{self.name}] verify report from {shown(by.host if by else '?')} "
            f"(run {shown(by.run if by else '?')}), {shown(report.summary if report else '')}"
        )


def _report_of(document: object) -> VerifyReport | None:
    """The report in a Statement (or a report from before Statements); None for anything
    else."""
    report = (
        attestation.predicate_of(document, attestation.VERIFY_PREDICATE)
        if isinstance(document, dict) and "_type" in document
        else document
    )
    return VerifyReport.read(report)
