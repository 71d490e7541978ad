"""A planned tier's Python lock: what it asks, the lock on disk, and whether they agree.

Whether they agree is found when the state is made (at planning): the plan cache keeps the
answer, so a no-op run reads no requirement again and never imports `packaging`.
"""

from __future__ import annotations

import platform as host
from dataclasses import dataclass, field
from pathlib import Path

from build_graph.errors import ConfigError, ConfigIssue
from build_graph.manifest.model import TierSpec, VariantSpec
from build_graph.oci import platforms
from build_graph.pylock import files
from build_graph.pylock.files import PythonLock
from build_graph.pylock.request import (
    Request,
    exact_pins,
    names_of,
    requirements_of,
    supported,
)


@dataclass(frozen=True)
class LockState:
    request: Request | None  # None: the tier installs nothing from the index
    path: Path | None
    lock: PythonLock | None  # what the file holds (None: no file)
    # every distribution the tier and its ancestors locked: (name, version)
    chain: tuple[tuple[str, str], ...] = ()
    # unmet_of(request, lock), found once, when the state is made
    _unmet: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_unmet", tuple(unmet_of(self.request, self.lock)))

    @property
    def fresh(self) -> bool:
        """No request, or a lock resolved from exactly this request whose pins answer it."""
        return self.request is None or (
            self.lock is not None
            and list(self.lock.inputs) == self.request.inputs()
            and not self.unmet
        )

    @property
    def unmet(self) -> list[str]:
        """The tier's requirements its lock's pins do not satisfy (unmet_of)."""
        return list(self._unmet)

    @property
    def lines(self) -> list[str]:
        return self.lock.lines() if self.lock is not None and self.fresh else []


def unmet_of(request: Request | None, lock: PythonLock | None) -> list[str]:
    """The requirements of `request` that the pins of `lock` do not satisfy, read offline:
    a lock edited by hand or merged from two branches can say the right inputs and hold
    other versions. Requirements with environment markers are left to the resolver."""
    if request is None or lock is None:
        return []
    from packaging.requirements import InvalidRequirement, Requirement  # planning only
    from packaging.utils import canonicalize_name

    pins = lock.versions()
    given = {canonicalize_name(n) for n, _ in (*request.provided, *request.constraints)}
    found = []
    for text in request.requirements:
        try:
            wanted = Requirement(text)
        except InvalidRequirement:
            continue  # images.toml's own validation names it
        name = canonicalize_name(wanted.name)
        if wanted.marker is not None or name in given:
            continue
        pinned = pins.get(name)
        if pinned is None:
            found.append(f"nothing locked for {text}")
        elif not wanted.specifier.contains(pinned, prereleases=True):
            found.append(f"{name} {pinned} does not satisfy {text}")
    return found


NO_LOCK = LockState(None, None, None)


def host_platform() -> str:
    """This machine's platform as a lock names it ('linux/amd64', oci/platforms.py's); a
    machine of another kind as uname names it ('linux/riscv64')."""
    found = platforms.host_platform()
    return found.text if found is not None else f"linux/{host.machine().lower()}"


def lock_state(
    manifest: Path,
    variant: VariantSpec,
    tier: TierSpec,
    key: str,
    platform: str | None,
    parent: LockState | None,
    expected: dict[str, str],
) -> LockState:
    """`key`: the tier's key without the platform ('base@cu124'); `expected`: its merged
    verify.packages (own and ancestors')."""
    inherited = parent.chain if parent is not None else ()
    requirements = requirements_of(variant, tier)
    if not requirements:
        return LockState(None, None, None, inherited)
    where = platform or host_platform()
    python = variant.fields.get("python")
    if not python or not supported(where):
        why = (
            "versions.python is not set: a lock is resolved for the image's Python"
            if not python
            else f"Python packages are locked for linux/amd64 and linux/arm64, not {where}"
        )
        raise ConfigError([ConfigIssue(manifest, f"tiers.{tier.name}.packages", why)])
    locked = dict(inherited)
    own = names_of(requirements)
    provided = tuple(
        (n, v) for n, v in sorted(exact_pins(expected).items()) if n not in locked and n not in own
    )
    request = Request(
        key=key if platform is None else f"{key}/{where.split('/')[1]}",
        tier=tier.name,
        platform=where,
        python=str(python),
        requirements=requirements,
        constraints=tuple(sorted(locked.items())),
        provided=provided,
    )
    path = files.lock_file(manifest, key, where)
    lock = files.read(path, tier.name, manifest)
    state = LockState(request, path, lock)
    chain = inherited + (
        tuple((p.name, p.version) for p in lock.pins) if lock and state.fresh else ()
    )
    return LockState(request, path, lock, chain)
