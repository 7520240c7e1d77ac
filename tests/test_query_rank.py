"""`query --best` on real datasets of every command: the direction of every rankable variable, each row once and
labelled by its parameters, refusals of what cannot be ranked (issue 23, items 3 and 4).

The datasets are written by the real commands (``eval``, ``sweep``, ``schedule`` and its studies, ``tiles``,
``partitions``) on small machines. The expected best rows are computed here with NumPy from the test's own list
of larger-is-better variables, not from the metric table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from evaluator import cli, config
from evaluator.dataset import TABLE, metric, rankable, smaller_is_better
from evaluator.display import format_table
from evaluator.errors import ConfigError
from evaluator.query import best, gain, open_results
from tests.helpers import once

LARGER = {"throughput", "effective_injection_bandwidth", "routing_efficiency", "adaptive_efficiency",
          "mean_utilisation", "mean_speedup", "wait_reduction", "speedup", "speedup_links_all", "speedup_links_seq",
          "speedup_time_all", "speedup_time_seq",
          "speedup_no_bg", "network_speedup", "time_saved", "hops_reduction", "hops_reduction_minimal",
          "bisection_links", "bisection_bandwidth", "bisection_per_node", "best_links", "best_bandwidth",
          "best_per_node", "worst_links", "worst_bandwidth", "allowed_links", "allowed_bandwidth",
          "speedup_vs_first", "per_node_vs_best", "throughput_per_cost", "speedup_vs_first_holding"}
"""Variables where larger is better (this test's own list); every other rankable variable: smaller is better."""

NOT_RANKED = {"paths_per_pair", "backfilled_share", "jobs_per_s", "utilisation_quantiles", "submit", "start", "end",
              "requested_time", "nodes", "groups", "mpi_fraction", "backfilled", "reservation", "allowed",
              "n_geometries", "speedup_best_over_worst", "speedup_best_over_allowed", "shape", "blocked_link",
              "job_link_load", "background_link_rate", "link_load", "link_capacity",
              # what a network costs: its counted parts (evaluator.cost)
              "n_switches", "n_switch_ports", "n_ports_used", "n_nics", "n_electrical_cables_short",
              "n_electrical_cables_long", "n_optical_cables_short", "n_optical_cables_long", "n_transceivers",
              "n_optical_switches", "n_optical_switch_ports", "switch_radix", "first_holding_size"}
"""Numeric variables the commands write that have no direction (this test's own list)."""

TORUS = ["topology=torus", "topology.dims=[4,4]", "routing=dor"]


def _written(directory: Path) -> Path:
    files = sorted(Path(directory).rglob("*.nc"))
    assert len(files) == 1, files
    return files[0]


@pytest.fixture(scope="module")
@once
def made(tmp_path_factory) -> dict[str, Path]:
    """One dataset of every kind, written by the real commands."""
    from evaluator.config import RayConfig
    from evaluator.sweep import plan_sweep, run_sweep

    t = tmp_path_factory.mktemp("rank")
    out: dict[str, Path] = {}
    assert cli.main(["eval", *TORUS, "traffic=all_to_all", "traffic.n_tasks=16", "placement=linear", "bounds=true",
                     f"output_dir={t / 'eval'}"]) == 0
    out["eval"] = _written(t / "eval")
    assert cli.main(["eval", *TORUS, "traffic=random_pairs", "traffic.n_tasks=8", "placement=subprism",
                     "placement.task_grid=[2,4]",
                     "jobs=[{name: a, placement: {offset: [0,0]}}, {name: b, placement: {offset: [2,0]}, "
                     "traffic: {seed: 3}}]", f"output_dir={t / 'eval_jobs'}"]) == 0
    out["eval_jobs"] = _written(t / "eval_jobs")

    def sweep(name, overrides, axes):
        plan = plan_sweep(config.compose_sweep(overrides + [f"sweep.name={name}", f"sweep.output_dir={t}",
                                                            "sweep.chunk_size=16"],
                                               user_overrides=[], config_name="config", axes=axes))
        return Path(run_sweep(plan, RayConfig(enabled=False), progress=False))

    # n_tasks 32 does not fit 16 nodes one task each: infeasible points are not ranked
    out["sweep"] = sweep("rank_sweep", TORUS + ["traffic=random_permutation", "placement=random", "bounds=true"],
                         {"routing.tie": ["split", "positive"], "placement.seed": [0, 1, 2],
                          "traffic.n_tasks": [8, 16, 32]})
    out["jobs"] = sweep("rank_jobs", ["topology=torus", "topology.dims=[8,4,4]", "routing=dor",
                                      "traffic=random_pairs", "traffic.n_tasks=32", "placement=subprism",
                                      "placement.task_grid=[4,2,4]",
                                      "jobs=[{name: a, placement: {offset: [0,0,0]}}, {name: b, placement: "
                                      "{offset: [4,0,0]}, traffic: {seed: 3}}]"],
                        {"jobs.1.placement.offset": [[4, 0, 0], [4, 2, 0], [6, 2, 0]],
                         "background.fraction": [0.0, 0.2]})
    assert cli.main(["schedule", "--synthetic", "300", "--groups", "8", "--nodes-per-group", "64", "--baseline",
                     "slurm_round_robin", "--policy", "grap", "--mode-range", "64,512", "--no-progress", "--no-plot",
                     "--out", str(t / "schedule")]) == 0
    out["schedule"] = _written(t / "schedule")
    study = t / "study.yaml"
    study.write_text("name: rank_study\ntrace: {synthetic: 300, load: 0.9}\n"
                     "machines: {8x64: [8, 64], 16x64: [16, 64]}\n"
                     "runs: {grap: {policy: grap}, rr: {policy: slurm_round_robin}, any: {policy: unrestricted}}\n"
                     "workload: {enlarge: 2.0, mode_lo: 64, mode_hi: 65536, mpi_fraction: 0.3}\nseed: 0\n")
    assert cli.main(["schedule", "--study", str(study), "--no-ray", "--no-progress", "--out",
                     str(t / "study")]) == 0
    out["study"] = _written(t / "study")
    assert cli.main(["tiles", "--grid", "32,32,32", "--nodes", "4", "--tasks-per-node", "2", "--max-evaluated", "8",
                     "--baseline-grid", "16,32,32", "--no-plot", "--out", str(t / "tiles")]) == 0
    out["tiles"] = _written(t / "tiles")
    assert cli.main(["partitions", "JUQUEEN", "--size", "512", "1024", "2048", "--out", str(t / "parts"),
                     "--no-plot"]) == 0
    out["partitions"] = _written(t / "parts")
    return out


KINDS = ("eval", "eval_jobs", "sweep", "jobs", "schedule", "study", "tiles", "partitions")


def _numeric(ds: xr.Dataset) -> list[str]:
    return [str(v) for v in ds.data_vars if ds[v].dtype.kind in "fiub" and v != "feasible"]


def _values(ds: xr.Dataset, name: str) -> np.ndarray:
    """Every value of ``name`` that a ranking may show: finite, at feasible points."""
    da = ds[name]
    if "feasible" in ds:
        da = da.where(ds["feasible"])
    v = np.asarray(da.values, dtype=float).reshape(-1)
    return v[np.isfinite(v)]


@pytest.mark.parametrize("kind", KINDS)
def test_every_variable_a_command_writes_is_in_the_metric_table(made, kind):
    ds = open_results(made[kind])
    for v in _numeric(ds):
        entry = metric(v)  # KeyError: a variable the command writes has no entry
        if entry.units in ("s", "bytes", "bytes/s") and "units" in ds[v].attrs:  # what tables rescale
            assert ds[v].attrs["units"].split(" per ")[0] == entry.units, v
    per_point = [v for v in _numeric(ds) if "link" not in ds[v].dims]
    assert set(rankable(ds)) == {v for v in per_point if v not in NOT_RANKED and ds[v].dtype.kind != "b"}
    if kind not in ("schedule", "study"):  # issue 24 item 6: every variable says its unit ("" for text)
        assert [v for v in ds.data_vars if "units" not in ds[v].attrs] == []


@pytest.mark.parametrize("kind", KINDS)
def test_the_first_row_is_the_best_in_the_direction_of_every_rankable_variable(made, kind):
    ds = open_results(made[kind])
    assert rankable(ds)
    for v in rankable(ds):
        values = _values(ds, v)
        table = best(ds, v, n=0)
        assert len(table) == values.size, v  # every feasible entry once
        if not values.size:
            continue
        want = values.max() if v in LARGER else values.min()
        assert table[v].iloc[0] == want, (kind, v)
        ranked = table[v].to_numpy(dtype=float)
        assert np.all(np.diff(ranked) <= 0) if v in LARGER else np.all(np.diff(ranked) >= 0), (kind, v)
        labels = list(table.columns[:list(table.columns).index(v)])
        assert not table.duplicated(subset=labels).any() if labels else len(table) == 1, (kind, v)


def test_higher_is_better_variables_of_the_issue_rank_first_when_larger(made):
    for v in ("wait_reduction", "mean_utilisation", "mean_speedup", "routing_efficiency", "adaptive_efficiency",
              "throughput", "speedup_links_all", "speedup_time_all"):
        assert smaller_is_better(v) is False, v
    ds = open_results(made["study"])
    red = best(ds, "wait_reduction", n=0)["wait_reduction"].to_numpy()
    # against GRAP without speedups, the other policies wait less: positive reductions rank first, GRAP's 0 last
    assert red[0] == np.nanmax(ds.wait_reduction.values) > 0 and red[-1] == 0


def test_the_bound_variables_have_table_entries():
    want = {"optimal_completion_time": ("s", True), "optimal_completion_time_upper": ("s", True),
            "routing_efficiency": ("1", False), "bound_gap": ("1", True),
            "adaptive_completion_time": ("s", True), "adaptive_completion_time_upper": ("s", True),
            "adaptive_efficiency": ("1", False)}
    for name, (units, smaller) in want.items():
        assert (metric(name).units, metric(name).smaller_is_better) == (units, smaller), name
        assert metric(name).long_name


@pytest.mark.parametrize("kind,name,why", [
    ("schedule", "latency", "latency"),
    ("schedule", "backfilled_share", "without a direction"),
    ("tiles", "decomposition", "without a direction"),
    ("eval", "link_load", "per link"),
    ("sweep", "routing.tie", "coordinate"),
])
def test_a_variable_without_a_direction_is_refused_with_the_rankable_ones(made, kind, name, why, capsys):
    ds = open_results(made[kind])
    with pytest.raises(ConfigError) as err:
        best(ds, name)
    msg = str(err.value)
    assert msg.startswith(f"metric = {name!r} is invalid") and why in msg and str(rankable(ds)) in msg
    assert cli.main(["query", str(made[kind]), "--best", name]) == 2
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.strip().splitlines()) == 1 and f"--best = {name!r}" in out.err
    with pytest.raises(ConfigError, match=f"metric = {name!r}"):
        gain(ds, name, ds[rankable(ds)[0]].dims[0] if ds[rankable(ds)[0]].dims else "x", "0")


