"""A compile's wheels in the tier's folder: current while their stamp names the compile
inputs' hash, and put there whole, only once a compile succeeded.

The compile stage writes them (stages/compile_act.py), its up-to-date check and the pre-flight
(stages/preflight.py: is a compile still to run?) read the stamp, the build sends them.
"""

from __future__ import annotations

import shutil

from build_graph.plan.plan import PlannedTier

STAMP = ".compile-hash"


def wheels_current(tier: PlannedTier) -> bool:
    stamp = tier.folder.wheels / STAMP
    return stamp.is_file() and stamp.read_text().strip() == tier.compile_hash


def put_in_place(tier: PlannedTier) -> None:
    """The compile's staging folder, stamped, becomes the tier's wheels (what was there
    before goes)."""
    staging = tier.folder.wheels_staging
    (staging / STAMP).write_text(f"{tier.compile_hash}\n")
    shutil.rmtree(tier.folder.wheels, ignore_errors=True)
    staging.rename(tier.folder.wheels)
