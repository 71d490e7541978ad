"""Where a tier's time went on this machine: bytes and seconds of its build, push and
verify's pull, said in the run summary and kept in `build/<variant>/<tier>/figures.json`
(the stage's name -> its last figures; a note for people and benchmarks, never read back
as proof of anything).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from build_graph.fs import read_record, write_record
from build_graph.oci.compression import of_layer
from build_graph.oci.documents import parse_manifest
from build_graph.oci.layer_limits import amount

__all__ = ["amount", "layer_kinds", "note", "sized"]
from build_graph.plan.plan import PlannedTier


def sized(paths: Iterable[Path]) -> int:
    """The bytes of these files (an image's blobs in its OCI layout)."""
    return sum(path.stat().st_size for path in paths)


def layer_kinds(manifest: bytes) -> dict[str, dict[str, int]]:
    """{'layers': {'gzip': 1, 'zstd': 3}}: an image manifest's layers by compression."""
    layers = parse_manifest(manifest).layers or ()
    kinds = Counter(of_layer(layer.media_type or "") or "other" for layer in layers)
    return {"layers": dict(sorted(kinds.items()))}


def note(tier: PlannedTier, stage: str, figures: dict[str, object]) -> None:
    """Record `stage`'s figures for `tier`, beside the other stages' (last run's each)."""
    path = tier.folder.figures
    kept = read_record(path) or {}
    kept[stage] = {**figures, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_record(path, kept)
