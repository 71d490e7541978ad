"""Verify's checks on synthetic probe documents: each problem named, nothing guessed."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

from build_graph.manifest.expectation import Expectation, expectation_for
from build_graph.verify.checks import evaluate
from build_graph.verify.device import gpu_code_paths
from build_graph.verify.probe_output import ProbeOutput
from build_graph.verify.results import Result, blocking, gpu_status, summary
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


def python_env(path: str, version: str = "3.11.2", prefix: str = "/usr") -> dict[str, Any]:
    return {
        "names": [path],
        "real_path": path,
        "version": version,
        "prefix": prefix,
        "implementation": "cpython",
    }


def probe(**changes: Any) -> ProbeOutput:
    document: dict[str, Any] = {
        "python": {"version": "3.11.2"},
        "interpreters": {"complete": True, "found": [python_env("/usr/bin/python3.11")]},
        "conda": {"found": False, "places": [], "complete": True},
        "virtualenv": None,
        "imports": {
            "torch:torch": {"package": "torch", "module": "torch", "ok": True, "error": None}
        },
        "errors": {},
        "pip_check": {"ok": True, "output": ""},
        "packages": {"setuptools": "80.9.0", "torch": "2.7.0", "numpy": "1.26.4"},
        "torch": {"version": "2.7.0", "cuda": "12.8", "arch_list": ["sm_80", "sm_90"]},
        "libraries": {"/x/libtorch_cuda.so": {"sass": ["8.0", "9.0"], "ptx": ["9.0"]}},
        "gpu": None,
        "distributions": {"setuptools": "80.9.0", "torch": "2.7.0", "numpy": "1.26.4"},
        "baseline": {},
    }
    document.update(changes)
    return cast(ProbeOutput, document)  # unknown keys stay possible: a probe may say more


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
        conda={
            "found": True,
            "complete": True,
            "places": [{"path": "/opt/conda", "why": "conda-meta folder"}],
        },
        interpreters={
            "complete": True,
            "found": [
                python_env("/usr/bin/python3.11"),
                python_env("/opt/py/bin/python3.12", "3.12.1", "/opt/py"),
            ],
        },
        pip_check={"ok": False, "output": "torch 2.7.0 requires sympy, which is not installed."},
        packages={"setuptools": "65.5.0", "torch": "2.6.0", "numpy": "2.1.0"},
        libraries={"/x/libtorch_cuda.so": {"sass": ["8.0"], "ptx": []}},
    )
    assert found["no conda"].actual == "conda at /opt/conda (conda-meta folder)"
    assert "/opt/py/bin/python3.12" in found["one Python"].actual
    assert "sympy" in found["pip check"].actual
    assert found["package setuptools"].actual == "65.5.0"
    assert found["package numpy"].status == "fail"
    assert "missing SASS 9.0, PTX 9.0" in found["archs in libtorch_cuda.so"].actual
    assert {
        "no conda",
        "one Python",
        "pip check",
        "package setuptools",
        "package torch",
        "package numpy",
        "archs in libtorch_cuda.so",
    } <= set(failures(found))


def test_target_the_binaries_cannot_run_fails_even_if_the_config_promised_it(
    tmp_path: Path,
) -> None:
    found = results(tmp_path, libraries={"/x/libtorch_cuda.so": {"sass": ["9.0"], "ptx": []}})
    assert found["runs on A100"].status == "fail"
    assert "sm_80 has neither compatible SASS nor PTX" in found["runs on A100"].actual
    assert found["runs on H100"].status == "pass"


def test_library_without_device_code_when_torch_promises_some(tmp_path: Path) -> None:
    found = results(tmp_path, libraries={"/x/libtorch_cuda.so": {"sass": [], "ptx": []}})
    assert found["device code"].status == "fail"
    assert "no readable fatbin" in found["device code"].actual


def test_gpu_launch_results(tmp_path: Path) -> None:
    ok = {
        "name": "NVIDIA H100",
        "capability": [9, 0],
        "driver": "580",
        "launch": {"ok": True, "result": 1.0},
    }
    found = results(tmp_path, gpu=ok)
    assert found["GPU kernel launch"].status == "pass"
    assert "GPU code path" not in found  # information, not a check
    [path] = gpu_code_paths(probe(gpu=ok))
    assert path.endswith("runs its own SASS (9.0)")
    bad = {**ok, "launch": {"ok": False, "error": "no kernel image is available"}}
    assert results(tmp_path, gpu=bad)["GPU kernel launch"].status == "fail"


def test_cpu_stack_has_no_gpu_checks(tmp_path: Path) -> None:
    stack = load_text(
        tmp_path,
        GPU_STACK.replace('arch_list = ["8.0", "9.0"]', "arch_list = []").replace(
            'targets = ["A100", "H100", "RTX 5090"]', "targets = []"
        ),
    )
    want = expectation_for(stack.variants[0], "base")
    names = {r.name for r in evaluate(want, probe(torch=None, libraries={}))}
    assert not any(n.startswith(("GPU", "runs on", "archs in", "device")) for n in names)


def test_size_budget_and_smoke_commands(tmp_path: Path) -> None:
    text = GPU_STACK.replace(
        'verify = { packages = { numpy = "<2" } }',
        'verify = { max_size = "1G", smoke = ["python3 -c 1"] }',
    )
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


def _want(tmp_path: Path, policy: str | None = None) -> Expectation:
    text = (
        GPU_STACK
        if policy is None
        else GPU_STACK.replace(
            'verify = { packages = { numpy = "<2" } }',
            f'verify = {{ packages = {{ numpy = "<2" }}, gpu = "{policy}" }}',
        )
    )
    return expectation_for(load_text(tmp_path, text).variants[0], "child")


def test_not_checked_is_never_a_pass(tmp_path: Path) -> None:
    """Without a GPU a GPU tier is not verified by default; 'optional' lets it through,
    and says so."""
    required = _want(tmp_path)
    assert required.gpu_policy == "required"
    found = evaluate(required, probe())
    assert [r.name for r in blocking(found, required)] == ["GPU kernel launch"]
    assert summary(found).endswith("0 failed, 1 not checked")
    assert gpu_status(found) == "not checked: no GPU"
    optional = _want(tmp_path, "optional")
    assert blocking(evaluate(optional, probe()), optional) == []
    size_unknown = [Result("image size", "not checked", "<= 1 GiB", "unknown")]
    assert blocking(size_unknown, optional) == size_unknown  # only GPU checks may be skipped


def test_broken_imports_and_torch_are_named(tmp_path: Path) -> None:
    error = "ImportError: libfoo.so.1: cannot open shared object file"
    found = results(
        tmp_path,
        imports={
            "torch:torch": {"package": "torch", "module": "torch", "ok": False, "error": error}
        },
        torch={"import_error": error},
    )
    assert found["import torch"].status == "fail" and error in found["import torch"].actual
    assert found["torch CUDA"].status == "fail"
    assert found["torch arch list"].actual == f"torch does not import: {error}"
    assert found["GPU kernel launch"].status == "fail"  # a broken torch is not 'no GPU'


def test_unreadable_library_is_a_failure_naming_it(tmp_path: Path) -> None:
    libraries = {
        "/x/libtorch_cuda.so": {"sass": ["8.0", "9.0"], "ptx": ["9.0"]},
        "/x/libbroken.so": {"error": "Truncated: .nv_fatbin ends past the file"},
    }
    found = results(tmp_path, libraries=libraries)
    assert found["readable /x/libbroken.so"].status == "fail"
    assert "Truncated" in found["readable /x/libbroken.so"].actual
    assert found["archs in libtorch_cuda.so"].status == "pass"


def test_probe_sections_that_failed_are_failures(tmp_path: Path) -> None:
    found = results(tmp_path, errors={"interpreters": "PermissionError: /opt"}, interpreters=None)
    assert found["probe: interpreters"].status == "fail"
    assert "one Python" not in found


def test_shadowing_virtualenv_is_named_with_what_it_hides(tmp_path: Path) -> None:
    venv = {
        "prefix": "/opt/venv",
        "base_executable": "/usr/bin/python3.11",
        "base_prefix": "/usr",
        "hides": ["fastext 1.0.0", "pip 26.3"],
        "shadows": [],
        "hides_packages": True,
    }
    found = results(tmp_path, virtualenv=venv)
    check = found["no shadowing virtualenv"]
    assert check.status == "fail"
    assert check.actual == "/opt/venv over /usr/bin/python3.11; hides fastext 1.0.0, pip 26.3"
    benign = {**venv, "hides": ["pip 26.3"], "hides_packages": False}
    assert results(tmp_path, virtualenv=benign)["no shadowing virtualenv"].status == "pass"


def test_incomplete_search_is_not_checked_but_extras_still_fail(tmp_path: Path) -> None:
    one = {"complete": False, "found": [python_env("/usr/bin/python3.11")]}
    assert results(tmp_path, interpreters=one)["one Python"].status == "not checked"
    two = {
        "complete": False,
        "found": [
            python_env("/usr/bin/python3.11"),
            python_env("/opt/pypy/bin/pypy3", "3.10.14", "/opt/pypy"),
        ],
    }
    assert results(tmp_path, interpreters=two)["one Python"].status == "fail"


def test_prebuilt_torch_is_left_out_of_the_arch_promise_when_asked(tmp_path: Path) -> None:
    """torch_archs = false (torch from PyPI): torch's arch list and torch/lib are not held to
    gpu.arch_list, the stack's own libraries still are; false on an ancestor wins."""
    from build_graph.verify.request import probe_request

    text = GPU_STACK.replace(
        'packages = { setuptools = ">=70", torch = "==2.7.0" }',
        'packages = { torch = "==2.7.0" }\ntorch_archs = false',
    )
    stack = load_text(tmp_path, text)
    want = expectation_for(stack.variants[0], "child")
    assert want.torch_archs is False
    assert '"torch_libraries": false' in probe_request(want, gpu=False)
    found = {
        r.name: r
        for r in evaluate(
            want,
            probe(
                torch={"version": "2.7.0", "cuda": "12.8", "arch_list": ["sm_90"]},
                libraries={"/x/_ops.so": {"sass": ["8.0"], "ptx": []}},
            ),
        )
    }
    assert "torch arch list" not in found  # upstream's list, not this stack's promise
    assert found["archs in _ops.so"].status == "fail"  # the compiled library still is
    assert "missing SASS 9.0, PTX 9.0" in found["archs in _ops.so"].actual


