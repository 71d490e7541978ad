"""What the registry holds for a tier, asked now: `doit info`'s account of it."""

from __future__ import annotations

from build_graph.errors import BuildGraphError
from build_graph.oci.digest import Digest
from build_graph.oci.documents import INDEX_TYPES
from build_graph.oci.refs import Presence
from build_graph.plan.plan import PlannedTier
from build_graph.registry.availability import Availability
from build_graph.stages import trust


def registry_holds(tier: PlannedTier, holdings: Availability) -> list[str]:
    """What the registry holds for the tier, asked now: `doit info`'s account."""
    image = holdings.registry(tier.image)
    if image.presence is not Presence.PRESENT or image.digest is None:
        lines = [
            f"{tier.image}: "
            + (f"could not ask ({image.error})" if image.error else "not in the registry")
        ]
        for name in tier.human_tags:
            tag = holdings.registry(f"{tier.repository}:{name}")
            lines.append(
                f"{tier.repository}:{name} -> "
                f"{tag.digest or ('could not ask' if tag.error else 'absent')}"
            )
        return lines
    lines = [f"{tier.image} = {image.digest}"]
    for name in tier.human_tags:
        tag = holdings.registry(f"{tier.repository}:{name}")
        index = (
            " (an index of every platform's image)"
            if tier.platform is not None and tag.media_type in INDEX_TYPES
            else ""
        )
        where = (
            "the same digest"
            if tag.digest == image.digest
            else f"{tag.digest}{index}"
            if tag.digest
            else "could not ask"
            if tag.error
            else "absent"
        )
        lines.append(f"{tier.repository}:{name} -> {where}")
    try:
        report = trust.passing_report(tier, image.digest, holdings)
    except BuildGraphError as exc:
        report, lines = None, [*lines, f"verify report: could not read ({exc})"]
    if report is not None:
        lines.append(
            f"verify report: passed ({report.summary}; GPU {report.gpu}), made on "
            f"{report.made_on} at {report.made_at}"
        )
        lines.append(f"  at {trust.store(tier).ref(image.digest, report.fingerprint)}")
    else:
        lines.append("verify report: none that passed for this digest and these checks")
    return [*lines, _sbom(tier, image.digest, holdings)]


def _sbom(tier: PlannedTier, digest: Digest, holdings: Availability) -> str:
    """Where the image's SBOM is (`python -m build_graph sbom` prints it)."""
    ref = trust.store(tier).sbom_ref(digest)
    sbom = holdings.registry(ref)
    return (
        f"SBOM: {ref}"
        if sbom.presence is Presence.PRESENT
        else f"SBOM: could not ask ({sbom.error})"
        if sbom.error
        else "SBOM: none stored for this digest"
    )
