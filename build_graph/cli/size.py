"""`python -m build_graph size TIER`: why a tier's image is big, read from the registry.

Its layers with compressed and unpacked sizes and the step that made each, the folders and
files that fill each layer, what the tier adds over another image (its parent by default),
the bytes it stores twice, and the stack's limits beside them (`verify.max_size`, the
largest layer the registry takes). Layers are read from the registry's blobs one at a
time (streamed to a file in a scratch folder, hashed, read, removed), so it works on any
runner and for any digest; each byte is checked against its digest before it is counted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from build_graph.cli import options
from build_graph.cli.named_tier import planned_tier
from build_graph.errors import BuildFailed, ConfigError
from build_graph.log import shown
from build_graph.manifest.model import Stack
from build_graph.oci import json_door
from build_graph.oci.archive import read_layer
from build_graph.oci.image_size import ImageSize, Layer, measure
from build_graph.oci.layer_limits import amount, layer_steps, step_text
from build_graph.oci.refs import Presence, parse_ref
from build_graph.plan.plan import PlannedTier, plan
from build_graph.registry import api
from build_graph.registry.availability import head
from build_graph.registry.download import download_blob
from build_graph.run.stack import load_stack


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("tier", help="TIER, TIER@VARIANT or TIER/ARCH")
    command.add_argument(
        "--over",
        metavar="TIER|IMAGE",
        help="what to compare with (default: the tier's parent; a root tier: nothing)",
    )
    command.add_argument(
        "--image", metavar="REF", help="another image than the tier's hash tag (any digest)"
    )
    command.add_argument("--top", type=int, default=5, help="folders and files named per layer")
    command.add_argument("--json", action="store_true", help="machine-readable output")
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    stack = load_stack(args.manifest)
    tier = planned_tier(stack, args.tier)
    ref = args.image or tier.image
    if args.image is None and head(ref).presence is not Presence.PRESENT:
        raise BuildFailed(
            f"{ref} is not in the registry: run `doit push:{tier.key}`, or name an image "
            "with --image"
        )
    image = api.read_image(parse_ref(ref))
    over_ref = _other(stack, tier, args.over)
    theirs = api.read_image(parse_ref(over_ref)).image.layers if over_ref else ()
    if image.image.config is None:
        raise BuildFailed(f"{ref} names no image config")
    steps = layer_steps(json_door.loads(api.get_blob(image.ref, image.image.config)))
    where = f"{image.ref.host}/{image.ref.repository}@{image.ref.reference}"
    layers = []
    with tempfile.TemporaryDirectory(prefix=f"size-{os.getpid()}-", dir=_scratch(stack)) as scratch:
        for i, (digest, compressed) in enumerate(image.image.layers):
            blob = Path(scratch) / digest.hex
            download_blob(image.ref, digest, compressed, blob)
            with blob.open("rb") as raw:
                files = read_layer(raw, digest)
            blob.unlink()
            step = steps[i] if i < len(steps) else ""
            layers.append(Layer(digest, compressed, step, files))
    found = measure(layers, (d for d, _ in theirs), top=args.top)
    if args.json:
        json.dump(_record(tier, where, over_ref, found), sys.stdout, indent=2)
        print()
    else:
        sys.stdout.write("\n".join(describe(tier, where, over_ref, found)) + "\n")
    return 0


def describe(tier: PlannedTier, ref: str, over: str | None, found: ImageSize) -> list[str]:
    """The report a person reads."""
    most = tier.expect.max_size_bytes
    limit = tier.expect.max_layer
    lines = [
        f"{tier.key}: {shown(ref, 300)}",
        f"{len(found.layers)} layers, {amount(found.compressed)} compressed, "
        f"{amount(found.unpacked)} unpacked; verify.max_size "
        + (amount(most) if most else "not set")
        + "; the registry takes "
        + (str(limit) if limit else "any layer size (no limit set or known)"),
    ]
    if (largest := found.largest) is not None:
        over_limit = (
            " (past the registry's limit)" if limit and largest.compressed > limit.size else ""
        )
        lines.append(
            f"largest layer: {largest.index + 1} of {len(found.layers)}, "
            f"{amount(largest.compressed)} compressed{over_limit}"
        )
    lines += ["", "layer  compressed    unpacked    files  made by"]
    for layer in found.layers:
        shared = "  (also in the other image)" if over and layer.shared else ""
        lines.append(
            f"{layer.index + 1:>5}  {amount(layer.compressed):>10}  {amount(layer.unpacked):>10}"
            f"  {layer.files:>7}  {shown(step_text(layer.step, 70), 80)}{shared}"
        )
        if layer.folders:
            lines.append(
                "       folders: " + ", ".join(f"{_path(p)} {amount(s)}" for p, s in layer.folders)
            )
        if layer.largest:
            lines.append(
                "       files: " + ", ".join(f"{_path(p)} {amount(s)}" for p, s in layer.largest)
            )
    lines.append("")
    if over:
        added = found.added
        lines.append(
            f"over {shown(over, 300)}: adds {len(added)} of {len(found.layers)} layers, "
            f"{amount(sum(a.compressed for a in added))} compressed, "
            f"{amount(sum(a.unpacked for a in added))} unpacked"
        )
    else:
        lines.append("over: nothing to compare with (a root tier; --over TIER|IMAGE names one)")
    if found.twice:
        wasted = sum(t.size for t in found.twice)
        lines.append(f"stored twice: {amount(wasted)} in {len(found.twice)} files")
        lines += [
            f"  {t.path} {amount(t.size)}: in layer {t.layer + 1}, {t.how}"
            for t in found.twice[:20]
        ]
    else:
        lines.append("stored twice: nothing")
    return lines


def _other(stack: Stack, tier: PlannedTier, over: str | None) -> str | None:
    """The image to compare with: --over as a tier of the stack, else as a reference; not
    given, the tier's parent's hash tag."""
    if over is None:
        return next((p.image for p in plan(stack) if p.key == tier.parent_key), None)
    try:
        return planned_tier(stack, over).image
    except ConfigError:
        return over


def _scratch(stack: Stack) -> Path:
    """Where layers are streamed to (the build folder: a layer is as big as the image's
    biggest); a `size-<pid>-*` folder whose process is gone (killed) is removed first."""
    folder = stack.build_folder.root
    folder.mkdir(parents=True, exist_ok=True)
    for left in folder.glob("size-*-*"):
        pid = left.name.split("-")[1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(left, ignore_errors=True)
    return folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _path(path: str) -> str:
    """A path from the image, as it may reach a terminal (printable, bounded)."""
    return shown(path, 300)


def _record(tier: PlannedTier, ref: str, over: str | None, found: ImageSize) -> dict[str, object]:
    return {
        "tier": tier.key,
        "image": ref,
        "over": over,
        "compressed": found.compressed,
        "unpacked": found.unpacked,
        "layers": [{**asdict(layer), "digest": str(layer.digest)} for layer in found.layers],
        "twice": [asdict(t) for t in found.twice],
        "max_size": tier.expect.max_size_bytes,
        "max_layer": asdict(tier.expect.max_layer) if tier.expect.max_layer else None,
    }
