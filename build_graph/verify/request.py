"""The probe's files and what it is asked: shared by the verify stage and the doctor."""

from __future__ import annotations

import json
from pathlib import Path

from build_graph.verify.checks import Expectation

PROBE = Path(__file__).with_name("probe.py")
PROBE_FILES = (PROBE, Path(__file__).with_name("fatbin.py"))  # stdlib-only, mounted together


def probe_request(want: Expectation, gpu: bool) -> str:
    """The probe's one argument: which packages to report, which libraries to read."""
    return json.dumps({"packages": sorted(want.packages), "libraries": list(want.libraries),
                       "gpu": gpu})
