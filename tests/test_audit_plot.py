"""Audit of `evaluator plot` (evaluator/plot.py, evaluator/cli/plot.py) on datasets made the way a user makes them:
small `evaluator sweep`s (a torus with two routings, three placement seeds and three link bandwidths; a small
Dragonfly over beta, gamma, routing and the local bandwidth, with infeasible gammas) and an `evaluator eval`.

Every figure is caught where it would be written and its matplotlib artists read (lines' x and y, tick labels,
axis labels, titles); the references are computed here from the dataset with xarray/NumPy (means, 95th
percentiles, best over an axis, gains), in the decimal display unit the axis label names."""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import evaluator.plot as EP
from evaluator import cli
from evaluator.errors import ConfigError
from evaluator.query import open_results

BW = "topology.link_bandwidth"
BL = "topology.bandwidth_l"


def _run(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(argv) == 0
    return out.getvalue()


def _dataset_path(printed: str) -> Path:
    return Path([ln for ln in printed.splitlines() if ln.startswith("dataset: ")][-1].split(": ", 1)[1])


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The datasets, made by the CLI as a user would (no Ray)."""
    root = tmp_path_factory.mktemp("plotaudit")
    torus = _run(["sweep", "topology=torus", "topology.dims=[4,4]", "routing=dor,torus_adaptive",
                  "traffic=random_permutation", "placement=random", "traffic.n_tasks=16", "placement.seed=range(0,3)",
                  f"{BW}=choice(5e9,1e10,4e10)", f"sweep.output_dir={root}/torus", "ray.enabled=false"])
    dfly = _run(["sweep", "sweeps=dragonfly_nne_placement", "topology.p=2", "topology.a=4", "topology.h=2",
                 "traffic.alpha=[16,16,16]", "traffic.beta=choice([4,2,2],[2,2,2])", f"{BL}=choice(2e9,1e10)",
                 f"sweep.output_dir={root}/dfly", "ray.enabled=false"])
    one = _run(["eval", f"output_dir={root}/eval"])
    return {"root": root, "torus": _dataset_path(torus), "dfly": _dataset_path(dfly), "eval": _dataset_path(one)}


@pytest.fixture
def figures(monkeypatch):
    """The figures plot_sweep draws, in order (nothing written)."""
    drawn = []
    monkeypatch.setattr(EP, "save_figure", lambda fig, path, dpi=120: (drawn.append(fig), path)[1])
    return drawn


def _draw(ds, figures, **kw):
    figures.clear()
    EP.plot_sweep(ds, "/nonexistent/never-written.png", **kw)
    return figures[0]


def _series(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The labelled data lines of a panel: legend label -> (x, y)."""
    return {ln.get_label(): (np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float))
            for ln in ax.get_lines() if not ln.get_label().startswith("_")}


def _dotted(ax) -> list[np.ndarray]:
    return [np.asarray(ln.get_ydata(), float) for ln in ax.get_lines() if ln.get_linestyle() == ":"]


def _masked(ds, metric):
    return ds[metric].where(ds["feasible"]).astype(float)


def _size(label: str) -> int:
    return math.prod(int(v) for v in label.split("x"))


def test_default_plot_is_the_mean_over_seeds_in_us_along_the_bandwidth(made, figures):
    ds = open_results(made["torus"])
    fig = _draw(ds, figures)
    (ax,) = fig.axes
    assert ax.get_ylabel() == "completion_time [us]" and ax.get_xlabel() == BW
    t = _masked(ds, "completion_time").transpose("routing", BW, "placement.seed").values * 1e6
    bw = np.array([float(v) for v in ds[BW].values])
    order = np.argsort(bw)
    lines = _series(ax)
    assert sorted(lines) == [f"routing={r}" for r in ds["routing"].values]
    for i, r in enumerate(ds["routing"].values):
        xs, ys = lines[f"routing={r}"]
        np.testing.assert_array_equal(xs, bw[order])  # numeric axis: ascending bandwidths at their values
        np.testing.assert_allclose(ys, t[i].mean(-1)[order], rtol=1e-12)
    tails = _dotted(ax)
    want = [np.quantile(t[i], 0.95, axis=-1)[order] for i in range(2)]
    for got, ref in zip(tails, want):
        np.testing.assert_allclose(got, ref, rtol=1e-12)
    lo_hi = [c.get_paths()[0].vertices[:, 1] for c in ax.collections]  # the band: min and max along x
    for i, verts in enumerate(lo_hi):
        assert np.isclose(verts.min(), t[i].min()) and np.isclose(verts.max(), t[i].max())
    assert "mean over placement.seed (3 draws" in fig._suptitle.get_text()


