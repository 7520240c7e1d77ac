"""Audit of ranking and plotting degenerate results (evaluator/query.py, evaluator/plot.py, `evaluator query`,
`evaluator plot`): a dataset of one point, every point infeasible, every value NaN, every value tied, infinite times
(a routing that cannot deliver), a throughput ranked larger first against a time ranked smaller first, a filter
that leaves nothing, a group-by with one group, figures of one point, of nothing, of one x value.

The dataset is a real sweep run here through the library (a 4x4 torus, two routings, 16 tasks that fit and 20
that do not, two placement seeds, two link bandwidths); the degenerate ones are it with values replaced, as a
routing that cannot deliver (+inf), a point without bytes (NaN throughput) or an all-infeasible grid would give.
References are computed here from the raw arrays with NumPy: a row is a feasible entry whose value is finite (or
+inf for a throughput); rows are sorted best first in the metric's direction; values equal within 1e-9 relative
share a rank. Required: the reference's answer, or one line naming the field, the value and what is allowed -- no
traceback, no empty output without a note, NaN and an infinite time never ranked or drawn as a value.

Defects found (2026-12-07): an empty ranking (every point infeasible, every value NaN, a --where that leaves
only infeasible points) was a bare empty DataFrame in the library, and `evaluator query` said "the dataset's
'reason' variable says why each point has none" for feasible points whose value is NaN (their reason is empty);
`evaluator plot` said the same of them; a figure's infinite values (a time that cannot be delivered, an infinite
throughput) vanished in silence (matplotlib drops them); a panel whose points were all infeasible was drawn empty
without a word; an infinite draw made NumPy print "RuntimeWarning: invalid value encountered in subtract" on
stderr under `evaluator plot`; an empty last panel made a numeric x axis "(grouped by size, ascending)".
"""

from __future__ import annotations

import contextlib
import copy
import io
import itertools
import math
import warnings

import numpy as np
import pytest

import evaluator.plot as EP
from evaluator import cli, config
from evaluator.config import RayConfig
from evaluator.errors import ConfigError
from evaluator.query import best, open_results
from evaluator.sweep import plan_sweep, run_sweep

BASE = ["topology=torus", "topology.dims=[4,4]", "traffic=random_permutation", "placement=random",
        "traffic.bytes=1000000"]
AXES = {"routing": ["dor", "torus_adaptive"], "traffic.n_tasks": [16, 20], "placement.seed": [0, 1],
        "topology.link_bandwidth": [1e10, 2e10]}
BW = "topology.link_bandwidth"
TIE = 1e-9
ALL = ["routing", "traffic.n_tasks", "placement.seed", BW]


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    out = tmp_path_factory.mktemp("degenerate")
    plan = plan_sweep(config.compose_sweep([*BASE, f"sweep.output_dir={out}"], axes=copy.deepcopy(AXES)))
    ds = open_results(run_sweep(plan, RayConfig(enabled=False), progress=False))
    assert int(ds["feasible"].sum()) == 8 and not ds["feasible"].sel({"traffic.n_tasks": "20"}).any()
    return {"ds": ds, "dir": out}


def _fit(ds):
    """The dataset's feasible half (16 tasks), every point feasible."""
    return ds.sel({"traffic.n_tasks": ["16"]})


def _with(ds, name, values, **at):
    out = ds.copy(deep=True)
    if at:
        out[name].loc[at] = values
    else:
        out[name][...] = values
    return out


# ---------------------------------------------------------------- references

def ref_rows(ds, metric, smaller):
    """(labels, value) of every feasible entry with a value, C order."""
    da = ds[metric]
    dims = list(da.dims)
    feas = ds["feasible"].transpose(*dims).values
    vals = da.transpose(*dims).values.astype(float)
    rows = []
    for idx in itertools.product(*[range(n) for n in vals.shape]):
        v = float(vals[idx])
        if feas[idx] and (math.isfinite(v) or (v == math.inf and not smaller)):
            rows.append((tuple(str(ds[d].values[i]) for d, i in zip(dims, idx)), v))
    return rows


def ref_rank(rows, smaller):
    rows = sorted(rows, key=lambda r: r[1] if smaller else -r[1])
    ranks, start = [], 0
    for i, (_, v) in enumerate(rows):
        a = rows[start][1]
        if i and (v == a or (math.isfinite(v) and math.isfinite(a) and abs(v - a) <= TIE * max(abs(v), abs(a)))):
            ranks.append(start + 1)
        else:
            start = i
            ranks.append(i + 1)
    return rows, ranks


