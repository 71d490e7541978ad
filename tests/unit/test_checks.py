"""Verify's checks on synthetic probe documents: each problem named, nothing guessed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from build_graph.verify.checks import Result, evaluate, expectation_for
from tests.helpers import load_text

GPU_STACK = """
[stack]
name = "g"
registry = "127.0.0.1:5000/g"
[versions]
python = "3.11"
cuda = "12.8.1"
torch = "2.7.0"
[gpu]
arch_list = ["8.0", "9.0"]
ptx = true
targets = ["A100", "H100", "RTX 5090"]
[tiers.base]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
[tiers.base.verify]
packages = { setuptools = ">=70", torch = "==2.7.0" }
[tiers.child]
parent = "base"
template = "training.Dockerfile.j2"
verify = { packages = { numpy = "<2" } }
"""


def probe(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "python": {"version": "3.11.2"},
        "interpreters": [{"real_path": "/usr/bin/python3.11", "version": "3.11.2"}],
        "conda": {"found": False, "places": [], "conda_meta": [], "conda_prefix": None,
                  "executable": None},
        "pip_check": {"ok": True, "output": ""},
        "packages": {"setuptools": "80.9.0", "torch": "2.7.0", "numpy": "1.26.4"},
        "torch": {"version": "2.7.0", "cuda": "12.8", "arch_list": ["sm_80", "sm_90"]},
        "libraries": {"/x/libtorch_cuda.so": {"sass": ["8.0", "9.0"], "ptx": ["9.0"]}},
        "gpu": None,
    }
    document.update(changes)
    return document


def results(tmp_path: Path, tier: str = "child", **changes: Any) -> dict[str, Result]:
    stack = load_text(tmp_path, GPU_STACK)
    want = expectation_for(stack.variants[0], tier)
    return {r.name: r for r in evaluate(want, probe(**changes))}


def failures(found: dict[str, Result]) -> list[str]:
    return sorted(name for name, r in found.items() if r.status == "fail")


def test_a_good_image_passes_and_children_inherit_checks(tmp_path: Path) -> None:
    found = results(tmp_path)
    assert failures(found) == []
    assert {"package setuptools", "package torch", "package numpy"} <= set(found)
    assert found["runs on RTX 5090"].status == "pass"
    assert "JIT-compile PTX for 9.0" in found["runs on RTX 5090"].actual
    assert found["GPU kernel launch"].status == "not checked"  # never 'pass' without a GPU


def test_each_problem_is_named(tmp_path: Path) -> None:
    found = results(
        tmp_path,
        conda={"found": True, "places": ["/opt/conda"], "conda_meta": [],
               "conda_prefix": None, "executable": None},
        interpreters=[{"real_path": "/usr/bin/python3.11", "version": "3.11.2"},
                      {"real_path": "/opt/py/bin/python3.12", "version": "3.12.1"}],
        pip_check={"ok": False, "output": "torch 2.7.0 requires sympy, which is not installed."},
        packages={"setuptools": "65.5.0", "torch": "2.6.0", "numpy": "2.1.0"},
        libraries={"/x/libtorch_cuda.so": {"sass": ["8.0"], "ptx": []}},
    )
    assert found["no conda"].actual == "conda at /opt/conda"
    assert "/opt/py/bin/python3.12" in found["one Python"].actual
    assert "sympy" in found["pip check"].actual
    assert found["package setuptools"].actual == "65.5.0"
    assert found["package numpy"].status == "fail"
    assert "missing SASS 9.0, PTX 9.0" in found["archs in libtorch_cuda.so"].actual
    assert {"no conda", "one Python", "pip check", "package setuptools", "package torch",
            "package numpy", "archs in libtorch_cuda.so"} <= set(failures(found))


def test_target_the_binaries_cannot_run_fails_even_if_the_config_promised_it(
        tmp_path: Path) -> None:
    found = results(tmp_path, libraries={"/x/libtorch_cuda.so": {"sass": ["9.0"], "ptx": []}})
    assert found["runs on A100"].status == "fail"
    assert "sm_80 has neither compatible SASS nor PTX" in found["runs on A100"].actual
    assert found["runs on H100"].status == "pass"


def test_library_without_device_code_when_torch_promises_some(tmp_path: Path) -> None:
    found = results(tmp_path, libraries={"/x/libtorch_cuda.so": {"sass": [], "ptx": []}})
    assert found["device code"].status == "fail"
    assert "no fatbin" in found["device code"].actual


def test_gpu_launch_results(tmp_path: Path) -> None:
    ok = {"name": "NVIDIA H100", "capability": [9, 0], "driver": "580",
          "launch": {"ok": True, "result": 1.0}}
    found = results(tmp_path, gpu=ok)
    assert found["GPU kernel launch"].status == "pass"
    assert found["GPU code path"].actual.endswith("runs its own SASS (9.0)")
    bad = {**ok, "launch": {"ok": False, "error": "no kernel image is available"}}
    assert results(tmp_path, gpu=bad)["GPU kernel launch"].status == "fail"


def test_cpu_stack_has_no_gpu_checks(tmp_path: Path) -> None:
    stack = load_text(tmp_path, GPU_STACK.replace('arch_list = ["8.0", "9.0"]', "arch_list = []")
                      .replace('targets = ["A100", "H100", "RTX 5090"]', "targets = []"))
    want = expectation_for(stack.variants[0], "base")
    names = {r.name for r in evaluate(want, probe(torch=None, libraries={}))}
    assert not any(n.startswith(("GPU", "runs on", "archs in", "device")) for n in names)


def test_size_budget_and_smoke_commands(tmp_path: Path) -> None:
    text = GPU_STACK.replace('verify = { packages = { numpy = "<2" } }',
                             'verify = { max_size = "1G", smoke = ["python3 -c 1"] }')
    stack = load_text(tmp_path, text)
    want = expectation_for(stack.variants[0], "child")
    assert want.smoke == ("python3 -c 1",)
    smoke = [{"command": "python3 -c 1", "exit_code": 3, "output": "boom"}]
    found = {r.name: r for r in evaluate(want, probe(image_size_bytes=2 << 30, smoke=smoke))}
    assert found["image size"].status == "fail"
    assert found["image size"].actual == "2.00 GiB"
    assert found["smoke: python3 -c 1"].status == "fail"
    assert "exit 3: boom" in found["smoke: python3 -c 1"].actual
    unknown = {r.name: r for r in evaluate(want, probe())}
    assert unknown["image size"].status == "not checked"