@pytest.mark.parametrize("metric, unit, factor", [("throughput", "GB/s", 1e9), ("off_node_bytes", "MB", 1e6),
                                                   ("mean_hops", "1", 1.0)])
def test_other_metrics_are_scaled_to_the_unit_their_label_names(made, figures, metric, unit, factor):
    ds = open_results(made["torus"])
    (ax,) = _draw(ds, figures, metric=metric, x="routing", series=BW).axes
    assert ax.get_ylabel() == f"{metric} [{unit}]"
    assert [t.get_text() for t in ax.get_xticklabels()] == list(ds["routing"].values)  # categories, axis order
    v = _masked(ds, metric).mean("placement.seed")
    for label, (xs, ys) in _series(ax).items():
        bw = label.split("=", 1)[1]
        np.testing.assert_allclose(ys, v.sel({BW: bw}).sel(routing=ds["routing"].values).values / factor,
                                   rtol=1e-12)


def test_costs_are_labelled_in_the_datasets_currency_as_query_names_it(made, figures):
    """The metric table's unit of cost is the placeholder ``currency``; the dataset says which (``relative``)."""
    ds = open_results(made["torus"])
    assert ds["cost"].attrs["units"] == "relative"
    (ax,) = _draw(ds, figures, metric="cost").axes
    assert ax.get_ylabel() == "cost [relative]"
    np.testing.assert_allclose(_series(ax)["routing=dor"][1],
                               _masked(ds, "cost").sel(routing="dor").mean("placement.seed").values)
    (ax,) = _draw(ds, figures, metric="throughput_per_cost").axes
    label = ax.get_ylabel()
    prefixes = {"GB/s": 1e9, "MB/s": 1e6, "kB/s": 1e3}
    unit = label[label.index("[") + 1:label.index("]")]
    assert unit.endswith("/relative") and unit[:-len("/relative")] in prefixes, label
    factor = prefixes[unit[:-len("/relative")]]
    want = _masked(ds, "throughput_per_cost").sel(routing="dor").mean("placement.seed").values / factor
    np.testing.assert_allclose(_series(ax)["routing=dor"][1], want, rtol=1e-12)


def _best(da: xr.DataArray, axis: str, smaller: bool) -> xr.DataArray:
    return da.min(axis, skipna=True) if smaller else da.max(axis, skipna=True)


@pytest.mark.parametrize("metric, smaller, factor", [("completion_time", True, 1e-6), ("throughput", False, 1e9)])
def test_a_fourth_axis_is_reduced_to_its_best_and_infeasible_gammas_left_out(made, figures, metric, smaller,
                                                                             factor):
    ds = open_results(made["dfly"])
    fig = _draw(ds, figures, metric=metric)
    assert "each point: the best over topology.bandwidth_l" in fig._suptitle.get_text()
    ref = _best(_masked(ds, metric), BL, smaller) / factor
    betas = list(ds["traffic.beta"].values)
    assert [ax.get_title() for ax in fig.axes] == [f"traffic.beta = {b}" for b in betas]
    for ax, beta in zip(fig.axes, betas):
        sub = ref.sel({"traffic.beta": beta})
        shown = [g for g in ds["placement.gamma"].values if np.isfinite(sub.sel({"placement.gamma": g})).any()]
        shown.sort(key=lambda g: (_size(g), g))
        assert [t.get_text() for t in ax.get_xticklabels()] == shown  # by size, no infeasible gamma
        for r in ds["routing"].values:
            ys = _series(ax)[f"routing={r}"][1]
            np.testing.assert_allclose(ys, sub.sel(routing=r).sel({"placement.gamma": shown}).values, rtol=1e-12)
            assert not np.any(ys == 0)
    assert fig.axes[-1].get_xlabel() == "placement.gamma (grouped by size, ascending)"


