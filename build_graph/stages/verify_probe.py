"""What verify finds out about a pushed image: the one platform image its digest names,
pulled as a GPU node would pull it, the probe's report from inside it (with a GPU where the
engine has one and runs the image natively), what the host adds (its platform, size and
layers), what its root `from` image had installed, and its smoke commands' output.

Everything here runs something (the registry, the engine, containers); the verdict over
what it found is stages/verify_verdict.py's, pure.
"""

from __future__ import annotations

import hashlib
import json
import time
from contextlib import suppress
from typing import Any

from build_graph.docker import connection, containers, daemon
from build_graph.docker.containers import Mount
from build_graph.docker.daemon import LocalImage
from build_graph.errors import BuildFailed, PullFailed, UntrustedAnswer
from build_graph.fs import write_if_changed
from build_graph.layout import PROBE_DIR, PROBE_REPORT
from build_graph.log import progress
from build_graph.oci import compression
from build_graph.oci.contents import Contents
from build_graph.oci.digest import Digest
from build_graph.oci.refs import parse_ref
from build_graph.plan.plan import PlannedTier
from build_graph.registry import api
from build_graph.stages import figures, image_layers, trust
from build_graph.stages.verify_verdict import Probed
from build_graph.verify import probe_output
from build_graph.verify.probe_output import ProbeOutput
from build_graph.verify.request import PROBE_FILES, probe_request

NO_GPU = "no GPU: the Docker daemon has no nvidia runtime"


def probe(tier: PlannedTier, digest: Digest) -> Probed:
    """Run the probe in the platform image `digest` names, by its own digest: the very
    image promote publishes, never one the engine picks from an index by platform."""
    want = tier.expect
    found = one_image(tier, digest)
    ref = f"{tier.repository}@{found.digest}"
    local, pulled = fetch(tier, ref, found)
    runtime = connection.gpu_runtime()
    gpu = runtime and trust.native(tier)
    output = run_probe(
        ref, probe_request(want, gpu, PROBE_REPORT, inventory=True), gpu, tier.platform
    )
    output["image_platform"] = local.platform
    inventory = output.pop("inventory", None)  # the SBOM's, not the report's
    if not gpu:
        output["gpu_absent_reason"] = (
            NO_GPU
            if not runtime
            else (
                f"no GPU for {tier.platform} images here: this host runs them under emulation; "
                "a GPU runner of that platform verifies their kernels"
            )
        )
    # read again after the probe's container: the containerd store measures a platform
    # image only once a snapshot of it exists
    output["image_size_bytes"] = (daemon.local_image(ref, tier.platform) or local).size
    output["layers"] = image_layers.section(tier, found)
    output["baseline"] = baseline(tier)
    output["smoke"] = [run_smoke(ref, command, tier.platform) for command in want.smoke]
    return Probed(ref, output, inventory, gpu, pulled)


def fetch(tier: PlannedTier, ref: str, image: Contents) -> tuple[LocalImage, str]:
    """Make `ref` local to the engine that runs the probe, pulling it as a GPU node would;
    the local image, and what that cost ('812.4 MB in 5.7 s', or that the image was here).
    An engine that cannot read the layers' compression is said in one line, before the
    pull (by its version) or after (its own words are "invalid tar header")."""
    local = daemon.local_image(ref, tier.platform)
    if local is not None:
        return local, "none (the engine here has it)"
    why = compression.unreadable(
        image.compressions, connection.docker_engine_version(), tier.compression
    )
    if why is None:
        started = time.monotonic()
        try:
            local = daemon.pulled(ref, tier.platform)
            seconds = time.monotonic() - started
            size = sum(size for _, size in image.layers)  # layers it had already, too
            figures.note(tier, "pull", {"image_bytes": size, "seconds": round(seconds, 3)})
            return local, f"{figures.amount(size)} image in {seconds:.1f} s"
        except PullFailed as exc:
            why = compression.unread_layer(exc.said, image.compressions, tier.compression)
            if why is None:
                raise
    raise BuildFailed(f"verify of {tier.key}: {ref}: {why}")


