"""What the registry holds for a run: every reference the run needs, asked at once.

The first question about any reference sends one concurrent round of manifest HEADs, straight
to the registry (not through the Docker daemon), for every reference the run registered;
answers are kept for the process and updated by our own pushes. The registry is the truth:
nothing a machine remembers stands in for its answer. The local daemon is asked only where
a question needs it (an image the registry lacks). A registry error stays an error: it is
never read as 'absent'.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from build_graph.errors import DaemonUnreachable, RegistryError
from build_graph.oci.hosts import is_loopback
from build_graph.oci.refs import Answer, Presence, parse_ref, registry_of
from build_graph.registry import api

# Concurrent HEADs: a remote registry is latency-bound (many help); a loopback one is
# CPU-bound on this machine's few cores (4 measured fastest: benchmarks/registry_truth.py).
_WORKERS = 16
_LOOPBACK_WORKERS = 4


def head(ref: str) -> Answer:
    try:
        parsed = parse_ref(ref)
    except ValueError as exc:
        return Answer(Presence.ERROR, error=str(exc))
    return api.head_manifest(parsed)


class Availability:
    def __init__(self) -> None:
        self._wanted: dict[str, None] = {}  # ordered set
        self._registry: dict[str, Answer] = {}
        self._local: dict[str, bool] = {}
        self._lock = threading.Lock()
        self.rounds = 0  # concurrent rounds sent (for tests and `plan --json`)

    def register(self, refs: Iterable[str]) -> None:
        """References the run may ask about; asked together on the first question."""
        self._wanted.update(dict.fromkeys(refs))

    def _ask_all(self, ref: str) -> None:
        with self._lock:
            missing = [r for r in {**self._wanted, ref: None} if r not in self._registry]
            if not missing:
                return
            self.rounds += 1
            if len(missing) == 1:
                self._registry[missing[0]] = head(missing[0])
                return
            loopback = all(is_loopback(registry_of(r)) for r in missing)
            workers = _LOOPBACK_WORKERS if loopback else _WORKERS
            with ThreadPoolExecutor(max_workers=min(workers, len(missing))) as pool:
                for r, probe in zip(missing, pool.map(head, missing), strict=True):
                    self._registry[r] = probe

    def registry(self, ref: str) -> Answer:
        if ref not in self._registry:
            self._ask_all(ref)
        return self._registry[ref]

    def local(self, ref: str) -> bool:
        """Whether the daemon here has `ref` (asked once, only when a question needs it)."""
        if ref not in self._local:
            from build_graph.docker import daemon  # a run the registry answers never asks it

            self._local[ref] = daemon.image_exists_locally(ref)
        return self._local[ref]

    def refresh(self, ref: str) -> Answer:
        """Ask the registry again (before acting on the answer)."""
        probe = head(ref)
        self._registry[ref] = probe
        return probe

    def answer(self, ref: str) -> Answer:
        """The run's answer about `ref`: present or absent; an error raises RegistryError
        (what an up-to-date check asks: 'could not ask' must not read as 'absent')."""
        return _known(ref, self.registry(ref))

    def require(self, ref: str) -> Answer:
        """A fresh answer to act on: present or absent; an error raises RegistryError."""
        return _known(ref, self.refresh(ref))

    def built(self, ref: str) -> None:
        self._local[ref] = True

    def forget(self, ref: str) -> None:
        """The registry's answer about `ref` changed (we wrote it): ask again when needed."""
        self._registry.pop(ref, None)


def _known(ref: str, probe: Answer) -> Answer:
    if probe.presence is Presence.ERROR:
        raise RegistryError(f"{ref}: {probe.error}")
    return probe


def describe_availability(refs: list[str]) -> list[dict[str, object]]:
    """For `plan --json`: registry presence of each reference (one concurrent round), and
    whether the daemon here has it (null when no daemon answers)."""
    holdings = Availability()
    holdings.register(refs)
    rows: list[dict[str, object]] = []
    for ref in refs:
        probe = holdings.registry(ref)
        try:
            local: bool | None = holdings.local(ref)
        except DaemonUnreachable:  # the plan needs the registry only: say 'unknown'
            local = None
        rows.append(
            {
                "local": local,
                "registry": probe.presence.value,
                "digest": str(probe.digest) if probe.digest else None,
                "registry_error": probe.error,
                "status": "built"
                if probe.presence is Presence.PRESENT or local
                else "could not ask"
                if probe.presence is Presence.ERROR
                else "to build",
            }
        )
    return rows
