"""The compile stage's action: run a tier's compile script in its builder image, collect
the wheels (its row and up-to-date check: stages/compile.py).

Fixed container paths (/src, /ccache, /out) keep compiler-cache keys identical on every
machine. Wheels appear in the tier's wheels/ folder only when the whole compile succeeded.
On a daemon elsewhere (docker/files.py: copy mode) the mounts' files travel through the API:
the compiler cache and the wheels come back after the compile (the cache even when it
failed; a cache that cannot come back leaves the local one as it was), the source cache
does not (sources fetched there are fetched again next time).
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from build_graph import settings
from build_graph.ccache.archive import HISTORY
from build_graph.ccache.stats import CcacheStats, read_stats
from build_graph.ccache.sync import CacheSync
from build_graph.docker import containers, daemon, files
from build_graph.docker.containers import Mount
from build_graph.errors import BuildFailed
from build_graph.fs import write_if_changed, write_record
from build_graph.interrupts import on_interrupt
from build_graph.layout import CCACHE_DIR, COMPILE_SCRIPT, HOST_CA, OUT_DIR, SOURCES_DIR, SRC_DIR
from build_graph.log import last_output, log, progress
from build_graph.manifest.model import Stack
from build_graph.oci.platforms import emulation_hint
from build_graph.oci.refs import parse_ref
from build_graph.plan.plan import PlannedTier
from build_graph.registry import upload
from build_graph.stages import build_act, preflight
from build_graph.stages.compile_clock import Clock, History, describe
from build_graph.stages.compile_history import keep_history
from build_graph.stages.compile_watch import Watch, tick_every
from build_graph.stages.sources import stage_sources
from build_graph.stages.wheels import put_in_place
from build_graph.stages.work import Facts, Work

if TYPE_CHECKING:
    from docker.models.containers import Container

OUTPUT_LIMIT = 64 << 30  # bytes of wheels a compile may hand back through the API


def ccache_dir(stack: Stack, tier: PlannedTier) -> Path:
    return stack.build_folder.ccache(tier.spec.variant, tier.spec.name, tier.platform)


def compile_wheels(work: Work) -> Facts:
    """The run's pre-flight (once), then the compile."""
    assert work.builder is not None  # applies: tiers with a compile section
    preflight.before_long_work(work)
    return compile_tier(work.stack, work.tier, work.builder)


def compile_tier(stack: Stack, tier: PlannedTier, builder: PlannedTier) -> dict[str, str]:
    """Compile the tier's wheels in its builder; returns the compiler cache's effect."""
    assert tier.spec.compile is not None and tier.script is not None
    build_act.can_compress(stack, tier)  # before an hour of compiling, not after
    upload.may_push(parse_ref(tier.image))  # the same: its image goes there afterwards
    src, staging = tier.folder.staged_sources, tier.folder.wheels_staging
    stage_sources(stack, tier)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    cache = ccache_dir(stack, tier)
    write_if_changed(tier.folder.compile_script, tier.script, mode=0o755)
    daemon.held(builder.image, builder.platform)
    sync = CacheSync(stack, tier, builder, cache)
    sync.restore()
    with _compiling_lock:
        _compiling.add(sync)
    # ccache overshoots its max_size between cleanups; twice that is far from a sane cache.
    cache_mount = Mount(str(cache), CCACHE_DIR, back_limit=2 * stack.cache.max_size_bytes)
    out_mount = Mount(str(staging), OUT_DIR, back_limit=OUTPUT_LIMIT)
    mounts: tuple[Mount, ...] = (
        Mount(str(tier.folder.compile_script), COMPILE_SCRIPT, read_only=True),
        Mount(str(src), SRC_DIR),
        cache_mount,
        out_mount,
        Mount(str(stack.build_folder.sources), SOURCES_DIR),
    )
    bundle = settings.host_ca()
    if bundle is not None:  # the compile script's downloads verify TLS behind a proxy too
        mounts += (Mount(str(bundle.resolve()), HOST_CA, read_only=True),)
    env = compile_env(stack, tier, with_ca=bundle is not None)
    log(f"[{tier.key}] compiling in {builder.image}")
    history = History.load(cache / HISTORY)
    started = time.monotonic()
    clock = Clock(history, started)
    code = -1
    try:
        with containers.container(
            builder.image,
            [COMPILE_SCRIPT],
            entrypoint=["bash"],
            mounts=mounts,
            env=env,
            platform=builder.platform,
            network=stack.network,
        ) as box:
            with Watch(
                tier.key,
                box,
                clock,
                sync=sync if files.mode() == "bind" else None,
                save_s=stack.cache.save_every_s,
                tick_s=tick_every(),
            ) as watch:
                code, output = containers.run_to_end(box, watch.line)
            _bring_back(tier, box, cache_mount, out_mount if code == 0 else None)
    finally:  # a failed compile's partial cache is worth keeping too
        finished = time.monotonic()
        try:
            stats = read_stats(builder.image, cache, builder.platform)
            if code == 0:  # only a whole compile's times say how long the next one takes
                keep_history(tier, cache, stats, finished - started)
                sync.times_kept()
        finally:  # the save comes whatever happened above: it is the compile's hours
            sync.save()
            with _compiling_lock:
                _compiling.discard(sync)
        timing = clock.record(finished)
        _report(tier, stats, sync, finished - started, timing)
    if code != 0:
        raise BuildFailed(
            f"compile of {tier.key} failed (exit {code}); "
            f"{last_output(output.splitlines())}{emulation_hint(output)}"
        )
    outputs = sorted(staging.glob(tier.spec.compile.outputs))
    if not outputs:
        raise BuildFailed(
            f"compile of {tier.key} wrote nothing matching "
            f"{tier.spec.compile.outputs!r} to {OUT_DIR}"
        )
    put_in_place(tier)
    log(f"[{tier.key}] wheels: {', '.join(p.name for p in outputs)}")
    said = (
        "no statistics"
        if stats is None
        else f"{stats.hits} hits / {stats.misses} misses ({stats.hit_rate:.0%})"
    )
    return {"ccache": said + sync.shortfall(), "compile_time": describe(timing)}


