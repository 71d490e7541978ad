"""Which verify reports a runner trusts: its own verifier's, and on a CPU runner a GPU's."""

from __future__ import annotations

import pytest

from build_graph.manifest.expectation import Expectation
from build_graph.verify.request import fingerprint, trusted_fingerprints

WANT = Expectation(
    python="3.11",
    conda=False,
    single_python=True,
    pip_check=True,
    packages={},
    cuda="13.0",
    archs=["9.0"],
    gpu_policy="required",
)


@pytest.mark.parametrize("gpu_here", [False, True])
def test_a_cpu_runner_also_trusts_a_gpu_runners_report(gpu_here: bool) -> None:
    trusted = trusted_fingerprints(WANT, gpu_here)
    assert trusted[0] == fingerprint(WANT, gpu_here)  # its own first (asked in round one)
    # A GPU runner does not settle for a report made without a GPU: it re-verifies.
    assert trusted == (
        [fingerprint(WANT, True)]
        if gpu_here
        else [fingerprint(WANT, False), fingerprint(WANT, True)]
    )
    assert fingerprint(WANT, True) != fingerprint(WANT, False)
