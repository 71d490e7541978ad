"""Read ccache's counters after a compile and report hits, misses and sizes."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from build_graph.docker import containers
from build_graph.docker.containers import Mount
from build_graph.errors import BuildGraphError
from build_graph.layout import CCACHE_DIR


@dataclass(frozen=True)
class CcacheStats:
    hits: int
    misses: int
    cache_bytes: int
    files: int

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "hit_rate": round(self.hit_rate, 4)}


def parse(text: str) -> CcacheStats:
    """Parse `ccache --print-stats` (one 'name<TAB>value' per line)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        name, _, value = line.partition("\t")
        if value.strip().isdigit():
            values[name.strip()] = int(value)
    return CcacheStats(
        hits=values.get("direct_cache_hit", 0) + values.get("preprocessed_cache_hit", 0),
        misses=values.get("cache_miss", 0),
        cache_bytes=values.get("cache_size_kibibyte", 0) * 1024,
        files=values.get("files_in_cache", 0),
    )


def read_stats(image: str, cache_dir: Path, platform: str | None = None) -> CcacheStats | None:
    """The counters of the cache folder, read by the builder image's own ccache.

    None when they cannot be read: statistics never decide a compile's outcome.
    """
    # A daemon elsewhere is sent only the counters (files named stats), not the cache.
    mount = Mount(str(cache_dir), CCACHE_DIR, only=("stats", "ccache.conf"))
    try:
        with containers.container(
            image,
            ["--print-stats"],
            entrypoint=["ccache"],
            mounts=(mount,),
            env={"CCACHE_DIR": CCACHE_DIR},
            platform=platform,
        ) as box:
            code, output = containers.run_to_end(box)
    except BuildGraphError:
        return None
    return parse(output) if code == 0 else None
