"""The image's Python packages are its lock's: verify's `python lock` check.

Every distribution the tier's and its ancestors' locks hold is installed at exactly the
locked version; every other distribution pip installed (apt's are the SBOM's) is accounted
for: named in verify.packages (what the stack compiles or copies in: torch from source,
fastext, the team's own packages; or installs outside the lock: torch-wheels' torch from
PyTorch's index), required by one of those as the image's own metadata says (said in the
result), already in the root `from` image at the version it had there, or the pip and
setuptools the templates bootstrap from the distribution's wheels. Anything else came
from behind the lock's back (a template's extra `pip install`, an upgrade of a `from`
image's package) and fails, named.
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
    base = {canonicalize_name(str(n)): str(v) for n, v in baseline.items()}
    locked = dict(want.locked)
    wrong = [
        f"{name} {installed.get(name, 'not installed')} (locked {version})"
        for name, version in sorted(locked.items())
        if installed.get(name) != version
    ]
    provided = {str(canonicalize_name(n)) for n in want.packages} - set(locked)
    # pip and setuptools are the installer the shipped templates bootstrap from the
    # distribution's own wheels (python3-pip-whl) before any lock is installed; a stack that
    # names versions.pip / versions.setuptools locks them, and then they are held to it.
    known = {*BOOTSTRAP, *locked, *provided, *base}
    moved = [
        f"{n} {base[n]} -> {installed[n]}"
        for n in sorted(base)
        if n in installed and installed[n] != base[n] and n not in {*BOOTSTRAP, *locked, *provided}
    ]
    pulled = _required_by(provided, probe.get("requires")) - known
    extra = [f"{n} {v}" for n, v in sorted(installed.items()) if n and n not in known | pulled]
    problems = [*(f"not as locked: {w}" for w in wrong)]
    if moved:
        problems.append("changed from the `from` image, unlocked: " + some(moved))
    if extra:
        problems.append(
            "installed behind the lock's back: "
            + some(extra)
            + " (add them to tiers.<tier>.packages, or to verify.packages if the stack "
            "compiles or copies them in)"
        )
    expected = f"{len(locked)} locked distributions, nothing else from the index"
    if problems:
        return [Result(NAME, "fail", expected, "; ".join(problems)[:800])]
    outside = sorted(p for p in pulled if p in installed)
    also = (
        f"; outside the lock: {', '.join(sorted(provided & set(installed)))} and "
        f"{len(outside)} distributions they require ({some(outside)})"
        if outside
        else ""
    )
    return [Result(NAME, "pass", expected, f"{len(locked)} as locked, nothing else{also}")]


def _required_by(roots: set[str], requires: object) -> set[str]:
    """Every distribution `roots` require, transitively, as the image's metadata says (the
    probe's "requires" section); nothing when the probe could not say."""
    graph: dict[str, list[str]] = {}
    for name, deps in requires.items() if isinstance(requires, dict) else ():
        if isinstance(deps, list):
            graph[canonicalize_name(str(name))] = [canonicalize_name(str(d)) for d in deps]
    seen: set[str] = set()
    todo = [d for r in roots for d in graph.get(r, [])]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, []))
    return seen


def some(items: list[str]) -> str:
    """The first few of `items`, and how many more (a check's one line stays short)."""
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")
