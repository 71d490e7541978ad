"""Deliberately broken images on top of the quickstart: each caught by name, none promoted."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import Registry, Workspace, make_workspace
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
META = "/usr/local/lib/python3.11/dist-packages/broken-1.0.dist-info"
BREAKAGES = {
    "conda": ("mkdir -p /opt/conda/conda-meta /opt/conda/bin", "no conda", "/opt/conda"),
    "second-python": ("cp /usr/bin/python3.11 /usr/local/bin/python3.12", "one Python",
                      "/usr/local/bin/python3.12"),
    "pip-check": (" && ".join([f"mkdir -p {META}"] + [
        f"echo '{line}' >> {META}/METADATA" for line in
        ("Metadata-Version: 2.1", "Name: broken", "Version: 1.0",
         "Requires-Dist: missing-dependency")]), "pip check", "missing-dependency"),
    "old-setuptools": ("python3 -m pip install --no-index --force-reinstall --no-deps "
                       "/usr/share/python-wheels/setuptools-*.whl", "package setuptools",
                       "66.1.1"),
}


def library(folder: Path, gencodes: list[str]) -> None:
    source = folder / "k.cu"
    source.write_text(KERNEL)
    args = [a for g in gencodes for a in ("-gencode", g)]
    subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", *args, "-o",
                    str(folder / "libkernels.so"), str(source)], check=True, timeout=300)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Iterator[Workspace]:
    ws = make_workspace(tmp_path_factory.mktemp("verify"), registry)
    (ws.root / "templates" / "broken.Dockerfile.j2").write_text(TEMPLATE)
    for name, gencodes in (("sm75", ["arch=compute_75,code=sm_75"]),
                           ("good", ["arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90",
                                     "arch=compute_90,code=compute_90"])):
        (ws.root / "kernels" / name).mkdir(parents=True)
        library(ws.root / "kernels" / name, gencodes)
    text = ws.manifest.read_text().replace(
        "[cache]", '[gpu]\narch_list = ["8.0", "9.0"]\nptx = true\ntargets = ["A100", "H100"]'
        "\n\n[cache]")
    for name, (command, _, _) in BREAKAGES.items():
        text += (f'\n[tiers.{name}]\nparent = "base"\ntemplate = "broken.Dockerfile.j2"\n'
                 f"build_args = {{ BREAK = {json.dumps(command)} }}\n")
    text += ('\n[tiers.wrong-version]\nparent = "base"\ntemplate = "broken.Dockerfile.j2"\n'
             'build_args = { BREAK = "true" }\nverify = { packages = { teamlib = "==0.2" } }\n')
    for name in ("sm75", "good"):
        text += (f'\n[tiers.arch-{name}]\nparent = "base"\ntemplate = "broken.Dockerfile.j2"\n'
                 f'context = ["kernels/{name}/libkernels.so"]\nbuild_args = {{ BREAK = "true" }}'
                 '\nverify = { cuda_libraries = ["/opt/kernels/*.so"] }\n')
    ws.manifest.write_text(text)
    assert ws.doit("promote:base").returncode == 0
    yield ws


def verify_report(ws: Workspace, tier: str) -> dict[str, object]:
    data = json.loads((ws.root / "build" / "default" / tier / "verify.json").read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("tier", sorted(BREAKAGES))
def test_breakage_is_caught_by_name_and_not_promoted(ws: Workspace, tier: str) -> None:
    _, check, evidence = BREAKAGES[tier]
    result = ws.doit(f"promote:{tier}")
    text = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"FAIL {check}:" in text and evidence in text
    assert "latest" not in ws.registry.tags(f"quickstart/{tier}")
    report = verify_report(ws, tier)
    assert report["passed"] is False
    assert any(c["name"] == check and c["status"] == "fail"
               for c in report["checks"])  # type: ignore[attr-defined]


def test_wrong_package_version_is_caught(ws: Workspace) -> None:
    result = ws.doit("promote:wrong-version")
    assert result.returncode != 0
    assert "FAIL package teamlib: expected ==0.2; got 0.1.0" in result.stdout + result.stderr
    assert "latest" not in ws.registry.tags("quickstart/wrong-version")


def test_missing_promised_arch_is_caught(ws: Workspace) -> None:
    result = ws.doit("promote:arch-sm75")
    text = result.stdout + result.stderr
    assert result.returncode != 0
    assert "FAIL archs in libkernels.so" in text and "missing SASS 8.0, SASS 9.0, PTX 9.0" in text
    assert "FAIL runs on A100" in text and "sm_80 has neither compatible SASS nor PTX" in text
    assert "latest" not in ws.registry.tags("quickstart/arch-sm75")


def test_healthy_library_passes_and_is_promoted(ws: Workspace) -> None:
    result = ws.doit("promote:arch-good")
    assert result.returncode == 0
    report = verify_report(ws, "arch-good")
    assert report["passed"] is True
    assert report["gpu"] == "not checked: no GPU: the Docker daemon has no nvidia runtime"
    assert "latest" in ws.registry.tags("quickstart/arch-good")
