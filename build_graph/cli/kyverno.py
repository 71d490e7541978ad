"""`python -m build_graph ci --kyverno`: a Kyverno ClusterPolicy that admits a Pod only when
each image of this stack it runs has a passing verify report signed by one of
`signing.public_keys` (GKE and any Kubernetes with Kyverno).

What Kyverno checks is the report as cosign stores it (the `.att` layout beside the
referrers, registry/cosign_legacy.py), with cosign's verifier, offline (no transparency
log): the attestation of our predicate type must verify with one of the keys, say `passed:
true` for the digest the Pod pulls (Kyverno pins tags to digests first), and carry a
verifier fingerprint of that repository's tier as images.toml and this release state its
promises now (as `gate` asks): a report made under older, weaker promises is not enough.
So the policy is written again whenever images.toml or build-graph changes (CI can apply
it after promote). Strings are JSON-quoted, which YAML reads as they are.
"""

from __future__ import annotations

import json
from pathlib import Path

from build_graph.errors import ConfigError, ConfigIssue
from build_graph.manifest.model import Stack
from build_graph.oci.attestation import VERIFY_PREDICATE
from build_graph.plan.plan import plan
from build_graph.signing.spec import KMS_SCHEME
from build_graph.verify.request import trusted_fingerprints


def cluster_policy(stack: Stack) -> str:
    """The ClusterPolicy for every repository the stack pushes to."""
    if not stack.signing.public_keys:
        raise ConfigError(
            [
                ConfigIssue(
                    stack.manifest,
                    "signing.public_keys",
                    "a Kyverno policy checks signatures: name the public key(s) whose signatures "
                    "count (`python -m build_graph keygen DIR` makes a pair)",
                )
            ]
        )
    q = json.dumps
    by_repository: dict[str, list[str]] = {}
    for tier in plan(stack):
        found = by_repository.setdefault(tier.repository, [])
        found += [f for f in trusted_fingerprints(tier.expect, False) if f not in found]
    lines = [
        f"# Written by `python -m build_graph ci --kyverno` from {stack.manifest.name}: write it",
        "# again when images.toml, the keys or build-graph change. kubectl apply -f FILE",
        "apiVersion: kyverno.io/v1",
        "kind: ClusterPolicy",
        "metadata:",
        f"  name: {q(f'build-graph-{stack.name}-verified')}",
        "  annotations:",
        f"    policies.kyverno.io/title: {q(f'{stack.name}: verified images only')}",
        "    policies.kyverno.io/description: "
        + q(
            "Admits a Pod only when each build-graph image it runs has a passing verify "
            "report, signed with the team's key, for the exact digest it pulls, made by the "
            "verifier of the tier's current promises."
        ),
        "spec:",
        "  validationFailureAction: Enforce",
        "  background: false",
        "  webhookTimeoutSeconds: 30",
        "  rules:",
        "    - name: verified-by-build-graph",
        "      match:",
        "        any:",
        "          - resources:",
        "              kinds: [Pod]",
        "      verifyImages:",
        *(
            line
            for repository, fingerprints in sorted(by_repository.items())
            for line in _rule(repository, fingerprints, stack.signing.public_keys)
        ),
    ]
    return "\n".join(lines) + "\n"


def _rule(repository: str, fingerprints: list[str], keys: tuple[str, ...]) -> list[str]:
    """The verifyImages entry of one repository: its tags and digests, the keys, and the
    report's verdict and verifier."""
    q = json.dumps
    return [
        "        - imageReferences:",
        f"            - {q(f'{repository}:*')}",
        f"            - {q(f'{repository}@*')}",
        "          mutateDigest: true",
        "          verifyDigest: true",
        "          required: true",
        "          attestations:",
        f"            - type: {q(VERIFY_PREDICATE)}",
        "              attestors:",
        "                - count: 1",
        "                  entries:",
        *(line for ref in keys for line in _entry(ref)),
        "              conditions:",
        "                - all:",
        '                    - key: "{{ passed }}"',
        "                      operator: Equals",
        "                      value: true",
        '                    - key: "{{ fingerprint }}"',
        "                      operator: AnyIn",
        f"                      value: [{', '.join(q(f) for f in fingerprints)}]",
    ]


def _entry(reference: str) -> list[str]:
    """One attestor entry: a KMS key by name, a PEM key inline; no transparency log."""
    if reference.startswith(KMS_SCHEME):
        key = [f"                        kms: {json.dumps(reference)}"]
    else:
        pem = Path(reference).read_text().strip().splitlines()
        key = ["                        publicKeys: |-"]
        key += [f"                          {line}" for line in pem]
    return [
        "                    - keys:",
        *key,
        "                        rekor:",
        "                          ignoreTlog: true",
        "                        ctlog:",
        "                          ignoreSCT: true",
    ]
