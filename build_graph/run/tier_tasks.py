"""`doit <tier>`: the tasks `doit list` shows, one per tier (and variant, and platform image).

A tier's task runs every stage of its images (stages/pipeline.py) through promote; one
platform's image (`doit <tier>/arm64`) runs through its last per-image stage. Their meta
says, for `doit list` and `doit info` (run/commands.py), the tier's base, key versions,
stage tasks, what changed since the last push and what the registry holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier, groups
from build_graph.registry.availability import Availability
from build_graph.run import account, explain
from build_graph.stages import pipeline

DoitTask = dict[str, Any]


@dataclass
class TierTasks:
    """The tasks `doit list` shows, and how a task names its tier (`describe`): the stage
    tasks (run/tasks.py's StackTasks, which holds one of these) are documented by it."""

    stack: Stack
    planned: list[PlannedTier]
    holdings: Availability  # the run's registry answers (StackTasks asks them)

    @cached_property
    def by_key(self) -> dict[str, PlannedTier]:
        return {t.key: t for t in self.planned}

    def describe(self, tier: PlannedTier) -> str:
        return (
            f"{tier.spec.description or tier.spec.name} ({self._base(tier)}; {self._summary(tier)})"
        )

    def _base(self, tier: PlannedTier) -> str:
        return f"on {tier.parent_key}" if tier.parent_key else f"from {tier.spec.from_image}"

    def _summary(self, tier: PlannedTier) -> str:
        """The key versions: python, torch, CUDA, cuDNN, and the archs a compile targets."""
        variant = self.stack.variant(tier.spec.variant)
        facts = [
            f"{k} {variant.versions[k]}"
            for k in ("python", "torch", "cuda", "cudnn")
            if k in variant.versions
        ]
        if variant.gpu.arch_list and tier.spec.compile:
            facts.append(f"archs {variant.gpu.torch_cuda_arch_list}")
        return ", ".join(facts)

    @cached_property
    def groups(self) -> dict[str, list[PlannedTier]]:
        """group key -> its images (one per platform for a tier built per platform)."""
        return groups(self.planned)

    def stage_tasks(self, images: list[PlannedTier], group: bool = True) -> list[str]:
        """Every stage task of these images in pipeline order: each image's own, then (with
        `group`) those of the tier's whole platform group."""
        table = pipeline.stages()
        own = [s.task(t) for t in images for s in table if s.per == "image" and s.applies(t)]
        tier = [
            s.task(images[0]) for s in table if group and s.per == "tier" and s.applies(images[0])
        ]
        return own + tier

    def tiers(self) -> Iterator[DoitTask]:
        """`doit <tier>`: the tier through promote, one task per tier and variant, and per
        platform (`doit <tier>/arm64`: that platform's image through verify). With variants,
        `doit <tier>` is every variant of it. `doit list` shows these."""
        for key, images in self.groups.items():
            if images[0].platform:
                yield self._group_task(key, images)
            for tier in images:
                # one platform's image stops before the stages of its whole group
                stages = self.stage_tasks([tier], group=not tier.platform)
                yield {
                    "basename": tier.key,
                    "actions": None,
                    "doc": self.describe(tier),
                    "task_dep": [stages[-1]],
                    "meta": {
                        "tier": {
                            "key": tier.key,
                            "base": self._base(tier),
                            "summary": self._summary(tier),
                            "description": tier.spec.description or tier.spec.name,
                            "tasks": stages,
                            "changes": partial(explain.changes, tier),
                            "registry": partial(self.registry_holds, tier),
                        }
                    },
                }
        if self.stack.has_variants:
            for name in dict.fromkeys(t.spec.name for t in self.planned):
                keys = list(dict.fromkeys(t.group_key for t in self.planned if t.spec.name == name))
                yield {
                    "basename": name,
                    "actions": None,
                    "task_dep": keys,
                    "doc": f"{name} in every variant ({', '.join(keys)})",
                }

    def _group_task(self, key: str, images: list[PlannedTier]) -> DoitTask:
        """`doit <tier>` of a tier built per platform: every platform, then the index."""
        first = images[0]
        parent = self.by_key[first.parent_key].group_key if first.parent_key else None
        tasks = self.stage_tasks(images)

        def each(fn: Callable[[PlannedTier], list[str]]) -> list[str]:
            return [f"{t.key}: {line}" for t in images for line in fn(t)]

        return {
            "basename": key,
            "actions": None,
            "task_dep": [tasks[-1]],
            "doc": self.group_doc(images),
            "meta": {
                "tier": {
                    "key": key,
                    "base": f"on {parent}" if parent else f"from {first.spec.from_image}",
                    "summary": f"{self._summary(first)}; "
                    + ", ".join(str(t.platform) for t in images),
                    "description": first.spec.description or first.spec.name,
                    "tasks": tasks,
                    "changes": partial(each, explain.changes),
                    "registry": partial(each, self.registry_holds),
                }
            },
        }

    def group_doc(self, images: list[PlannedTier]) -> str:
        platforms = ", ".join(str(t.platform) for t in images)
        return f"{self.describe(images[0]).split(' (')[0]} ({platforms}: one index per human tag)"

    def registry_holds(self, tier: PlannedTier) -> list[str]:
        return account.registry_holds(tier, self.holdings)
