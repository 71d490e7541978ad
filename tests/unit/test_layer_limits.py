"""The largest layer a registry takes: where the limit comes from, the check verify makes,
and the line that names the layer, the step that made it and the fix."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from build_graph.manifest.expectation import Expectation
from build_graph.oci.layer_limits import (
    GB,
    LayerLimit,
    known_limit,
    layer_steps,
    over,
    problem,
    step_text,
)
from build_graph.plan.plan import plan
from build_graph.verify.checks import check_layers
from build_graph.verify.probe_output import ProbeOutput
from tests.helpers import MINIMAL, load_text, one_error


@pytest.mark.parametrize(
    ("registry", "size"),
    [
        ("ghcr.io/team/stack", 10 * GB),
        ("GHCR.IO/team", 10 * GB),
        ("us-central1-docker.pkg.dev/project/repo", 9_900_000_000),
        ("127.0.0.1:5000/demo", None),
        ("notghcr.io/team", None),  # a host that only ends like one is not it
        ("ghcr.io.example.com/team", None),
        ("docker.pkg.dev.example.com/x", None),
    ],
)
def test_a_known_registry_has_its_published_limit(registry: str, size: int | None) -> None:
    found = known_limit(registry)
    assert (found.size if found else None) == size


def test_max_size_in_layers_sets_the_limit_and_no_hash(tmp_path: Path) -> None:
    plain = load_text(tmp_path, MINIMAL)
    assert plain.layer_limit is None  # a loopback registry: no known limit
    limited = load_text(tmp_path, MINIMAL + '\n[layers]\nmax_size = "2G"\n')
    assert limited.layer_limit == LayerLimit(2 << 30, "[layers] max_size")
    [before], [after] = plan(plain), plan(limited)
    assert before.content_hash == after.content_hash  # a limit is not an input
    assert after.expect.max_layer == limited.layer_limit
    on_ghcr = load_text(tmp_path, MINIMAL.replace("127.0.0.1:5000/demo", "ghcr.io/team/demo"))
    assert on_ghcr.layer_limit == LayerLimit(10 * GB, "ghcr.io's limit")


def test_a_max_size_that_is_no_size_is_a_keyed_error(tmp_path: Path) -> None:
    message = one_error(
        tmp_path, MINIMAL + '\n[layers]\nmax_size = "ten gigs"\n', "layers.max_size"
    )
    assert "'ten gigs' is not a size" in message and "9G" in message


def test_the_problem_names_each_layer_past_the_limit_its_step_and_the_fix() -> None:
    limit = LayerLimit(10 * GB, "ghcr.io's limit")
    sizes = [30_000_000, 12_300_000_000, 5_000_000, 10 * GB]
    steps = ["ADD rootfs.tar /", "RUN /bin/sh -c pip install torch  # big", "COPY x /", "RUN y"]
    assert over(sizes, limit) == [(1, 12_300_000_000)]  # at the limit is within it
    line = problem(sizes, limit, steps)
    assert line.startswith("layer 2 of 4 is 12.3 GB compressed, made by `RUN pip install torch")
    assert "at most 10.0 GB per layer (ghcr.io's limit)" in line
    assert "Split the step that makes it" in line and "[layers] max_size" in line
    assert "\n" not in line


def test_a_step_reads_as_its_command() -> None:
    buildkit = "RUN |3 A= B=x C=1 /bin/sh -c pip install torch \\\n  && rm -rf /tmp/x # buildkit"
    assert step_text(buildkit) == "RUN pip install torch \\ && rm -rf /tmp/x"
    assert step_text("COPY wheels/ /tmp/wheels/ # buildkit") == "COPY wheels/ /tmp/wheels/"
    assert step_text("RUN |2 A=1 notanarg /bin/sh -c x") == "RUN |2 A=1 notanarg x"
    assert step_text("x" * 100, 10) == "xxxxxxx..."


def test_steps_come_from_the_history_entries_that_made_a_layer() -> None:
    config = {
        "history": [
            {"created_by": "ADD file:abc in /"},
            {"created_by": "ENV A=1", "empty_layer": True},
            {"created_by": "RUN make"},
            "not an entry",
            {"comment": "buildkit.exporter"},
        ]
    }
    assert layer_steps(config) == ["ADD file:abc in /", "RUN make", ""]
    assert layer_steps({"history": "nope"}) == [] and layer_steps([1, 2]) == []


def want_with(limit: LayerLimit | None) -> Expectation:
    base = Expectation(
        python=None, conda=False, single_python=False, pip_check=False, packages={}, cuda=None
    )
    return replace(base, max_layer=limit)


def test_verify_passes_fails_or_says_not_checked() -> None:
    limit = LayerLimit(1000, "[layers] max_size")
    want = want_with(limit)
    [ok] = check_layers(want, ProbeOutput(layers=[{"size": n} for n in (10, 900, 20)]))
    assert (ok.status, ok.actual) == ("pass", "largest: layer 2 of 3, 0.9 kB")
    [bad] = check_layers(want, ProbeOutput(layers=[{"size": 10}, {"size": 2500}]))
    assert bad.status == "fail" and bad.actual.startswith("layer 2 of 2 is 2.5 kB compressed")
    assert bad.expected == "<= 1.0 kB per layer ([layers] max_size)"
    [unread] = check_layers(want, ProbeOutput())
    assert unread.status == "not checked"
    assert check_layers(want_with(None), ProbeOutput(layers=[{"size": 5}])) == []


def test_verify_says_the_layers_in_one_line() -> None:
    from build_graph.stages.image_layers import line

    layers = [
        {"size": 50_900_000, "step": "ADD rootfs.tar /", "shared": True},
        {"size": 5_000_000, "step": "", "shared": False},
        {"size": 13_300_000, "step": "RUN pip install fastext", "shared": False},
    ]
    assert line(layers) == (
        "3 layers, 69.2 MB compressed; the largest: 1 (50.9 MB, ADD rootfs.tar /); "
        "adds over its parent 2 layers, 18.3 MB"
    )
    root = [{**layer, "shared": None} for layer in layers]
    assert "adds over" not in line(root) and line([]) == "no layers"


def test_a_limit_above_the_registrys_own_is_a_note(tmp_path: Path) -> None:
    text = MINIMAL.replace("127.0.0.1:5000/demo", "ghcr.io:443/team/demo")
    stack = load_text(tmp_path, text + '\n[layers]\nmax_size = "10G"\n')  # 10 GiB
    assert stack.layer_limit == LayerLimit(10 << 30, "[layers] max_size")
    [note] = [n for n in stack.notes if "layers.max_size" in n]
    assert "10.7 GB (binary units), more than 10.0 GB per layer (ghcr.io's limit)" in note
    assert known_limit("ghcr.io:443/team") == LayerLimit(10 * GB, "ghcr.io's limit")