def test_pip_check_allow_accepts_only_the_named_distributions_lines(tmp_path: Path) -> None:
    text = GPU_STACK.replace(
        'packages = { setuptools = ">=70", torch = "==2.7.0" }',
        'packages = { setuptools = ">=70", torch = "==2.7.0" }\n'
        'pip_check_allow = ["nvidia_cusparselt.cu13"]',
    )
    want = expectation_for(load_text(tmp_path, text).variants[0], "child")  # inherited
    assert want.pip_check_allow == ("nvidia-cusparselt-cu13",)
    upstream = "nvidia-cusparselt-cu13 0.8.0 is not supported on this platform"
    allowed = {
        r.name: r for r in evaluate(want, probe(pip_check={"ok": False, "output": upstream}))
    }
    assert allowed["pip check"].status == "pass"
    assert upstream in allowed["pip check"].actual
    broken = f"{upstream}\ntorchvision 0.22.0 has requirement torch==2.7.0, but you have 2.6.0."
    found = {r.name: r for r in evaluate(want, probe(pip_check={"ok": False, "output": broken}))}
    assert found["pip check"].status == "fail"
    assert found["pip check"].actual.startswith("torchvision 0.22.0 has requirement")
    missing = "nvidia-cusparselt-cu13 0.8.0 requires nvidia-foo, which is not installed."
    still = {r.name: r for r in evaluate(want, probe(pip_check={"ok": False, "output": missing}))}
    assert still["pip check"].status == "fail"  # only the unknown-tag line is accepted
    plain = _want(tmp_path)  # nothing allowed: the upstream line fails as before
    assert {r.name: r for r in evaluate(plain, probe(pip_check={"ok": False, "output": upstream}))}[
        "pip check"
    ].status == "fail"


