"""What the probe reports from inside an image, and what verify adds on the host: one record.

The probe (in_image/probe.py, standard library only) writes these sections as JSON; a
section that failed is None, with its error under `errors`. The values come from inside an
image, so every check reads them defensively (a wrong shape is 'not checked' or a failure,
never a crash); the keys are fixed here, so a check that asks for a section the probe does
not write fails the type check.
"""

from __future__ import annotations

import json
from typing import Any, TypedDict, cast


class ProbeOutput(TypedDict, total=False):
    # written by the probe
    probe_version: int
    errors: dict[str, str]  # section -> the exception that stopped it
    python: Any  # version, executable, prefix, machine
    survey: Any  # the file-system walk the interpreter and conda checks read
    interpreters: Any  # every Python found
    conda: Any  # conda installations found
    virtualenv: Any
    pip_check: Any
    packages: Any  # distribution -> version, for the packages asked about
    distributions: Any  # every distribution pip installed (not apt): name -> version
    debian: Any  # every package dpkg lists as installed: name, version, architecture
    imports: Any  # module -> whether it imported, and why not
    torch: Any  # version, CUDA, cuDNN, arch list
    gpu: Any  # the kernel run on a GPU, when one was present
    libraries: Any  # path -> the device code its fatbins hold
    inventory: Any  # every installed package, for the SBOM (taken out of the report)
    # added by verify on the host
    image_platform: str | None
    gpu_absent_reason: str
    image_size_bytes: int | None
    layers: list[dict[str, Any]]  # base first: compressed size, step, shared with the parent
    baseline: Any  # name -> version of what the root `from` image had installed (pip's)
    smoke: list[dict[str, Any]]


def read(text: str) -> ProbeOutput:
    """The probe's printed report; ValueError when it is not a JSON object (the door: past
    it, the keys are ProbeOutput's and the values are read defensively)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"the probe printed a JSON {type(data).__name__}, not an object")
    return cast(ProbeOutput, data)
