"""Python locks: read at the door, installed as locked, held to by verify."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from build_graph.errors import ConfigError
from build_graph.manifest.expectation import Expectation, expectation_for
from build_graph.plan.cache import load_plan
from build_graph.plan.plan import plan
from build_graph.pylock import files
from build_graph.pylock.files import Pin, PythonLock
from build_graph.stages.python_pin import disagreements
from build_graph.verify.lock_check import check_python_lock
from build_graph.verify.probe_output import ProbeOutput
from tests.helpers import MINIMAL, REPO, load_text

SHA = "a" * 64
PACKAGES = 'packages = ["numpy<2"]\n'


def locked(tmp_path: Path, version: str = "1.26.4", text: str = MINIMAL + PACKAGES) -> None:
    """Write the lock the tier's current request would get."""
    [tier] = plan(load_text(tmp_path, text))
    request, path = tier.python.request, tier.python.path
    assert request is not None and path is not None
    pins = (Pin("numpy", version, ((f"numpy-{version}-cp311-manylinux.whl", SHA),)),)
    files.write(
        path, PythonLock(request.key, request.platform, tuple(request.inputs()), pins), "3.11"
    )


def test_the_lock_is_what_the_build_installs_and_what_the_hash_covers(tmp_path: Path) -> None:
    locked(tmp_path)
    [tier] = plan(load_text(tmp_path, MINIMAL + PACKAGES))
    assert tier.python.fresh
    assert f"'numpy==1.26.4 --hash=sha256:{SHA}'" in tier.dockerfile
    assert "pip install --no-deps --require-hashes --only-binary :all:" in tier.dockerfile
    assert tier.expect.locked == (("numpy", "1.26.4"),)
    before = tier.content_hash
    locked(tmp_path, "1.26.3")
    [moved] = plan(load_text(tmp_path, MINIMAL + PACKAGES))
    assert moved.content_hash != before


def test_check_names_the_tier_and_what_changed(tmp_path: Path) -> None:
    locked(tmp_path)
    stack = load_text(tmp_path, MINIMAL + 'packages = ["numpy<3"]\n')
    [issue] = disagreements(stack, plan(stack))
    assert issue.key == "tiers.base.packages"
    assert "now requirement numpy<3" in issue.message and "was requirement numpy<2" in issue.message
    assert "python -m build_graph lock" in issue.message
    [tier] = plan(stack)
    assert "missing or stale" in tier.dockerfile  # never built from a lock that disagrees


def test_a_lock_whose_pins_break_its_requirements_is_stale(tmp_path: Path) -> None:
    """Hand-edited or merged: the right inputs recorded, a version they exclude pinned."""
    locked(tmp_path, "2.0.0")  # numpy<2 asked
    stack = load_text(tmp_path, MINIMAL + PACKAGES)
    [tier] = plan(stack)
    assert not tier.python.fresh and tier.python.unmet == ["numpy 2.0.0 does not satisfy numpy<2"]
    [issue] = disagreements(stack, [tier])
    assert (
        "holds versions its requirements exclude (numpy 2.0.0 does not satisfy numpy<2"
        in issue.message
    )
    assert "missing or stale" in tier.dockerfile  # never built from it