def test_another_python_than_promised_fails_by_version(tmp_path: Path) -> None:
    """The promise 'the right Python': 3.12 where 3.11 is promised fails, and so does a
    version that only shares its first characters (3.1 is not 3.11, 3.110 is not 3.11)."""
    assert results(tmp_path)["python version"].status == "pass"
    for other in ("3.12.1", "3.110.0", "3.1.4"):
        found = results(tmp_path, python={"version": other})["python version"]
        assert (found.status, found.expected, found.actual) == ("fail", "3.11", other)


def test_a_torch_built_for_another_cuda_fails_by_its_cuda_line(tmp_path: Path) -> None:
    """The promise 'the right CUDA': a torch that imports but was built for CUDA 12.6 (or
    for no CUDA at all: a CPU wheel) fails 'torch CUDA' naming what it has."""
    assert results(tmp_path)["torch CUDA"].status == "pass"
    for cuda in ("12.6", None):
        torch = {"version": "2.7.0", "cuda": cuda, "arch_list": ["sm_80", "sm_90"]}
        found = results(tmp_path, torch=torch)["torch CUDA"]
        assert (found.status, found.actual) == ("fail", str(cuda)), found


def test_the_apt_lock_check_holds_dpkg_to_the_lock(tmp_path: Path) -> None:
    """A locked stack's image: every locked package at its version and architecture, as
    dpkg's database says; a later step's upgrade or removal fails by name; an unlocked
    stack gets no such check; an unreadable database is 'not checked', never a pass."""
    stack = load_text(tmp_path, GPU_STACK)
    want = dataclasses.replace(
        expectation_for(stack.variants[0], "child"),
        apt_locked=(("gcc-12", "12.2.0-14", "amd64"), ("tzdata", "2025b-0+deb12u1", "all")),
    )

    def apt(debian: object) -> Result:
        [found] = [r for r in evaluate(want, probe(debian=debian)) if r.name == "apt lock"]
        return found

    good = [
        {"name": "gcc-12", "version": "12.2.0-14", "architecture": "amd64"},
        {"name": "tzdata", "version": "2025b-0+deb12u1", "architecture": "all"},
        {"name": "bash", "version": "5.2.15-2+b7", "architecture": "amd64"},  # the from image's
    ]
    assert apt(good).status == "pass" and apt(good).actual == "2 as locked"
    upgraded = [good[0], {**good[1], "version": "2025c-0+deb12u1"}, good[2]]
    assert apt(upgraded).status == "fail"
    assert apt(upgraded).actual == (
        "not as locked: tzdata 2025c-0+deb12u1 all (locked 2025b-0+deb12u1 all)"
    )
    assert apt(good[1:]).actual.startswith("not as locked: gcc-12 not installed (locked")
    assert apt(None).status == "not checked"
    unlocked = dataclasses.replace(want, apt_locked=())
    assert not [r for r in evaluate(unlocked, probe(debian=good)) if r.name == "apt lock"]
