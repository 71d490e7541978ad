"""What verify's report says of the image's layers: each one's compressed size and the step
that made it, whether the parent tier's image has it, and what the tier adds over its
parent. Read from the manifest verify pulls, its config and the parent's manifest (no layer
is downloaded: `python -m build_graph size` opens them for the folders and files); said in
the verify log in one line, kept in the report's probe as `layers`, and held to the
registry's layer limit by verify's `layer size` check (verify/checks.py).
"""

from __future__ import annotations

from typing import Any

from build_graph.errors import BuildGraphError
from build_graph.log import log
from build_graph.oci import json_door
from build_graph.oci.contents import Contents
from build_graph.oci.layer_limits import amount, layer_steps, step_text
from build_graph.oci.refs import parse_ref
from build_graph.plan.plan import PlannedTier
from build_graph.registry import api


def section(tier: PlannedTier, image: Contents) -> list[dict[str, Any]]:
    """One entry per layer, base first: {'size', 'step', 'shared'} ('shared': the parent
    tier's image has this layer; None for a root tier or when the parent could not be
    read). Logs what the tier adds over its parent."""
    ref = parse_ref(tier.image)
    steps: list[str] = []
    theirs: set[object] | None = None
    try:
        if image.config is not None:
            steps = layer_steps(json_door.loads(api.get_blob(ref, image.config)))
        if tier.parent_key is not None:
            theirs = {d for d, _ in api.read_image(parse_ref(tier.base_image)).image.layers}
    except (BuildGraphError, ValueError) as exc:  # the sizes stand without the steps
        log(f"[{tier.key}] layers: the steps or the parent's layers could not be read ({exc})")
    layers = [
        {
            "size": size,
            "step": step_text(steps[i], 200) if i < len(steps) else "",
            "shared": None if theirs is None else digest in theirs,
        }
        for i, (digest, size) in enumerate(image.layers)
    ]
    log(f"[{tier.key}] {line(layers)}")
    return layers


def line(layers: list[dict[str, Any]]) -> str:
    """'5 layers, 96.8 MB compressed; the largest: 1 (50.9 MB, ADD ...); adds over its
    parent 2 layers, 18.3 MB'."""
    if not layers:
        return "no layers"
    sizes = [int(layer["size"]) for layer in layers]
    big = max(range(len(sizes)), key=sizes.__getitem__)
    step = f", {layers[big]['step'][:80]}" if layers[big]["step"] else ""
    text = (
        f"{len(sizes)} layers, {amount(sum(sizes))} compressed; the largest: {big + 1} "
        f"({amount(sizes[big])}{step})"
    )
    if all(layer["shared"] is not None for layer in layers):
        added = [s for s, layer in zip(sizes, layers, strict=True) if not layer["shared"]]
        text += f"; adds over its parent {len(added)} layers, {amount(sum(added))}"
    return text
