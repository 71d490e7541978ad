"""`python -m build_graph outdated`: what newer torch (with its partners), pip and setuptools
the index has for the stack's versions, what newer tags the `from` images' repositories
have, and the images.toml edit that would take each.

Read-only and advisory: exit 0 whatever it finds (exit 3 only when the index cannot be
read at all; a registry that cannot be asked is one line for its image). torch's partners
come from the same facts `check` uses (the shipped torch_releases.json, plus what the index
says about newer releases), so the edit it proposes passes `check`. A `from` tag is compared
with the registry's tags of the same shape (outdated_from.py): the digits a {field} put there are
proposed as that version's edit; a tag written out in full is only said to have newer tags.
Then the Python and apt pins `lock --update` would move (stages/python_pin.py, apt_pin.py),
unless --no-python, --no-apt.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from build_graph.cli import options
from build_graph.cli.outdated_from import Ask, from_lines, registry_tags, tags_once
from build_graph.errors import NotOnIndex
from build_graph.gpu import releases, tables
from build_graph.gpu.releases import PARTNERS, Lookup, TorchRow
from build_graph.manifest.model import Stack, VariantSpec, major_minor
from build_graph.pypi.lookup import builds_index, for_stack
from build_graph.pypi.simple import project
from build_graph.run.stack import load_stack

if TYPE_CHECKING:  # pydantic: only where images.toml is read, not for `--help`
    from build_graph.manifest import schema

TOOLS = ("pip", "setuptools")
_CANDIDATES = 4  # newer torch releases tried, newest first, for one whose partners exist


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--no-from-tags",
        action="store_true",
        help="ask the package index only, not the `from` images' registries",
    )
    command.add_argument(
        "--no-python",
        action="store_true",
        help="leave out the Python pins (each tier's lock resolved again with every package "
        "free to move, against the builds' index: seconds to a minute per tier)",
    )
    command.add_argument(
        "--no-apt",
        action="store_true",
        help="leave out the apt pins (each tier's apt lock resolved again by apt in its "
        "pinned `from` image: a container per tier and platform)",
    )
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    stack = load_stack(args.manifest, releases.offline)  # a manifest with errors stops here
    lines = outdated(
        stack,
        manifest_of(stack),
        builds_index(),
        for_stack(args.manifest, fresh=True),
        None if args.no_from_tags else registry_tags,
    )
    print("\n".join(lines))
    from build_graph.stages import apt_pin, python_pin

    for kind, skip, newer in (
        ("Python", args.no_python, python_pin.newer),
        ("apt", args.no_apt, apt_pin.newer),
    ):
        asked, pins = (0, []) if skip else newer(stack)
        if asked:
            print(
                f"{kind} pins: all {asked} locks are at the newest images.toml allows"
                if not pins
                else f"{kind} pins that `lock --update` would move ({asked} locks asked):"
            )
        for line in pins:
            print(f"  {line}", flush=True)
    return 0


def outdated(
    stack: Stack, manifest: schema.Manifest, index: str, lookup: Lookup, ask: Ask | None = None
) -> list[str]:
    """One block of lines per variant: each version, and what to edit where. With `ask`,
    each `from` image's repository is asked for its tags (once per repository)."""
    lines = []
    asked: dict[str, tuple[str, ...] | str] = {}
    wanted = [n for n in ("torch", *TOOLS) if any(n in v.versions for v in stack.variants)]
    found = {name: _releases(index, name) for name in wanted}
    for variant in stack.variants:
        label = f"variant {variant.name}" if stack.has_variants else "versions"
        lines.append(f"{label}:")
        keys = _keys(manifest, variant, stack.has_variants)
        lines.extend(
            f"  {line}" for line in _torch(variant.versions, found.get("torch", []), keys, lookup)
        )
        for name in TOOLS:
            if name in variant.versions:
                newest = found[name][0] if found[name] else None
                lines.append(f"  {_tool(name, variant.versions[name], newest, keys)}")
        if ask is not None:
            lines.extend(
                f"  {line}"
                for line in from_lines(
                    manifest, variant, keys, lambda ref: tags_once(ask, ref, asked)
                )
            )
    return lines


def _releases(index: str, name: str) -> list[Version]:
    """The project's final releases on the index, newest first ([] when it is not there)."""
    try:
        finals = [v for v in project(index, name).versions() if not v.is_prerelease]
    except NotOnIndex:
        return []
    return sorted(finals, reverse=True)


