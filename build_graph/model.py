"""The resolved, frozen stack: one typed object that every later stage is handed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from build_graph.gpu_rules import torch_cuda_arch_list

DEFAULT_VARIANT = "default"


@dataclass(frozen=True)
class CompileSpec:
    builder: str  # the tier whose image runs the compile script
    script: str  # template name of the compile script
    sources: tuple[tuple[str, str], ...]  # name -> git URL@ref, or a path below the manifest
    env: tuple[tuple[str, str], ...]
    outputs: str  # glob of the files the script leaves in /out


@dataclass(frozen=True)
class VerifySpec:
    python: str | None
    conda: bool
    single_python: bool
    pip_check: bool
    packages: tuple[tuple[str, str], ...]  # name -> specifier such as '==2.6.0' or '>=24'
    archs: bool
    max_size_bytes: int | None
    smoke: tuple[str, ...]


@dataclass(frozen=True)
class TierSpec:
    name: str
    variant: str
    parent: str | None
    from_image: str | None  # the external base image, version fields filled in
    template: str
    description: str
    context: tuple[str, ...]  # paths relative to the manifest's folder
    packages: tuple[str, ...]
    system_packages: tuple[str, ...]
    build_args: tuple[tuple[str, str], ...]
    tags: tuple[str, ...]  # human tags, version fields filled in
    compile: CompileSpec | None
    verify: VerifySpec


@dataclass(frozen=True)
class GpuSpec:
    arch_list: tuple[str, ...]
    ptx: bool
    targets: tuple[str, ...]

    @property
    def torch_cuda_arch_list(self) -> str:
        return torch_cuda_arch_list(list(self.arch_list), self.ptx)


@dataclass(frozen=True)
class VariantSpec:
    name: str
    description: str
    versions: Mapping[str, str]
    gpu: GpuSpec
    tiers: tuple[TierSpec, ...]  # parents before children

    def tier(self, name: str) -> TierSpec:
        for tier in self.tiers:
            if tier.name == name:
                return tier
        raise KeyError(name)


@dataclass(frozen=True)
class CacheSpec:
    url: str  # gs://bucket/prefix or file:///abs/path
    max_size_bytes: int


@dataclass(frozen=True)
class Stack:
    manifest: Path
    name: str
    registry: str
    description: str
    cache: CacheSpec
    variants: tuple[VariantSpec, ...]
    default_variant: str
    template_dirs: tuple[Path, ...]
    has_variants: bool
    notes: tuple[str, ...] = field(default=())

    @property
    def root(self) -> Path:
        return self.manifest.parent

    def variant(self, name: str) -> VariantSpec:
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise KeyError(name)
