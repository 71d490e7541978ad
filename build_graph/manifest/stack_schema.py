"""The stack-wide tables of images.toml: `[stack]`, `[cache]`, `[signing]`, `[apt]`, `[layers]`
(pydantic models as written; manifest/schema.py holds the rest and the whole `Manifest`).
Their docstrings are the images.toml reference, as schema.py's are.
"""

from __future__ import annotations

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationInfo,
    field_validator,
)

from build_graph.aptlock.snapshot import problem as snapshot_problem
from build_graph.manifest.grammar import Name, PlatformText, Repository, Text
from build_graph.oci.compression import Algorithm, level_problem


class Strict(BaseModel):
    """Unknown keys are errors; models are immutable once read."""

    # use_attribute_docstrings: the string under a key is its description (pydantic >= 2.7),
    # so the reference's prose sits beside the key it describes.
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, use_attribute_docstrings=True
    )


class StackSection(Strict):
    """The stack itself: its name and the registry its tiers are pushed to."""

    name: Name
    """the stack's name (lower case)"""
    registry: Repository
    """where tiers are pushed, as `<registry>/<tier>`, e.g. `127.0.0.1:5000/team`"""
    description: Text = ""
    """free text"""
    default_variant: Name | None = None
    """the variant whose tiers get `latest` (not set: the first declared)"""
    platforms: list[PlatformText] | None = None
    """`["linux/amd64", "linux/arm64"]`: every tier once per platform, one index per human tag
    ([platforms](platforms.md)); not set: the build host's platform only, as before platforms
    existed (same task names, hashes and tags)"""
    hermetic: bool = False
    """`true`: builds reach no network ([concepts](concepts.md#hermetic-builds)): every RUN
    step of every tier and every compile runs with none, and installs only files a lock
    names, fetched and checked before the build (the `.debs` of `[apt] lock`, which it
    needs, and the wheels of each Python lock); a step that reaches for the network fails
    the build, naming the tier and the step; an `ADD` of a URL is refused when planned.
    `false`: steps use the build host's network. Turning it on rebuilds every tier"""


class Cache(Strict):
    """Where the compiler cache travels between machines
    ([concepts](concepts.md#the-compiler-cache-travels))."""

    url: Text | None = None
    """`gs://bucket/prefix` or `file://path`; not set: `build/ccache-store` beside the manifest"""
    max_size: Text = "20G"
    """the compiler cache's size limit (ccache trims itself to it)"""
    required: bool = False
    """a compile with no readable and writable store fails before it starts (exit 3),
    instead of compiling cold with a warning (the run summary then says "cold: why")"""
    save_every: Text = "20m"
    """how often a running compile's cache is also saved to the store (`30m`, `1h`; `0s`:
    only when the compile ends or is stopped), so a killed machine (SIGKILL, a preempted
    VM) loses at most this much compiling; each save packs and uploads the whole cache"""


class Signing(Strict):
    """Signed verify reports, which cosign and deploy gates check ([signing](signing.md))."""

    key: Text | None = None
    """the signing key: a PEM file (relative to this file; keep it out of git) or a
    `gcpkms://` key version; `BUILD_GRAPH_SIGNING_KEY` overrides it; neither: unsigned"""
    public_keys: list[Text] = Field(default_factory=list)
    """PEM files or `gcpkms://` key versions whose signatures count; a signed report none
    of them verifies is no report"""
    required: bool = False
    """only a report signed by one of `public_keys` counts (promote needs one); a runner
    with no signing key fails verify before probing"""


class Apt(Strict):
    """The Debian and Ubuntu packages the templates install with apt
    ([concepts](concepts.md#system-packages-are-locked))."""

    lock: bool = False
    """`true`: every tier's apt packages are locked per platform in `<manifest>.aptlock/`
    (each package the install adds, at one version, with its `.deb`'s sha256), resolved by
    the real apt in the pinned `from` image; builds install exactly those files and refuse
    other bytes. `false`: builds install what the archive serves on the day (a tag then
    does not pin the system packages). Turning it on rebuilds the tiers that install
    packages"""
    snapshots: dict[str, str] = Field(default_factory=dict)
    """where a locked `.deb` is fetched when the archive that served it no longer does:
    `{ "http://deb.debian.org/debian" = "https://snapshot.debian.org/archive/debian/{time}" }`,
    the archive's URL (as the lock's `url`s start) to its snapshot archive's, `{time}` the
    time the lock was resolved (each lock's `resolved`). Tried after this machine's cache
    and the team's store; the bytes are held to the lock as from anywhere. Changes no tag"""

    @field_validator("snapshots")
    @classmethod
    def _snapshot_urls(cls, snapshots: dict[str, str]) -> dict[str, str]:
        for archive, snapshot in snapshots.items():
            said = snapshot_problem(archive, snapshot)
            if said is not None:
                raise ValueError(said)
        return snapshots


class Layers(Strict):
    """How the stack's layers are compressed, once, when BuildKit makes them
    ([concepts](concepts.md#layers-are-compressed-once)). Changing it rebuilds every
    tier (the images differ); the parent's and base image's layers keep theirs."""

    compression: Algorithm = "gzip"
    """`"gzip"` (every runtime reads it) or `"zstd"` (decompresses faster; containerd >= 1.5,
    so GKE's nodes, and Docker >= 23 read it): verify pulls what was pushed, so a runner
    that cannot read it fails verify"""
    level: StrictInt | None = None
    """gzip 0-9, zstd 1-22 (not set: BuildKit's default, gzip 6 / zstd 3); it applies to the
    layers BuildKit compresses in a build, and a layer its cache already holds in that
    compression may keep the level it was made with (moby/buildkit#5458)"""
    max_size: Text | None = None
    """the largest compressed layer the registry takes (`9G`; binary units, as `max_size`
    elsewhere: `9G` is 9.66 GB): verify fails a larger layer before promote, and push (from
    the tier's OCI layout) fails before sending anything, naming the layer and the step.
    Not set: the registry's published limit where build-graph knows it (ghcr.io 10 GB,
    Artifact Registry 9.9 GB per request), else none. Not part of any hash"""

    @field_validator("level")
    @classmethod
    def _level_in_range(cls, level: int | None, info: ValidationInfo) -> int | None:
        if "compression" not in info.data:
            return level  # the compression itself is wrong: that error is the one to read
        problem = level_problem(str(info.data["compression"]), level)
        if problem is not None:
            raise ValueError(f"level {level} is out of range: {problem}")
        return level
