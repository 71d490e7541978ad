"""Pydantic models of images.toml as written (before variants and version fields resolve).

The docstrings of the models and of their keys are the images.toml reference:
manifest/reference.py renders them into docs/reference.md (a test fails when it is stale).
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from build_graph.manifest.grammar import (
    AptPackage,
    ArgName,
    ContextPath,
    FieldName,
    Name,
    PipRequirement,
    PlatformText,
    Tag,
    Text,
    Version,
)
from build_graph.manifest.stack_schema import (
    Apt,
    Cache,
    Layers,
    Signing,
    StackSection,
    Strict,
)
from build_graph.manifest.values import FIELD_NAME_RE, VERSION_RE, conforms

# "required": promote only after a kernel really ran on a GPU; "optional": promote after
# every other check, saying "GPU not checked" in the report and the promote line.
GpuPolicy = Literal["required", "optional"]


class Versions(Strict):
    """Each key is a **version field**, usable as `{name}` in `from`, `tags`, `build_args`,
    `compile.sources`, `compile.env` and `verify.packages`, with the derived fields
    `{cuda_mm}` (`12.4`), `{cuda_tag}` (`cu124`), `{python_mm}`, `{torch_mm}` and
    `{variant}`. Any other key a template needs is allowed too (`pip`, `setuptools`,
    `debian`, `ngc`, ...): a field name (letters, digits, `_`) whose value is a version.
    Setting `pip` and `setuptools` makes the shipped templates upgrade to exactly those.
    A left-out `triton` follows from `torch`: what torch's own Linux wheel requires (torch
    2.14.1: triton 3.8.0), said in a note."""

    model_config = ConfigDict(extra="allow", frozen=True)

    python: Version
    """the images' Python (and verify's default)"""
    cuda: Version | None = None
    """the CUDA version; verify checks it against `torch.version.cuda`. Not set, it stays unset
    (a CPU torch has none): a note names the CUDA line torch's PyPI wheel is built for (2.14.1:
    13.0)"""
    cudnn: Version | None = None
    """the cuDNN version"""
    ubuntu: Version | None = None
    """the Ubuntu release of the images"""
    torch: Version | None = None
    """the torch release"""
    torchvision: Version | None = None
    """the torchvision release; its wheels must accept `torch`"""
    torchaudio: Version | None = None
    """the torchaudio release; its wheels must accept `torch`"""

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
    """What device code the images carry and which GPUs they must run on. `check` holds
    the list to CUDA's real rules and the torch release ([GPUs](gpus.md#the-rules))."""

    arch_list: list[Text] = Field(default_factory=list)
    """becomes `TORCH_CUDA_ARCH_LIST`: `["7.5", "8.0", "9.0"]`; `9.0a` (arch-specific), `10.0f`
    (family) and `8.6+PTX` are accepted"""
    ptx: bool = False
    """also embed PTX for the newest arch (JIT for GPUs newer than the list)"""
    targets: list[Text] = Field(default_factory=list)
    """GPUs the stack must run on: `"T4"`, `"L4"`, `"A100"`, `"H100"`, `"H200"`, `"B200"`, `"RTX
    4090"`, `"RTX 5090"`, ... or `"sm_89"` / `"8.9"`"""


class GpuOverride(Strict):
    """A variant's overrides of `[gpu]`; a key not set keeps the stack's value."""

    arch_list: list[Text] | None = None
    """replaces `gpu.arch_list`"""
    ptx: bool | None = None
    """replaces `gpu.ptx`"""
    targets: list[Text] | None = None
    """replaces `gpu.targets`"""


class Compile(Strict):
    """A compile before the build, outside `docker build`: the script runs in a container of
    the builder tier with sources at `/src/<name>`, the compiler cache at `/ccache` and
    wheels to `/out`, which the tier's Dockerfile installs ([stages](concepts.md#stages))."""

    builder: Name
    """the tier whose image the compile runs in"""
    script: Text
    """the compile script, a template (found as `template` is)"""
    sources: dict[Name, Text] = Field(default_factory=dict)
    """name = source (version fields allowed). A local folder below the manifest; a git
    repository `https://host/repo@ref` (or `ssh://`, `git://`), pinned to a commit in
    `images.lock` and fetched once per commit into `build/sources/git-<commit>`; or an archive
    `https://host/name-1.0.tar.gz#sha256=<hex>` (`.tar.gz`, `.tgz`, `.tar.bz2`, `.tar.xz`,
    `.zip`: an sdist, a release tarball), downloaded on the build host, checked against its
    sha256 and kept in `build/sources/sha256-<hex>`"""
    env: dict[ArgName, Text] = Field(default_factory=dict)
    """the compile container's environment (version fields allowed); wins over the host CA
    variables the tool sets"""
    outputs: Text = "*.whl"
    """a glob of what the compile leaves in `/out`"""


