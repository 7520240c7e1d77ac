"""Terminal tables in readable units (ms, GB/s, MB), checked against hand-computed values; datasets stay SI."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from evaluator import cli
from evaluator.display import display_unit, format_number, format_table, format_timing, format_value
from evaluator.query import open_results


@pytest.mark.parametrize("x,text", [
    (2.8953, "2.895"),
    (-2.5, "-2.500"),
    (0.0123456, "0.01235"),
    (123.456, "123.5"),
    (12345.6, "12346"),  # the whole part is kept
    (9.99996, "10.00"),  # rounds up to one more integer digit: still 4 significant digits
    (999.96, "1000"),
    (1.0, "1.000"),
    (0.0, "0"),
    (1.234e-5, "1.234e-05"),
    (5.5e9, "5.500e+09"),
    (math.nan, "nan"),
    (math.inf, "inf"),
])
def test_format_number(x, text):
    assert format_number(x) == text


def test_format_number_significant_digits():
    assert format_number(2.8953, sig=3) == "2.90" and format_number(123.456, sig=2) == "123"


@pytest.mark.parametrize("si,values,unit,factor", [
    ("s", [0.002895, 0.0029], "ms", 1e-3),
    ("s", [2.5, 0.5, 3.0], "s", 1.0),
    ("s", [1.0], "s", 1.0),
    ("s", [4.2e-7], "ns", 1e-9),  # 420 ns
    ("s", [4.2e-6], "us", 1e-6),
    ("bytes/s", [5.933458e12], "TB/s", 1e12),
    ("bytes/s", [5.794393e9, np.nan, 6e9], "GB/s", 1e9),
    ("bytes", [134_217_728.0], "MB", 1e6),
    ("bytes", [512.0], "B", 1.0),
    ("bytes", [0.0, np.nan], "B", 1.0),  # nothing to size by: the SI unit
    ("1", [2.31], "1", 1.0),
    ("furlongs", [7.0], "furlongs", 1.0),
])
def test_display_unit(si, values, unit, factor):
    assert display_unit(si, values) == (unit, factor)


def test_display_unit_follows_the_median():
    # three values in ms, one in s: ms
    assert display_unit("s", [0.002, 0.003, 0.004, 2.0]) == ("ms", 1e-3)


@pytest.mark.parametrize("x,si,text", [
    (0.002895, "s", "2.895 ms"),
    (0.0134218, "s", "13.42 ms"),
    (29.092, "s", "29.09 s"),
    (5.794393e9, "bytes/s", "5.794 GB/s"),
    (800e9, "bytes/s", "800.0 GB/s"),
    (134_217_728, "bytes", "134.2 MB"),  # 2^27 bytes = 134.217728 * 10^6
    (10_737_418_240, "bytes", "10.74 GB"),
    (2.310318, "1", "2.310"),
])
def test_format_value(x, si, text):
    assert format_value(x, si) == text


def test_format_table_units_in_headers_values_scaled_data_unchanged():
    df = pd.DataFrame({"routing": ["valiant", "minimal"], "completion_time": [0.002895, 0.003355],
                       "throughput": [5.933458e12, 5.12e12], "effective_injection_bandwidth": [5.794e9, 5.0e9],
                       "bottleneck": ["local", "local"], "mean_hops": [2.310318, 1.478],
                       "max_load_global": [41_943_040.0, 8_388_608.0], "n": [3, 4]})
    before = df.copy()
    text = format_table(df)
    pd.testing.assert_frame_equal(df, before)  # the table is formatted, not the data
    header, *rows = text.splitlines()
    # both bandwidth columns in one unit (one unit per quantity in a table): 5.933e12 B/s = 5933 GB/s
    for col in ("completion_time [ms]", "throughput [GB/s]", "effective_injection_bandwidth [GB/s]",
                "max_load_global [MB]", "mean_hops", "routing", "bottleneck"):
        assert col in header, header
    assert "mean_hops [" not in header
    assert rows[0].split() == ["0", "valiant", "2.895", "5933", "5.794", "local", "2.310", "41.94", "3"]
    assert rows[1].split() == ["1", "minimal", "3.355", "5120", "5.000", "local", "1.478", "8.389", "4"]


def test_format_timing():
    timing = {"expand_s": 0.0013, "build_s": 0.0863, "compile_s": 5.0415, "eval_s": 0.0, "assemble_s": 0.0041,
              "persist_s": 0.012, "worker_peak_rss_mb": 461.8828, "wall_s": 11.4366, "driver_peak_rss_mb": 282.625}
    assert format_timing(timing) == (
        "wall 11.44 s; driver: expand 1.300 ms, chunk files (summed over threads) 12.00 ms, dataset assembly "
        "4.100 ms; "
        "chunks (summed): build 86.30 ms, "
        "compile 5.042 s, evaluate 0 s; peak memory: driver 296.4 MB, worker 484.3 MB")  # MiB * 1.048576
    # the record's keys since 2026-12-07: bytes (the old ones above: MiB)
    assert format_timing({"driver_peak_rss_bytes": 296_353_792, "worker_peak_rss_bytes": 1_234_567_890}) == (
        "peak memory: driver 296.4 MB, worker 1235 MB")  # one unit for both
    assert format_timing({"wall_s": 2.0}) == "wall 2.000 s"
    assert format_timing({"write_s": 2.0}) == "driver: write 2.000 s"  # a record of an earlier version


SMALL = ["topology.p=2", "topology.a=4", "topology.h=2", "traffic.alpha=[16,16,16]",
         "traffic.beta=choice([4,2,2],[2,2,2])", "placement.gamma=[2,2,1]", "routing=minimal,valiant",
         "sweep.chunk_size=64",
         "ray.enabled=false", "--no-progress"]


def test_cli_tables_show_units_and_the_dataset_stays_si(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["sweep", *SMALL, f"sweep.output_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    path = out.strip().splitlines()[-1].split("dataset: ")[1]
    ds = open_results(path)
    assert ds.completion_time.attrs["units"] == "s" and ds.throughput.attrs["units"] == "bytes/s"
    timing = json.loads(ds.attrs["timing_json"])
    assert f"wall {format_value(timing['wall_s'], 's')}" in out
    lines = out.splitlines()
    header = next(ln for ln in lines if "completion_time [" in ln)
    unit = header.split("completion_time [")[1].split("]")[0]
    factor = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]
    assert "effective_injection_bandwidth [GB/s]" in header or "effective_injection_bandwidth [MB/s]" in header
    first = lines[lines.index(header) + 2].split()
    ct = ds.completion_time.where(ds.feasible).min().item()  # rank 1 is the fastest feasible point (SI: s)
    col = 1 + ds.completion_time.ndim  # rank, one label per axis, then the ranked metric
    assert first[0] == "1" and first[col] == format_number(ct / factor)

    assert cli.main(["query", path, "--best", "completion_time", "-n", "3"]) == 0
    q = capsys.readouterr().out
    assert f"completion_time [{unit}]" in q and format_number(ct / factor) in q
    assert cli.main(["query", path, "--best", "completion_time", "-n", "3", "--si"]) == 0
    q_si = capsys.readouterr().out
    assert "completion_time [s]" in q_si  # the stored SI unit named (the headers had none until 2026-12-06)
    assert float(q_si.splitlines()[2].split()[col]) == ct  # every digit


def test_format_table_takes_the_units_a_query_table_gives():
    """Per-label columns (``completion_time(a)``) get their unit from ``df.attrs["units"]``; label columns none;
    integer counts of a unit without a scale are printed as they are."""
    df = pd.DataFrame({"groups": [3, 16], "completion_time(a)": [0.002, 0.004], "bisection_links": [512, 256],
                       "throughput": [2.5e9, 1.0e9]})
    df.attrs["units"] = {"completion_time(a)": "s", "bisection_links": "links", "throughput": "bytes/s"}
    lines = format_table(df).splitlines()
    assert lines[0].split() == ["groups", "completion_time(a)", "[ms]", "bisection_links", "[links]", "throughput",
                                "[GB/s]"]
    assert lines[1].split() == ["0", "3", "2.000", "512", "2.500"]


def test_a_traffic_of_no_bytes_says_so_instead_of_nan(tmp_path, capsys):
    from evaluator import cli

    f = tmp_path / "zero.csv"
    f.write_text("src,dst,bytes\n0,1,0\n")
    assert cli.main(["eval", "traffic=file", f"traffic.path={f}", "topology=torus", "topology.dims=[4,4]",
                     "routing=dor", "placement=linear", "save=false"]) == 0
    out = capsys.readouterr().out
    assert "throughput  none: the traffic sends no bytes" in out and "nan" not in out.split("mean hops")[0], out


def test_a_traffic_that_stays_on_its_nodes_says_so_instead_of_inf(capsys):
    from evaluator import cli

    assert cli.main(["eval", "traffic=shift", "traffic.offset=0", "traffic.n_tasks=16", "placement=linear",
                     "save=false"]) == 0  # every task sends to itself
    out = capsys.readouterr().out
    assert "throughput  unbounded: every byte stays on its node" in out and "inf" not in out, out


class _Terminal:
    """A stream that says it is a terminal and keeps what is written."""

    def __init__(self, tty: bool = True):
        self.tty, self.parts = tty, []

    def isatty(self):
        return self.tty

    def write(self, s):
        self.parts.append(s)

    def flush(self):
        pass


def test_elapsed_counts_the_seconds_of_a_long_step_on_a_terminal_only():
    import time

    from evaluator.display import elapsed

    term = _Terminal()
    with elapsed("evaluating x", delay=0.2, stream=term):
        time.sleep(1.5)
    text = "".join(term.parts)
    shown = [s for s in text.split("\r") if s.strip()]
    assert shown[0] == "evaluating x: 00:00" and shown[-1] == "evaluating x: 00:01", shown
    assert text.endswith("\r") and text.split("\r")[-2].strip() == ""  # erased at the end
    quick = _Terminal()
    with elapsed("evaluating y", delay=5.0, stream=quick):
        pass
    assert quick.parts == []  # shorter than the delay: nothing
    pipe = _Terminal(tty=False)
    with pytest.raises(KeyboardInterrupt):
        with elapsed("evaluating z", delay=0.0, stream=pipe):
            time.sleep(0.3)
            raise KeyboardInterrupt  # (Ctrl-C inside goes through)
    assert pipe.parts == []  # not a terminal: nothing written


def test_the_dataset_holds_inf_where_bytes_stay_on_their_nodes_and_nan_where_none_is_sent(tmp_path):
    """README (Model notes): no byte crosses a link -> completion 0, bottleneck none, throughput inf; a traffic of
    no bytes at all -> nan (a rate of nothing is undefined). The datasets hold SI values; the display words them."""
    import xarray as xr

    f = tmp_path / "zero.csv"
    f.write_text("src,dst,bytes\n0,1,0\n")
    runs = {"zero": [f"traffic.path={f}", "traffic=file"], "self": ["traffic=shift", "traffic.offset=0",
                                                                     "traffic.n_tasks=16"]}
    got = {}
    for name, args in runs.items():
        out = tmp_path / name
        assert cli.main(["eval", *args, "topology=torus", "topology.dims=[4,4]", "routing=dor", "placement=linear",
                         f"output_dir={out}"]) == 0
        (path,) = out.glob("*.nc")
        with xr.open_dataset(path) as ds:
            got[name] = (float(ds.completion_time), str(ds.bottleneck.values),
                         float(ds.effective_injection_bandwidth))
    assert got["self"][:2] == (0.0, "none") and got["self"][2] == math.inf
    assert got["zero"][:2] == (0.0, "none") and math.isnan(got["zero"][2])


def test_progress_bar_writes_a_log_lines_not_redraws_where_stderr_is_no_terminal(monkeypatch):
    """A bar into a log (a batch job's output file, a pipe) wrote every redraw joined by carriage returns (319
    bytes of them for a 12-point sweep): it now writes plain lines, the first state, at most one line per
    LOG_INTERVAL_S however often the caller refreshes, and the last state, in ASCII."""
    import time

    from evaluator import display

    pipe = _Terminal(tty=False)
    bar = display.progress_bar(total=1000, stream=pipe, desc="demo", unit="pt", leave=False)
    for i in range(1000):
        bar.n = i + 1
        bar.set_postfix_str(f"best {i}")  # an explicit refresh each time, as the mapping search's bar does
    bar.close()
    text = "".join(pipe.parts)
    lines = text.splitlines()
    assert "\r" not in text and text.endswith("\n") and all(ln.isascii() for ln in lines), text
    assert len(lines) == 2 and lines[0].startswith("demo:   0%") and "1000/1000" in lines[1], lines
    monkeypatch.setattr(display, "LOG_INTERVAL_S", 0.05)
    slow = _Terminal(tty=False)
    for _ in display.progress_bar(range(8), stream=slow, desc="slow"):
        time.sleep(0.03)
    n = len("".join(slow.parts).splitlines())
    assert 3 <= n <= 6, slow.parts  # a line every two or so of eight 0.03 s steps, plus the first and the last


def test_progress_bar_redraws_in_place_on_a_terminal_and_writes_nothing_when_off():
    from evaluator import display

    term = _Terminal()
    with display.progress_bar(total=3, stream=term, desc="demo", leave=False) as bar:
        bar.update(3)
    assert "\r" in "".join(term.parts)  # tqdm's own bar, erased at the end
    off = _Terminal(tty=False)
    with display.progress_bar(total=3, stream=off, desc="demo", enabled=False) as bar:
        bar.update(3)
    assert off.parts == []
