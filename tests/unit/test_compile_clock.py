"""The compile clock: ninja logs read at the door, the history file, and the estimates."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest

from build_graph.ccache.archive import HISTORY
from build_graph.stages.compile_clock import (
    Clock,
    History,
    describe,
    format_duration,
    read_ninja_log,
)

CPU = "caffe2/CMakeFiles/torch_cpu.dir/__/aten/src/ATen"
NINJA_LOG_V5 = dedent(f"""\
    # ninja log v5
    0\t1520\t1714000000\t{CPU}/native/Activation.cpp.o\t5f3d2a9c1b7e8d40
    3\t726003\t1714000726\t{CPU}/native/cuda/Reduce.cu.o\t9e0c11aa2b3c4d5e
    10\t2210\t1714000002\t{CPU}/native/Loss.cpp.o\ta1b2c3d4e5f60718
    not\ta\tnumber\t{CPU}/bad.o\t0
    5\t9
    726010\t742000\t1714000742\tlib/libtorch_cpu.so\t77aa88bb99cc00dd
    0\t2000\t1714001000\t{CPU}/native/Activation.cpp.o\t5f3d2a9c1b7e8d41
    """)


def test_a_ninja_log_v5_gives_each_outputs_seconds_the_last_entry_winning() -> None:
    assert read_ninja_log(NINJA_LOG_V5) == {
        f"{CPU}/native/Activation.cpp.o": 2.0,  # the second entry, appended by a rebuild
        f"{CPU}/native/cuda/Reduce.cu.o": 726.0,
        f"{CPU}/native/Loss.cpp.o": 2.2,
        "lib/libtorch_cpu.so": 15.99,
    }


@pytest.mark.parametrize("version", ["6", "7"])
def test_ninja_logs_v6_and_v7_read_the_same_columns(version: str) -> None:
    text = dedent(f"""\
        # ninja log v{version}
        100\t350\t1714000000123456789\tcaffe2/x.cpp.o\t1f2e3d4c5b6a7980
        200\t100\t1714000000123456789\tcaffe2/backwards.cpp.o\t1f2e3d4c5b6a7981
        """)
    assert read_ninja_log(text) == {"caffe2/x.cpp.o": 0.25}  # an end before its start: skipped


@pytest.mark.parametrize(
    "text",
    [
        NINJA_LOG_V5.replace("v5", "v4"),
        NINJA_LOG_V5.replace("v5", "v8"),
        NINJA_LOG_V5.split("\n", 1)[1],  # no header at all
        "",
        "\x00\xff garbage\n1\t2\t3\t4\t5\n",
    ],
)
def test_an_unknown_ninja_log_version_or_garbage_gives_nothing(text: str) -> None:
    assert read_ninja_log(text) == {}


def test_a_history_survives_a_save_and_load_and_leaves_no_temp_file(tmp_path: Path) -> None:
    history = History(compile_s=10_512.5, units=7410, weights={"a.o": 726.0, "b.o": 1.5})
    path = tmp_path / "ccache" / HISTORY
    history.save(path)
    assert History.load(path) == history
    assert json.loads(path.read_text())["weights"] == {"a.o": 726.0, "b.o": 1.5}
    assert [p.name for p in path.parent.iterdir()] == [HISTORY]


GOOD = {"compile_s": 100, "units": 3, "weights": {"a.o": 1}}


@pytest.mark.parametrize(
    "text",
    [
        None,  # no file
        '{"compile_s": 100, "units": ',  # truncated
        "[1, 2, 3]",
        json.dumps({**GOOD, "compile_s": "100"}),
        json.dumps({**GOOD, "compile_s": -1}),
        json.dumps({**GOOD, "compile_s": True}),
        '{"compile_s": NaN, "units": 3, "weights": {}}',
        json.dumps({**GOOD, "units": 2.5}),
        json.dumps({**GOOD, "units": -3}),
        json.dumps({**GOOD, "weights": [["a.o", 1]]}),
        json.dumps({**GOOD, "weights": {"a.o": -1}}),
        json.dumps({**GOOD, "weights": {"a.o": "1"}}),
        json.dumps({"compile_s": 100, "units": 3}),
    ],
)
def test_a_missing_or_malformed_history_loads_as_none(tmp_path: Path, text: str | None) -> None:
    path = tmp_path / HISTORY
    if text is not None:
        path.write_text(text)
    assert History.load(path) is None


def test_the_good_history_of_the_malformed_cases_does_load(tmp_path: Path) -> None:
    (tmp_path / HISTORY).write_text(json.dumps(GOOD))
    assert History.load(tmp_path / HISTORY) == History(100.0, 3, {"a.o": 1.0})


SMALL = [f"caffe2/CMakeFiles/torch_cpu.dir/small_{i}.cpp.o" for i in range(50)]
BIG = "caffe2/CMakeFiles/torch_cuda.dir/Reduce.cu.o"
WEIGHTS = {BIG: 726.0, **dict.fromkeys(SMALL, 2.0)}  # 826 s in all


def building(output: str, n: int) -> str:
    return f"[{n}/51] Building CXX object {output}"


def test_a_726_second_unit_weighs_as_much_as_it_took_last_time() -> None:
    after_the_big_one = Clock(History(1000.0, 51, WEIGHTS), started=0.0)
    for n, output in enumerate([BIG, SMALL[0]], start=1):
        after_the_big_one.ninja_line(building(output, n))
    before_it = Clock(History(1000.0, 51, WEIGHTS), started=0.0)
    for n, output in enumerate(SMALL[:25], start=1):
        before_it.ninja_line(building(output, n))
    assert after_the_big_one.fraction() == pytest.approx(
        (728 / 826, "weighted by the last compile")
    )
    assert before_it.fraction() == pytest.approx((50 / 826, "weighted by the last compile"))
    # ninja's counts alone say the opposite: 2/51 against 25/51


def test_outputs_match_by_path_suffix_and_count_once() -> None:
    clock = Clock(History(1000.0, 0, {"lib/libtorch.so": 30.0, "x.o": 10.0}), started=0.0)
    clock.ninja_line("[1/9] Linking CXX shared library /src/xlib/libtorch.so")  # not a folder
    assert clock.fraction() == (1 / 9, "by ninja's counts")
    clock.ninja_line("[2/9] Linking CXX shared library /src/pytorch/build/lib/libtorch.so")
    clock.ninja_line("[3/9] Linking CXX shared library /src/pytorch/build/lib/libtorch.so")
    assert clock.fraction() == pytest.approx((0.75, "weighted by the last compile"))


def test_lines_that_are_not_ninja_status_lines_are_ignored() -> None:
    clock = Clock(None, started=0.0)
    for text in ["FAILED: x.o", "ninja: build stopped", "[3/x] y", "[1/2]", "x [1/2] y"]:
        clock.ninja_line(text)
    assert clock.fraction() is None


def test_without_a_weight_match_ninja_counts_are_the_fraction() -> None:
    clock = Clock(History(1000.0, 0, {"elsewhere.o": 5.0}), started=0.0)
    clock.ninja_line("[30/120] Building CXX object new.o")
    assert clock.fraction() == (0.25, "by ninja's counts")
    assert clock.left(now=100.0) == (300.0, "by ninja's counts")  # the rate is this run's


def test_ccache_units_are_the_fraction_without_ninja_until_more_ran_than_last_time() -> None:
    clock = Clock(History(3600.0, units=200, weights={}), started=0.0)
    clock.units_done(50)
    assert clock.fraction() == (0.25, "by units, as many as last time")
    clock.units_done(260)  # more than last time: the count says nothing, the time does
    assert clock.fraction() is None
    assert clock.left(now=600.0) == (3000.0, "by the last compile's time")
    clock.ninja_line("[1/4] Building C object a.o")
    assert clock.fraction() == (0.25, "by ninja's counts")  # ninja's counts outrank units


def test_units_without_a_count_last_time_fall_back_to_the_last_time() -> None:
    clock = Clock(History(3600.0, units=0, weights={}), started=100.0)
    clock.units_done(50)
    assert clock.fraction() is None
    assert clock.left(now=1000.0) == (2700.0, "by the last compile's time")
    assert clock.line(now=3800.0) == "1h01m elapsed, past the last compile's 1h00m"


def test_when_every_unit_is_done_nothing_of_them_is_left() -> None:
    clock = Clock(History(100.0, 0, {"a.o": 5.0}), started=0.0)
    clock.ninja_line("[1/1] Linking a.o")
    assert clock.left(now=999.0) == (0.0, "weighted by the last compile")


def test_a_long_unit_counts_down_while_it_runs() -> None:
    clock = Clock(History(826.0, 51, WEIGHTS), started=0.0)
    for n, output in enumerate(SMALL, start=1):  # 100 of 826 s, done at 100 s
        clock.ninja_line(building(output, n), at=100.0)
    assert clock.left(now=100.0) == pytest.approx((726.0, "weighted by the last compile"))
    assert clock.left(now=500.0) == pytest.approx((326.0, "weighted by the last compile"))
    assert clock.left(now=900.0) == pytest.approx((0.0, "weighted by the last compile"))


def test_before_a_tenth_is_done_last_times_speed_is_used() -> None:
    """A warm cache's first units are hits that take next to nothing, and the elapsed time
    holds the container's start: this run's rate from them says hours for minutes."""
    clock = Clock(History(1000.0, 51, WEIGHTS), started=0.0)
    for n, output in enumerate(SMALL[:25], start=1):  # 50 of 826 s: 6%
        clock.ninja_line(building(output, n))
    left = clock.left(now=5.0)
    assert left == pytest.approx(((826 - 50) * 1000 / 826, "weighted by the last compile"))
    # ninja ran units 8 at a time last time: its wall time was an eighth of the units' time
    parallel = Clock(History(826.0 / 8, 51, WEIGHTS), started=0.0)
    parallel.ninja_line(building(SMALL[0], 1))
    assert parallel.left(now=1.0) == pytest.approx((824 / 8, "weighted by the last compile"))
    # from a tenth on, this run's own speed: 776 of 826 s done in 364 s, about half as long
    clock.ninja_line(building(BIG, 26))
    assert clock.left(now=364.0) == pytest.approx(
        (364 / (776 / 826) - 364, "weighted by the last compile")
    )


def test_the_line_says_what_is_left_and_on_what_basis() -> None:
    assert Clock(None, started=10.0).line(now=55.0) == "45s elapsed"
    clock = Clock(History(3000.0, 51, WEIGHTS), started=0.0)
    clock.ninja_line(building(BIG, 1))  # 726 of 826 done after 723 s: 100 s more
    assert (
        clock.line(now=723.0) == "12m03s elapsed, about 1m40s left (weighted by the last compile)"
    )


def test_the_record_judges_the_estimate_taken_a_quarter_of_the_way() -> None:
    clock = Clock(History(4000.0, 51, WEIGHTS), started=1000.0)
    clock.line(now=1100.0)  # by time, before a quarter: not the one judged
    clock.ninja_line(building(BIG, 1))
    clock.left(now=1000.0 + 726.0 * 1.1)  # 798.6 s: total 908.6 s
    clock.line(now=2000.0)  # 1000 s, later than the first at or after a quarter
    record = clock.record(finished=1000.0 + 950.0)
    assert record == {
        "compile_s": 950.0,
        "estimate_s": pytest.approx(908.6, abs=0.1),
        "estimated_at_s": 798.6,
        "basis": "weighted by the last compile",
        "off": pytest.approx((908.6 - 950) / 950, abs=1e-3),
    }
    assert describe(record) == "compiled in 15m50s; estimated 15m09s at 13m19s (4% under)"


def test_a_run_without_estimates_records_and_describes_only_its_time() -> None:
    clock = Clock(None, started=0.0)
    clock.line(now=100.0)
    record = clock.record(finished=725.0)
    assert record["estimate_s"] is None and record["off"] is None
    assert describe(record) == "compiled in 12m05s"


@pytest.mark.parametrize(
    ("off", "judged"), [(0.123, "12% over"), (-0.04, "4% under"), (0.004, "within 1%")]
)
def test_describe_says_over_or_under(off: float, judged: str) -> None:
    record: dict[str, object] = {"compile_s": 60, "estimate_s": 60, "estimated_at_s": 15}
    assert (
        describe({**record, "off": off}) == f"compiled in 1m00s; estimated 1m00s at 15s ({judged})"
    )


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5.0, "0s"),
        (0.0, "0s"),
        (45.0, "45s"),
        (59.4, "59s"),
        (59.6, "1m00s"),
        (723.0, "12m03s"),
        (3599.0, "59m59s"),
        (3600.0, "1h00m"),
        (10_959.0, "3h02m"),
        (float("nan"), "0s"),
    ],
)
def test_format_duration(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown


def test_pip_s_indented_lines_and_a_custom_ninja_status_are_read() -> None:
    """PyTorch's compile runs ninja under `pip wheel -v`, which indents the build's output;
    NINJA_STATUS may add fields."""
    clock = Clock(History(1000.0, 51, WEIGHTS), started=0.0)
    clock.ninja_line(f"  [1/51] Building CXX object {BIG}")
    assert clock.counts == (1, 51)
    assert clock.fraction() == pytest.approx((726 / 826, "weighted by the last compile"))
    custom = Clock(None, started=0.0)
    custom.ninja_line("[7/9 12.3s] CXX a.o")
    assert custom.counts == (7, 9)


def test_a_line_that_prints_the_command_is_matched_by_its_output() -> None:
    """torch.utils.cpp_extension's ninja prints the command: the output follows -o."""
    clock = Clock(History(100.0, 2, {"vision.o": 30.0, "nms.o": 10.0}), started=0.0)
    clock.ninja_line("[1/2] c++ -MMD -MF vision.o.d -c /src/vision.cpp -o vision.o -O2 -fPIC")
    assert clock.fraction() == pytest.approx((0.75, "weighted by the last compile"))


@pytest.mark.parametrize(
    "text",
    [
        '{"compile_s": 1' + "0" * 400 + ', "units": 1, "weights": {}}',
        "[" * 100_000 + "]" * 100_000,
        '{"compile_s": 10, "units": 1, "weights": {"a.o": 1e308, "b.o": 1e308}}',
        '{"compile_s": 1e308, "units": 1, "weights": {}}',
    ],
    ids=["overflowing-int", "deep-nesting", "huge-weights", "huge-time"],
)
def test_a_hostile_history_from_the_archive_is_no_history(tmp_path: Path, text: str) -> None:
    path = tmp_path / HISTORY
    path.write_text(text)
    assert History.load(path) is None


def test_a_history_too_big_or_not_a_file_is_not_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text(json.dumps(GOOD) + " " * (16 << 20))
    assert History.load(big) is None
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text(json.dumps(GOOD))
    assert History.load(link) is None


def test_a_ninja_log_with_absurd_times_keeps_only_sane_ones() -> None:
    text = (
        "# ninja log v5\n0\t" + "9" * 400 + "\t0\ta.o\th\n0\t90000000\t0\tb.o\th\n0\t5\t0\tc.o\th\n"
    )
    assert read_ninja_log(text) == {"c.o": 0.005}