def check_table(table, ds, metric, smaller):
    rows, ranks = ref_rank(ref_rows(ds, metric, smaller), smaller)
    dims = list(ds[metric].dims)
    assert list(table.index) == ranks, (table, ranks)
    got = {tuple(str(r[d]) for d in dims): (rk, float(r[metric])) for rk, (_, r) in zip(table.index, table.iterrows())}
    assert got == {lab: (rk, v) for (lab, v), rk in zip(rows, ranks)}
    best_value = rows[0][1]
    assert not math.isnan(float(table[metric].iloc[0])) and float(table[metric].iloc[0]) == best_value
    if smaller:
        assert math.isfinite(float(table[metric].iloc[0]))


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    return rc, out.getvalue(), err.getvalue()


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err and "Warning" not in err, err
    return lines[0]


# ---------------------------------------------------------------- rankings

@pytest.mark.parametrize("metric,smaller", [("completion_time", True), ("throughput", False)])
def test_each_metric_ranks_in_its_own_direction(real, metric, smaller):
    ds = real["ds"]
    table = best(ds, metric)
    check_table(table, ds, metric, smaller)
    v = table[metric].to_numpy(float)
    assert (np.diff(v) >= 0).all() if smaller else (np.diff(v) <= 0).all()
    # the time's best is the throughput's best here (same bytes per point): the two orders are each other's reverse
    assert [tuple(r) for r in best(ds, "completion_time")[ALL].to_numpy()][0] == \
        [tuple(r) for r in best(ds, "throughput")[ALL].to_numpy()][0]


@pytest.mark.parametrize("metric,smaller", [("completion_time", True), ("throughput", False)])
@pytest.mark.parametrize("over", [None, ["routing"], ALL])
def test_one_point_is_its_own_ranking(real, metric, smaller, over):
    one = real["ds"].isel({d: [0] for d in ALL})
    table = best(one, metric, over=over)
    assert len(table) == 1 and list(table.index) == [1]
    assert float(table[metric].iloc[0]) == float(one[metric].values.reshape(-1)[0])
    if "ahead_by" in table:  # nothing to be ahead of
        assert math.isnan(float(table["ahead_by"].iloc[0]))


@pytest.mark.parametrize("metric", ["completion_time", "throughput"])
def test_every_value_tied_shares_rank_one_and_names_no_winner(real, metric):
    ds = _with(real["ds"], metric, 2.5e-3 if metric == "completion_time" else 4e9)
    table = best(ds, metric)
    assert list(table.index) == [1] * 8 and table.attrs["tied_ranks"] == [1]
    grouped = best(ds, metric, over=["routing"])  # each group's two routings tie: both kept, no runner-up
    assert len(grouped) == 8 and set(grouped.index) == {1}
    assert "runner_up" not in grouped or not grouped["runner_up"].astype(bool).any()
    assert "ahead_by" not in grouped or grouped["ahead_by"].isna().all()


def test_an_infinite_time_is_never_ranked_and_is_noted(real):
    ds = _fit(real["ds"])
    t = ds["completion_time"].values
    at = dict(zip(ds["completion_time"].dims, np.unravel_index(np.argmin(t), t.shape)))
    lab = {d: str(ds[d].values[i]) for d, i in at.items()}
    bad = _with(ds, "completion_time", np.inf, **lab)
    table = best(bad, "completion_time")
    check_table(table, bad, "completion_time", True)
    assert len(table) == 7 and np.isfinite(table["completion_time"]).all()
    count, examples, _ = table.attrs["unranked"]
    assert count == 1 and all(f"{d}={v}" in examples[0] for d, v in lab.items())
    grouped = best(bad, "completion_time", over=["routing"])  # its group's best is the other routing
    row = grouped[(grouped["placement.seed"] == lab["placement.seed"]) & (grouped[BW] == lab[BW])]
    other = ds["completion_time"].sel({k: v for k, v in lab.items() if k != "routing"}).drop_sel(
        routing=lab["routing"])
    assert row["routing"].tolist() == [str(other["routing"].values[0])]
    assert float(row["completion_time"].iloc[0]) == float(other.values[0])
    drawn = best(bad, "completion_time", draws=["placement.seed"])  # its point's mean is not a value
    assert (drawn["completion_time_mean"].to_numpy(float) < np.inf).all() and len(drawn) == 3


