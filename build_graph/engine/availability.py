"""Where each image of a run exists (local daemon, registry), probed concurrently, once.

The first question about any reference probes every reference the run registered, in
parallel; answers are memoized for the process and updated by our own builds and pushes.
A registry error stays an error: it is never read as 'absent'.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from build_graph.engine import daemon
from build_graph.engine.registry import Presence, Probe, registry_of
from build_graph.errors import RegistryError

_WORKERS = 16


class Availability:
    def __init__(self) -> None:
        self._wanted: dict[str, None] = {}  # ordered set
        self._registry: dict[str, Probe] = {}
        self._local: dict[str, bool] = {}
        self._lock = threading.Lock()

    def register(self, refs: Iterable[str]) -> None:
        """References the run may ask about; probed together on the first question."""
        self._wanted.update(dict.fromkeys(refs))

    def _probe_all(self, ref: str) -> None:
        with self._lock:
            missing = [r for r in {**self._wanted, ref: None} if r not in self._registry]
            if not missing:
                return
            with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
                registry = list(pool.map(daemon.probe_registry, missing))
                local = list(pool.map(daemon.image_exists_locally, missing))
            for r, probe, here in zip(missing, registry, local, strict=True):
                self._registry[r] = probe
                self._local.setdefault(r, here)

    def registry(self, ref: str) -> Probe:
        self._probe_all(ref)
        return self._registry[ref]

    def local(self, ref: str) -> bool:
        self._probe_all(ref)
        return self._local[ref]

    def refresh(self, ref: str) -> Probe:
        """Ask the registry again (after an error, before acting on the answer)."""
        probe = daemon.probe_registry(ref)
        self._registry[ref] = probe
        return probe

    def require(self, ref: str) -> Probe:
        """A fresh answer to act on: present or absent; an error raises RegistryError."""
        probe = self.refresh(ref)
        if probe.presence is Presence.ERROR:
            raise RegistryError(
                f"cannot ask the registry {registry_of(ref)} about {ref}: {probe.error}; "
                "start it (scripts/services.sh up) or fix [stack] registry in images.toml")
        return probe

    def built(self, ref: str) -> None:
        self._local[ref] = True

    def pushed(self, ref: str, digest: str) -> None:
        self._registry[ref] = Probe(Presence.PRESENT, digest=digest)


def describe_availability(refs: list[str]) -> list[dict[str, object]]:
    """For `plan --json`: local/registry presence of each reference, probed concurrently."""
    seen = Availability()
    seen.register(refs)
    rows: list[dict[str, object]] = []
    for ref in refs:
        probe = seen.registry(ref)
        rows.append({"local": seen.local(ref), "registry": probe.presence.value,
                     "digest": probe.digest, "registry_error": probe.error,
                     "status": "built" if probe.presence is Presence.PRESENT or seen.local(ref)
                     else "to build"})
    return rows
