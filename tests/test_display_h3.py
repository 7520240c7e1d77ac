"""Issue 24 item 6, one display convention: decimal SI in every table, summary and log line, one unit per quantity
in a table, no Python reprs; datasets keep SI units with a ``units`` attribute on every variable.

Expected texts are worked out by hand from the SI values (1 GB = 10^9 bytes, 1 h = 3600 s), not produced by the
code under test."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from evaluator import cli
from evaluator.dataset import METRIC_NAMES, metric, results_dataset, with_units
from evaluator.display import summary_lines
from evaluator.display import format_table, shared_unit
from evaluator.errors import ConfigError
from evaluator.query import open_results

BINARY = re.compile(r"\b[KMGT]iB\b")
SCI = re.compile(r"\d\.?\d*e[+-]\d\d")
REPR = re.compile(r"\w+Config\(|\w+\(kind=")


def _header(text: str) -> list[str]:
    return re.findall(r"(\S+) \[([^\]]+)\]", text.splitlines()[0])


def test_times_side_by_side_share_one_unit():
    """A query table had ``optimal [us]`` beside ``completion [ms]``: both now in ms (13.4 ms and 0.9 ms)."""
    df = pd.DataFrame({"completion_time": [0.0134, 0.0150], "optimal_completion_time": [0.0009, 0.0010],
                       "routing_efficiency": [0.0009 / 0.0134, 0.0010 / 0.0150]})
    text = format_table(df)
    assert dict(_header(text)) == {"completion_time": "ms", "optimal_completion_time": "ms"}
    assert text.splitlines()[1].split() == ["0", "13.40", "0.9000", "0.06716"]
    assert text.splitlines()[2].split() == ["1", "15.00", "1.000", "0.06667"]


def test_long_times_in_hours_and_every_time_column_in_one_unit():
    """A schedule's makespan was printed as 174705 s: hours from 1 h on, the waits in the same unit."""
    df = pd.DataFrame({"mean_wait": [4870.0, 6160.0], "median_wait": [441.0, 0.0], "makespan": [174705.0, 215749.0]})
    text = format_table(df)
    assert dict(_header(text)) == {"mean_wait": "h", "median_wait": "h", "makespan": "h"}
    # 4870 / 3600 = 1.3528, 441 / 3600 = 0.1225, 174705 / 3600 = 48.529
    assert text.splitlines()[1].split() == ["0", "1.353", "0.1225", "48.53"]


def test_per_label_columns_share_the_unit_of_their_quantity():
    df = pd.DataFrame({"makespan": [0.0025], "completion_time(a)": [0.0025], "completion_time(b)": [0.0004]})
    df.attrs["units"] = {"makespan": "s", "completion_time(a)": "s", "completion_time(b)": "s"}
    text = format_table(df)
    assert {u for _, u in _header(text)} == {"ms"}
    assert text.splitlines()[1].split() == ["0", "2.500", "2.500", "0.4000"]


def test_shared_unit_meets_in_the_middle_and_ignores_empty_columns():
    # a machine's 5.9 TB/s beside a task's 5.8 GB/s: GB/s (geometric mean of the medians ~ 185 GB/s)
    assert shared_unit("bytes/s", [[5.9e12], [5.8e9]]) == ("GB/s", 1e9)
    assert shared_unit("s", [[np.nan], [0.0], [2e-6, 4e-6]]) == ("us", 1e-6)
    assert shared_unit("s", [[7200.0]]) == ("h", 3600.0)
    assert shared_unit("s", [[3599.0]]) == ("s", 1.0)
    assert shared_unit("links", [[512]]) == ("links", 1.0)


