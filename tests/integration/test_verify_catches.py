"""Images broken in ordinary ways, on top of the quickstart: each caught by name, none promoted.

Every breakage is made with real tools inside a real image (cp, rm, truncate, python -m venv,
a conda-meta folder and a `conda initialize` block, a library built by nvcc and corrupted);
each test asserts the exact check that fails, that its message names the culprit, and that
`latest` did not move. Healthy controls are promoted.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_graph.verify.in_image.fatbin import fatbin_sections
from tests.support.registry import Registry
from tests.support.workspace import Workspace, make_workspace
from tests.unit.test_fatbin import KERNEL, NVCC

pytestmark = pytest.mark.integration

TEMPLATE = """\
{% import "_macros.j2" as m %}
FROM {{ base_image }}
{{ m.site_args() }}
{{ m.build_args(tier.build_args) }}
{% for path in tier.context %}
COPY {{ path }} /opt/kernels/
{% endfor %}
RUN sh -c "$BREAK"
"""
VENV_TEMPLATE = """\
FROM {{ base_image }}
RUN python3 -m venv --without-pip /opt/venv
ENV PATH=/opt/venv/bin:$PATH
"""
META = "/usr/local/lib/python3.11/dist-packages/broken-1.0.dist-info"
FASTEXT = "/usr/local/lib/python3.11/dist-packages/fastext"
# tier -> (command run in the image, the check that must fail, what its message must name)
BREAKAGES = {
    "conda": ("mkdir -p /opt/conda/conda-meta /opt/conda/bin", "no conda", "/opt/conda"),
    "conda-elsewhere": (
        "mkdir -p /srv/tools/mf/conda-meta && printf '%s\\n' "
        "'# >>> conda initialize >>>' >> /root/.bashrc",
        "no conda",
        "/srv/tools/mf (conda-meta folder), /root/.bashrc",
    ),
    "second-python": (
        "cp /usr/bin/python3.11 /usr/local/bin/python3.12",
        "one Python",
        "/usr/local/bin/python3.12",
    ),
    "renamed-python": (
        "cp /usr/bin/python3.11 /usr/local/bin/mytool",
        "one Python",
        "/usr/local/bin/mytool",
    ),
    "pip-check": (
        " && ".join(
            [f"mkdir -p {META}"]
            + [
                f"echo '{line}' >> {META}/METADATA"
                for line in (
                    "Metadata-Version: 2.1",
                    "Name: broken",
                    "Version: 1.0",
                    "Requires-Dist: missing-dependency",
                )
            ]
        ),
        "pip check",
        "missing-dependency",
    ),
    # A distribution no lock holds (a template's extra pip install, a wheel's dependency
    # resolved at build time): written as pip writes one, so nothing needs an index
    "behind-the-lock": (
        "d=/usr/local/lib/python3.11/dist-packages/sneaky-1.0.dist-info && mkdir -p $d "
        "&& printf 'Metadata-Version: 2.1\\nName: sneaky\\nVersion: 1.0\\n' > $d/METADATA",
        "python lock",
        "installed behind the lock's back: sneaky 1.0",
    ),
    # A package the apt lock holds, removed by a later step (dpkg's database says so)
    "apt-behind-the-lock": (
        "dpkg --force-depends --remove ca-certificates",
        "apt lock",
        "ca-certificates not installed (locked ",
    ),
    "old-setuptools": (
        "python3 -m pip install --no-index --force-reinstall --no-deps "
        "/usr/share/python-wheels/setuptools-*.whl",
        "package setuptools",
        "66.1.1",
    ),
    "native-gone": (f"rm {FASTEXT}/_native*.so", "import fastext", "fastext._native"),
    "libstdcxx-gone": (
        "rm /usr/lib/x86_64-linux-gnu/libstdc++.so.6*",
        "import fastext",
        "libstdc++.so.6: cannot open shared object file",
    ),
}
LIMIT = ', max_size = "8G"'
GOOD = [
    "arch=compute_80,code=sm_80",
    "arch=compute_90,code=sm_90",
    "arch=compute_90,code=compute_90",
]


def library(folder: Path, gencodes: list[str]) -> Path:
    source = folder / "k.cu"
    source.write_text(KERNEL)
    args = [a for g in gencodes for a in ("-gencode", g)]
    out = folder / "libkernels.so"
    subprocess.run(
        [NVCC, "-shared", "-Xcompiler", "-fPIC", *args, "-o", str(out), str(source)],
        check=True,
        timeout=300,
    )
    return out


def corrupt_copy(good: Path, folder: Path) -> None:
    """The library with its first fatbin entry header overwritten (header size 7)."""
    data = bytearray(good.read_bytes())
    [(offset, _)] = fatbin_sections(bytes(data))
    entry = offset + int.from_bytes(data[offset + 6 : offset + 8], "little")
    data[entry + 4 : entry + 8] = (7).to_bytes(4, "little")
    (folder / "libkernels.so").write_bytes(bytes(data))


def arch_tier(
    name: str, kernels: str, brk: str = "true", gpu: str | None = "optional", extra: str = ""
) -> str:
    policy = (f', gpu = "{gpu}"' if gpu else "") + extra
    return (
        f'\n[tiers.{name}]\nparent = "base"\ntemplate = "broken.Dockerfile.j2"\n'
        f'context = ["kernels/{kernels}/libkernels.so"]\n'
        f"build_args = {{ BREAK = {json.dumps(brk)} }}\n"
        f'verify = {{ cuda_libraries = ["/opt/kernels/*.so"]{policy} }}\n'
    )


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Iterator[Workspace]:
    ws = make_workspace(tmp_path_factory.mktemp("verify"), registry)
    (ws.root / "templates" / "broken.Dockerfile.j2").write_text(TEMPLATE)
    (ws.root / "templates" / "venv.Dockerfile.j2").write_text(VENV_TEMPLATE)
    for name, gencodes in (("sm75", ["arch=compute_75,code=sm_75"]), ("good", GOOD)):
        (ws.root / "kernels" / name).mkdir(parents=True)
        library(ws.root / "kernels" / name, gencodes)
    (ws.root / "kernels" / "corrupt").mkdir()
    corrupt_copy(ws.root / "kernels" / "good" / "libkernels.so", ws.root / "kernels" / "corrupt")
    text = ws.manifest.read_text().replace(
        "[cache]",
        '[gpu]\narch_list = ["8.0", "9.0"]\nptx = true\ntargets = ["A100", "H100"]\n\n[cache]',
    )
    # The CPU tiers of the quickstart promise no device code of their own.
    for tier in ("fastext", "base"):
        text = text.replace(f"[tiers.{tier}.verify]\n", f"[tiers.{tier}.verify]\narchs = false\n")
    for name, (command, _, _) in BREAKAGES.items():
        text += (
            f'\n[tiers.{name}]\nparent = "base"\ntemplate = "broken.Dockerfile.j2"\n'
            f"build_args = {{ BREAK = {json.dumps(command)} }}\n"
            "verify = { archs = false }\n"
        )
    text += (
        '\n[tiers.wrong-version]\nparent = "base"\ntemplate = "broken.Dockerfile.j2"\n'
        'build_args = { BREAK = "true" }\n'
        'verify = { packages = { teamlib = "==0.2" }, archs = false }\n'
    )
    text += (
        '\n[tiers.venv-shadow]\nparent = "base"\ntemplate = "venv.Dockerfile.j2"\n'
        "verify = { archs = false }\n"
    )
    # A child on a parent that already has the locked pip, whose template sets up the system
    # Python again (as the CUDA example's builder and kernels do): the parent's pip stays.
    text += (
        '\n[tiers.python-again]\nparent = "base"\ntemplate = "python-runtime.Dockerfile.j2"\n'
        "verify = { archs = false }\n"
    )
    text += arch_tier("arch-sm75", "sm75") + arch_tier("arch-good", "good", extra=LIMIT)
    text += arch_tier("arch-good-gpu-required", "good", gpu=None)
    text += arch_tier("arch-corrupt", "corrupt")
    text += arch_tier("arch-truncated", "good", "truncate -s 20000 /opt/kernels/libkernels.so")
    ws.manifest.write_text(text)
    assert ws.doit("promote:base").returncode == 0
    yield ws


def verify_report(ws: Workspace, tier: str) -> dict[str, object]:
    data = json.loads((ws.root / "build" / "default" / tier / "verify.json").read_text())
    assert isinstance(data, dict)
    return data


def caught(ws: Workspace, tier: str, check: str, evidence: str) -> str:
    """Run promote:<tier>; assert it failed on `check` naming `evidence` and moved no tag."""
    result = ws.doit(f"promote:{tier}")
    text = result.stdout + result.stderr
    assert result.returncode == 1  # a failed verify: the README's exit code
    assert f"FAIL {check}:" in text, text[-3000:]
    line = next(line for line in text.splitlines() if f"FAIL {check}:" in line)
    assert evidence in line, line
    assert "Traceback" not in text
    assert "latest" not in ws.registry.tags(f"quickstart/{tier}")
    report = verify_report(ws, tier)
    assert report["passed"] is False
    assert any(c["name"] == check and c["status"] == "fail" for c in report["checks"])  # type: ignore[attr-defined]
    return text


@pytest.mark.parametrize("tier", sorted(BREAKAGES))
def test_breakage_is_caught_by_name_and_not_promoted(ws: Workspace, tier: str) -> None:
    _, check, evidence = BREAKAGES[tier]
    caught(ws, tier, check, evidence)


def test_broken_native_module_is_caught_though_pip_metadata_is_intact(ws: Workspace) -> None:
    caught(ws, "libstdcxx-gone", "import fastext", "libstdc++.so.6")
    report = verify_report(ws, "libstdcxx-gone")
    packages = report["probe"]["packages"]  # type: ignore[index]
    assert packages["fastext"] == "1.0.0"  # pip metadata alone would have called it fine
    assert any(c["name"] == "package fastext" and c["status"] == "pass" for c in report["checks"])  # type: ignore[attr-defined]


def test_shadowing_virtualenv_is_named_with_what_it_hides(ws: Workspace) -> None:
    text = caught(ws, "venv-shadow", "no shadowing virtualenv", "/opt/venv over /usr/bin/python")
    line = next(line for line in text.splitlines() if "FAIL no shadowing virtualenv" in line)
    assert "fastext 1.0.0" in line and "teamlib 0.1.0" in line
    assert "FAIL one Python:" in text and "/opt/venv" in text


def test_wrong_package_version_is_caught(ws: Workspace) -> None:
    caught(ws, "wrong-version", "package teamlib", "expected ==0.2; got 0.1.0")


def test_missing_promised_arch_is_caught(ws: Workspace) -> None:
    text = caught(ws, "arch-sm75", "archs in libkernels.so", "missing SASS 8.0, SASS 9.0, PTX 9.0")
    assert "FAIL runs on A100" in text and "sm_80 has neither compatible SASS nor PTX" in text


def test_corrupt_and_truncated_libraries_are_named(ws: Workspace) -> None:
    caught(ws, "arch-corrupt", "readable /opt/kernels/libkernels.so", "does not fit")
    text = caught(ws, "arch-truncated", "readable /opt/kernels/libkernels.so", "Truncated")
    assert "FAIL device code" in text  # and nothing else was read: no arch passes silently


def test_gpu_required_is_not_promoted_without_a_gpu(ws: Workspace) -> None:
    result = ws.doit("promote:arch-good-gpu-required")
    text = result.stdout + result.stderr
    assert result.returncode != 0
    assert "GPU kernel launch: not checked: no GPU: the Docker daemon has no nvidia" in text
    assert "0 failed, 1 not checked; nothing promoted (GPU kernel launch not checked)" in text
    assert "latest" not in ws.registry.tags("quickstart/arch-good-gpu-required")
    assert verify_report(ws, "arch-good-gpu-required")["passed"] is False


def test_healthy_library_passes_and_is_promoted_saying_gpu_not_checked(ws: Workspace) -> None:
    result = ws.doit("promote:arch-good")
    text = result.stdout + result.stderr
    assert result.returncode == 0
    report = verify_report(ws, "arch-good")
    assert report["passed"] is True
    assert report["gpu"] == "not checked: no GPU: the Docker daemon has no nvidia runtime"
    assert str(report["summary"]).endswith(" passed, 0 failed, 1 not checked")
    assert "promoted with GPU not checked" in text
    assert "latest" in ws.registry.tags("quickstart/arch-good")


def test_a_changed_verifier_verifies_again(ws: Workspace) -> None:
    assert ws.doit("promote:arch-good").returncode == 0
    again = ws.doit("promote:arch-good")
    assert "+ docker run" not in again.stdout + again.stderr  # up to date: no probe
    ws.edit(LIMIT, ', max_size = "9G"')  # a changed promise: the fingerprint changes
    changed = ws.doit("promote:arch-good")
    assert changed.returncode == 0
    assert "ok   image size: expected <= 9.00 GiB" in changed.stdout + changed.stderr


def test_a_child_that_sets_up_python_again_keeps_the_locked_pip(ws: Workspace) -> None:
    result = ws.doit("promote:python-again")
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-3000:]
    report = verify_report(ws, "python-again")
    installed = report["probe"]["distributions"]  # type: ignore[index]
    assert (installed["pip"], installed["setuptools"]) == ("26.3", "84.2.1")  # the lock's
    assert any(c["name"] == "python lock" and c["status"] == "pass" for c in report["checks"])  # type: ignore[attr-defined]
    assert "latest" in ws.registry.tags("quickstart/python-again")
