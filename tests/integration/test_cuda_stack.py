"""The CUDA example (examples/cuda) end to end, as a user runs it: CUDA 13.0 from NVIDIA's
PyPI wheels, our own extension and torch-scatter's released sdist compiled with ccache in
front of gcc, g++ and nvcc, the compiler cache in a GCS bucket (the real client against the
emulator), verify reading the freshly compiled fatbins, promotion. Then a fresh runner
(workspace wiped) compiles again from the bucket's cache.

Two arch sets, the same code: CI compiles one arch, sm_75 as SASS and PTX (`-m cuda`: the
T4 runs its own SASS, the RTX 5090 JIT-compiles the PTX, so both of verify's ways a GPU runs
code are checked), in about half the nvcc time of two archs, and our two projects only:
torch-scatter's sdist, about 10 of the module's 20 minutes here, goes through the same setuptools
and nvcc-shim path as teamkernels (an archive source, fetched and checked on the host, is
tried in test_sources). The example's seven archs with torch-scatter (`-m cuda_full`, about
30 minutes) is the promise as shipped, run by hand, its figures in docs/cuda-example.md.
The fatbin reader, the arch check and the cache do the same work for one arch as for seven:
what seven adds is nvcc's time. The reader itself is tried on
libraries nvcc makes for sm_75 to sm_120, variants and PTX alone (tests/unit/test_fatbin.py).
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.helpers import REPO, summary_rows
from tests.support.gcs import GcsEmulator
from tests.support.registry import Registry
from tests.support.workspace import Run, Workspace, output_of

BUCKET = "team-ccache"


@dataclass(frozen=True)
class Archs:
    """An arch list for [gpu] and the GPUs it must run on, as verify reports them, and
    whether torch-scatter's sdist is compiled too."""

    sass: tuple[str, ...]  # in the order the report lists them (as strings sort)
    ptx: str
    gpus: tuple[str, ...]
    scatter: bool = True

    def edit(self, ws: Workspace) -> None:
        shipped = 'arch_list = ["7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"]'
        ws.edit(shipped, f"arch_list = {json.dumps(sorted(self.sass, key=float))}")
        targets = 'targets = ["T4", "A100", "L4", "H100", "B200", "RTX 5090"]'
        ws.edit(targets, f"targets = {json.dumps(list(self.gpus))}")
        if not self.scatter:  # its source, its verify pin, its imports and its smoke test
            text = ws.manifest.read_text()
            text = re.sub(r', torch-scatter = "https://[^"]+"', "", text)
            text = text.replace(', torch-scatter = "=={torch_scatter}"', "")
            text = text.replace(
                "import torch, teamkernels, torch_scatter;", "import torch, teamkernels;"
            )
            text = re.sub(r'\n  "python3 -c \'import torch, torch_scatter;[^\n]*', "", text)
            text = text.replace(', "/usr/local/lib/python3*/dist-packages/torch_scatter/*.so"', "")
            left = ('torch-scatter = "', "torch_scatter/", "torch_scatter;", "torch_scatter.")
            assert not [x for x in left if x in text], text
            ws.manifest.write_text(text)

    @property
    def libraries(self) -> set[str]:
        return set(LIBRARIES) - (set() if self.scatter else set(SCATTER))

    @property
    def modules(self) -> tuple[str, ...]:
        return ("torch", "teamcuda", "teamkernels") + (("torch_scatter",) if self.scatter else ())


# The oldest arch CUDA 13 compiles, as SASS and PTX: the T4 runs the SASS, Blackwell's
# RTX 5090 the PTX (JIT); one nvcc pass per unit where two archs took two.
CI = Archs(("7.5",), "7.5", ("T4", "RTX 5090"), scatter=False)
SHIPPED = Archs(
    ("10.0", "12.0", "7.5", "8.0", "8.6", "8.9", "9.0"),
    "12.0",
    ("T4", "A100", "L4", "H100", "B200", "RTX 5090"),
)
# teamkernels' extension, torch-scatter's CUDA ops, and teamcuda's CMake-built library.
SCATTER = ("_scatter_cuda.so", "_segment_csr_cuda.so", "_segment_coo_cuda.so")
LIBRARIES = ("_C.abi3.so", *SCATTER, "libteamcuda.so")
HOST_ONLY = ("_version_cuda.so",)  # torch-scatter's version query: no device code


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(CI, id="1-arch", marks=pytest.mark.cuda),
        pytest.param(SHIPPED, id="7-archs", marks=pytest.mark.cuda_full),
    ],
)
def archs(request: pytest.FixtureRequest) -> Archs:
    assert isinstance(request.param, Archs)
    return request.param


@pytest.fixture(scope="module")
def ws(
    tmp_path_factory: pytest.TempPathFactory, registry: Registry, gcs: GcsEmulator, archs: Archs
) -> Iterator[Workspace]:
    root = tmp_path_factory.mktemp("cuda") / "cuda"
    shutil.copytree(REPO / "examples" / "cuda", root, ignore=shutil.ignore_patterns("build"))
    ws = Workspace(root, registry)
    ws.edit('registry = "127.0.0.1:5000/cuda"', f'registry = "{registry.address}/cuda"')
    ws.edit('max_size = "4G"', f'url = "gs://{BUCKET}/cuda"\nmax_size = "4G"')
    archs.edit(ws)
    yield ws