def _one_point(**extra) -> xr.Dataset:
    values = {"completion_time": 1.0, "throughput": 1.024e12, "effective_injection_bandwidth": 1.0e9,
              "mean_hops": 1.5, "total_bytes": 1.024e12, "off_node_bytes": 1.0e12}
    ds = results_dataset((), (), {k: np.asarray(values[k]) for k in METRIC_NAMES},
                         {"global": np.asarray(134_217_728.0), "local": np.asarray(41_943_040.0)},
                         np.asarray("global"), attrs={"topology": "DF(4,8,4,33)", "routing": "minimal"})
    for k, v in extra.items():
        ds[k] = ((), v, metric(k).attrs)
    return ds


def test_eval_summary_is_decimal_si():
    """953.674 GiB moved in 1 s was shown next to 1024 GB/s; now 1.024 TB next to 1024 GB/s."""
    lines = summary_lines(_one_point())
    text = "\n".join(lines)
    assert not BINARY.search(text) and not SCI.search(text), text
    assert "bytes       1.024 TB (1,024,000,000,000 B)" in lines
    assert "completion  1.000 s   bottleneck: global" in lines
    assert "throughput  1024 GB/s aggregate, 1.000 GB/s per task" in lines
    assert "max_load_global       134.2 MB" in lines and "max_load_local        41.94 MB" in lines


def test_eval_summary_times_share_one_unit():
    ds = _one_point(optimal_completion_time=0.0009, optimal_completion_time_upper=0.00091, routing_efficiency=0.9)
    ds["completion_time"] = ((), 0.0134, metric("completion_time").attrs)
    ds.attrs.update({"bound_method": "edge", "bound_solver": "highs", "bound_gap": 0.011})
    lines = summary_lines(ds)
    assert "completion  13.40 ms   bottleneck: global" in lines
    bound = next(line for line in lines if line.startswith("optimal"))
    assert ">= 0.9000 ms" in bound and "feasible 0.9100 ms" in bound and "routing_efficiency 0.9000" in bound


def test_several_jobs_table_names_its_unit():
    from evaluator.jobs import job_summary_lines

    ds = xr.Dataset(
        {"completion_time": ("job", [0.002983, 0.002236]), "completion_time_alone": ("job", [0.00288, 0.002133]),
         "slowdown": ("job", [1.036, 1.048]), "bottleneck_alone": ("job", ["torus-dim1", "torus-dim1"]),
         "interference": (("job", "other_job"), [[1.0, 1.036], [1.048, 1.0]]), "makespan": ((), 0.002983)},
        coords={"job": ["tall", "mover"], "other_job": ["tall", "mover"], "job_tasks": ("job", [2048, 1024]),
                "job_traffic": ("job", ["random pairs(seed=1)", "random pairs(seed=2)"])},
        attrs={"topology": "BlueWaters", "background": "none"})
    lines = job_summary_lines(ds)
    assert lines[1].split()[:5] == ["job", "tasks", "alone", "[ms]", "together"]
    assert lines[2].split()[:5] == ["tall", "2048", "2.880", "2.983", "1.036"]
    assert "makespan    2.983 ms" in lines
    assert "worst pair  mover slowed 1.048x by tall alone" in lines


def test_with_units_gives_every_variable_a_unit_from_the_table():
    ds = xr.Dataset({"completion_time": ("x", [1.0]), "feasible": ("x", [True]), "reason": ("x", [""]),
                     "bottleneck": ("x", ["local"]), "blocked_link": ("x", [-1]),
                     "bisection_bandwidth": ("x", [1.0], {"units": "bytes/s per direction"})})
    with_units(ds)
    assert {v: ds[v].attrs["units"] for v in ds.data_vars} == {
        "completion_time": "s", "feasible": "1", "reason": "", "bottleneck": "", "blocked_link": "1",
        "bisection_bandwidth": "bytes/s per direction"}  # a unit already given is kept
    assert ds.completion_time.attrs["long_name"]


def _written(directory: Path) -> list[Path]:
    return sorted(p for p in Path(directory).rglob("*.nc"))