_compiling: set[CacheSync] = set()  # compiles under way, in any thread
_compiling_lock = threading.Lock()


def _save_compiling() -> None:
    """On an interrupt, after the containers were removed (containers.py registered its
    cleanup first): save the caches of the compiles other threads run (doit -n), which do
    not see the signal and would not get to their own save before the run exits."""
    with _compiling_lock:
        syncs = list(_compiling)
    for sync in syncs:
        sync.save()


on_interrupt(_save_compiling)


def compile_env(stack: Stack, tier: PlannedTier, with_ca: bool) -> dict[str, str]:
    """The compile container's environment: the host's pip settings, the CA variables
    (when a bundle is mounted), the cache size, the images' SOURCE_DATE_EPOCH, then the
    manifest's compile.env, which wins: a team that points SSL_CERT_FILE elsewhere on
    purpose keeps it."""
    assert tier.spec.compile is not None
    ca = dict.fromkeys(settings.CA_ENV, HOST_CA) if with_ca else {}
    return {
        **settings.pip_settings(),
        **ca,
        "CCACHE_MAXSIZE": f"{stack.cache.max_size_bytes >> 20}M",
        # wheels' zip entries and anything else that honours it get the images' fixed time
        "SOURCE_DATE_EPOCH": str(build_act.SOURCE_DATE_EPOCH),
        **dict(tier.spec.compile.env),
    }


def _bring_back(tier: PlannedTier, box: Container, cache: Mount, out: Mount | None) -> None:
    """Copy mode: the compiler cache (a failure warns: the local cache stays as it was),
    then the wheels (a failure fails the compile)."""
    try:
        containers.bring_back(box, cache)
    except BuildFailed as exc:
        progress(
            f"[{tier.key}] warning: the compiler cache stays as it was before this compile: {exc}"
        )
    if out is not None:
        containers.bring_back(box, out)


def _report(
    tier: PlannedTier,
    stats: CcacheStats | None,
    sync: CacheSync,
    compile_s: float,
    timing: dict[str, object],
) -> None:
    """Print the cache's effect and record it in build/<variant>/<tier>/ccache-stats.json."""
    moved = sync.transfer
    if stats is None:
        progress(f"[{tier.key}] ccache: statistics unavailable (no ccache in the builder image?)")
    else:
        progress(
            f"[{tier.key}] ccache: {stats.hits} hits, {stats.misses} misses "
            f"({stats.hit_rate:.1%} hit rate), cache {stats.cache_bytes / 2**20:.1f} MiB; "
            f"restore {moved.bytes_down / 2**20:.1f} MiB in {moved.restore_s:.1f} s, "
            f"save {moved.bytes_up / 2**20:.1f} MiB in {moved.save_s:.1f} s ({moved.saved}); "
            f"compile {compile_s:.1f} s"
        )
    write_record(
        tier.folder.ccache_stats,
        {
            "compile_s": round(compile_s, 2),
            "clock": timing,
            "stats": stats.as_dict() if stats else None,
            "transfer": sync.summary(),
        },
    )
