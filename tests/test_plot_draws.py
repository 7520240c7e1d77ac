"""`evaluator plot` over random draws (hashed ECMP's ``routing.seed``, a random placement's or traffic's seed):
each point is the draws' mean, with a band from the smallest to the largest draw and the tail on the bad side
dotted, and a point with an infeasible draw is left out, as ``evaluator query --draws`` summarises them. Before,
the seeds were averaged over the feasible draws only (one-sided) and nothing showed their spread.

The references are NumPy's mean, quantile, max and min of the dataset's own values; the figure is caught where it
would be written and its matplotlib artists read (tests/test_plots_h3.py's way), not its pixels.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import xarray as xr

import evaluator.plot as EP
from evaluator import cli
from evaluator.errors import ConfigError
from evaluator.plot import plot_sweep
from evaluator.query import draw_summary, open_results
from tests.test_plots_h3 import figures  # noqa: F401  (the fixture: the figures drawn, nothing written)

SEEDS = 5
LABELS = ["4x4x2", "8x4x4", "8x8x8"]


def _dataset(x: str = "traffic.beta", labels=LABELS, infeasible=(0, 1, 3)) -> xr.Dataset:
    """Completion times (s) on routing x ``x`` x routing.seed, one draw infeasible (routing, label, seed)."""
    rng = np.random.default_rng(3)
    t = rng.uniform(1e-3, 5e-3, size=(2, len(labels), SEEDS))
    ok = np.ones(t.shape, bool)
    if infeasible is not None:
        ok[infeasible] = False
        t[infeasible] = np.inf
    return xr.Dataset({"completion_time": (("routing", x, "routing.seed"), t, {"units": "s"}),
                       "feasible": (("routing", x, "routing.seed"), ok)},
                      coords={"routing": ["minimal", "valiant"], x: labels, "routing.seed": np.arange(SEEDS)})


def _data_lines(ax):
    return [ln for ln in ax.get_lines() if ln.get_transform() == ax.transData and ln.get_linestyle() != ":"
            and ln.get_marker() != "_"]


def _bars(bar) -> np.ndarray:
    """(bottom, top) of each bar of a ``vlines`` collection; NaN for a category without one (matplotlib leaves
    an empty segment where a value is NaN)."""
    return np.array([[s[0][1], s[1][1]] if len(s) else [np.nan, np.nan] for s in bar.get_segments()])


def _expected(t: np.ndarray, q: float = 0.95):
    """NumPy's mean, tail, max and min over the last axis; NaN where a draw is not finite."""
    ok = np.isfinite(t).all(axis=-1)
    out = [np.mean(t, -1), np.quantile(t, q, axis=-1), t.max(-1), t.min(-1)]
    return [np.where(ok, v, np.nan) for v in out]


def test_categories_get_the_mean_a_bar_from_smallest_to_largest_and_the_tail(figures, tmp_path):
    ds = _dataset()
    plot_sweep(ds, tmp_path / "a.png", x="traffic.beta")
    (ax,) = figures[0].axes
    t = ds["completion_time"].where(ds["feasible"]).values * 1e3  # ms, as the axis shows
    mean, tail, hi, lo = _expected(t)
    lines = _data_lines(ax)
    assert [ln.get_label() for ln in lines] == ["routing=minimal", "routing=valiant"]
    for r, ln in enumerate(lines):
        np.testing.assert_allclose(np.asarray(ln.get_ydata(), float), mean[r], rtol=1e-12)
    assert np.isnan(lines[0].get_ydata()[1])  # the point with an infeasible draw is left out, not averaged
    bars = ax.collections
    assert len(bars) == 2
    for r, bar in enumerate(bars):
        got = _bars(bar)
        want = np.stack([lo[r], hi[r]], axis=1)
        np.testing.assert_allclose(got, want, rtol=1e-12)  # none where left out
    tails = [ln for ln in ax.get_lines() if ln.get_marker() == "_"]
    for r, ln in enumerate(tails):
        np.testing.assert_allclose(np.asarray(ln.get_ydata(), float), tail[r], rtol=1e-12)
    title = figures[0]._suptitle.get_text().replace("\n", " ")
    assert f"the mean over routing.seed ({SEEDS} draws" in title and "95th percentile" in title
    assert "infeasible draw left out" in title