@pytest.fixture(scope="module")
def cold(ws: Workspace, gcs: GcsEmulator) -> Run:
    """The first run on an empty machine: the cold compile, its image verified and promoted.
    A cold seven-arch compile is 16 min on an idle 2-core machine and half again as long on
    a busy one: the whole run gets 50 min before it is called hung."""
    return ws.doit(env={"STORAGE_EMULATOR_HOST": gcs.url}, timeout=3000)


def compile_stats(ws: Workspace) -> dict[str, Any]:
    data = json.loads((ws.root / "build" / "default" / "kernels" / "ccache-stats.json").read_text())
    assert isinstance(data, dict)
    return data


def wheel_libraries(ws: Workspace) -> dict[str, int]:
    """Each compiled library in the wheels, by CRC: what a warm compile must reproduce."""
    found = {}
    for wheel in (ws.root / "build" / "default" / "kernels" / "wheels").glob("*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            found.update(
                {i.filename: i.CRC for i in archive.infolist() if i.filename.endswith(".so")}
            )
    return found


@pytest.mark.timeout(3300)
def test_the_cuda_stack_builds_verifies_and_promotes(
    ws: Workspace, gcs: GcsEmulator, cold: Run, archs: Archs
) -> None:
    result = cold
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-5000:]
    assert "latest" in ws.registry.tags("cuda/kernels")

    stats = compile_stats(ws)
    assert stats["stats"]["misses"] > 0 and stats["transfer"]["saved"].startswith("saved")
    assert [b.name for b in gcs.client().list_blobs(BUCKET, prefix="cuda/cuda/kernels/")]
    first = wheel_libraries(ws)
    host_only = set(HOST_ONLY) if archs.scatter else set()
    assert {name.rsplit("/", 1)[-1] for name in first} == archs.libraries | host_only

    report = json.loads((ws.root / "build" / "default" / "kernels" / "verify.json").read_text())
    assert report["passed"] is True
    checks = {c["name"]: c for c in report["checks"]}
    for library in sorted(archs.libraries):  # every promised arch as SASS, PTX of the newest
        check = checks[f"archs in {library}"]
        assert check["status"] == "pass", check
        assert check["actual"] == f"SASS {', '.join(archs.sass)}; PTX {archs.ptx}", check
    for gpu in archs.gpus:
        assert checks[f"runs on {gpu}"]["status"] == "pass"
    if "12.0" not in archs.sass:  # the RTX 5090 runs the PTX, and the report says so
        assert "JIT-compile PTX for" in checks["runs on RTX 5090"]["actual"], checks
    for module in archs.modules:
        assert checks[f"import {module}"]["status"] == "pass"
    assert checks["torch CUDA"]["actual"] == "13.0"
    assert checks["GPU kernel launch"]["status"] == "not checked"
    assert all(c["status"] == "pass" for n, c in checks.items() if n.startswith("smoke: "))

    # The row the CI page shows.
    row = summary_rows((ws.root / "build" / "summary.md").read_text())["kernels"]
    assert row["ran"] == "render, compile, build, push, verify, promote", row
    assert " misses (" in row["compiler cache"] and re.search(r" [MG]B sent \(", row["pushed"]), row
    # 2.9 GB: amounts past a gigabyte read in GB (oci/layer_limits.amount)
    # the example's layers are zstd ([layers]), Debian's base layer keeps its gzip
    built = r"[\d.]+ [MG]B image \(1 gzip, \d+ zstd layers\) in [\d.]+ s"
    assert re.fullmatch(built, row["built"]), row
    assert row["verify"].startswith("passed ("), row
    assert "; GPU not checked: " in row["verify"] and row["digest"] == ws.registry.digest(
        "cuda/kernels", "latest"
    )

    image = f"{ws.registry.address}/cuda/kernels:latest"
    found = output_of(image, ["sh", "-c", "command -v gcc g++ cc nvcc ccache || true"])
    assert found.strip() == "", f"compilers in the runtime image: {found}"


@pytest.mark.timeout(3300)
def test_a_fresh_runner_compiles_from_the_buckets_cache(
    ws: Workspace, gcs: GcsEmulator, cold: Run
) -> None:
    """Needs the cold run (the `cold` fixture, made here if this test runs alone)."""
    assert cold.returncode == 0, (cold.stdout + cold.stderr)[-5000:]
    first = wheel_libraries(ws)
    build = ws.root / "build"
    shutil.rmtree(build / "ccache", ignore_errors=True)
    shutil.rmtree(build / "sources", ignore_errors=True)
    shutil.rmtree(build / "default" / "kernels" / "wheels", ignore_errors=True)
    # -a: the kernels image is in the registry, which makes its compile up to date; a new
    # runner that must compile (a changed tier, an image gone) is what this stands for.
    result = ws.doit("-a", "compile:kernels", env={"STORAGE_EMULATOR_HOST": gcs.url}, timeout=3000)
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    assert "compiler cache: restored cuda/kernels/" in result.stdout + result.stderr
    stats = compile_stats(ws)
    assert stats["transfer"]["restored_from"] is not None
    assert stats["stats"]["hit_rate"] >= 0.9, stats  # nvcc's units too: most of the work
    row = summary_rows((ws.root / "build" / "summary.md").read_text())["kernels"]
    assert "compile" in row["ran"].split(", ") and " hits / " in row["compiler cache"], row
    assert wheel_libraries(ws) == first  # the same device code, byte for byte
