"""The image's Python packages are its lock's: verify's `python lock` check.

Every distribution the tier's and its ancestors' locks hold is installed at exactly the
locked version; every other distribution pip installed (apt's are the SBOM's) is accounted
for: named in verify.packages (what the stack compiles or copies in: torch from source,
fastext, the team's own packages), already in the root `from` image, or the pip and
setuptools the templates bootstrap from the distribution's wheels. Anything else came
from behind the lock's back (a template's extra `pip install`, a compiled wheel's
dependencies resolved at build time) and fails, named.
"""

from __future__ import annotations

from packaging.utils import canonicalize_name

from build_graph.manifest.expectation import Expectation
from build_graph.verify.probe_output import ProbeOutput
from build_graph.verify.results import Result

NAME = "python lock"
_SHOWN = 8
BOOTSTRAP = ("pip", "setuptools")


def check_python_lock(want: Expectation, probe: ProbeOutput) -> list[Result]:
    installed = probe.get("distributions")
    baseline = probe.get("baseline")
    if not isinstance(installed, dict) or not isinstance(baseline, dict):
        why = "the image's distributions could not be listed"
        return [Result(NAME, "not checked", "the lock's packages", why)]
    installed = {canonicalize_name(str(n)): str(v) for n, v in installed.items()}
    locked = dict(want.locked)
    wrong = [
        f"{name} {installed.get(name, 'not installed')} (locked {version})"
        for name, version in sorted(locked.items())
        if installed.get(name) != version
    ]
    # pip and setuptools are the installer the shipped templates bootstrap from the
    # distribution's own wheels (python3-pip-whl) before any lock is installed; a stack that
    # names versions.pip / versions.setuptools locks them, and then they are held to it.
    accounted = {*BOOTSTRAP, *locked, *(canonicalize_name(n) for n in want.packages)}
    accounted |= {canonicalize_name(str(n)) for n in baseline}
    extra = [f"{n} {v}" for n, v in sorted(installed.items()) if n and n not in accounted]
    problems = [*(f"not as locked: {w}" for w in wrong)]
    if extra:
        problems.append(
            "installed behind the lock's back: "
            + ", ".join(extra[:_SHOWN])
            + (f" and {len(extra) - _SHOWN} more" if len(extra) > _SHOWN else "")
            + " (add them to tiers.<tier>.packages, or to verify.packages if the stack "
            "compiles or copies them in)"
        )
    expected = f"{len(locked)} locked distributions, nothing else from the index"
    if problems:
        return [Result(NAME, "fail", expected, "; ".join(problems)[:800])]
    return [Result(NAME, "pass", expected, f"{len(locked)} as locked, nothing else")]
