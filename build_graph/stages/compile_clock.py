"""When a long compile will finish: the shape from what each unit took last time, the speed
from this run.

A PyTorch compile runs for hours and one unit may take 726 s while most take seconds, so
counting units finished says little; weighting each by its last duration says much more. A
warm compiler cache makes every unit faster, so the weights give only the shape and this
run's elapsed time gives the rate. The history is kept inside the ccache folder
(ccache/archive.py: HISTORY), so it travels with the compiler cache archive to a fresh runner.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from build_graph.fs import read_record, write_record

_NINJA_LOG_VERSIONS = ("5", "6", "7")  # the same five columns in each
# ninja's status line, '[N/M] ' by default; pip -v indents the build's output (PyTorch's
# compile runs under it) and NINJA_STATUS may add fields ('[%f/%t %es] ').
_STATUS_RE = re.compile(r"^\s*\[(\d{1,9})/(\d{1,9})[^\]]{0,40}\]\s")
MAX_UNIT_S = 86400.0  # a unit's time past a day is no measurement (a log, or a history, lies)
MAX_HISTORY_BYTES = 16 << 20  # PyTorch's .ninja_log is a few MiB; more is not a history
MAX_WEIGHTS = 200_000
WEIGHTED = "weighted by the last compile"
_TRUSTED = 0.1  # of last time's unit time done: from there this run's own speed is used
_QUARTER = 0.25  # record() judges the estimate a person saw a quarter of the way through


def read_ninja_log(text: str) -> dict[str, float]:
    """A `.ninja_log` -> {output path: seconds it took}; the last entry for an output wins,
    as ninja appends. Unparsable lines are skipped; an unknown version gives {}. Never raises.
    """
    lines = text.splitlines()[: MAX_WEIGHTS * 4]
    header = lines[0].strip() if lines else ""
    if header.removeprefix("# ninja log v") not in _NINJA_LOG_VERSIONS:
        return {}
    took: dict[str, float] = {}
    for line in lines[1:]:
        fields = line.split("\t")
        if len(fields) != 5 or not fields[3]:
            continue
        if len(fields[0]) > 15 or len(fields[1]) > 15:  # ms since the build began
            continue
        try:
            start, end = int(fields[0]), int(fields[1])
        except ValueError:
            continue
        if 0 <= start <= end and (end - start) / 1000 <= MAX_UNIT_S:
            took[fields[3][:1000]] = (end - start) / 1000
    return dict(list(took.items())[-MAX_WEIGHTS:])


def _seconds(value: object, most: float = 30 * MAX_UNIT_S) -> float | None:
    """A non-negative number of seconds from JSON, at most `most` (a bool is not one),
    else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an int of hundreds of digits
        return None
    return seconds if 0 <= seconds <= most else None


def _weights(raw: object) -> dict[str, float] | None:
    """{output: seconds} from JSON, or None when any entry is not a duration."""
    if not isinstance(raw, dict) or len(raw) > MAX_WEIGHTS:
        return None
    weights = {str(key): _seconds(value, MAX_UNIT_S) for key, value in raw.items()}
    kept = {key: value for key, value in weights.items() if value is not None}
    return kept if len(kept) == len(weights) else None


@dataclass(frozen=True)
class History:
    """The last compile of a tier, as the next one's estimate needs it."""

    compile_s: float  # the last compile's wall time
    units: int  # compilations it ran (ccache hits + misses), 0 if unknown
    weights: dict[str, float]  # ninja output path -> seconds ({} when it had no ninja)

    def to_json(self) -> dict[str, object]:
        return {"compile_s": self.compile_s, "units": self.units, "weights": self.weights}

    @classmethod
    def load(cls, path: Path) -> History | None:
        """None when missing, unreadable or malformed: a bad history only costs the estimate.
        It comes from the cache's archive, which is untrusted: never raises."""
        try:
            return cls._load(path)
        except (Exception, RecursionError):
            return None

    @classmethod
    def _load(cls, path: Path) -> History | None:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_HISTORY_BYTES:
            return None
        data = read_record(path) or {}
        compile_s, units = _seconds(data.get("compile_s")), data.get("units")
        weights = _weights(data.get("weights"))
        if compile_s is None or weights is None:
            return None
        if isinstance(units, bool) or not isinstance(units, int) or units < 0:
            return None
        return cls(compile_s, units, weights)

    def save(self, path: Path) -> None:
        """Atomic (a temp file beside it, then os.replace): a killed run leaves the old one."""
        write_record(path, self.to_json())