@pytest.mark.parametrize(
    ("damage", "key"),
    [
        (lambda t: t.replace(SHA, "b" * 63), "packages[0]"),
        (lambda t: t.replace('"numpy"', '"NumPy"', 1), "packages[0]"),
        (lambda t: t.replace('name = "numpy-', 'name = "../numpy-'), "packages[0]"),
        (lambda t: t.replace("build-graph python lock 1", "other"), "tool.build-graph.format"),
        (lambda t: t[: len(t) // 2], ""),
    ],
)
def test_a_damaged_lock_is_refused_naming_file_and_key(tmp_path: Path, damage, key) -> None:  # type: ignore[no-untyped-def]
    locked(tmp_path)
    [path] = (tmp_path / "images.pylock").iterdir()
    path.write_text(damage(path.read_text()))
    with pytest.raises(ConfigError) as caught:
        plan(load_text(tmp_path, MINIMAL + PACKAGES))
    [issue] = caught.value.issues
    assert issue.file == path and issue.key == key
    assert "lock --update base" in issue.message


def want(tmp_path: Path) -> Expectation:
    text = MINIMAL + PACKAGES + 'verify = { packages = { fastext = "==1.0" } }\n'
    locked(tmp_path, text=text)
    stack = load_text(tmp_path, text)
    [tier] = plan(stack)
    assert tier.expect.packages == expectation_for(stack.variants[0], "base").packages
    return tier.expect


def probe(installed: dict[str, str], baseline: object = None) -> ProbeOutput:
    return cast(ProbeOutput, {"distributions": installed, "baseline": baseline or {}})


def test_verify_holds_the_image_to_its_lock(tmp_path: Path) -> None:
    expect = want(tmp_path)
    ok = {"numpy": "1.26.4", "fastext": "1.0", "wheel": "0.45"}
    [good] = check_python_lock(expect, probe(ok, {"wheel": "0.45"}))
    assert good.status == "pass"
    [moved] = check_python_lock(expect, probe({**ok, "numpy": "2.0.0"}, {"wheel": "0.45"}))
    assert moved.status == "fail" and "numpy 2.0.0 (locked 1.26.4)" in moved.actual
    [extra] = check_python_lock(expect, probe({**ok, "requests": "2.32.3"}, {"wheel": "0.45"}))
    assert extra.status == "fail" and "behind the lock's back: requests 2.32.3" in extra.actual
    # the installer bootstrapped from Debian's wheels in a stack that locks no pip
    [boot] = check_python_lock(expect, probe({**ok, "pip": "23.0.1", "setuptools": "66.1.1"}))
    assert boot.status == "fail" and "behind the lock's back: wheel 0.45" in boot.actual
    assert "pip 23.0.1" not in boot.actual and "setuptools 66.1.1" not in boot.actual
    [gone] = check_python_lock(expect, probe({"fastext": "1.0"}))
    assert gone.status == "fail" and "numpy not installed (locked 1.26.4)" in gone.actual
    unlisted = cast(ProbeOutput, {"distributions": ok})  # no baseline: never a pass
    assert check_python_lock(expect, unlisted)[0].status == "not checked"
    # a package of the `from` image upgraded in a template, unlocked: named
    [upgraded] = check_python_lock(expect, probe({**ok, "wheel": "0.46"}, {"wheel": "0.45"}))
    assert upgraded.status == "fail"
    assert "changed from the `from` image, unlocked: wheel 0.45 -> 0.46" in upgraded.actual


def test_what_a_package_installed_outside_the_lock_requires_is_its_own(tmp_path: Path) -> None:
    """torch-wheels' torch line installs torch and its CUDA wheels from PyTorch's index: they
    are torch's (verify.packages names torch), said in the result; anything else still fails."""
    expect = want(tmp_path)  # verify.packages: fastext (provided), numpy locked
    installed = {"numpy": "1.26.4", "fastext": "1.0", "triton": "3.2", "nvidia-cublas": "12.4"}
    requires = {"fastext": ["triton", "numpy"], "triton": ["nvidia-cublas"], "numpy": []}
    found = cast(ProbeOutput, {"distributions": installed, "baseline": {}, "requires": requires})
    [result] = check_python_lock(expect, found)
    assert result.status == "pass", result.actual
    assert (
        "outside the lock: fastext and 2 distributions they require (nvidia-cublas, triton)"
        in result.actual
    )
    sneaky = cast(
        ProbeOutput,
        {
            "distributions": {**installed, "requests": "2.32.3"},
            "baseline": {},
            "requires": requires,
        },
    )
    [caught] = check_python_lock(expect, sneaky)
    assert caught.status == "fail" and "behind the lock's back: requests 2.32.3" in caught.actual


def test_the_plan_cache_sees_a_lock_recorded_after_it(tmp_path: Path) -> None:
    """A run records missing locks, then plans again through the cache: it must see them."""
    stack = load_text(tmp_path, MINIMAL + PACKAGES)
    [before] = load_plan(stack.manifest)[1]
    request, path = before.python.request, before.python.path
    assert request is not None and path is not None and not before.python.fresh

    def record(version: str) -> None:  # as a run does: the manifest untouched
        pins = (Pin("numpy", version, ((f"numpy-{version}-cp311-manylinux.whl", SHA),)),)
        lock = PythonLock(request.key, request.platform, tuple(request.inputs()), pins)
        files.write(path, lock, "3.11")

    record("1.26.4")
    [after] = load_plan(stack.manifest)[1]
    assert after.python.fresh and "numpy==1.26.4" in after.dockerfile
    record("1.26.3")  # moved by hand or by git
    [moved] = load_plan(stack.manifest)[1]
    assert "numpy==1.26.3" in moved.dockerfile and moved.content_hash != after.content_hash


def test_a_run_whose_locks_answer_plans_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A no-op run hands record() the plan it has (from the plan cache): nothing stale,
    nothing planned again (that second plan rendered every template: 45-95 ms)."""
    from build_graph.manifest.load import load
    from build_graph.plan.plan import plan
    from build_graph.stages import python_pin

    stack = load(REPO / "examples" / "quickstart" / "images.toml")
    planned = plan(stack)

    def again(_: object) -> None:
        pytest.fail("planned a second time")

    monkeypatch.setattr(python_pin, "plan", again)
    assert python_pin.record(stack, planned=planned) == []