def test_the_plotted_summary_is_query_draws_summary(figures, tmp_path):
    """One definition of a summary over draws: the plot's mean, tail, largest and smallest are
    ``draw_summary``'s (``evaluator query --draws``)."""
    ds = _dataset()
    plot_sweep(ds, tmp_path / "a.png", x="traffic.beta")
    (ax,) = figures[0].axes
    s = draw_summary(ds, ["routing.seed"], "completion_time")
    for r, ln in enumerate(_data_lines(ax)):
        np.testing.assert_allclose(np.asarray(ln.get_ydata(), float),
                                   s["completion_time_mean"].isel(routing=r).values * 1e3, rtol=1e-12)
    tails = [ln for ln in ax.get_lines() if ln.get_marker() == "_"]
    for r, ln in enumerate(tails):
        np.testing.assert_allclose(np.asarray(ln.get_ydata(), float),
                                   s["completion_time_p95"].isel(routing=r).values * 1e3, rtol=1e-12)


def test_a_numeric_axis_gets_a_shaded_band_and_a_dotted_tail(figures, tmp_path):
    ds = _dataset("traffic.n_tasks", ["64", "128", "256"], infeasible=None)
    plot_sweep(ds, tmp_path / "n.png", x="traffic.n_tasks", series="routing")
    (ax,) = figures[0].axes
    t = ds["completion_time"].values * 1e3
    mean, tail, hi, lo = _expected(t)
    for r, ln in enumerate(_data_lines(ax)):
        np.testing.assert_allclose(np.asarray(ln.get_ydata(), float), mean[r], rtol=1e-12)
    dotted = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
    assert len(dotted) == 2
    for r, ln in enumerate(dotted):
        np.testing.assert_allclose(np.asarray(ln.get_ydata(), float), tail[r], rtol=1e-12)
    for r, poly in enumerate(ax.collections):  # fill_between: the band's outline passes through max and min
        v = poly.get_paths()[0].vertices
        for i, xv in enumerate([64.0, 128.0, 256.0]):
            ys = v[np.isclose(v[:, 0], xv), 1]
            assert np.isclose(ys.max(), hi[r, i], rtol=1e-12) and np.isclose(ys.min(), lo[r, i], rtol=1e-12)


def test_a_gain_is_each_draw_over_the_references_same_draw(figures, tmp_path):
    ds = _dataset(infeasible=None)
    plot_sweep(ds, tmp_path / "g.png", x="traffic.beta", relative_to=("routing", "minimal"))
    (ax,) = figures[0].axes
    t = ds["completion_time"].values
    g = t[0][None] / t  # larger is better: its tail is the 5th percentile
    mean, tail, hi, lo = _expected(g, 0.05)
    for r, ln in enumerate(_data_lines(ax)):
        np.testing.assert_allclose(np.asarray(ln.get_ydata(), float), mean[r], rtol=1e-12)
    tails = [ln for ln in ax.get_lines() if ln.get_marker() == "_"]
    for r, ln in enumerate(tails):
        np.testing.assert_allclose(np.asarray(ln.get_ydata(), float), tail[r], rtol=1e-12)
    assert "5th percentile" in figures[0]._suptitle.get_text().replace("\n", " ")


