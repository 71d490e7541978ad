"""A planned tier's apt lock: what its template asks apt for, the lock on disk, and whether
they agree.

The template says what it installs (`apt_install`, `system_python` in templates/_macros.j2
call `apt.step(packages)` while rendering), so the request is read where it is made: a team's
template that installs something else is locked the same way. A step renders locked only when
the lock was resolved from this base (platform, `from` pin, the packages the tiers below
locked) and this step's request; otherwise it renders a RUN that refuses to build (a run and
`lock` resolve it first, stages/apt_pin.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from build_graph.aptlock import files
from build_graph.aptlock.files import AptLock, Deb
from build_graph.layout import DEBS_DIR

# Where a locked install finds its .debs: the build context's debs/ (stages/debs.py)
# bind-mounted for the one step that installs them.
MOUNT = "/tmp/debs"


@dataclass(frozen=True)
class AptState:
    path: Path | None  # None: the stack does not lock apt ([apt] lock)
    lock: AptLock | None  # what the file holds (None: no file)
    inputs: tuple[str, ...] = ()  # the base the lock must have been resolved from
    requests: tuple[tuple[str, ...], ...] = ()  # each install the template renders
    image: str = ""  # the root `from` image as pinned: where apt resolves
    below: tuple[Deb, ...] = ()  # what the tiers below locked

    @property
    def fresh(self) -> bool:
        """Nothing to lock, or a lock resolved from exactly this base and these requests."""
        return (
            self.path is None
            or not self.requests
            or (
                self.lock is not None
                and self.lock.inputs == self.inputs
                and tuple(s.request for s in self.lock.steps) == self.requests
            )
        )

    @property
    def chain(self) -> tuple[Deb, ...]:
        """Every package this tier and the tiers below it locked (fresh locks only)."""
        own = self.lock.debs if self.lock is not None and self.requests and self.fresh else ()
        return self.below + own

    @property
    def pins(self) -> list[str]:
        """'name=version' of what the image installs."""
        return [d.pin for d in self.lock.debs] if self.lock and self.fresh else []

    @property
    def hashed(self) -> list[str]:
        """'name=version sha256' of each file the image installs: a hash input (plan.py),
        so a template that renders only the pins still gets a tag for the bytes."""
        return [f"{d.pin} {d.sha256}" for d in self.lock.debs] if self.lock and self.fresh else []


NO_APT = AptState(None, None)


def base_inputs(platform: str, image: str, below: tuple[Deb, ...]) -> tuple[str, ...]:
    """What a tier's apt resolution depends on besides its own requests."""
    chain = "\n".join(sorted(f"{d.pin} {d.sha256}" for d in below))
    return (
        f"platform {platform}",
        f"from {image}",
        f"below sha256:{hashlib.sha256(chain.encode()).hexdigest()}",
    )


@dataclass(frozen=True)
class LockedFile:
    sha256: str
    path: str  # where the install finds it: MOUNT/<apt's file name>


@dataclass(frozen=True)
class Answer:
    """What a template's install renders (templates/_macros.j2 reads these names)."""

    locked: bool  # False: the stack does not lock apt; install what the archive serves
    missing: bool = False  # no lock for this install: the step refuses to build
    file: str = ""  # the lock, relative to the manifest's folder
    pins: tuple[str, ...] = ()  # name=version of each file
    debs: tuple[LockedFile, ...] = ()
    source: str = DEBS_DIR  # the build context's folder of the gathered files
    mount: str = MOUNT


UNLOCKED = Answer(locked=False)


@dataclass
class Recorder:
    """The `apt` object a template renders with: records each install it asks for and
    answers with the locked packages, or that the lock is missing or stale."""

    manifest: Path
    path: Path | None  # None: the stack does not lock apt
    lock: AptLock | None
    inputs: tuple[str, ...]
    image: str
    below: tuple[Deb, ...]
    requests: list[tuple[str, ...]] = field(default_factory=list)

    def step(self, packages: list[str]) -> Answer:
        request = tuple(sorted(set(packages)))
        index = len(self.requests)
        self.requests.append(request)
        if self.path is None:
            return UNLOCKED
        where = self.path.relative_to(self.manifest.parent).as_posix()
        lock = self.lock
        if (
            lock is None
            or lock.inputs != self.inputs
            or index >= len(lock.steps)
            or lock.steps[index].request != request
        ):
            return Answer(locked=True, missing=True, file=where)
        debs = lock.steps[index].debs
        return Answer(
            locked=True,
            file=where,
            pins=tuple(d.pin for d in debs),
            debs=tuple(LockedFile(d.sha256, f"{MOUNT}/{d.file}") for d in debs),
        )

    def state(self) -> AptState:
        return AptState(
            self.path, self.lock, self.inputs, tuple(self.requests), self.image, self.below
        )


class Steps:
    """The Jinja global `apt` (plan/render.py): the macros are imported without the
    template's context, so the recorder of the tier being rendered is reached through it.
    With none (a compile script), installs render unlocked, as in a stack without locks."""

    def __init__(self) -> None:
        self.current: Recorder | None = None

    def step(self, packages: list[str]) -> Answer:
        return self.current.step(packages) if self.current is not None else UNLOCKED


def recorder(
    manifest: Path,
    locked: bool,
    tier: str,
    key: str,
    platform: str,
    image: str,
    parent: AptState | None,
) -> Recorder:
    """The recorder for one tier's render. `key`: the tier's key without the platform;
    `image`: the root `from` image as pinned (the parent's for a child tier)."""
    below = parent.chain if parent is not None else ()
    if not locked:
        return Recorder(manifest, None, None, (), image, below)
    path = files.lock_file(manifest, key, platform)
    lock = files.read(path, tier, manifest)
    return Recorder(manifest, path, lock, base_inputs(platform, image, below), image, below)