class Verify(Strict):
    """What verify holds the pushed image to ([concepts](concepts.md#verify-cannot-be-fooled)).
    A child tier inherits its ancestors' package checks; its own settings win."""

    python: Version | None = None
    """the Python version the image must run (not set: `versions.python`)"""
    conda: bool = False
    """whether conda may be present"""
    single_python: bool = True
    """exactly one Python environment (interpreters found by what they are; a virtualenv
    counts), and `python3` not a virtualenv that hides the image's packages"""
    pip_check: bool = True
    """`pip check` must be clean"""
    pip_check_allow: list[Name] = Field(default_factory=list)
    """distributions whose `pip check` line "... is not supported on this platform" is accepted
    (inherited): an upstream wheel tag pip does not know, e.g. `["nvidia-cusparselt-cu13"]` on
    aarch64 (its WHEEL says `manylinux2014_sbsa`); any other line, a missing or conflicting
    requirement of it included, still fails"""
    packages: dict[Name, Text] = Field(default_factory=dict)
    """name = specifier: `{ torch = "=={torch}", setuptools = ">=78.1.1" }`; each is also
    imported in a fresh interpreter"""
    archs: bool = True
    """check `gpu.arch_list` against torch's arch list and the libraries' real SASS/PTX, and
    `gpu.targets` against CUDA's rules"""
    torch_archs: bool = True
    """hold torch's own arch list and `torch/lib/*.so*` to `gpu.arch_list`; `false` when torch
    is upstream's wheel (PyPI) and the promise is about the libraries the stack compiles
    (`examples/cuda`). Inherited: `false` anywhere in the chain wins"""
    max_size: Text | None = None
    """image size budget, unpacked bytes, e.g. `"12G"` (not set: none)"""
    smoke: list[Text] = Field(default_factory=list)
    """shell commands that must exit 0 inside the image"""
    cuda_libraries: list[Text] = Field(default_factory=list)
    """globs inside the image of CUDA libraries whose SASS/PTX archs must match `gpu` (torch's
    `lib/*.so*` too, unless `torch_archs = false`)"""
    gpu: GpuPolicy | None = None
    """for tiers that promise GPU archs: `"required"` (not set, inherited), promote only after a
    kernel really ran on a GPU; `"optional"`, promote after every other check and say "GPU not
    checked" ([GPUs](gpus.md#without-a-gpu))"""


class Tier(Strict):
    """One image. It has exactly one of `parent` (another tier) and `from` (an external
    image); with variants, it exists once per variant."""

    parent: Name | None = None
    """the tier this one is built on"""
    from_: Text | None = Field(default=None, alias="from")
    """instead of `parent`: an image reference, pinned in `images.lock` (version fields allowed:
    `nvidia/cuda:{cuda}-cudnn-devel-ubuntu{ubuntu}`)"""
    template: Text
    """the Dockerfile template (the manifest's `templates/`, then the shipped)"""
    description: Text = ""
    """one line, shown by `doit info` and `doit list` and in the image's labels"""
    context: list[ContextPath] = Field(default_factory=list)
    """files or folders (relative to the manifest, staying below it) sent with the build and
    hashed; `.git`, `.env*` and `.dockerignore`d files are left out"""
    exclude: list[Text] = Field(default_factory=list)
    """more patterns to leave out of the context (`.dockerignore` syntax, relative to the
    manifest's folder): `["**/*.log", "data/raw"]`"""
    packages: list[PipRequirement] = Field(default_factory=list)
    """pip requirements the template installs (`"numpy<2"`; version fields allowed:
    `"torch=={torch}"`), resolved with everything they pull into the tier's Python lock
    (`images.pylock/`) and installed from it"""
    system_packages: list[AptPackage] = Field(default_factory=list)
    """Debian/Ubuntu packages the template installs"""
    build_args: dict[ArgName, Text] = Field(default_factory=dict)
    """`ARG`s of the Dockerfile (version fields allowed)"""
    tags: list[Tag] = Field(default_factory=list)
    """human tags promote moves after verify (version fields allowed; unique per tier across
    variants; `latest` is reserved: the default variant gets it)"""
    compile: Compile | None = None
    verify: Verify = Field(default_factory=Verify)
    platforms: list[PlatformText] | None = None
    """this tier's platforms, a subset of its parent's (not set: the parent's, else the
    variant's, else the stack's); a compiling tier's builder must have each"""

    @model_validator(mode="after")
    def _one_base(self) -> Tier:
        if (self.parent is None) == (self.from_ is None):
            raise ValueError("set exactly one of 'parent' (a tier) or 'from' (an image)")
        return self


class Variant(Strict):
    """With variants, every tier exists once per variant (say `cu124` and `cu128`) and task
    names carry it: `build:base@cu128`. Errors in an overridden value name the variant's
    key (`variants.cu128.gpu.arch_list`)."""

    description: Text = ""
    """free text"""
    versions: dict[FieldName, Version] = Field(default_factory=dict)
    """overrides of `[versions]`"""
    gpu: GpuOverride | None = None
    platforms: list[PlatformText] | None = None
    """the variant's tiers' platforms, over the stack's"""


class Manifest(Strict):
    """A stack of images in one file, `images.toml`: `[stack]`, `[versions]`, `[gpu]`,
    `[cache]`, `[signing]`, `[apt]`, `[layers]`, a `[tiers.<name>]` table per image and
    `[variants.<name>]`.
    `python -m build_graph check` validates it and prints the resolved stack.

    Unknown keys are errors, with a near-miss suggestion. Every value that reaches a
    Dockerfile is checked against its grammar and is one line with no newline or control
    character: a *version* is `12.4.1`-like, a *name* lower case (digits, `.`, `_`, `-`), a
    *repository* an image repository, a *platform* `linux/amd64` or `linux/arm64`, a *path*
    relative and below the manifest's folder; tags, image references, pip requirements,
    Debian package names and build-arg names have theirs too. Where version fields are
    allowed, `{name}` is filled from `[versions]`; a field is only `{name}` (no format spec,
    conversion or index)."""

    stack: StackSection
    versions: Versions
    gpu: Gpu = Field(default_factory=Gpu)
    cache: Cache = Field(default_factory=Cache)
    signing: Signing = Field(default_factory=Signing)
    apt: Apt = Field(default_factory=Apt)
    layers: Layers = Field(default_factory=Layers)
    tiers: dict[Name, Tier]
    variants: dict[Name, Variant] = Field(default_factory=dict)

    @field_validator("tiers")
    @classmethod
    def _some_tiers(cls, tiers: dict[str, Tier]) -> dict[str, Tier]:
        if not tiers:
            raise ValueError("declare at least one [tiers.<name>] table")
        return tiers
