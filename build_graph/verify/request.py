"""The probe's files, what it is asked, and the verifier's fingerprint.

Shared by the verify stage and the doctor.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
from functools import cache
from pathlib import Path

from build_graph.manifest.expectation import Expectation
from build_graph.plan.hashing import content_hash

HERE = Path(__file__).parent
IN_IMAGE = HERE / "in_image"
PROBE = IN_IMAGE / "probe.py"
# Mounted together into the image; standard library only.
PROBE_FILES = (PROBE, IN_IMAGE / "fatbin.py", IN_IMAGE / "finder.py", IN_IMAGE / "inventory.py")
PACKAGE = HERE.parent
# What verify runs, and so what its fingerprint covers: the probe and its siblings in the
# image, what it is asked (this module), the checks and the GPU code-path reading, and every
# module of the verifier's own packages they import (which code runs on which GPU,
# gpu/archs.py, and its tables); found by reading the imports, so a module merely placed
# beside them (gpu/releases.py, which verify never runs) does not re-verify every image.
ROOTS = ("verify/request.py", "verify/checks.py", "verify/results.py", "verify/device.py")
# and the registry's layer limit (a check's verdict reads it)
RULE_PACKAGES = ("build_graph.verify", "build_graph.gpu", "build_graph.oci.layer_limits")


def probe_request(
    want: Expectation, gpu: bool, out: str | None = None, inventory: bool = False
) -> str:
    """The probe's one argument: packages to report and import, libraries to read, whether
    to list what is installed (for the SBOM), and the file to write its report to (stdout
    without one)."""
    return json.dumps(
        {
            "packages": sorted(want.packages),
            "imports": sorted(want.packages),
            "libraries": list(want.libraries),
            "torch_libraries": want.torch_archs,
            "gpu": gpu,
            "inventory": inventory,
            "out": out,
        }
    )


def fingerprint(want: Expectation, gpu_present: bool) -> str:
    """Changes when the verifier changes: the probe, the reader, the checks, the GPU rules
    and tables, the promises (policy included) and whether a GPU was there. A changed
    fingerprint re-verifies."""
    return content_hash(
        {"verifier": _verifier_code(), "want": dataclasses.asdict(want), "gpu_present": gpu_present}
    )


def trusted_fingerprints(want: Expectation, gpu_here: bool) -> list[str]:
    """The fingerprints a report may carry to count on a runner, its own first: a runner
    without a GPU also trusts a GPU runner's report (it checked everything a CPU runner can,
    and ran a kernel); a GPU runner does not settle for one made without a GPU."""
    return [fingerprint(want, gpu_here)] + ([] if gpu_here else [fingerprint(want, True)])


def verifier_files() -> list[Path]:
    """The code verify runs: ROOTS, the probe's files, and the verifier's packages' modules
    they import, at any depth."""
    todo = [PACKAGE / root for root in ROOTS]
    todo += [PACKAGE / "verify" / "in_image" / p.name for p in PROBE_FILES]
    seen = set(todo)
    while todo:
        for module in _rule_imports(todo.pop()) - seen:
            seen.add(module)
            todo.append(module)
    return sorted(seen)


def _rule_imports(path: Path) -> set[Path]:
    """The modules of RULE_PACKAGES that `path` imports (any depth of the file)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if not name.startswith(RULE_PACKAGES):
                continue
            module = PACKAGE.joinpath(*name.split(".")[1:])
            found |= {p for p in (module.with_suffix(".py"), module / "__init__.py") if p.is_file()}
    return found


@cache
def _verifier_code() -> tuple[tuple[str, str], ...]:
    """(name, sha256 of the bytes) of each verifier file, read once per process (every
    verify task's up-to-date check asks, on every run). Names count: a module added,
    removed or renamed changes the fingerprint too."""
    return tuple(
        (f"{p.parent.name}/{p.name}", hashlib.sha256(p.read_bytes()).hexdigest())
        for p in verifier_files()
    )
