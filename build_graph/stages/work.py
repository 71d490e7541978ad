"""What a stage is handed: the stack, the images it acts on, the run's registry answers and
the pipeline's gates.

A stage acts on one platform image (render, compile, build, push, verify) or on a tier's
platform group, the images that move together under its human tags (promote). A tier built
for the build host only is a group of one: every per-tier stage has one path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier
from build_graph.registry.availability import Availability

if TYPE_CHECKING:
    from build_graph.stages.stage import Stage

# What a stage's action returns (a digest, a hit rate, the tags it moved): the task's doit
# values, which the run summary's columns read.
Facts = dict[str, str]


@dataclass(frozen=True)
class Work:
    stack: Stack
    images: tuple[PlannedTier, ...]  # one image, or a tier's platform group in manifest order
    holdings: Availability  # every registry answer of this run, asked once
    by_key: Mapping[str, PlannedTier]  # every planned image, for parents and builders
    # The pipeline's gates in its order (the rows with `passed`): what promote must see
    # passed for each image before it moves a tag.
    gates: tuple[Stage, ...] = ()

    @property
    def tier(self) -> PlannedTier:
        """The image a per-image stage acts on; a group's first image (they share the tier's
        spec, repository and human tags)."""
        return self.images[0]

    def of(self, image: PlannedTier) -> Work:
        """The same run's work for one image of the group."""
        return replace(self, images=(image,))

    @property
    def builder(self) -> PlannedTier | None:
        key = self.tier.builder_key
        return self.by_key[key] if key else None
