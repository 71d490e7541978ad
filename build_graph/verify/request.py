"""The probe's files, what it is asked, and the verifier's fingerprint.

Shared by the verify stage and the doctor.
"""

from __future__ import annotations

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
# The code of every rule the verifier applies, by folder: the probe, the fatbin reader and
# the finder (in_image/), the checks here; which code runs on which GPU (gpu/archs.py) and
# the tables it reads (gpu/tables.py). A fix in any of them re-verifies.
VERIFIER_CODE = (HERE, IN_IMAGE, HERE.parent / "gpu")


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
    """The code of every rule the verifier applies (VERIFIER_CODE's modules)."""
    return sorted(p for folder in VERIFIER_CODE for p in folder.glob("*.py"))


@cache
def _verifier_code() -> tuple[tuple[str, str], ...]:
    """(name, sha256 of the bytes) of each verifier file, read once per process (every
    verify task's up-to-date check asks, on every run). Names count: a module added,
    removed or renamed changes the fingerprint too."""
    return tuple(
        (f"{p.parent.name}/{p.name}", hashlib.sha256(p.read_bytes()).hexdigest())
        for p in verifier_files()
    )
