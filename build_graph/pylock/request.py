"""What a tier asks the resolver for, and everything the answer depends on.

A tier's requirements are its `packages` (version fields filled in) and, for a tier built
on an external image, `pip` and `setuptools` at `versions.pip` / `versions.setuptools` when
the stack names them (the shipped templates install pip from the lock too). A child is
resolved on top of its ancestors: their locked pins are constraints (a child never moves a
parent's numpy) and are not installed again; what an ancestor or the tier itself compiles
(a `verify.packages` pin `==X` that no lock holds: a from-source torch, fastext) is
*provided*: resolved at that version with no dependencies of its own, never fetched from the
index (the index's torch would bring its CUDA wheels along).

`inputs()` is the list a lock records: a lock whose recorded inputs differ from the tier's
current request is stale.
"""

from __future__ import annotations

from dataclasses import dataclass

from build_graph.manifest.model import TierSpec, VariantSpec

# The glibc floor of the wheels a lock picks: manylinux_2_28 runs on Debian 11+, Ubuntu
# 20.04+ and RHEL 8+ (PEP 600 tags; glibc 2.28 is RHEL 8's), which covers every base image
# the shipped stacks name (CUDA's Ubuntu 22.04/24.04, Debian 12).
MANYLINUX = "manylinux_2_28"
_MACHINES = {"linux/amd64": "x86_64", "linux/arm64": "aarch64", "linux/arm64/v8": "aarch64"}


@dataclass(frozen=True)
class Request:
    key: str  # the tier's task key: 'base', 'base@cu124/arm64'
    tier: str
    platform: str  # 'linux/amd64'
    python: str  # '3.11'
    requirements: tuple[str, ...]
    constraints: tuple[tuple[str, str], ...]  # (name, version) locked by an ancestor
    provided: tuple[tuple[str, str], ...]  # (name, version) compiled here or above

    def inputs(self) -> list[str]:
        return [
            f"python {self.python}",
            f"platform {self.platform} ({MANYLINUX})",
            *(f"requirement {r}" for r in self.requirements),
            *(f"constraint {n}=={v}" for n, v in self.constraints),
            *(f"provided {n}=={v}" for n, v in self.provided),
        ]

    @property
    def uv_platform(self) -> str:
        return f"{_MACHINES[self.platform]}-{MANYLINUX}"


def supported(platform: str) -> bool:
    return platform in _MACHINES


def requirements_of(variant: VariantSpec, tier: TierSpec) -> tuple[str, ...]:
    """What the tier's template installs from the index (see the module's docstring)."""
    implicit = []
    if tier.parent is None:
        implicit = [
            f"{n}=={variant.fields[n]}" for n in ("pip", "setuptools") if n in variant.fields
        ]
    named = {_name(r) for r in tier.packages}
    return tuple([*(r for r in implicit if _name(r) not in named), *tier.packages])


def exact_pins(specs: dict[str, str]) -> dict[str, str]:
    """name -> version of the `==X` entries of verify.packages (canonical names)."""
    from packaging.utils import canonicalize_name  # planning only: a no-op never asks

    return {
        canonicalize_name(name): spec[2:]
        for name, spec in specs.items()
        if spec.startswith("==") and "*" not in spec and "," not in spec
    }


def names_of(requirements: tuple[str, ...]) -> set[str]:
    return {_name(r) for r in requirements}


def _name(requirement: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement  # planning only
    from packaging.utils import canonicalize_name

    try:
        return canonicalize_name(Requirement(requirement).name)
    except InvalidRequirement:
        return requirement
