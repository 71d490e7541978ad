"""The verify stage: run the probe in the pushed image, check it, write the run manifest.

Done when verify.json is a passing report for the registry's digest and these checks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from build_graph.engine import daemon
from build_graph.engine.availability import Availability
from build_graph.engine.daemon import Mount
from build_graph.engine.records import image_digest, read_record, write_record
from build_graph.errors import BuildFailed
from build_graph.log import log
from build_graph.plan.hashing import content_hash
from build_graph.plan.plan import PlannedTier
from build_graph.verify.checks import Expectation, Result, evaluate
from build_graph.verify.request import PROBE_FILES, probe_request

IN_IMAGE = "/opt/build-graph"


def fingerprint(want: Expectation) -> str:
    """Changes when the probe or the promised checks change (so verify runs again)."""
    probe_sha = [hashlib.sha256(p.read_bytes()).hexdigest() for p in PROBE_FILES]
    return content_hash({"probe": probe_sha, "want": dataclasses.asdict(want)})


def verified(tier: PlannedTier, want: Expectation, seen: Availability) -> bool:
    """Up to date: a passing report for the registry's current digest and these checks."""
    report = read_record(tier.verify_record)
    digest = image_digest(tier, seen)
    return bool(report and digest and report.get("passed") is True
                and report.get("digest") == digest
                and report.get("fingerprint") == fingerprint(want))


def verify(tier: PlannedTier, want: Expectation, seen: Availability) -> None:
    """Probe the pushed digest; write the report either way; raise when a check fails."""
    digest = seen.require(tier.image).digest
    if digest is None:
        raise BuildFailed(f"{tier.key}: {tier.image} is not in the registry; run push:{tier.key}")
    ref = f"{tier.repository}@{digest}"
    daemon.ensure_local(ref)
    gpu = daemon.has_gpu_runtime()
    probe = run_probe(ref, probe_request(want, gpu), gpu)
    if not gpu:
        probe["gpu_absent_reason"] = "no GPU: the Docker daemon has no nvidia runtime"
    probe["image_size_bytes"] = daemon.image_size(ref)
    probe["smoke"] = [run_smoke(ref, command) for command in want.smoke]
    results = evaluate(want, probe)
    passed = all(r.status != "fail" for r in results)
    write_record(tier.verify_record, report(tier, digest, want, probe, results, passed))
    lines = "\n".join(r.line() for r in results)
    if not passed:
        raise BuildFailed(f"verify of {tier.key} ({ref}) failed; nothing promoted:\n{lines}")
    log(f"[{tier.key}] verified {ref}\n{lines}")


def run_probe(ref: str, request: str, gpu: bool) -> dict[str, Any]:
    mounts = tuple(Mount(str(p), f"{IN_IMAGE}/{p.name}", read_only=True) for p in PROBE_FILES)
    with daemon.container(ref, [f"{IN_IMAGE}/probe.py", request], entrypoint=["python3"],
                              mounts=mounts, gpus=gpu) as box:
        code, output = daemon.run_to_end(box)
        stdout = box.logs(stdout=True, stderr=False).decode("utf-8", "replace")
    if code != 0:
        raise BuildFailed(f"the probe could not run in {ref} (exit {code}): is there a "
                          f"python3 on PATH?\n{output[-1500:]}")
    try:
        data: dict[str, Any] = json.loads(stdout)
    except ValueError:
        raise BuildFailed(f"the probe in {ref} printed no JSON:\n{output[-1500:]}") from None
    return data


def run_smoke(ref: str, command: str) -> dict[str, Any]:
    with daemon.container(ref, [command], entrypoint=["sh", "-c"]) as box:
        code, output = daemon.run_to_end(box)
    return {"command": command, "exit_code": code, "output": output[-2000:]}


def report(tier: PlannedTier, digest: str, want: Expectation, probe: dict[str, Any],
           results: list[Result], passed: bool) -> dict[str, Any]:
    torch = probe.get("torch") or {}
    return {
        "tier": tier.spec.name, "variant": tier.spec.variant, "image": tier.image,
        "digest": digest, "content_hash": tier.content_hash, "passed": passed,
        "fingerprint": fingerprint(want),
        "fingerprints": {"python": probe["python"]["version"], "torch": torch.get("version"),
                         "cuda": torch.get("cuda"), "cudnn": torch.get("cudnn"),
                         "arch_list": torch.get("arch_list")},
        "gpu": next((f"{r.status}: {r.actual}" for r in results
                     if r.name == "GPU kernel launch"), "not applicable: no GPU archs promised"),
        "checks": [dataclasses.asdict(r) for r in results],
        "probe": probe,
    }