def test_an_infinite_throughput_is_the_best_and_nan_never(real):
    ds = _fit(real["ds"])
    thr = ds["throughput"].values
    worst = dict(zip(ds["throughput"].dims, np.unravel_index(np.argmin(thr), thr.shape)))
    top = dict(zip(ds["throughput"].dims, np.unravel_index(np.argmax(thr), thr.shape)))
    lab = lambda at: {d: str(ds[d].values[i]) for d, i in at.items()}  # noqa: E731
    bad = _with(_with(ds, "throughput", np.inf, **lab(worst)), "throughput", np.nan, **lab(top))
    table = best(bad, "throughput")
    check_table(table, bad, "throughput", False)
    assert float(table["throughput"].iloc[0]) == np.inf
    assert all(str(table.iloc[0][d]) == v for d, v in lab(worst).items())
    assert table.attrs["unranked"][0] == 1 and not table["throughput"].isna().any()


def test_a_group_by_with_one_group_keeps_its_best_row(real):
    ds = real["ds"].sel({"routing": ["torus_adaptive"], "traffic.n_tasks": ["16"]})
    table = best(ds, "completion_time", over=["placement.seed", BW])
    rows, _ = ref_rank(ref_rows(ds, "completion_time", True), True)
    assert len(table) == 1 and float(table["completion_time"].iloc[0]) == rows[0][1]
    assert float(table["ahead_by"].iloc[0]) == pytest.approx(rows[1][1] / rows[0][1], rel=1e-12)


@pytest.mark.parametrize("case", ["infeasible", "nan", "where", "draws"])
def test_an_empty_ranking_says_why(real, case):
    ds = real["ds"]
    nan = _with(ds, "completion_time", np.nan)
    kw = {"infeasible": (_with(ds, "feasible", False), {}), "nan": (nan, {}),
          "where": (ds, {"where": {"traffic.n_tasks": "20"}}),
          "draws": (_with(ds, "completion_time", np.inf, **{"placement.seed": "0"}), {"draws": ["placement.seed"]})}
    data, extra = kw[case]
    table = best(data, "completion_time", **extra)
    assert len(table) == 0
    note = table.attrs.get("empty", "")
    assert "completion_time" in note, table.attrs
    if case == "infeasible":
        assert "16 are infeasible" in note
    if case == "nan":  # feasible points with NaN are not "infeasible"
        assert "8 are infeasible" in note and "8 feasible ones" in note and "NaN" in note
    if case == "where":
        assert "8 points that where keeps, 8 are infeasible" in note
    if case == "draws":
        assert "placement.seed" in note


# ---------------------------------------------------------------- the query command

def test_query_command_on_nothing_to_rank_says_why_in_one_line(real):
    path = real["dir"] / "nan.nc"
    _with(real["ds"], "completion_time", np.nan).to_netcdf(path, engine="h5netcdf")
    rc, out, err = run_cli(["query", str(path)])
    line = one_error_line(err)
    assert rc == 2 and out == ""
    assert "completion_time" in line and "8 are infeasible" in line and "8 feasible ones" in line, line
    assert "routing=dor, traffic.n_tasks=16" in line  # names the valueless points, not only the reason variable


def test_query_command_of_one_point(real):
    path = real["dir"] / "one.nc"
    one = real["ds"].isel({d: [0] for d in ALL})
    one.to_netcdf(path, engine="h5netcdf")
    rc, out, err = run_cli(["query", str(path), "--best", "throughput", "--over", "routing", "--si"])
    assert rc == 0 and "Traceback" not in err and "Warning" not in err, err
    rows = [ln for ln in out.splitlines() if ln.startswith("1 ")]
    assert len(rows) == 1 and repr(float(one["throughput"].values.reshape(-1)[0])) in rows[0], out


# ---------------------------------------------------------------- plots

@pytest.fixture
def figures(monkeypatch):
    drawn = []
    monkeypatch.setattr(EP, "save_figure", lambda fig, path, dpi=120: (drawn.append(fig), path)[1])
    return drawn


def _series(fig):
    """{(panel title, label): (x, y)} of every drawn line, and the figure's title."""
    got = {}
    for ax in fig.axes:
        for ln in ax.get_lines():
            if not ln.get_label().startswith("_"):
                got[(ax.get_title(), ln.get_label())] = (list(ln.get_xdata()), np.asarray(ln.get_ydata(), float))
    return got, fig._suptitle.get_text() if fig._suptitle else ""


