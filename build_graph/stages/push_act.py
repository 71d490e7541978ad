"""The push stage's action: the hash tag into the registry; the digest the registry holds
recorded (its row and up-to-date check: stages/push.py). When another runner pushed the
same hash tag first, its digest is adopted, never fought.

An image built here reproducibly is pushed from the tier's OCI layout (docker/oci_layout.py)
by registry/upload.py: its manifest's own bytes, so the digest pushed is the digest built;
blobs the registry has are not sent, the parent tier's layers are mounted from its
repository, the rest go up in parallel and resume after an interruption. Anything else
(built before layouts, or by the classic builder) is pushed by the daemon.
"""

from __future__ import annotations

import time

from build_graph.docker import daemon, oci_layout
from build_graph.errors import BuildFailed, RegistryError
from build_graph.fs import write_record
from build_graph.log import log
from build_graph.oci import contents, json_door, layer_limits
from build_graph.oci.digest import Digest
from build_graph.oci.refs import Presence, parse_ref
from build_graph.plan.plan import PlannedTier
from build_graph.plan.push_record import record
from build_graph.registry import api, upload
from build_graph.stages import figures
from build_graph.stages.work import Facts, Work


def push(work: Work) -> Facts:
    """Push the hash tag; returns the digest the registry holds under it."""
    tier, holdings = work.tier, work.holdings
    probe = holdings.require(tier.image)
    if probe.presence is Presence.PRESENT and probe.digest:
        log(f"[{tier.key}] registry already holds {tier.image} ({probe.digest})")
        write_record(tier.folder.push_record, record(tier, probe.digest))
        return {"digest": str(probe.digest)}
    started = time.monotonic()
    layout = oci_layout.image_named(tier.folder.image_layout, tier.image)
    moved: list[upload.Moved] = []
    if layout is None:
        ours = daemon.push(tier.image)  # only compared and logged: the registry's answer counts
    else:
        moved, ours = _from_layout(tier, layout)
    seconds = time.monotonic() - started
    now = holdings.require(tier.image)
    if now.digest is None:
        raise RegistryError(
            f"{tier.image} was pushed ({ours or 'no digest said'}) but the "
            "registry does not hold it; check the registry's storage and logs"
        )
    if ours is not None and now.digest != ours:
        log(
            f"[{tier.key}] another runner pushed {tier.image} too; adopting the registry's "
            f"{now.digest} (ours was {ours})"
        )
    write_record(tier.folder.push_record, record(tier, now.digest))
    facts = {"digest": str(now.digest)}
    if layout is not None:
        facts["pushed"] = moved_line(moved, seconds)
        log(f"[{tier.key}] pushed {tier.image}: {facts['pushed']}")
        figures.note(
            tier,
            "push",
            {
                "bytes_sent": sum(m.sent for m in moved),
                "seconds": round(seconds, 3),
                "blobs": {how: sum(m.how == how for m in moved) for how in upload.HOWS},
            },
        )
    return facts


def _from_layout(
    tier: PlannedTier, image: oci_layout.LayoutImage
) -> tuple[list[upload.Moved], Digest]:
    """The layout's blobs, then its manifest's bytes under the hash tag."""
    ref = parse_ref(tier.image)
    base = parse_ref(tier.base_image)
    mount_from = (base.repository,) if base.host == ref.host else ()
    _check_layers(tier, image)
    log(f"+ push {tier.image} from the OCI layout ({len(image.blobs)} blobs)")
    moved = upload.push_blobs(ref, image.blobs, mount_from, tier.folder.uploads)
    return moved, api.put_manifest(ref, image.manifest, image.media_type)


def _check_layers(tier: PlannedTier, image: oci_layout.LayoutImage) -> None:
    """Before anything is sent: no layer past the largest the registry takes (an image the
    daemon pushes is checked by verify, from the manifest it pulls)."""
    limit = tier.expect.max_layer
    found = contents.parse(image.manifest, image.media_type, Digest.of(image.manifest))
    sizes = [size for _, size in found.layers]
    if limit is None or found.config is None or not layer_limits.over(sizes, limit):
        return
    blobs = dict(image.blobs)
    try:  # the steps only name the layers: a config that cannot be read names none
        steps = layer_limits.layer_steps(json_door.loads(blobs[found.config].read_bytes()))
    except (KeyError, OSError, ValueError):
        steps = []
    raise BuildFailed(
        f"push of {tier.key}: {layer_limits.problem(sizes, limit, steps)}; nothing was sent"
    )


def moved_line(moved: list[upload.Moved], seconds: float) -> str:
    """'812.4 MB sent (3 of 7 blobs; 2 mounted, 2 there) in 4.1 s' (kB under a megabyte):
    what a push cost."""
    sent = sum(m.sent for m in moved)
    went = [m for m in moved if m.sent]
    mounted = sum(m.how == "mounted" for m in moved)
    there = sum(m.how == "present" for m in moved)
    resumed = sum(m.how == "resumed" for m in moved)
    again = f", {resumed} resumed" if resumed else ""
    return (
        f"{figures.amount(sent)} sent ({len(went)} of {len(moved)} blobs; {mounted} mounted, "
        f"{there} there{again}) in {seconds:.1f} s"
    )
