"""`python -m build_graph sbom <tier>[@variant]`: the SBOM the registry stores about a
tier's image (CycloneDX JSON), read back by the digest its hash tag names."""

from __future__ import annotations

import argparse
import json

from build_graph.cli import options
from build_graph.cli.named_tier import planned_tier
from build_graph.errors import BuildFailed, RegistryError
from build_graph.manifest.model import Stack
from build_graph.oci import json_door
from build_graph.oci.refs import Presence
from build_graph.registry.availability import head
from build_graph.run.stack import load_stack
from build_graph.stages import trust


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("tier", help="tier, or tier@variant (default: the stack's default)")
    options.output(command, "write here instead of stdout")
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    return options.emit(sbom(load_stack(args.manifest), args.tier), args.output)


def sbom(stack: Stack, name: str) -> str:
    """The SBOM stored for the digest the tier's hash tag names. Raises RegistryError when
    the registry cannot say, BuildFailed (with the command that makes it) when it has none."""
    tier = planned_tier(stack, name)
    image = head(tier.image)
    if image.presence is Presence.ERROR:
        raise RegistryError(f"{tier.image}: {image.error}")
    if image.digest is None:
        raise BuildFailed(f"{tier.image} is not in the registry; run `doit push:{tier.key}`")
    stored = trust.store(tier).sbom(image.digest)
    if stored is None:
        raise BuildFailed(
            f"{trust.store(tier).sbom_ref(image.digest)}: no SBOM stored for "
            f"this digest; `doit verify:{tier.key}` stores one (images verified "
            "before SBOMs existed are verified again)"
        )
    # The registry's bytes (hash-checked) are re-serialised as ASCII JSON: whatever strings
    # someone with push rights put in it reach a terminal escaped, never as control codes.
    try:
        document = json_door.loads(stored)
    except ValueError:
        raise BuildFailed(
            f"{trust.store(tier).sbom_ref(image.digest)}: the stored SBOM is "
            f"not JSON; `doit verify:{tier.key}` after deleting it stores a new "
            "one"
        ) from None
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"