def test_the_gain_over_a_routing_is_the_reference_time_over_the_time(made, figures):
    ds = open_results(made["dfly"]).sel({BL: "1e+10"})
    fig = _draw(ds, figures, relative_to=("routing", "minimal"))
    t = _masked(ds, "completion_time")
    gain = t.sel(routing="minimal") / t
    for ax, beta in zip(fig.axes, ds["traffic.beta"].values):
        assert ax.get_ylabel().startswith("gain over routing=minimal [1]")
        labels = [x.get_text() for x in ax.get_xticklabels()]
        for r in ds["routing"].values:
            ys = _series(ax)[f"routing={r}"][1]
            np.testing.assert_allclose(ys, gain.sel({"traffic.beta": beta, "routing": r})
                                       .sel({"placement.gamma": labels}).values, rtol=1e-12)
        ref = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        assert ref and all(np.allclose(np.asarray(ln.get_ydata(), float), 1.0) for ln in ref)


def test_a_gain_over_one_seed_shows_each_seed_not_a_mean_with_the_references_own_1(made, figures):
    """Before: the gains of seeds 0, 1, 2 over seed 0 were averaged as "draws" (seed 0's own 1 in the mean)."""
    ds = open_results(made["torus"])
    fig = _draw(ds, figures, relative_to=("placement.seed", "0"))
    t = _masked(ds, "completion_time")
    gain = t.sel({"placement.seed": "0"}) / t
    panels = [ax for ax in fig.axes if ax.get_ylabel().startswith("gain")]
    assert [ax.get_title() for ax in panels] == [f"placement.seed = {s}" for s in ds["placement.seed"].values]
    bw = sorted(ds[BW].values, key=float)
    for ax, seed in zip(panels, ds["placement.seed"].values):
        for r in ds["routing"].values:
            want = gain.sel({"placement.seed": seed, "routing": r}).sel({BW: bw}).values
            np.testing.assert_allclose(_series(ax)[f"routing={r}"][1], want, rtol=1e-12)
    assert "mean over placement.seed" not in fig._suptitle.get_text()
    with pytest.raises(ConfigError) as exc:
        EP.plot_sweep(ds, "/nonexistent/x.png", relative_to=("placement.seed", "0"), draws=["placement.seed"])
    assert exc.value.field == "draws" and "relative" in str(exc.value)


def test_a_gain_over_a_bandwidth_is_not_the_best_of_it_and_the_references_1(made, figures):
    """Before: the gain's own axis was reduced to its best value, max(1, gain): all 1 over the faster bandwidth."""
    ds = open_results(made["dfly"])
    fig = _draw(ds, figures, relative_to=(BL, "1e+10"))
    t = _masked(ds, "completion_time")
    gain = (t.sel({BL: "1e+10"}) / t).max("traffic.beta", skipna=True)  # traffic.beta: its best (a gain: larger)
    panels = [ax for ax in fig.axes if ax.get_ylabel().startswith("gain")]
    assert [ax.get_title() for ax in panels] == [f"{BL} = {v}" for v in ds[BL].values]
    for ax, v in zip(panels, ds[BL].values):
        labels = [x.get_text() for x in ax.get_xticklabels()]
        for r in ds["routing"].values:
            want = gain.sel({BL: v, "routing": r}).sel({"placement.gamma": labels}).values
            np.testing.assert_allclose(_series(ax)[f"routing={r}"][1], want, rtol=1e-12)
    slow = panels[list(ds[BL].values).index("2e+09")]
    assert np.nanmax(np.concatenate([y for _, y in _series(slow).values()])) < 1  # the slower links lose


