"""A check's result (pass, fail or not checked, never a guess) and the verdict over them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from build_graph.gpu.status import GpuState, GpuStatus
from build_graph.manifest.expectation import Expectation

Status = Literal["pass", "fail", "not checked"]


@dataclass(frozen=True)
class Result:
    name: str
    status: Status
    expected: str
    actual: str  # for 'not checked': why it could not be checked
    gpu: bool = False  # needs a GPU; the tier's verify.gpu policy decides if it may be skipped

    def line(self) -> str:
        mark = {"pass": "ok  ", "fail": "FAIL", "not checked": "--  "}[self.status]
        if self.status == "not checked":
            return f"  {mark} {self.name}: not checked: {self.actual}"
        return f"  {mark} {self.name}: expected {self.expected}; got {self.actual}"


def blocking(results: list[Result], want: Expectation) -> list[Result]:
    """Results that stop promotion: every failure, and every check that could not run,
    except GPU checks on a tier whose policy makes the GPU optional."""
    return [
        r
        for r in results
        if r.status == "fail"
        or (r.status == "not checked" and not (r.gpu and want.gpu_policy == "optional"))
    ]


def summary(results: list[Result]) -> str:
    """'N passed, M failed, K not checked'."""
    counts = Counter(r.status for r in results)
    return f"{counts['pass']} passed, {counts['fail']} failed, {counts['not checked']} not checked"


def gpu_verdict(results: list[Result]) -> GpuStatus:
    """What the report says of the GPU: its checks passed, one failed (their words), one
    could not run (why), or the tier promises no device code."""
    gpu = [r for r in results if r.gpu]
    if not gpu:
        return GpuStatus(GpuState.NOT_APPLICABLE, "the tier promises no device code")
    if any(r.status == "fail" for r in gpu):
        return GpuStatus(GpuState.FAILED, "; ".join(r.actual for r in gpu if r.status == "fail"))
    if any(r.status == "not checked" for r in gpu):
        return GpuStatus(
            GpuState.NOT_CHECKED, next(r.actual for r in gpu if r.status == "not checked")
        )
    return GpuStatus(GpuState.PASSED, "; ".join(r.actual for r in gpu))


def gpu_status(results: list[Result]) -> str:
    """The GPU's status as lines say it: 'passed: ...', 'failed: ...', 'not checked: why'."""
    return str(gpu_verdict(results))
