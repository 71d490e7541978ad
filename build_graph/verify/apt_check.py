"""The image's system packages are its apt lock's: verify's `apt lock` check.

For a stack that locks apt ([apt] lock), every package the tier's and its ancestors' locks
hold is installed, as dpkg's own database in the image says, at exactly the locked version
and architecture. A step after the locked install that upgrades, downgrades or removes one
(a template's `apt-get upgrade`, a `dpkg -i` of something else) fails, naming the packages.
What the root `from` image brought is not the lock's to judge (its digest pins it).
"""

from __future__ import annotations

from build_graph.manifest.expectation import Expectation
from build_graph.verify.lock_check import some
from build_graph.verify.probe_output import ProbeOutput
from build_graph.verify.results import Result

NAME = "apt lock"


def check_apt_lock(want: Expectation, probe: ProbeOutput) -> list[Result]:
    if not want.apt_locked:
        return []
    expected = f"{len(want.apt_locked)} locked packages at their versions"
    listed = probe.get("debian")
    if not isinstance(listed, list):
        return [
            Result(
                NAME,
                "not checked",
                expected,
                "dpkg's database could not be read (none in the image, or unreadable)",
            )
        ]
    installed: dict[str, set[tuple[str, str]]] = {}
    for row in listed:
        if isinstance(row, dict):
            name, version, arch = (str(row.get(k, "")) for k in ("name", "version", "architecture"))
            installed.setdefault(name, set()).add((version, arch))
    wrong = [
        f"{name} {_shown(installed.get(name))} (locked {version} {arch})"
        for name, version, arch in sorted(want.apt_locked)
        if (version, arch) not in installed.get(name, set())
    ]
    if wrong:
        return [Result(NAME, "fail", expected, "not as locked: " + some(wrong))]
    return [Result(NAME, "pass", expected, f"{len(want.apt_locked)} as locked")]


def _shown(found: set[tuple[str, str]] | None) -> str:
    if not found:
        return "not installed"
    return " / ".join(f"{version} {arch}" for version, arch in sorted(found))