def _refused(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert cli.main(argv) != 0
    return capsys.readouterr().err


@pytest.mark.parametrize("extra, words", [
    (["--metric", "latency_p99"], ["--metric", "'latency_p99'", "completion_time", "throughput"]),
    (["--x", "routingg"], ["--x", "'routingg'", "routing", "placement.seed", BW]),
    (["--series", "gamma"], ["--series", "'gamma'", "routing", BW]),
    (["--relative-to", "routing=valiant"], ["--relative-to routing", "'valiant'", "dor", "torus_adaptive"]),
    (["--relative-to", "routing"], ["--relative-to", "AXIS=LABEL"]),
    (["--relative-to", "topology.link_bandwidth=5e9"], ["'5e9'", "5e+09"]),
    (["--draws", BW], ["--draws", BW, "placement.seed"]),
    (["--x", "routing", "--series", "routing"], ["--series", "'routing'", "other than x"]),
    (["--out", "/proc/plot.png"], ["--out", "/proc/plot.png", "write"]),
    (["--out", "figure.pdf"], ["--out", "figure.pdf", ".png"]),
])
def test_bad_options_are_refused_naming_option_value_and_what_is_allowed(made, capsys, extra, words):
    before = sorted(p.name for p in made["torus"].parent.iterdir())
    err = _refused(["plot", str(made["torus"]), *extra], capsys)
    assert "Traceback" not in err and "error:" in err
    for w in words:
        assert w in err, (w, err)
    assert sorted(p.name for p in made["torus"].parent.iterdir()) == before  # nothing written


def test_a_file_that_is_not_a_dataset_and_an_eval_are_refused(made, capsys, tmp_path):
    text = tmp_path / "notes.nc"
    text.write_text("not a dataset\n")
    err = _refused(["plot", str(text)], capsys)
    assert "path" in err and str(text) in err and "netCDF" in err and "Traceback" not in err
    err = _refused(["plot", str(made["eval"])], capsys)
    assert "sweep" in err and "Traceback" not in err
    assert not list(made["eval"].parent.glob("*.png"))


def test_the_figure_goes_beside_the_dataset_and_a_users_png_is_kept(made, capsys, tmp_path):
    ds_path = made["torus"]
    printed = _run(["plot", str(ds_path), "--metric", "throughput"])
    want = ds_path.with_name(ds_path.stem + "-throughput.png")
    assert printed.strip() == str(want) and want.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ours = tmp_path / "ours.png"
    _run(["plot", str(ds_path), "--out", str(ours)])
    first = ours.read_bytes()
    _run(["plot", str(ds_path), "--out", str(ours), "--metric", "mean_hops"])  # a figure evaluator wrote: replaced
    assert ours.read_bytes() != first
    mine = tmp_path / "mine.png"
    mine.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)  # a user's own PNG
    err = _refused(["plot", str(ds_path), "--out", str(mine)], capsys)
    assert "--out" in err and str(mine) in err
    assert mine.read_bytes() == b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    # the default path beside the dataset: a user's PNG there is kept too (it was replaced in silence until 2026-12-07)
    theirs = ds_path.with_name(ds_path.stem + "-mean_hops.png")
    theirs.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x01" * 64)
    err = _refused(["plot", str(ds_path), "--metric", "mean_hops"], capsys)
    assert "--out" in err and str(theirs) in err and theirs.read_bytes() == b"\x89PNG\r\n\x1a\n" + b"\x01" * 64


def test_save_figure_keeps_a_file_it_did_not_write(tmp_path):
    """The last guard of every figure (the studies', tiles', partitions', bench's): a file at the path that is not
    a figure of this tool is kept and the call refused; one of its own figures is replaced."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from evaluator.io import is_our_figure, save_figure

    fig = plt.figure()
    for body in (b"my notes", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64):
        path = tmp_path / "f.png"
        path.write_bytes(body)
        with pytest.raises(ConfigError) as e:
            save_figure(fig, path)
        assert str(path) in str(e.value) and path.read_bytes() == body
    path.unlink()
    save_figure(fig, path)
    assert is_our_figure(path)
    save_figure(fig, path)  # its own figure: replaced
    assert is_our_figure(path)
    plt.close(fig)