def test_partitions_print_decimal_si_ascending_and_write_units(tmp_path, capsys):
    """``bisection B/s 2.048e+12`` is now ``bisection [GB/s] 2048``: 1024 links x 2 GB/s per direction."""
    assert cli.main(["partitions", "Mira", "--size", "4096", "512", "--no-plot", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert not SCI.search(out) and not BINARY.search(out), out
    assert "link bandwidth 2.000, 2.000, 2.000, 2.000, 2.000 GB/s per direction" in out
    assert out.index("P = 512 nodes") < out.index("P = 4096 nodes")  # ascending, whatever the order given
    row = next(line for line in out.splitlines() if line.split()[:1] == ["2x2x2x1"])
    assert row.split()[3:6] == ["1024", "2048", "0.5000"]  # links, 1024 x 2e9 B/s, 2.048e12 / 4096 nodes
    assert "bisection [GB/s]" in out and "per node [GB/s]" in out
    (path,) = _written(tmp_path)
    ds = open_results(path)
    assert list(ds["size"].values) == [512, 4096]
    assert all("units" in ds[v].attrs for v in ds.data_vars), [v for v in ds.data_vars if "units" not in ds[v].attrs]


def test_slabs_and_comparison_write_units(tmp_path, capsys):
    assert cli.main(["partitions", "BlueWaters", "--slabs", "--no-plot", "--out", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert not SCI.search(out) and "[0, " not in out, out
    assert cli.main(["partitions", "JUQUEEN", "--compare", "JUQUEEN-54", "--size", "2048", "1024", "--no-plot",
                     "--out", str(tmp_path / "c")]) == 0
    for path in _written(tmp_path):
        ds = open_results(path)
        assert all("units" in ds[v].attrs for v in ds.data_vars), (path, [v for v in ds.data_vars
                                                                         if "units" not in ds[v].attrs])


def test_tiles_prints_one_time_unit_and_decimal_bandwidths(tmp_path, capsys):
    """``links 9.375e+09,4.688e+09,9.375e+09 B/s, injection 6.4e+09 B/s`` is now in GB/s; the times in one unit
    named in the headers, each value its SI time over that unit."""
    assert cli.main(["tiles", "--grid", "32,32,32", "--nodes", "4", "--tasks-per-node", "2", "--max-evaluated", "4",
                     "--top", "3", "--no-plot", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert not SCI.search(out) and not BINARY.search(out), out
    assert "links 9.375, 4.688, 9.375 GB/s, injection 6.400 GB/s per node" in out  # BlueWaters' Gemini links
    head = next(line for line in out.splitlines() if line.lstrip().startswith("rank"))
    units = set(re.findall(r"\[(\w+)\]", head))
    assert len(units) == 1, head
    factor = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[units.pop()]
    (path,) = _written(tmp_path)
    ds = open_results(path)
    first = next(line for line in out.splitlines() if line.split()[:1] in (["1"], ["1="]))  # (1=: tied)
    assert float(first.split()[6]) == pytest.approx(float(ds.time_all[0]) / factor, rel=1e-3)
    assert all("units" in ds[v].attrs for v in ds.data_vars)


def test_optimize_names_the_network_and_takes_n():
    from evaluator.cli.optimize import _describe, main
    from evaluator.topology._dragonfly import DragonflyConfig

    assert _describe(DragonflyConfig(p=4, a=8, h=4)) == "DF(4,8,4,33)"  # g = a*h + 1
    assert not REPR.search(_describe(DragonflyConfig(p=2, a=4, h=2)))
    # -n is --top: a bad value is refused as --top before anything runs; a good one gets past parsing
    with pytest.raises(ConfigError, match="--top"):
        main(["--tasks", "8", "--alpha", "8,8,8", "-n", "many"])
    with pytest.raises(ConfigError, match="--tasks"):  # 7 does not divide 8^3: refused after -n 3 was parsed
        main(["--tasks", "7", "--alpha", "8,8,8", "-n", "3"])
