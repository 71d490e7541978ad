"""The verify report is one typed record whose JSON is an API (published as a signed
attestation, read by other runners, `gate` and policy engines): its key names, order and
values are pinned here, and it reads back as itself. What verify concludes is decided from
what was probed, with no registry, engine or container."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, cast

import pytest

from build_graph.gpu.status import GpuState, GpuStatus
from build_graph.oci.digest import Digest
from build_graph.oci.verify_report import Check, MadeBy, VerifyReport, Versions
from build_graph.plan.plan import plan
from build_graph.stages.verify_verdict import Probed, decide
from build_graph.verify.probe_output import ProbeOutput
from build_graph.verify.request import fingerprint
from build_graph.verify.results import gpu_status
from tests.helpers import MINIMAL, load_text

DIGEST = Digest.of(b"image")
REPORT = VerifyReport(
    tier="child",
    variant="default",
    image="127.0.0.1:5000/g/child:3f48532a00fd42eb9b14",
    platform="linux/arm64",
    digest=DIGEST,
    content_hash="3f48532a00fd42eb9b14",
    passed=False,
    summary="1 passed, 1 failed, 0 not checked",
    fingerprint="c8b42fc21be8e4d54f37",
    fingerprints=Versions("3.11.2", "2.7.0", "12.8", None, ["sm_90"]),
    gpu=GpuStatus(GpuState.FAILED, "H100 (sm_90, driver 570): failed: no kernel image"),
    gpu_policy="required",
    gpu_present=True,
    gpu_code_paths=("libtorch_cuda.so: sm_90 runs its own SASS (9.0)",),
    checks=(
        Check("python version", "pass", "3.11", "3.11.2", False),
        Check("GPU kernel launch", "fail", "a kernel runs", "H100: failed", True),
    ),
    probe={"python": {"version": "3.11.2"}, "image_size_bytes": 123, "smoke": []},
    made_by=MadeBy("runner-1", "0a1b2c3d4e5f", "2026-11-28T04:00:00+00:00"),
)
# What verify wrote before the report was a typed record (stages/verify.py's dict, then
# registry/reports.py's made_by), byte for byte in this order.
PINNED = (
    '{"tier": "child", "variant": "default", '
    '"image": "127.0.0.1:5000/g/child:3f48532a00fd42eb9b14", "platform": "linux/arm64", '
    f'"digest": "{DIGEST}", "content_hash": "3f48532a00fd42eb9b14", "passed": false, '
    '"summary": "1 passed, 1 failed, 0 not checked", "fingerprint": "c8b42fc21be8e4d54f37", '
    '"fingerprints": {"python": "3.11.2", "torch": "2.7.0", "cuda": "12.8", "cudnn": null, '
    '"arch_list": ["sm_90"]}, '
    '"gpu": "failed: H100 (sm_90, driver 570): failed: no kernel image", '
    '"gpu_policy": "required", "gpu_present": true, '
    '"gpu_code_paths": ["libtorch_cuda.so: sm_90 runs its own SASS (9.0)"], '
    '"checks": [{"name": "python version", "status": "pass", "expected": "3.11", '
    '"actual": "3.11.2", "gpu": false}, {"name": "GPU kernel launch", "status": "fail", '
    '"expected": "a kernel runs", "actual": "H100: failed", "gpu": true}], '
    '"probe": {"python": {"version": "3.11.2"}, "image_size_bytes": 123, "smoke": []}, '
    '"made_by": {"host": "runner-1", "run": "0a1b2c3d4e5f", "at": "2026-11-28T04:00:00+00:00"}}'
)


def test_the_report_s_json_is_pinned() -> None:
    assert json.dumps(REPORT.json()) == PINNED
    # a tier of the build host's platform has no platform key; a report not yet published
    # no made_by (the store adds it)
    bare = dataclasses.replace(REPORT, platform=None, made_by=None).json()
    assert list(bare) == [k for k in json.loads(PINNED) if k not in ("platform", "made_by")]


def test_a_report_reads_back_as_itself() -> None:
    assert VerifyReport.read(json.loads(PINNED)) == REPORT
    bare = dataclasses.replace(REPORT, platform=None, made_by=None)
    assert VerifyReport.read(json.loads(json.dumps(bare.json()))) == bare
    later = {**json.loads(PINNED), "a later release's key": 1}
    assert VerifyReport.read(later) == REPORT


def _damaged(change: dict[str, Any], drop: str = "") -> dict[str, Any]:
    document = {**json.loads(PINNED), **change}
    document.pop(drop, None)
    return document


@pytest.mark.parametrize(
    "document",
    [
        None,
        [],
        "a report",
        _damaged({}, drop="fingerprint"),
        _damaged({}, drop="gpu"),
        _damaged({"passed": "true"}),
        _damaged({"digest": "sha256:abc"}),
        _damaged({"gpu": "fine: it ran"}),
        _damaged({"gpu": "passed"}),
        _damaged({"checks": [{"name": "x", "status": "pass"}]}),
        _damaged({"gpu_code_paths": [1]}),
        _damaged({"made_by": {"host": "h"}}),
        _damaged({"probe": []}),
    ],
)
def test_what_is_not_a_report_reads_as_none(document: object) -> None:
    assert VerifyReport.read(document) is None


@pytest.mark.parametrize("state", list(GpuState))
def test_the_gpu_status_is_a_value_whose_sentence_reads_back(state: GpuState) -> None:
    status = GpuStatus(state, "no GPU: the Docker daemon has no nvidia runtime")
    assert str(status) == f"{state.value}: no GPU: the Docker daemon has no nvidia runtime"
    assert GpuStatus.read(str(status)) == status
    assert status.settled is (state in (GpuState.PASSED, GpuState.NOT_APPLICABLE))
    assert GpuStatus.read(state.value) is None and GpuStatus.read(3) is None


def test_verify_decides_from_what_was_probed(tmp_path: Path) -> None:
    tier = plan(load_text(tmp_path, MINIMAL))[0]
    output = cast(ProbeOutput, {"python": {"version": "3.11.2"}, "smoke": []})
    verdict = decide(tier, DIGEST, Probed("r@sha256:1", output, None, False, "none"))
    report = verdict.report
    assert (report.tier, report.digest, report.platform) == ("base", DIGEST, None)
    assert report.fingerprint == fingerprint(tier.expect, False)
    assert report.probe is output and report.fingerprints.python == "3.11.2"
    assert str(report.gpu) == gpu_status([])  # the tier promises no device code
    assert report.gpu.state is GpuState.NOT_APPLICABLE
    assert list(report.json()) == [
        k for k in json.loads(PINNED) if k not in ("platform", "made_by")
    ]
    failed = [c.name for c in report.checks if c.status != "pass"]
    assert report.passed is (not failed)  # this tier's policy lets nothing slip
    if failed:
        assert verdict.failure is not None
        assert verdict.failure.startswith(f"verify of base (r@sha256:1): {report.summary}")
        assert "nothing promoted" in verdict.failure
    assert verdict.facts == {
        "verify": f"passed ({report.summary})",
        "gpu": "not applicable: the tier promises no device code",
        "pulled": "none",
    }
    assert verdict.said == f"[base] verified r@sha256:1: {report.summary}; GPU {report.gpu}"
