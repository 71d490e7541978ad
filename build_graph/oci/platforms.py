"""Image platforms ('linux/amd64', 'linux/arm64'): parsed once, named one way everywhere.

A platform is the OCI image index's `platform` object (os, architecture; the image spec's
values are Go's GOOS/GOARCH). We build for the two that GPU fleets run: x86 hosts and Arm
hosts (Grace: GH200, GB200). The text a manifest gives is normalized here ('linux/arm64/v8'
is 'linux/arm64', as containerd's platform matcher treats them); anything else is refused
with the names that would work.
"""

from __future__ import annotations

import platform as host
from dataclasses import dataclass
from typing import Any

from build_graph.errors import did_you_mean


@dataclass(frozen=True, order=True)
class Platform:
    os: str
    architecture: str

    @property
    def text(self) -> str:
        """'linux/arm64': what `docker build --platform` and images.toml take."""
        return f"{self.os}/{self.architecture}"

    @property
    def short(self) -> str:
        """'arm64': the suffix of task names and folders (build:base/arm64)."""
        return self.architecture

    @property
    def machine(self) -> str:
        """What `uname -m` (Python's platform.machine()) says inside such an image."""
        return _MACHINES[self.architecture]


# architecture -> uname -m; the platforms this tool builds for.
_MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}
SUPPORTED = tuple(f"linux/{arch}" for arch in _MACHINES)
# What people write for them, and what it means.
_ALIASES = {
    "linux/arm64/v8": "linux/arm64",
    "linux/x86_64": "linux/amd64",
    "linux/aarch64": "linux/arm64",
    "linux/x86-64": "linux/amd64",
}


def parse_platform(text: str) -> Platform:
    """'linux/arm64' -> Platform; ValueError naming the supported ones otherwise.
    Aliases Docker does not accept ('linux/x86_64') are refused with the right name, so
    images.toml says what `docker build --platform` takes."""
    if text in SUPPORTED or text == "linux/arm64/v8":
        os_name, arch = _ALIASES.get(text, text).split("/")
        return Platform(os_name, arch)
    if text in _ALIASES:
        raise ValueError(f"{text!r}: write {_ALIASES[text]!r} (Docker's name for it)")
    raise ValueError(
        f"{text!r} is not a platform this tool builds for"
        f"{did_you_mean(text, SUPPORTED)}; supported: {', '.join(SUPPORTED)}"
    )


def stated_platform(document: Any) -> str | None:
    """'linux/arm64' from what an image config, or an index entry's `platform` object,
    states: its `os` and `architecture` (Go's GOOS/GOARCH; a `variant` such as arm64's 'v8'
    is left out, as parse_platform does); None when either is missing or not a plain name."""
    if not isinstance(document, dict):
        return None
    names = [document.get("os"), document.get("architecture")]
    if not all(isinstance(n, str) and n and "/" not in n for n in names):
        return None
    return "/".join(str(n) for n in names)


def host_platform() -> Platform | None:
    """The platform of this machine's own images, None on a machine of another kind."""
    return platform_of_machine(host.machine())


def platform_of_machine(machine: str) -> Platform | None:
    """'x86_64' (uname -m, Docker's /info Architecture) -> linux/amd64; None if unknown."""
    machine = machine.lower()
    for arch, name in _MACHINES.items():
        if machine in (name, arch):
            return Platform("linux", arch)
    return None


EMULATION = (
    "register QEMU user emulation for it (binfmt_misc): scripts/services.sh arm64 "
    "on Debian, or `docker run --privileged --rm tonistiigi/binfmt --install arm64`"
)


def emulation_hint(output: str) -> str:
    """A hint for output that shows the kernel refused another architecture's program."""
    return (
        f"; this host cannot run that platform's programs: {EMULATION}"
        if "exec format error" in output.lower()
        else ""
    )
