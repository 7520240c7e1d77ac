"""Issue 24 item 8, plots a reader trusts: categories as points or bars, numeric axes as lines in ascending order,
ratios with a reference line at 1, sizes ascending, a unit on every value axis, in the unit tables use.

Each test draws a figure from a small hand-made dataset and checks the matplotlib Axes (line styles, markers,
reference lines, tick order, labels), not pixels; the figure is caught where it would be written."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import evaluator.io
import evaluator.partitions.plots as PP
import evaluator.plot as EP
from evaluator.plot import is_ratio, plot_sweep


@pytest.fixture
def figures(monkeypatch):
    """The figures the plot functions draw, in order (nothing is written)."""
    drawn = []

    def catch(fig, path, dpi=120):
        drawn.append(fig)
        return path

    for module in (EP, PP, evaluator.io):
        monkeypatch.setattr(module, "save_figure", catch)
    return drawn


def _data_lines(ax):
    """The lines that carry data, in data coordinates (not reference lines or size-group separators: those span
    the axes, in axes coordinates along one direction)."""
    return [ln for ln in ax.get_lines() if ln.get_transform() == ax.transData]


def _is_reference(line) -> bool:
    y = np.asarray(line.get_ydata(), dtype=float)
    return line.get_transform() != line.axes.transData and y.size == 2 and y[0] == y[1]


def _hlines_at(ax, y: float) -> list:
    return [ln for ln in ax.get_lines() if _is_reference(ln) and np.allclose(np.asarray(ln.get_ydata(), float), y)
            and np.allclose(np.asarray(ln.get_xdata(), float), [0, 1])]


def _sweep(x: str, labels: list[str], metric: str, values: np.ndarray, units: str) -> xr.Dataset:
    routings = ["minimal", "valiant"]
    return xr.Dataset({metric: (("routing", x), values, {"units": units}),
                       "feasible": (("routing", x), np.ones(values.shape, bool))},
                      coords={"routing": routings, x: labels})


def test_categorical_axis_is_points_sizes_ascending_unit_in_the_label(figures, tmp_path):
    labels = ["8x8x4", "4x4x2", "16x8x8"]  # 256, 32, 1024 tasks
    t = np.array([[2e-3, 1e-3, 4e-3], [3e-3, 1.5e-3, 5e-3]])  # seconds
    plot_sweep(_sweep("traffic.beta", labels, "completion_time", t, "s"), tmp_path / "a.png", x="traffic.beta")
    (ax,) = figures[0].axes
    assert [tk.get_text() for tk in ax.get_xticklabels()] == ["4x4x2", "8x8x4", "16x8x8"]
    lines = _data_lines(ax)
    assert len(lines) == 2
    for line in lines:
        assert line.get_linestyle() == "None" and line.get_marker() == "o"  # points, no line between categories
    assert ax.get_ylabel() == "completion_time [ms]"
    minimal = next(ln for ln in lines if ln.get_label() == "routing=minimal")
    np.testing.assert_allclose(minimal.get_ydata(), [1.0, 2.0, 4.0])  # ms, in the ascending order
    assert not _hlines_at(ax, 1.0)  # a time is not a ratio


def test_numeric_axis_is_lines_in_ascending_order(figures, tmp_path):
    labels = ["0.3", "0.0", "0.1"]
    tput = np.array([[3e9, 1e9, 2e9], [6e9, 2e9, 4e9]])
    plot_sweep(_sweep("background.fraction", labels, "throughput", tput, "bytes/s"), tmp_path / "b.png",
               x="background.fraction", metric="throughput")
    (ax,) = figures[0].axes
    for line in _data_lines(ax):
        assert line.get_linestyle() == "-"
        np.testing.assert_allclose(line.get_xdata(), [0.0, 0.1, 0.3])
    valiant = next(ln for ln in _data_lines(ax) if ln.get_label() == "routing=valiant")
    np.testing.assert_allclose(valiant.get_ydata(), [2.0, 4.0, 6.0])  # GB/s
    assert ax.get_ylabel() == "throughput [GB/s]"


def test_efficiency_gets_a_reference_line_at_one(figures, tmp_path):
    eff = np.array([[0.5, 0.8], [1.0, 0.9]])
    plot_sweep(_sweep("placement", ["linear", "random"], "routing_efficiency", eff, "1"), tmp_path / "c.png",
               x="placement", metric="routing_efficiency")
    (ax,) = figures[0].axes
    assert len(_hlines_at(ax, 1.0)) == 1
    assert ax.get_ylabel() == "routing_efficiency [1]"
    assert all(ln.get_linestyle() == "None" for ln in _data_lines(ax))


def test_gain_gets_a_reference_line_at_one_and_a_unit(figures, tmp_path):
    t = np.array([[2e-3, 4e-3], [1e-3, 1e-3]])
    ds = _sweep("placement", ["linear", "random"], "completion_time", t, "s")
    plot_sweep(ds, tmp_path / "d.png", x="placement", relative_to=("routing", "minimal"))
    (ax,) = figures[0].axes
    assert len(_hlines_at(ax, 1.0)) == 1
    assert ax.get_ylabel().startswith("gain over routing=minimal [1]")
    valiant = next(ln for ln in _data_lines(ax) if ln.get_label() == "routing=valiant")
    np.testing.assert_allclose(valiant.get_ydata(), [2.0, 4.0])  # 2 ms / 1 ms, 4 ms / 1 ms


@pytest.mark.parametrize("name,ratio", [("routing_efficiency", True), ("speedup_links_all", True), ("slowdown", True),
                                        ("gain_adaptive", True), ("time_ratio", True), ("per_node_vs_best", True),
                                        ("completion_time", False), ("mean_hops", False), ("throughput", False),
                                        ("wait_reduction", False)])
def test_is_ratio(name, ratio):
    assert is_ratio(name) is ratio


def _partitions(sizes: list[int]) -> xr.Dataset:
    n = np.asarray(sizes)
    links = (n // 512) * 256
    return xr.Dataset({"best_links": ("size", links), "worst_links": ("size", links // 2),
                       "allowed_links": ("size", links // 2)},
                      coords={"size": n}, attrs={"machine": "Mira", "has_allowed_list": 1})


def test_partition_sizes_run_ascending_as_bars_with_units(figures, tmp_path):
    PP.plot_partitions(_partitions([4096, 512, 2048]), tmp_path / "p.png")
    (ax,) = figures[0].axes
    assert [tk.get_text() for tk in ax.get_xticklabels()] == ["512", "2048", "4096"]
    assert "[nodes]" in ax.get_xlabel() and "[links]" in ax.get_ylabel()
    assert not _data_lines(ax)  # bars, no lines
    best = ax.containers[-1]  # "best possible", drawn last
    assert [b.get_height() for b in best] == [256, 1024, 2048]


def test_comparison_sizes_ascending(figures, tmp_path):
    ds = xr.Dataset({"best_links": (("size", "machine"), np.array([[2048.0, 1024.0], [256.0, 256.0]]))},
                    coords={"size": [4096, 512], "machine": ["JUQUEEN", "JUQUEEN-54"]})
    PP.plot_comparison(ds, tmp_path / "c.png")
    (ax,) = figures[0].axes
    assert [tk.get_text() for tk in ax.get_xticklabels()] == ["512", "4096"]
    assert [b.get_height() for b in ax.containers[0]] == [256.0, 2048.0]
    assert "[nodes]" in ax.get_xlabel() and "[links]" in ax.get_ylabel()


def test_slabs_in_the_display_unit(figures, tmp_path):
    ds = xr.Dataset({"bisection_per_node": ("slab", [1.953125e8, 3.90625e8])}, coords={"slab": ["24x24x24", "24x6x24"]},
                    attrs={"machine": "BlueWaters"})
    PP.plot_slabs(ds, tmp_path / "s.png")
    (ax,) = figures[0].axes
    assert "[MB/s]" in ax.get_ylabel() and "[routers]" in ax.get_xlabel()
    np.testing.assert_allclose([b.get_height() for b in ax.containers[0]], [195.3125, 390.625])


def test_tiles_plot_is_bars_in_the_table_unit(figures, tmp_path):
    from evaluator.tiles import plot_advice

    t = {"time_all": [75e-6, 84e-6], "links_all": [17e-6, 34e-6], "time_seq": [75e-6, 84e-6],
         "links_seq": [51e-6, 60e-6]}
    ds = xr.Dataset({k: ("candidate", v, {"units": "s"}) for k, v in t.items()} | {
        "decomposition": ("candidate", ["20x40x40", "40x20x40"]), "tile": ("candidate", ["2x4x4", "4x2x4"]),
        "router_block": ("candidate", ["1x2x1", "1x2x1"])}, coords={"candidate": [1, 2]},
        attrs={"machine": "BlueWaters", "grid": "1000x1000x1000", "nodes": 1000, "tasks_per_node": 32})
    plot_advice(ds, tmp_path / "t.png")
    (ax,) = figures[0].axes
    assert ax.get_xlabel() == "halo exchange time [us]"
    widths = sorted(round(b.get_width(), 6) for c in ax.containers for b in c)
    assert widths == sorted(round(v * 1e6, 6) for vs in t.values() for v in vs)


def test_a_point_that_stands_for_several_says_so(figures):
    """Axes not on the plot are reduced (seeds averaged, the rest to their best value); the figure's title says
    so, and the drawn values are that reduction, computed here with NumPy."""
    rng = np.random.default_rng(3)
    v = rng.uniform(1.0, 2.0, size=(2, 3, 2, 4, 5))  # facet, x, routing (series), alg, seed; seconds
    ds = xr.Dataset({"completion_time": (("facet", "x", "routing", "alg", "placement.seed"), v)},
                    coords={"facet": ["f", "g"], "x": [1, 2, 4], "routing": ["a", "b"], "alg": ["p", "q", "r", "s"],
                            "placement.seed": list(range(5))}, attrs={"title": "t"})
    plot_sweep(ds, "unused.png", "completion_time", x="x", series="routing")
    fig = figures[-1]
    title, _, said = fig._suptitle.get_text().partition("\n")
    assert title == "t" and said.replace("\n", " ") == (
        "each point: the mean over placement.seed (5 draws; band: the smallest to the largest, dotted: their 95th "
        "percentile; a point with an infeasible draw left out); the best over alg")
    want = v.mean(axis=4).min(axis=3)  # [facet, x, routing]
    for f, ax in enumerate(fig.axes[:2]):
        assert ax.get_ylabel() == "completion_time [s]"
        for k, line in enumerate([ln for ln in ax.get_lines() if ln.get_linestyle() == "-"][:2]):  # (not the tails)
            assert np.allclose(line.get_ydata(), want[f, :, k]), (line.get_ydata(), want[f, :, k])
