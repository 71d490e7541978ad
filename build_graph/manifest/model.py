"""The resolved, frozen stack: one typed object that every later stage is handed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from build_graph.layout import BuildFolder
from build_graph.oci.compression import DEFAULT as GZIP
from build_graph.oci.compression import Compression
from build_graph.signing.spec import NO_SIGNING, SigningSpec

if TYPE_CHECKING:
    from build_graph.oci.layer_limits import LayerLimit

DEFAULT_VARIANT = "default"


class FrozenDict(dict[str, str]):
    """A read-only dict that pickles (MappingProxyType does not): resolved version maps."""

    def _read_only(self, *args: object, **kwargs: object) -> None:
        raise TypeError("resolved versions are read-only")

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, str]]]:
        return (FrozenDict, (dict(self),))


def major_minor(version: str) -> tuple[int, int] | None:
    """'12.4.1' -> (12, 4); None when the text does not start with two numbers."""
    match = re.match(r"^(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


def format_fields(versions: Mapping[str, str], variant: str) -> dict[str, str]:
    """Fields usable as {name} in from, tags, build_args and compile sources."""
    fields = dict(versions)
    for key in ("cuda", "python", "torch"):
        mm = major_minor(versions.get(key, ""))
        if mm:
            fields[f"{key}_mm"] = f"{mm[0]}.{mm[1]}"
    cuda = major_minor(versions.get("cuda", ""))
    if cuda:
        fields["cuda_tag"] = f"cu{cuda[0]}{cuda[1]}"
    fields["variant"] = variant
    return fields


@dataclass(frozen=True)
class Source:
    """One entry of `compile.sources`, its version fields filled, its kind decided once.

    local: `location` is a path below the manifest's folder; git: `location` is the URL and
    `ref` what follows its @ (HEAD when nothing does); archive: `location` is the URL and
    `sha256` its pin. `text` is the entry as written (fields filled): images.lock's key, and
    what the hash and the templates name.
    """

    name: str
    text: str
    kind: Literal["local", "git", "archive"]  # manifest/grammar.py's SourceKind
    location: str
    ref: str = ""
    sha256: str = ""


@dataclass(frozen=True)
class CompileSpec:
    builder: str  # the tier whose image runs the compile script
    script: str  # template name of the compile script
    sources: tuple[Source, ...]
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
    cuda_libraries: tuple[str, ...]  # globs inside the image, read for SASS/PTX archs
    # whether torch's own arch list and torch/lib are held to gpu.arch_list (false: torch
    # is upstream's prebuilt wheel; the promise is about the libraries this stack compiles)
    torch_archs: bool = True
    gpu: str | None = None  # "required" or "optional"; None inherits (default "required")
    pip_check_allow: tuple[str, ...] = ()  # distributions whose pip check lines are accepted


@dataclass(frozen=True)
class TierSpec:
    name: str
    variant: str
    parent: str | None
    from_image: str | None  # the external base image, version fields filled in
    template: str
    description: str
    context: tuple[str, ...]  # paths relative to the manifest's folder
    exclude: tuple[str, ...]  # patterns (Docker's syntax) relative to the manifest's folder
    packages: tuple[str, ...]
    system_packages: tuple[str, ...]
    build_args: tuple[tuple[str, str], ...]
    tags: tuple[str, ...]  # human tags, version fields filled in
    compile: CompileSpec | None
    verify: VerifySpec
    # 'linux/amd64', 'linux/arm64', ...: one image per platform, one index per human tag;
    # empty: the build host's platform only, as before platforms existed
    platforms: tuple[str, ...] = ()


@dataclass(frozen=True)
class GpuSpec:
    arch_list: tuple[str, ...]
    ptx: bool
    targets: tuple[str, ...]

    @property
    def torch_cuda_arch_list(self) -> str:
        from build_graph.gpu.archs import torch_cuda_arch_list  # rendering only, never a no-op

        return torch_cuda_arch_list(list(self.arch_list), self.ptx)


@dataclass(frozen=True)
class VariantSpec:
    name: str
    description: str
    versions: Mapping[str, str]
    gpu: GpuSpec
    tiers: tuple[TierSpec, ...]  # parents before children
    # The version fields ({python_mm}, {cuda_tag}, ...), filled once (format_fields): what
    # the manifest's values were filled with and what templates see as `versions`.
    fields: Mapping[str, str] = field(default_factory=lambda: FrozenDict({}))

    def tier(self, name: str) -> TierSpec:
        for tier in self.tiers:
            if tier.name == name:
                return tier
        raise KeyError(name)


@dataclass(frozen=True)
class CacheSpec:
    url: str  # gs://bucket/prefix or file:///abs/path
    max_size_bytes: int
    required: bool = False  # no usable store: fail before compiling, not compile cold
    save_every_s: float = 1200.0  # seconds between saves during a compile; 0: at its end only


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
    signing: SigningSpec = NO_SIGNING
    compression: Compression = GZIP  # [layers]
    layer_limit: LayerLimit | None = None  # [layers] max_size, or the registry's known limit
    apt_locked: bool = False  # [apt] lock: system packages from <manifest>.aptlock/
    apt_snapshots: tuple[tuple[str, str], ...] = ()  # [apt] snapshots: archive -> snapshot
    hermetic: bool = False  # [stack] hermetic: builds and compiles with no network

    @property
    def root(self) -> Path:
        return self.manifest.parent

    @property
    def network(self) -> str:
        """The network every build's RUN steps and every compile get: none when hermetic."""
        return "none" if self.hermetic else "host"

    @property
    def build_folder(self) -> BuildFolder:
        """Where this machine keeps everything about the stack (layout.py)."""
        return BuildFolder.of(self.manifest)

    def variant(self, name: str) -> VariantSpec:
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise KeyError(name)