def _keys(manifest: schema.Manifest, variant: VariantSpec, has_variants: bool) -> dict[str, str]:
    """version name -> the key to edit for this variant (its own override, or the base)."""
    own = manifest.variants[variant.name].versions if has_variants else {}
    written = {k for k, v in manifest.versions.model_dump().items() if v is not None} | set(own)
    # A triton the file leaves out follows torch (manifest/resolve.follow_torch): no key.
    names = [
        n
        for n in ("torch", *PARTNERS, *TOOLS, "triton", "cuda", *variant.versions)
        if n != "triton" or n in written
    ]
    return {
        name: f"variants.{variant.name}.versions.{name}" if name in own else f"versions.{name}"
        for name in names
    }


def _tool(name: str, current: str, newest: Version | None, keys: Mapping[str, str]) -> str:
    if newest is None:
        return f"{name} {current}: not on the index"
    if _older(current, newest):
        return f'{name} {current} -> {newest}: edit {keys[name]} = "{newest}"'
    return f"{name} {current}: up to date"


def _torch(
    versions: Mapping[str, str], releases: list[Version], keys: Mapping[str, str], lookup: Lookup
) -> Iterator[str]:
    """The newest torch whose partners (those the variant names) are published, and the
    edits that take it; a newer torch still waiting for a partner is said, not proposed."""
    current = versions.get("torch")
    if current is None or not releases:
        return
    newer = [v for v in releases if _older(current, v)]
    if not newer:
        yield f"torch {current}: up to date"
        return
    given: dict[str, str] = {n: versions[n] for n in PARTNERS if n in versions}
    for candidate in newer[:_CANDIDATES]:
        facts, unasked = lookup(str(candidate), given)
        missing = [n for n in given if facts.partner_for(n, str(candidate)) is None]
        if not missing:
            break
        why = f" ({unasked})" if unasked else ""
        yield (
            f"torch {candidate}: not yet, no {' or '.join(missing)} release that goes "
            f"with it is published{why}"
        )
    else:
        yield f"torch {current}: up to date (the newest whose {' and '.join(given)} exist)"
        return
    yield f'torch {current} -> {candidate}: edit {keys["torch"]} = "{candidate}"'
    for name, version in given.items():
        right = facts.partner_for(name, str(candidate))
        assert right is not None
        if right.version == version:
            yield f"  {name} {version}: keep (it requires {right.describe()})"
        else:
            yield (
                f"  {name} {version} -> {right.version}: edit {keys[name]} = "
                f'"{right.version}" (it requires {right.describe()})'
            )
    yield from _torch_needs(versions, candidate, facts.torch_row(str(candidate)), keys)


def _torch_needs(
    versions: Mapping[str, str], torch: Version, row: TorchRow | None, keys: Mapping[str, str]
) -> Iterator[str]:
    """The triton and CUDA that torch release needs, where the variant names them."""
    if "triton" in keys and row is not None and row.triton:
        named = releases.named_version(row.triton)
        edit = f'edit {keys["triton"]} = "{named}"' if named else f"edit {keys['triton']}"
        if named != versions["triton"]:
            yield (
                f"  triton {versions['triton']}: torch {torch}'s wheels require "
                f"triton{row.triton} ({edit})"
            )
    cuda = versions.get("cuda")
    lines = tables.TORCH_CUDA.get(f"{torch.major}.{torch.minor}")
    if cuda is not None and lines is not None:
        if major_minor(cuda) not in lines:
            listed = ", ".join(f"{a}.{b}" for a, b in lines)
            yield f"  cuda {cuda}: torch {torch} is built for CUDA {listed} (edit {keys['cuda']})"
    elif cuda is not None and row is not None and row.cuda:
        yield (
            f"  cuda {cuda}: torch {torch}'s PyPI wheel is built for CUDA {row.cuda} "
            f"(edit {keys['cuda']}; the release matrix, gpu/tables.py, has no row for it yet)"
        )


def _older(current: str, newest: Version) -> bool:
    try:
        return Version(current) < newest
    except InvalidVersion:
        return False


def manifest_of(stack: Stack) -> schema.Manifest:
    from build_graph.manifest.load import read_manifest

    return read_manifest(Path(stack.manifest))
