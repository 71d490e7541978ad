"""The verify stage: run the probe in the pushed image, check it, store the report.

Done when the registry holds a passing report (stages/trust.py) for the digest the hash
tag names and the current verifier fingerprint (probe, reader, checks, promises, GPU
present or not). The report goes to the registry, bound to the digest, pass or fail, and a
copy to the tier's verify.json; the image's SBOM (stages/sbom.py) goes beside it.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

from build_graph.docker import connection, containers, daemon
from build_graph.docker.containers import Mount
from build_graph.errors import BuildFailed, PullFailed, UntrustedAnswer
from build_graph.layout import PROBE_DIR, PROBE_REPORT
from build_graph.log import log, progress
from build_graph.manifest.expectation import Expectation
from build_graph.oci import compression
from build_graph.oci.contents import Contents
from build_graph.oci.digest import Digest
from build_graph.oci.refs import Answer, Presence, parse_ref
from build_graph.plan.plan import PlannedTier
from build_graph.registry import api
from build_graph.registry.availability import Availability
from build_graph.signing import policy
from build_graph.stages import figures, image_layers, sbom, trust
from build_graph.stages.work import Facts
from build_graph.verify import probe_output
from build_graph.verify.checks import evaluate
from build_graph.verify.device import gpu_code_paths
from build_graph.verify.probe_output import ProbeOutput
from build_graph.verify.request import PROBE_FILES, fingerprint, probe_request
from build_graph.verify.results import Result, blocking, gpu_status, summary

NO_GPU = "no GPU: the Docker daemon has no nvidia runtime"


def verified(tier: PlannedTier, holdings: Availability) -> bool:
    """Up to date: the registry holds a passing report for the hash tag's digest and this
    verifier (made here or by any other runner). Raises RegistryError when the registry
    could not say."""
    probe = holdings.answer(tier.image)
    return bool(
        probe.presence is Presence.PRESENT
        and probe.digest
        and trust.passing_report(tier, probe.digest, holdings) is not None
    )


def passed(tier: PlannedTier, digest: Digest, holdings: Availability, fresh: bool) -> Facts | None:
    """Promote's gate: what a passing report for `digest` that counts here says (its GPU
    status, and a note when its kernels were not checked), None when there is none."""
    report = trust.passing_report(tier, digest, holdings, fresh)
    if report is None:
        return None
    gpu = report.gpu
    facts = {"gpu": gpu}
    if not gpu.startswith(("passed", "not applicable")):
        facts["note"] = f'promoted with GPU {gpu} (verify.gpu = "optional")'
    return facts


def verify(tier: PlannedTier, holdings: Availability) -> dict[str, str]:
    """Answer the digest the hash tag names; store the report in the registry either way;
    raise unless it passed. A passing report another runner stored meanwhile is adopted.
    Returns what the report says: its summary and the GPU's status."""
    want = tier.expect
    image = holdings.require(tier.image)
    digest = image.digest
    if digest is None:
        raise BuildFailed(f"{tier.key}: {tier.image} is not in the registry; run push:{tier.key}")
    stored = trust.passing_report(tier, digest, holdings, fresh=True)
    if stored is not None:
        log(f"[{tier.key}] the registry already holds a passing report for {digest}")
        return {
            "verify": "passed (a report another runner stored)",
            "gpu": stored.gpu or "?",
        }
    policy.ready(tier.signing)  # no key where one is required: said before any probe runs
    # What runs is the platform image the digest names, by its own digest: the very image
    # promote publishes, never one the daemon picks from an index by platform.
    found = one_image(tier, digest)
    ref = f"{tier.repository}@{found.digest}"
    pulled = fetch(tier, ref, found)
    runtime = connection.gpu_runtime()
    gpu = runtime and trust.native(tier)
    probe = run_probe(
        ref, probe_request(want, gpu, PROBE_REPORT, inventory=True), gpu, tier.platform
    )
    probe["image_platform"] = daemon.image_platform(ref)
    inventory = probe.pop("inventory", None)  # the SBOM's, not the report's
    if not gpu:
        probe["gpu_absent_reason"] = (
            NO_GPU
            if not runtime
            else (
                f"no GPU for {tier.platform} images here: this host runs them under emulation; "
                "a GPU runner of that platform verifies their kernels"
            )
        )
    probe["image_size_bytes"] = daemon.image_size(ref, tier.platform)
    probe["layers"] = image_layers.section(tier, found)
    probe["baseline"] = baseline(tier)
    probe["smoke"] = [run_smoke(ref, command, tier.platform) for command in want.smoke]
    results = evaluate(want, probe)
    stoppers = blocking(results, want)
    # The SBOM first: the report is what marks verify done, so a run stopped between the
    # two leaves a digest to verify again, never a verified one without its SBOM.
    publish_sbom(tier, image, digest, inventory)
    trust.store(tier).publish(
        image, report(tier, digest, want, probe, results, gpu, passed=not stoppers), holdings
    )
    lines = "\n".join(r.line() for r in results)
    if stoppers:
        why = "; ".join(
            f"{r.name} {'failed' if r.status == 'fail' else 'not checked'}" for r in stoppers
        )
        raise BuildFailed(
            f"verify of {tier.key} ({ref}): {summary(results)}; nothing promoted ({why}):\n{lines}"
        )
    progress(f"[{tier.key}] verified {ref}: {summary(results)}; GPU {gpu_status(results)}")
    log(lines)
    return {
        "verify": f"passed ({summary(results)})",
        "gpu": gpu_status(results),
        "pulled": pulled,
    }