def test_the_best_over_another_axis_takes_the_band_at_the_best_point(figures, tmp_path):
    """A fourth axis is reduced to its best mean; the band and tail are that point's, not the best of each."""
    rng = np.random.default_rng(5)
    t = rng.uniform(1e-3, 5e-3, size=(2, 3, 2, 2, SEEDS))  # routing, beta, facet, placement, seed
    dims = ("routing", "traffic.beta", "topology", "placement", "routing.seed")
    ds = xr.Dataset({"completion_time": (dims, t, {"units": "s"}), "feasible": (dims, np.ones(t.shape, bool))},
                    coords={"routing": ["minimal", "valiant"], "traffic.beta": LABELS, "topology": ["a", "b"],
                            "placement": ["linear", "random"], "routing.seed": np.arange(SEEDS)})
    plot_sweep(ds, tmp_path / "b.png", x="traffic.beta")
    axes = figures[0].axes
    assert len(axes) == 2  # one panel per topology
    for f, ax in enumerate(axes):
        mean = t[:, :, f].mean(-1) * 1e3  # routing, beta, placement
        pick = mean.argmin(-1)
        for r, bar in enumerate(ax.collections):
            segs = _bars(bar)
            for i in range(3):
                draws = t[r, i, f, pick[r, i]] * 1e3
                assert np.isclose(segs[i, 0], draws.min()) and np.isclose(segs[i, 1], draws.max())
        for r, ln in enumerate(_data_lines(ax)):
            np.testing.assert_allclose(np.asarray(ln.get_ydata(), float), mean[r].min(-1), rtol=1e-12)
    assert "the best over placement" in figures[0]._suptitle.get_text().replace("\n", " ")


@pytest.mark.parametrize("draws,match", [([], "non-empty"), (["traffic.beta"], r"other than x \('traffic.beta'\)"),
                                         (["bogus"], "routing.seed"), ("routing.seed", "non-empty list")])
def test_bad_draws_are_refused(draws, match, tmp_path):
    with pytest.raises(ConfigError, match=match) as e:
        plot_sweep(_dataset(), tmp_path / "x.png", x="traffic.beta", draws=draws)
    assert "draws" in str(e.value)


def test_a_dataset_of_draws_only_says_how_to_plot_it(tmp_path):
    ds = _dataset().isel(routing=0, drop=True).isel({"traffic.beta": 0}, drop=True)
    with pytest.raises(ConfigError, match=r"other than the draws 'routing.seed'.*--x routing.seed.*query --draws"):
        plot_sweep(ds, tmp_path / "x.png")
    plot_sweep(ds, tmp_path / "x.png", x="routing.seed")  # a draw on x: each draw its own point
    assert (tmp_path / "x.png").stat().st_size > 0


def test_the_cli_plots_a_real_sweeps_draws_and_names_its_option(tmp_path, capsys):
    """A hashed-ECMP sweep by the CLI (two placements, 4 hash seeds, 2 traffic draws): the PNG is written, and
    each plotted point is NumPy's mean over the 8 draws of its placement; a bad --draws is refused by its name."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["sweep", "topology=fat_tree", "topology.k=4", "topology.levels=3", "routing=ecmp",
                         "traffic=random_permutation", "traffic.n_tasks=16", "placement=linear,random",
                         "routing.seed=range(0,4)", "traffic.seed=0,1", "ray.enabled=false", "--no-progress",
                         f"sweep.output_dir={tmp_path}"]) == 0
    (path,) = sorted(tmp_path.rglob("*.nc"))
    png = tmp_path / "p.png"
    assert cli.main(["plot", str(path), "--out", str(png)]) == 0
    assert png.stat().st_size > 5000
    ds = open_results(path)
    drawn = []
    EP_save = EP.save_figure
    try:
        EP.save_figure = lambda fig, p, dpi=120: drawn.append(fig) or p
        plot_sweep(ds, png, "completion_time", x="placement")
    finally:
        EP.save_figure = EP_save
    (ax,) = drawn[0].axes
    t = ds["completion_time"].where(ds["feasible"]).transpose("placement", "routing.seed", "traffic.seed").values
    (line,) = _data_lines(ax)
    from evaluator.display import display_unit

    _, factor = display_unit("s", t.mean(axis=(1, 2)))
    np.testing.assert_allclose(np.asarray(line.get_ydata(), float), t.mean(axis=(1, 2)) / factor, rtol=1e-12)
    assert "routing.seed, traffic.seed (8 draws" in drawn[0]._suptitle.get_text().replace("\n", " ")
    capsys.readouterr()
    assert cli.main(["plot", str(path), "--out", str(png), "--draws", "bogus"]) != 0
    err = capsys.readouterr().err
    assert "--draws = ['bogus']" in err and "routing.seed" in err
