"""`python -m build_graph gate IMAGE`: the step before a deploy. Exit 0 only when the digest
IMAGE names has a passing verify report, validly signed by one of the named public keys,
for the current promises of the tier pushed to that repository; else one line saying why
(exit 1), or that the registry could not say (exit 3).

A tag is resolved to its digest once, and everything after reads that digest: what is
checked is what a deploy pulls by that digest. An index of several platforms' images (a
tier built per platform) passes when each platform's image does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from build_graph.errors import OptionError, RegistryError, UntrustedAnswer
from build_graph.manifest.model import Stack
from build_graph.oci.digest import Digest
from build_graph.oci.refs import Presence, Ref, parse_ref
from build_graph.plan.plan import PlannedTier, plan
from build_graph.registry import api
from build_graph.registry.availability import Availability
from build_graph.registry.reports import ReportStore, StoredReport
from build_graph.signing.spec import SigningSpec
from build_graph.verify.request import trusted_fingerprints


@dataclass(frozen=True)
class Verdict:
    passed: bool
    line: str
    pinned: str = ""  # REGISTRY/REPO@DIGEST: what was checked, for the deploy to pull


def gate(stack: Stack, reference: str, keys: list[Path], current: bool) -> Verdict:
    """The verdict on `reference` (its rules: the module's docstring). RegistryError when the
    registry could not answer; OptionError for a reference or keys that cannot be used."""
    try:
        ref = parse_ref(reference)
    except ValueError as exc:
        raise OptionError(f"gate: {exc}") from None
    tiers = _tiers_of(stack, ref)
    spec = _spec(stack, keys)
    answer = api.head_manifest(ref)
    if answer.presence is Presence.ERROR:
        raise RegistryError(f"{reference}: {answer.error}")
    if answer.digest is None:
        return Verdict(False, f"refused: {reference}: not in the registry")
    digest = answer.digest
    where = f"{reference} ({digest})"
    holdings = Availability()
    subjects = _subjects(ref, digest)
    reasons: list[str] = []
    for tier in tiers:
        found = _all_pass(tier, spec, subjects, holdings, reasons)
        if found is None:
            continue
        if current and not _is_current(tier, digest, subjects, holdings):
            reasons.append(
                f"it is not what {tier.key}'s inputs make now ({tier.image}): built from "
                "other inputs or another lock"
            )
            continue
        return Verdict(
            True,
            f"ok: {where}: {tier.key} verified ({found.summary}; GPU {found.gpu}), "
            f"signed with {found.signed_by}",
            f"{ref.host}/{ref.repository}@{digest}",
        )
    why = "; ".join(dict.fromkeys(reasons)) or (
        f"no verify report for this digest by the current verifier of "
        f"{' or '.join(t.key for t in tiers)} (never verified, or verified against other "
        "promises: run doit)"
    )
    return Verdict(False, f"refused: {where}: {why}")


def _tiers_of(stack: Stack, ref: Ref) -> list[PlannedTier]:
    """The planned images pushed to `ref`'s repository (every variant and platform)."""
    found = [
        t
        for t in plan(stack)
        if (lambda r: (r.host, r.repository))(parse_ref(t.image)) == (ref.host, ref.repository)
    ]
    if not found:
        raise OptionError(
            f"gate: no tier of {stack.manifest} is pushed to {ref.host}/{ref.repository}; "
            "name an image of this stack (or --manifest another images.toml)"
        )
    return found


def _spec(stack: Stack, keys: list[Path]) -> SigningSpec:
    """The stack's signing rules with signatures required, and --key's keys when named."""
    named = tuple(str(k.resolve()) for k in keys) or stack.signing.public_keys
    if not named:
        raise OptionError(
            "gate: no public key to check signatures with; name one with --key FILE "
            "(repeatable) or signing.public_keys in images.toml"
        )
    return replace(stack.signing, public_keys=named, required=True)


def _subjects(ref: Ref, digest: Digest) -> list[Digest]:
    """What the reports must be about: the digest itself, or, for an index of several
    platforms' images, each of them."""
    try:
        contents = api.read_contents(ref.at(str(digest)))
    except UntrustedAnswer:
        return [digest]
    if contents.is_index and len(contents.images) > 1:
        return [d.digest for d in contents.images]
    return [digest]


def _all_pass(
    tier: PlannedTier,
    spec: SigningSpec,
    subjects: list[Digest],
    holdings: Availability,
    reasons: list[str],
) -> StoredReport | None:
    store = ReportStore(tier.repository, tier.folder, tier.key, spec)
    fingerprints = trusted_fingerprints(tier.expect, False)
    found = None
    for subject in subjects:
        found, refused = store.look(subject, fingerprints, holdings, fresh=True)
        reasons.extend(f"its report for {tier.key} does not count: {why}" for why in refused)
        if found is None:
            return None
    return found


def _is_current(
    tier: PlannedTier, digest: Digest, subjects: list[Digest], holdings: Availability
) -> bool:
    """Whether the tier's hash tag (its inputs and lock as they are now) names `digest`, or
    one of the platform images the index `digest` holds."""
    named = holdings.require(tier.image).digest
    return named is not None and (named == digest or named in subjects)