def fetch(tier: PlannedTier, ref: str, image: Contents) -> str:
    """Make `ref` local to the engine that runs the probe, pulling it as a GPU node would;
    says what that cost ('812.4 MB in 5.7 s', or that the image was here). An engine that
    cannot read the layers' compression is said in one line, before the pull (by its
    version) or after (its own words are "invalid tar header")."""
    if daemon.image_exists_locally(ref):
        return "none (the engine here has it)"
    why = compression.unreadable(
        image.compressions, connection.docker_engine_version(), tier.compression
    )
    if why is None:
        started = time.monotonic()
        try:
            daemon.pull(ref, tier.platform)
            seconds = time.monotonic() - started
            size = sum(size for _, size in image.layers)  # layers it had already, too
            figures.note(tier, "pull", {"image_bytes": size, "seconds": round(seconds, 3)})
            return f"{figures.amount(size)} image in {seconds:.1f} s"
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


def publish_sbom(tier: PlannedTier, image: Answer, digest: Digest, inventory: object) -> None:
    """The image's SBOM to the registry; an inventory the probe could not take is said,
    not fatal: the image's promises were checked all the same."""
    lock = tier.python
    named = (
        f"{lock.path.parent.name}/{lock.path.name} sha256:{lock.lock.digest}"
        if lock.path is not None and lock.lock is not None and lock.fresh
        else None
    )
    try:
        document = sbom.cyclonedx_json(inventory, tier.repository, digest, named)
    except BuildFailed as exc:
        progress(f"[{tier.key}] no SBOM stored: {exc}")
        return
    trust.store(tier).publish_sbom(image, document)


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
    (the lock check accounts for them); None when they could not be listed."""
    daemon.ensure_local(tier.root_image, tier.platform)
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


def report(
    tier: PlannedTier,
    digest: Digest,
    want: Expectation,
    probe: ProbeOutput,
    results: list[Result],
    gpu_present: bool,
    passed: bool,
) -> dict[str, Any]:
    torch = probe.get("torch") or {}
    python = probe.get("python") or {}
    return {
        "tier": tier.spec.name,
        "variant": tier.spec.variant,
        "image": tier.image,
        **({"platform": tier.platform} if tier.platform else {}),
        "digest": str(digest),
        "content_hash": tier.content_hash,
        "passed": passed,
        "summary": summary(results),
        "fingerprint": fingerprint(want, gpu_present),
        "fingerprints": {
            "python": python.get("version"),
            "torch": torch.get("version"),
            "cuda": torch.get("cuda"),
            "cudnn": torch.get("cudnn"),
            "arch_list": torch.get("arch_list"),
        },
        "gpu": gpu_status(results),
        "gpu_policy": want.gpu_policy,
        "gpu_present": gpu_present,
        "gpu_code_paths": gpu_code_paths(probe),
        "checks": [dataclasses.asdict(r) for r in results],
        "probe": probe,
    }
