"""`python -m build_graph gate IMAGE`: the step before a deploy. Exit 0 only when the digest
IMAGE names has a passing verify report, validly signed by one of the named public keys,
for the current promises of the tier pushed to that repository; else one line saying why
(exit 1), or that the registry could not say (exit 3).

A tag is resolved to its digest once, and everything after reads that digest: what is
checked is what a deploy pulls by that digest. An index of several platforms' images (a
tier built per platform) passes when each platform's image does.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from build_graph.cli import options
from build_graph.errors import OptionError, RegistryError, UntrustedAnswer
from build_graph.manifest.model import Stack
from build_graph.oci.digest import Digest
from build_graph.oci.refs import Presence, Ref, parse_ref
from build_graph.plan.plan import PlannedTier, plan
from build_graph.registry import api
from build_graph.registry.availability import Availability
from build_graph.registry.reports import ReportStore, StoredReport
from build_graph.run.stack import load_stack
from build_graph.signing.spec import KMS_SCHEME, SigningSpec
from build_graph.verify.request import trusted_fingerprints


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("image", help="an image reference: REGISTRY/REPO:TAG or REPO@sha256:...")
    command.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="FILE|gcpkms://...",
        help="a PEM public key file or a Cloud KMS key version whose signatures count "
        "(repeatable; default: images.toml's signing.public_keys)",
    )
    command.add_argument(
        "--current",
        action="store_true",
        help="also require the image to be what the tier's inputs and locks make now (its "
        "hash tag names it)",
    )
    command.add_argument(
        "--print-ref",
        action="store_true",
        help="on success print only REGISTRY/REPO@DIGEST, the reference checked, for the "
        "deploy to use (the verdict goes to stderr)",
    )
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    verdict = gate(load_stack(args.manifest), args.image, args.key, args.current)
    # With --print-ref stdout carries only the reference to deploy (nothing when refused),
    # so `image=$(... --print-ref) || exit 1` can never hand a deploy a sentence.
    print(verdict.line, file=sys.stderr if args.print_ref else sys.stdout)
    if verdict.passed and args.print_ref:
        print(verdict.pinned)
    return 0 if verdict.passed else 1


@dataclass(frozen=True)
class Verdict:
    passed: bool
    line: str
    pinned: str = ""  # REGISTRY/REPO@DIGEST: what was checked, for the deploy to pull


def gate(stack: Stack, reference: str, keys: list[str], current: bool) -> Verdict:
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
    current_images = _current_images(tiers, holdings)
    reasons: list[str] = []
    found: tuple[PlannedTier, StoredReport] | None = None
    for subject in subjects:
        found = _passes(tiers, spec, subject, current_images, holdings, reasons)
        if found is None:
            break
    if found is None:
        why = "; ".join(dict.fromkeys(reasons)) or (
            f"no verify report for this digest by the current verifier of "
            f"{' or '.join(t.key for t in tiers)} (never verified, or verified against other "
            "promises: run doit)"
        )
        return Verdict(False, f"refused: {where}: {why}")
    tier, report = found
    if current and not (digest in current_images or set(subjects) <= set(current_images)):
        return Verdict(
            False,
            f"refused: {where}: it is not what {tier.group_key}'s inputs make now "
            f"({tier.image}): built from other inputs or another lock",
        )
    return Verdict(
        True,
        f"ok: {where}: {tier.group_key} verified ({report.summary}; GPU {report.gpu}), "
        f"signed with {report.signed_by}",
        f"{ref.host}/{ref.repository}@{digest}",
    )


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


def _spec(stack: Stack, keys: list[str]) -> SigningSpec:
    """The stack's signing rules with signatures required, and --key's keys when named."""
    named = (
        tuple(k if k.startswith(KMS_SCHEME) else str(Path(k).resolve()) for k in keys)
        or stack.signing.public_keys
    )
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


def _current_images(tiers: list[PlannedTier], holdings: Availability) -> dict[Digest, list[Digest]]:
    """What the current plan's hash tags name, each mapped to the digest its report is
    about: the hash tag's own digest, and for an index of one image (the containerd store
    pushes each image so) the image inside it too, which is what promote puts in a
    platforms' index."""
    named: dict[Digest, list[Digest]] = {}
    for tier in tiers:
        answer = holdings.require(tier.image)
        if answer.digest is None:
            continue
        named.setdefault(answer.digest, []).append(answer.digest)
        try:
            inner = api.read_contents(parse_ref(tier.image).at(str(answer.digest)))
            one = inner.single_image()
        except (UntrustedAnswer, ValueError):
            continue
        if one is not None:
            named.setdefault(one.digest, []).append(answer.digest)
    return named


def _passes(
    tiers: list[PlannedTier],
    spec: SigningSpec,
    subject: Digest,
    current_images: dict[Digest, list[Digest]],
    holdings: Availability,
    reasons: list[str],
) -> tuple[PlannedTier, StoredReport] | None:
    """A tier of the repository whose current verifier passed `subject` (or the hash tag's
    index that holds it), in a report signed as `spec` asks."""
    about = list(dict.fromkeys([subject, *current_images.get(subject, [])]))
    for tier in tiers:
        store = ReportStore(tier.repository, tier.folder, tier.key, spec)
        fingerprints = trusted_fingerprints(tier.expect, False)
        for digest in about:
            found, refused = store.look(digest, fingerprints, holdings, fresh=True)
            reasons.extend(f"its report for {tier.key} does not count: {why}" for why in refused)
            if found is not None:
                return tier, found
    return None
