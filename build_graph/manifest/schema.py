"""Pydantic models of images.toml as written (before variants and version fields resolve)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from build_graph.manifest.grammar import (
    AptPackage,
    ArgName,
    ContextPath,
    FieldName,
    Name,
    PipRequirement,
    PlatformText,
    Repository,
    Tag,
    Text,
    Version,
)
from build_graph.manifest.values import FIELD_NAME_RE, VERSION_RE, conforms

# "required": promote only after a kernel really ran on a GPU; "optional": promote after
# every other check, saying "GPU not checked" in the report and the promote line.
GpuPolicy = Literal["required", "optional"]


class Strict(BaseModel):
    """Unknown keys are errors; models are immutable once read."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class StackSection(Strict):
    name: Name
    registry: Repository
    description: Text = ""
    default_variant: Name | None = None
    # None: the build host's platform only, as before platforms existed (hashes unchanged)
    platforms: list[PlatformText] | None = None


class Versions(Strict):
    """Known version keys; any other key is allowed too (templates may use it)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    python: Version
    cuda: Version | None = None
    cudnn: Version | None = None
    ubuntu: Version | None = None
    torch: Version | None = None
    torchvision: Version | None = None
    torchaudio: Version | None = None

    @model_validator(mode="after")
    def _extra_are_versions(self) -> Versions:
        for key, value in (self.model_extra or {}).items():
            # A key is a {field} of from, tags, ... and a name templates read: a field name.
            if not conforms(FIELD_NAME_RE, key):
                raise ValueError(
                    f"versions.{key!r}: not a field name (letters, digits, '_'; "
                    "for example 'cuda_toolkit')"
                )
            if not isinstance(value, str) or not conforms(VERSION_RE, value):
                raise ValueError(f"versions.{key}: {value!r} is not a version string")
        return self


class Gpu(Strict):
    arch_list: list[Text] = Field(default_factory=list)
    ptx: bool = False
    targets: list[Text] = Field(default_factory=list)


class GpuOverride(Strict):
    arch_list: list[Text] | None = None
    ptx: bool | None = None
    targets: list[Text] | None = None


class Cache(Strict):
    url: Text | None = None
    max_size: Text = "20G"


class Compile(Strict):
    builder: Name
    script: Text
    sources: dict[Name, Text] = Field(default_factory=dict)
    env: dict[ArgName, Text] = Field(default_factory=dict)
    outputs: Text = "*.whl"


class Verify(Strict):
    python: Version | None = None
    conda: bool = False
    single_python: bool = True
    pip_check: bool = True
    # distributions whose `pip check` complaints are known and accepted (an upstream wheel
    # whose WHEEL tag pip does not know, say); inherited down the tier chain
    pip_check_allow: list[Name] = Field(default_factory=list)
    packages: dict[Name, Text] = Field(default_factory=dict)
    archs: bool = True
    torch_archs: bool = True
    max_size: Text | None = None
    smoke: list[Text] = Field(default_factory=list)
    cuda_libraries: list[Text] = Field(default_factory=list)
    gpu: GpuPolicy | None = None


class Tier(Strict):
    parent: Name | None = None
    from_: Text | None = Field(default=None, alias="from")
    template: Text
    description: Text = ""
    context: list[ContextPath] = Field(default_factory=list)
    exclude: list[Text] = Field(default_factory=list)
    packages: list[PipRequirement] = Field(default_factory=list)
    system_packages: list[AptPackage] = Field(default_factory=list)
    build_args: dict[ArgName, Text] = Field(default_factory=dict)
    tags: list[Tag] = Field(default_factory=list)
    compile: Compile | None = None
    verify: Verify = Field(default_factory=Verify)
    platforms: list[PlatformText] | None = None  # None: the parent's, else the variant's

    @model_validator(mode="after")
    def _one_base(self) -> Tier:
        if (self.parent is None) == (self.from_ is None):
            raise ValueError("set exactly one of 'parent' (a tier) or 'from' (an image)")
        return self


class Variant(Strict):
    description: Text = ""
    versions: dict[FieldName, Version] = Field(default_factory=dict)
    gpu: GpuOverride | None = None
    platforms: list[PlatformText] | None = None


class Manifest(Strict):
    stack: StackSection
    versions: Versions
    gpu: Gpu = Field(default_factory=Gpu)
    cache: Cache = Field(default_factory=Cache)
    tiers: dict[Name, Tier]
    variants: dict[Name, Variant] = Field(default_factory=dict)

    @field_validator("tiers")
    @classmethod
    def _some_tiers(cls, tiers: dict[str, Tier]) -> dict[str, Tier]:
        if not tiers:
            raise ValueError("declare at least one [tiers.<name>] table")
        return tiers