def test_query_on_an_eval_dataset(made, capsys):
    ds = open_results(made["eval"])
    table = best(ds)
    assert len(table) == 1 and table["completion_time"].iloc[0] == float(ds.completion_time)
    assert table["routing_efficiency"].iloc[0] == float(ds.routing_efficiency)
    assert cli.main(["query", str(made["eval"])]) == 0
    out = capsys.readouterr().out
    assert "completion_time [ms]" in out and "routing_efficiency" in out
    assert cli.main(["query", str(made["eval"]), "--best", "throughput"]) == 0
    assert "throughput [GB/s]" in capsys.readouterr().out


def test_a_jobs_sweep_lists_each_job_of_each_point_once_and_its_makespan_per_point(made, capsys):
    ds = open_results(made["jobs"])
    per_job = best(ds, "completion_time", n=0)
    axes = ["jobs.1.placement.offset", "background.fraction"]
    assert list(per_job.columns[:4]) == axes + ["job", "completion_time"]
    assert len(per_job) == 3 * 2 * 2 and not per_job.duplicated(subset=axes + ["job"]).any()
    for _, row in per_job.iterrows():
        sel = {"jobs.1.placement.offset": row[axes[0]], "background.fraction": row[axes[1]], "job": row["job"]}
        assert row["completion_time"] == float(ds.completion_time.sel(sel))
        assert row["makespan"] == float(ds.makespan.sel({k: sel[k] for k in axes}))
    points = best(ds, "makespan", n=0)
    assert len(points) == 3 * 2 and not points.duplicated(subset=axes).any()
    # the point's time is its slowest job's: the per-job columns show it
    np.testing.assert_array_equal(points["makespan"], points[["completion_time(a)", "completion_time(b)"]].max(axis=1))
    assert {"slowdown(a)", "slowdown(b)"} <= set(points.columns)
    text = format_table(points)
    assert "completion_time(a) [ms]" in text and "makespan [ms]" in text
    assert cli.main(["query", str(made["jobs"]), "--best", "makespan", "-n", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 + 6 + 1 and "completion_time(b) [ms]" in out[0]
    # the jobs' random pairs are one draw each (seeds 0 and 3, on no axis): the last line says so
    assert out[-1].startswith("every row is one draw of jobs.0.traffic random_pairs (seed 0) of job a; "
                              "jobs.1.traffic random_pairs (seed 3) of job b: no axis draws their seeds")
    assert len(best(ds, "slowdown", where={"job": "b"}, n=0)) == 6


def test_a_jobs_eval_ranks_its_jobs_and_shows_them_next_to_the_makespan(made):
    ds = open_results(made["eval_jobs"])
    jobs = best(ds, "completion_time", n=0)
    assert sorted(jobs["job"]) == ["a", "b"] and "job_traffic" in jobs.columns
    one = best(ds, "makespan")
    times = one[["completion_time(a)", "completion_time(b)"]].to_numpy()
    assert len(one) == 1 and one["makespan"].iloc[0] == times.max()


def test_a_schedule_lists_each_run_and_job_once(made, capsys):
    ds = open_results(made["schedule"])
    runs = best(ds, "mean_wait", n=0)
    assert sorted(runs["run"]) == sorted(ds.run.values) and "job" not in runs.columns
    jobs = best(ds, "wait", n=0)
    assert len(jobs) == ds.sizes["run"] * ds.sizes["job"] and not jobs.duplicated(subset=["run", "job"]).any()
    assert "mean_wait" not in jobs.columns  # a run's means are not repeated on its 300 jobs' rows
    assert cli.main(["query", str(made["schedule"]), "--best", "wait", "-n", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()[2:]
    rows = [ln.split() for ln in lines if not ln.startswith("shown: ")]  # (the note of the rows -n left out)
    assert len(rows) == 20 and len({(r[1], r[2]) for r in rows}) == 20
    assert lines[-1].startswith(f"shown: the first 20 of {len(jobs)} rows")
    months = best(ds, "wait_reduction", n=0)
    assert len(months) == ds.sizes["run"] * ds.sizes["month"]
    assert not months.duplicated(subset=["run", "month"]).any()


def test_tiles_rows_are_labelled_by_decomposition_tile_and_router_block(made, capsys):
    ds = open_results(made["tiles"])
    table = best(ds, "time_all", n=0)
    assert list(table.columns[:4]) == ["decomposition", "tile", "router_block", "time_all"]
    assert "candidate" not in table.columns and len(table) == ds.sizes["candidate"]
    assert not table.duplicated(subset=["decomposition", "tile", "router_block"]).any()
    for _, row in table.head(10).iterrows():
        c = ((ds.decomposition == row["decomposition"]) & (ds.tile == row["tile"])
             & (ds.router_block == row["router_block"]))
        assert ds.time_all.where(c, drop=True).item() == row["time_all"]
    first = table.iloc[0]
    picked = best(ds, "time_all", where={"decomposition": first["decomposition"]}, n=0)
    assert set(picked["decomposition"]) == {first["decomposition"]}
    assert cli.main(["query", str(made["tiles"]), "--best", "speedup_time_all", "-n", "3"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:4] == ["decomposition", "tile", "router_block", "speedup_time_all"]


def test_the_metric_table_is_one_table():
    import evaluator.query as Q

    assert set(Q.MAXIMIZE) == {n for n, m in TABLE.items() if m.smaller_is_better is False}
    assert set(Q.MINIMIZE) == {n for n, m in TABLE.items() if m.smaller_is_better}
    assert metric("max_load_torus_dim0").smaller_is_better is True
    assert metric("tdn_valiant_time_bg").units == "s" and metric("rdn_minimal_hops").units == "1"


def test_plots_reduce_in_the_table_direction_and_refuse_variables_without_one(made, tmp_path):
    from evaluator.plot import plot_sweep

    ds = open_results(made["study"])
    assert plot_sweep(ds, tmp_path / "u.png", "mean_utilisation", x="run", series="mix").stat().st_size > 0
    with pytest.raises(ConfigError, match="metric = 'backfilled_share'"):
        plot_sweep(ds, tmp_path / "b.png", "backfilled_share", x="run", series=None)