def format_duration(seconds: float) -> str:
    """'45s', '12m03s', '3h02m' (hours drop the seconds); negative or non-finite -> '0s'."""
    total = int(seconds + 0.5) if math.isfinite(seconds) and seconds > 0 else 0
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m{total % 60:02d}s"
    hours, minutes = divmod(total // 60, 60)
    return f"{hours}h{minutes:02d}m"


def _output_of(tokens: list[str]) -> str:
    """The output a status line names: the last word (CMake's 'Building CXX object x.o'),
    or what follows '-o' where ninja prints the command (torch.utils.cpp_extension)."""
    if "-o" in tokens[:-1]:
        return tokens[tokens.index("-o") + 1]
    return tokens[-1]


class Clock:
    """The estimate of one running compile.

    Matching a status line's output to the history is by path suffix, since ninja's own
    paths and a description's may differ by a leading folder (relative against absolute).
    """

    def __init__(self, history: History | None, started: float) -> None:
        self.history, self.started = history, started
        self._weights = history.weights if history else {}
        self._total = sum(self._weights.values())
        self._by_name: dict[str, list[str]] = {}  # basename -> keys: a line checks a few keys
        for key in self._weights:
            self._by_name.setdefault(key.rsplit("/", 1)[-1], []).append(key)
        self._matched: set[str] = set()
        self._done = 0.0
        self._finished_at: float | None = None  # when the last unit finished, if known
        self._counts: tuple[int, int] | None = None
        self._units: int | None = None
        self._estimates: list[tuple[float, float, str]] = []  # (elapsed, total, basis)

    def ninja_line(self, text: str, at: float | None = None) -> None:
        """Take one '[N/M] <description>' line (printed as an edge finishes, `at` that
        time.monotonic(), when known); others ignored."""
        found = _STATUS_RE.match(text)
        if not found:
            return
        self._counts = (int(found[1]), int(found[2]))
        self._finished_at = at
        tokens = text[found.end() :].split()
        if tokens:
            self._count_output(_output_of(tokens))

    def _count_output(self, token: str) -> None:
        for key in self._by_name.get(token.rsplit("/", 1)[-1], []):
            same = key == token or key.endswith("/" + token) or token.endswith("/" + key)
            if same and key not in self._matched:
                self._matched.add(key)
                self._done += self._weights[key]

    @property
    def counts(self) -> tuple[int, int] | None:
        """Ninja's last (finished, total), when ninja drives the compile."""
        return self._counts

    def units_done(self, count: int) -> None:
        """Compilations so far as ccache counts them (hits + misses): for builds without ninja."""
        self._units = count

    def fraction(self) -> tuple[float, str] | None:
        """How much is done and on what basis, the best basis available."""
        if self._counts and self._matched and self._total > 0:
            return self._done / self._total, WEIGHTED
        if self._counts and self._counts[1] > 0:
            return self._counts[0] / self._counts[1], "by ninja's counts"
        if self._units is not None and self.history and 0 < self._units < self.history.units:
            # as many units as last time; once more ran, that says nothing (the time does)
            return self._units / self.history.units, "by units, as many as last time"
        return None

    def left(self, now: float) -> tuple[float, str] | None:
        """Seconds left and the basis; each estimate is remembered for record()."""
        elapsed = max(now - self.started, 0.0)
        share = self.fraction()
        if share and share[1] == WEIGHTED and self.history:
            estimate = (self._weighted_left(now, share[0], self.history), WEIGHTED)
        elif share and share[0] > 0:
            done = min(share[0], 0.999)
            estimate = (elapsed / done - elapsed, share[1])
        elif self.history and self.history.compile_s > 0:
            estimate = (max(self.history.compile_s - elapsed, 0.0), "by the last compile's time")
        else:
            return None
        self._estimates.append((elapsed, elapsed + estimate[0], estimate[1]))
        return estimate

    def _weighted_left(self, now: float, share: float, history: History) -> float:
        """What the units not done took last time, at this run's speed, less the time the
        units now running have had since the last one finished (a 726 s unit counts down).
        This run's speed is its wall seconds per second of last time's unit time, once a
        tenth is done; before, last time's (a warm cache's first units are hits that take
        next to nothing, and the container's start is in the elapsed time). Below 1 where
        ninja ran units in parallel."""
        last = self._finished_at if self._finished_at is not None else now
        if share >= _TRUSTED:
            speed = max(last - self.started, 0.0) / self._done
        else:
            speed = history.compile_s / self._total
        return max((self._total - self._done) * speed - max(now - last, 0.0), 0.0)

    def line(self, now: float) -> str:
        """One progress line: elapsed, and what is left when there is a basis for it."""
        elapsed = max(now - self.started, 0.0)
        shown = f"{format_duration(elapsed)} elapsed"
        estimate = self.left(now)
        if estimate is None:
            return shown
        seconds, basis = estimate
        if self.history and basis == "by the last compile's time" and seconds == 0:
            return f"{shown}, past the last compile's {format_duration(self.history.compile_s)}"
        if seconds < 1:  # the estimate is spent; the compile is not
            return f"{shown}, due now ({basis})"
        return f"{shown}, about {format_duration(seconds)} left ({basis})"

    def record(self, finished: float) -> dict[str, object]:
        """For the run summary: the actual time, and the estimate taken about a quarter of the
        way through (the first at or after 25%), so the estimate's accuracy can be followed."""
        actual = max(finished - self.started, 0.0)
        taken = next((e for e in self._estimates if e[0] >= _QUARTER * actual), None)
        if taken is None:
            return {
                "compile_s": round(actual, 1),
                "estimate_s": None,
                "estimated_at_s": None,
                "basis": None,
                "off": None,
            }
        elapsed, total, basis = taken
        return {
            "compile_s": round(actual, 1),
            "estimate_s": round(total, 1),
            "estimated_at_s": round(elapsed, 1),
            "basis": basis,
            "off": round((total - actual) / actual, 4) if actual > 0 else None,
        }


def describe(record: dict[str, object]) -> str:
    """One cell for the run summary: 'compiled in 3h02m; estimated 2h55m at 46m00s (4% under)'."""
    actual, total = _seconds(record.get("compile_s")), _seconds(record.get("estimate_s"))
    at, off = _seconds(record.get("estimated_at_s")), record.get("off")
    if actual is None:
        return "compile time unknown"
    shown = f"compiled in {format_duration(actual)}"
    if total is None or at is None or isinstance(off, bool) or not isinstance(off, int | float):
        return shown
    percent = round(abs(off) * 100)
    judged = "within 1%" if percent == 0 else f"{percent}% {'over' if off > 0 else 'under'}"
    return f"{shown}; estimated {format_duration(total)} at {format_duration(at)} ({judged})"