def one_image(tier: PlannedTier, digest: Digest) -> Contents:
    """The one platform image `digest` names (api.read_image): itself, or the
    image of an index of one plus its attestations (as the containerd image store pushes).
    An index of several would be verified for one platform and then promoted whole."""
    try:
        found = api.read_image(parse_ref(tier.image).at(str(digest)))
    except UntrustedAnswer as exc:
        raise BuildFailed(
            f"verify of {tier.key}: {exc}; a tier's hash tag must name one "
            "platform's image (did another tool push this tag?)"
        ) from None
    stated = found.named.images[0].platform if found.named.is_index else None
    if tier.platform and stated not in (None, tier.platform):
        raise BuildFailed(
            f"verify of {tier.key}: {tier.image} names an index of a {stated} "
            f"image, not {tier.platform}"
        )
    return found.image


def run_probe(ref: str, request: str, gpu: bool, platform: str | None = None) -> ProbeOutput:
    mounts = tuple(Mount(str(p), f"{PROBE_DIR}/{p.name}", read_only=True) for p in PROBE_FILES)
    with containers.container(
        ref,
        [f"{PROBE_DIR}/probe.py", request],
        entrypoint=["python3"],
        mounts=mounts,
        gpus=gpu,
        platform=platform,
    ) as box:
        code, output = containers.run_to_end(box)
        written = containers.read_file(box, PROBE_REPORT) if code == 0 else None
        stdout = (written or box.logs(stdout=True, stderr=False)).decode("utf-8", "replace")
    if code != 0:
        hint = (
            "the image has no python3 on PATH"
            if code in (126, 127)
            else "the interpreter itself failed"
        )
        raise BuildFailed(
            f"the probe could not run in {ref} (exit {code}: {hint}); "
            f"last output:\n{output[-1500:]}"
        )
    try:
        data = probe_output.read(stdout)
    except ValueError:
        raise BuildFailed(f"the probe in {ref} printed no JSON:\n{output[-1500:]}") from None
    return data


# What pip (not apt) installed in an image, by the probe's own inventory module; '{}' in an
# image without python3.
_BASELINE = (
    "command -v python3 >/dev/null || { echo '{}'; exit 0; }; exec python3 -c '"
    f'import json, sys; sys.path.insert(0, "{PROBE_DIR}"); import inventory; '
    "print(json.dumps(inventory.pip_distributions()))'"
)
_INVENTORY = next(p for p in PROBE_FILES if p.name == "inventory.py")


def baseline(tier: PlannedTier) -> dict[str, str] | None:
    """The Python distributions the root `from` image had before any tier added its own
    (the lock check accounts for them); None when they could not be listed. Kept in the
    tier's folder with what was asked (the image's id, the platform that runs it, the
    inventory module and the command that runs it) and used again only for that: an id
    names its content (on the containerd store, an index's: hence the platform)."""
    root = daemon.held(tier.root_image, tier.platform)
    ran = tier.platform or f"native {connection.daemon_machine()}"
    module = hashlib.sha256(_INVENTORY.read_bytes() + _BASELINE.encode()).hexdigest()
    asked = f"{root.id} {ran} {module}"
    kept = tier.folder.baseline
    with suppress(OSError, ValueError):
        found = json.loads(kept.read_text())
        same = isinstance(found, dict) and found.get("asked") == asked
        listed = found.get("distributions") if same else None
        if isinstance(listed, dict) and all(isinstance(v, str) for v in listed.values()):
            return {str(k): v for k, v in listed.items()}
    listed = _list_baseline(tier)
    if listed is not None:
        with suppress(OSError):
            kept.parent.mkdir(parents=True, exist_ok=True)
            write_if_changed(kept, json.dumps({"asked": asked, "distributions": listed}))
    return listed


def _list_baseline(tier: PlannedTier) -> dict[str, str] | None:
    mount = Mount(str(_INVENTORY), f"{PROBE_DIR}/{_INVENTORY.name}", read_only=True)
    with containers.container(
        tier.root_image,
        [_BASELINE],
        entrypoint=["sh", "-c"],
        mounts=(mount,),
        platform=tier.platform,
    ) as box:
        code, output = containers.run_to_end(box)
    try:
        found = json.loads(output.strip().splitlines()[-1]) if code == 0 else None
    except (ValueError, IndexError):
        found = None
    if not isinstance(found, dict):
        progress(f"[{tier.key}] could not list what {tier.root_image} installs (exit {code})")
        return None
    return {str(k): str(v) for k, v in found.items()}


def run_smoke(ref: str, command: str, platform: str | None = None) -> dict[str, Any]:
    with containers.container(ref, [command], entrypoint=["sh", "-c"], platform=platform) as box:
        code, output = containers.run_to_end(box)
    return {"command": command, "exit_code": code, "output": output[-2000:]}
