"""Every path the tool owns: its build folder beside a manifest, and fixed paths in containers.

The build folder is `build/` beside `images.toml`; any other manifest `NAME.toml` in the same
folder gets `build/_NAME.toml/` (a variant name cannot start with `_`), so two stacks side by
side never share a plan cache, a doit database, a run lock or records. Its contents:

    .plan-cache.pickle         the last plan, reused while none of its inputs changed
    .build-graph-doit.json     doit's database
    .doit.lock                 the run lock: one doit run per stack at a time
    summary.md                 the last run's summary (also sent to $GITHUB_STEP_SUMMARY)
    ccache/<variant>/<tier>/   the compiler cache a compile mounts at CCACHE_DIR
                               (ccache/<variant>/<tier>@<os>-<arch>/ per platform)
    ccache/<variant>/<tier>.state.json   where that folder was restored from (ccache/sync.py
                               keeps it beside the folder it is given)
    ccache-store/              the default compiler-cache store (`file://`)
    sources/                   fetched compile sources: git-<commit>/, sha256-<hex>/
                               (.downloading/ holds a download until it is checked)
    pypi/<index>/              `check`'s package-index answers that never change: one
                               torchvision/torchaudio release's torch requirement per file,
                               per index (<index>: a digest of its URL; pypi/lookup.py)
    <variant>/<tier>/          one tier (TierFolder): rendered files, staged sources, wheels,
                               logs/<stage>.log, records (push.json, figures.json: bytes
                               and seconds of the last build, push and pull), report copies,
                               baseline.json (what its root `from` image installed, and of
                               which image: verify lists it again for another)
    <variant>/<tier>/<os>-<arch>/   the same, for one platform of a tier built per platform

All of it is a cache of the registry, the cache store and the inputs: deleting it loses
nothing else. It is never part of a build context (plan/context.py asks OWN_FOLDER).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

# Every label of ours, on images (stages/build_act.py) and containers (docker/containers.py),
# and what the registry's catalog reads back (registry/catalog.py).
LABEL_PREFIX = "io.build-graph"
DEFAULT_MANIFEST = "images.toml"
OWN_FOLDER = "build"  # below the manifest's folder; never sent, never hashed
PLAN_CACHE = ".plan-cache.pickle"
DOIT_DB = ".build-graph-doit.json"
RUN_LOCK = ".doit.lock"
# Names a variant may not take: its tier folders would land among the tool's own.
TOOL_NAMES = frozenset({"ccache", "ccache-store", "sources", "pypi"})

# Fixed paths inside the builder container, so compiler-cache keys match on every machine.
SRC_DIR = "/src"
OUT_DIR = "/out"
CCACHE_DIR = "/ccache"
SOURCES_DIR = "/sources"  # fetched sources, kept between compiles
COMPILE_SCRIPT = "/build/compile.sh"
# Where the verify probe's files are mounted, and where it leaves its report.
PROBE_DIR = "/opt/build-graph"
PROBE_REPORT = "/tmp/build-graph-probe.json"
# The build host's CA bundle, for one RUN step (a BuildKit secret) or a compile container
# (a read-only mount): never in a layer (settings.py's host_ca).
HOST_CA = "/run/build-graph/host-ca.pem"
WHEELS_DIR = "wheels"  # inside a tier's build context (and its build folder)
DEBS_DIR = "debs"  # the .debs its apt lock names, likewise (stages/debs.py)
PYWHEELS_DIR = "pywheels"  # a hermetic tier's locked wheels, likewise (stages/pywheels.py)
PYWHEELS_MOUNT = "/tmp/pywheels"  # where its pip step finds them (templates/_macros.j2)


@dataclass(frozen=True)
class TierFolder:
    """`build/<variant>/<tier>/`: everything this machine keeps about one tier."""

    root: Path

    @property
    def dockerfile(self) -> Path:
        return self.root / "Dockerfile"

    @property
    def compile_script(self) -> Path:
        return self.root / "compile.sh"

    @property
    def staged_sources(self) -> Path:
        """Local compile sources, copied fresh from the hashed file list (mounted at SRC_DIR)."""
        return self.root / "src"

    @property
    def wheels(self) -> Path:
        return self.root / WHEELS_DIR

    @property
    def debs(self) -> Path:
        return self.root / DEBS_DIR

    @property
    def baseline(self) -> Path:
        """What verify listed of the root `from` image's Python distributions, and of
        which image (stages/verify_probe.py)."""
        return self.root / "baseline.json"

    @property
    def pywheels(self) -> Path:
        return self.root / PYWHEELS_DIR

    @property
    def wheels_staging(self) -> Path:
        """Where a compile writes; renamed to `wheels` only when it succeeded."""
        return self.root / "wheels.partial"

    @property
    def image_layout(self) -> Path:
        """The reproducible build's OCI image layout (docker/oci_layout.py reads and writes
        it; a child tier's build is seeded from its parent's)."""
        return self.root / "oci"

    @property
    def push_record(self) -> Path:
        return self.root / "push.json"

    @property
    def verify_record(self) -> Path:
        return self.root / "verify.json"

    @property
    def figures(self) -> Path:
        """Bytes and seconds of the last build, push and pull (stages/figures.py)."""
        return self.root / "figures.json"

    @property
    def ccache_stats(self) -> Path:
        return self.root / "ccache-stats.json"

    @property
    def uploads(self) -> Path:
        """Blob uploads under way (registry/upload.py): a session per blob, to resume."""
        return self.root / "uploads"

    @property
    def reports(self) -> Path:
        """Copies of verify reports read or written, one file per artifact digest."""
        return self.root / "reports"

    def log(self, stage: str) -> Path:
        return self.root / "logs" / f"{stage}.log"


def machine_cache(name: str) -> Path:
    """This machine's cache folder `name`, shared by every stack here: files kept by their
    content (`$XDG_CACHE_HOME/build-graph/<name>`, ~/.cache without it)."""
    home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(home) / "build-graph" / name


def manifest_option(manifest: Path) -> str:
    """' --manifest PATH' for a command that fixes `manifest`; '' for the default images.toml."""
    return "" if manifest.name == DEFAULT_MANIFEST else f" --manifest {manifest}"


@dataclass(frozen=True)
class BuildFolder:
    """The build folder of one manifest (see the module's docstring)."""

    root: Path

    @classmethod
    def of(cls, manifest: Path) -> BuildFolder:
        manifest = manifest.absolute()
        base = manifest.parent / OWN_FOLDER
        return cls(base if manifest.name == DEFAULT_MANIFEST else base / f"_{manifest.name}")

    @staticmethod
    def looks_like(folder: Path) -> bool:
        """Whether `folder` is some stack's build folder (this one's, or a stack nested
        below it): named build/ and holding the tool's own files."""
        return folder.name == OWN_FOLDER and (
            any((folder / name).exists() for name in (PLAN_CACHE, DOIT_DB, RUN_LOCK))
            or any(folder.glob("_*.toml"))
        )

    @property
    def plan_cache(self) -> Path:
        return self.root / PLAN_CACHE

    @property
    def doit_db(self) -> Path:
        return self.root / DOIT_DB

    @property
    def run_lock(self) -> Path:
        return self.root / RUN_LOCK

    @property
    def sources(self) -> Path:
        return self.root / "sources"

    @property
    def run_summary(self) -> Path:
        """The last run's summary in Markdown (run/summary.py)."""
        return self.root / "summary.md"

    @property
    def cache_store(self) -> Path:
        """The default compiler-cache store when `[cache] url` is not set."""
        return self.root / "ccache-store"

    def index_cache(self, index: str) -> Path:
        """`check`'s cached answers of the package index at `index` (a URL)."""
        return self.root / "pypi" / hashlib.sha256(index.encode()).hexdigest()[:16]

    def tier(self, variant: str, tier: str, platform: str | None = None) -> TierFolder:
        """`<variant>/<tier>/`; one platform's image of a tier built per platform:
        `<variant>/<tier>/<os>-<arch>/` (the tier's own folder keeps its promote log)."""
        root = self.root / variant / tier
        return TierFolder(root / platform.replace("/", "-") if platform else root)

    def ccache(self, variant: str, tier: str, platform: str | None = None) -> Path:
        """The compiler cache of a tier, of one platform's compile where it has several
        (objects of one architecture are only misses for another)."""
        name = f"{tier}@{platform.replace('/', '-')}" if platform else tier  # '@': no name has it
        return self.root / "ccache" / variant / name
