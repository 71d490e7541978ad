"""What a verify report says of the GPU: its checks passed, failed, could not run, or the
tier promises no device code; and the checks' words.

A value, made by verify/results.py from the GPU checks; a report's `gpu` and the verify
stage's facts carry its sentence (`str()`: 'not checked: no GPU: ...'), read back here
only, at the door.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class GpuState(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_CHECKED = "not checked"
    NOT_APPLICABLE = "not applicable"


@dataclass(frozen=True)
class GpuStatus:
    state: GpuState
    detail: str  # what the GPU checks found, or why none could run

    def __str__(self) -> str:
        return f"{self.state}: {self.detail}"

    @property
    def settled(self) -> bool:
        """Nothing to say at promote: the GPU checks passed, or there were none to run."""
        return self.state in (GpuState.PASSED, GpuState.NOT_APPLICABLE)

    @classmethod
    def read(cls, said: object) -> GpuStatus | None:
        """The status whose sentence `said` is; None for anything else."""
        if not isinstance(said, str):
            return None
        state, colon, detail = said.partition(": ")
        try:
            return cls(GpuState(state), detail) if colon else None
        except ValueError:  # not one of the four
            return None