def test_plot_of_one_point_draws_that_point(real, figures, tmp_path):
    one = real["ds"].isel({d: [0] for d in ALL})
    EP.plot_sweep(one, tmp_path / "one.png", "completion_time", x="routing")
    ys = [np.asarray(ln.get_ydata(), float) for ln in figures[0].axes[0].get_lines()]  # (no series: no label)
    want = float(one["completion_time"].values.reshape(-1)[0]) / 1e-6  # the point (and its one draw's tail dash)
    assert ys and all(y.tolist() == [pytest.approx(want, rel=1e-12)] for y in ys), (ys, want)
    label = figures[0].axes[0].get_ylabel()
    assert "[us]" in label


def test_plot_of_a_single_x_value_and_its_best_over_an_axis(real, figures, tmp_path):
    ds = _fit(real["ds"]).sel({"placement.seed": ["1"]})
    dor = ds["completion_time"].sel(routing="dor").squeeze()
    fast = str(dor[BW].values[int(np.argmin(dor.values))])
    bad = _with(ds, "completion_time", np.inf, **{BW: fast, "routing": "dor"})  # dor cannot deliver at its best
    bad = _with(bad, "completion_time", np.nan, **{BW: fast, "routing": "torus_adaptive"})
    EP.plot_sweep(bad, tmp_path / "x.png", "completion_time", x="placement.seed", series="routing")
    got, title = _series(figures[-1])
    raw = bad["completion_time"].values  # reference: the best (smallest) finite time over the bandwidths
    for (_, label), (xs, y) in got.items():
        r = list(bad["routing"].values).index(label.split("=", 1)[1])
        vals = raw[r].reshape(-1)
        want = float(np.min(vals[np.isfinite(vals)]))
        assert xs == [1.0] and y.tolist() == [pytest.approx(want / 1e-6, rel=1e-12)], (label, y, want)
    assert f"the best over {BW}" in title and "not drawn" not in title


def test_plot_of_nothing_is_one_error_naming_why(real, tmp_path):
    path = real["dir"] / "nan_plot.nc"
    _with(real["ds"], "completion_time", np.nan).to_netcdf(path, engine="h5netcdf")
    out_png = tmp_path / "none.png"
    rc, out, err = run_cli(["plot", str(path), "--out", str(out_png)])
    line = one_error_line(err)
    assert rc == 2 and not out_png.exists()
    assert "--metric" in line and "'completion_time'" in line and "8 are infeasible" in line and \
        "8 feasible ones have a NaN" in line, line
    with pytest.raises(ConfigError, match="16 are infeasible"):
        EP.plot_sweep(_with(real["ds"], "feasible", False), tmp_path / "n.png", "completion_time")


@pytest.mark.parametrize("metric", ["completion_time", "throughput"])
def test_plot_says_which_infinite_values_it_leaves_out(real, figures, tmp_path, metric):
    ds = real["ds"]
    bad = _with(ds, metric, np.inf, **{"routing": "dor", "traffic.n_tasks": "16", "placement.seed": "0"})
    EP.plot_sweep(bad, tmp_path / "inf.png", metric, x="placement.seed", series="routing")
    got, title = _series(figures[-1])
    ys = np.concatenate([y for _, y in got.values()])
    assert not np.isinf(ys).any()
    assert "not drawn: 1 point whose value is +inf (routing=dor, traffic.n_tasks=16,\nplacement.seed=0)" in title, title


def test_an_infeasible_panel_says_so_and_an_infinite_draw_prints_no_warning(real, figures, tmp_path):
    bad = _with(real["ds"], "completion_time", np.inf, **{"routing": "dor", "placement.seed": "0"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (numpy's "invalid value encountered in subtract" reached stderr)
        EP.plot_sweep(bad, tmp_path / "p.png", "completion_time", x=BW, series="routing")
    fig = figures[-1]
    texts = {ax.get_title(): [t.get_text() for t in ax.texts] for ax in fig.axes}
    assert texts["traffic.n_tasks = 20"] and "no point with a value of completion_time" in \
        texts["traffic.n_tasks = 20"][0], texts
    assert texts["traffic.n_tasks = 16"] == []
    assert fig.axes[-1].get_xlabel() == BW  # a numeric axis, not "grouped by size" (the empty last panel said so)
    got, title = _series(fig)
    t = real["ds"]["completion_time"].sel({"traffic.n_tasks": "16", "routing": "torus_adaptive"})
    xs, y = got[("traffic.n_tasks = 16", "routing=torus_adaptive")]
    want = t.mean("placement.seed").values / 1e-6
    assert y.tolist() == pytest.approx(list(want), rel=1e-12)  # the routing that delivers: its mean
    assert not np.isfinite(got[("traffic.n_tasks = 16", "routing=dor")][1]).any()  # an inf draw: left out
