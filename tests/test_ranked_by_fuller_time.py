"""A sweep on networks with a latency model is ranked by the time with latency, not by the bandwidth bound.

``sweeps/collective_sizes.yaml`` (allreduce algorithms, 64 B to 4 MiB, on three networks with their latency
figures) printed its end table by ``completion_time``, the bandwidth bound: the ring's 64 B allreduce on the fat
tree came first (10 ns) though it takes 121 us with latency, 26 times recursive doubling's 4.7 us. The table
and ``evaluator query`` now go by the fullest time every row has (:func:`evaluator.dataset.predicted_time`),
and say so.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from evaluator import cli
from evaluator.dataset import predicted_time
from evaluator.query import best, default_metric, open_results


def _ds(**extra):
    ct = np.array([1.0, 2.0, 3.0])
    data = {"completion_time": ("point", ct)}
    data.update({k: ("point", np.asarray(v, dtype=float)) for k, v in extra.items()})
    return xr.Dataset(data, coords={"point": ["a", "b", "c"]})


@pytest.mark.parametrize("extra,expected", [
    ({}, "completion_time"),
    ({"time_with_latency": [5.0, 3.0, 4.0]}, "time_with_latency"),
    ({"time_with_latency": [5.0, np.nan, 4.0]}, "completion_time"),  # a point without the model: not comparable
    ({"time_with_latency": [5.0, 3.0, 4.0], "time_max_min": [6.0, 3.5, 4.5]}, "time_max_min"),
    ({"time_with_latency": [5.0, 3.0, 4.0], "time_max_min": [6.0, np.nan, 4.5]}, "time_with_latency"),
])
def test_the_fullest_time_every_row_has(extra, expected):
    ds = _ds(**extra)
    assert predicted_time(ds) == expected
    assert default_metric(ds) == expected
    ranked = best(ds)
    values = ds[expected].values
    assert list(ranked["point"]) == [ds["point"].values[i] for i in np.argsort(values, kind="stable")]


def test_an_infeasible_point_does_not_hold_the_ranking_back():
    ds = _ds(time_with_latency=[5.0, np.nan, 4.0])
    ds["completion_time"][1] = np.nan  # infeasible: no bound, no time
    assert predicted_time(ds) == "time_with_latency"


def test_the_sweep_says_what_it_ranks_by(tmp_path, capsys):
    rc = cli.main(["sweep", "topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=collective",
                   "placement=linear", "traffic.n_tasks=64", "+topology.latency.router=1.0e-6",
                   "traffic.algorithm=ring,recursive_doubling", "traffic.bytes=64,4194304",
                   f"sweep.output_dir={tmp_path}", "ray.enabled=false", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "ranked by time_with_latency, the time with the network's latency model" in out, out
    ds = open_results(next(tmp_path.glob("*/latest")))
    t = ds["time_with_latency"]
    lines = out.splitlines()
    first = lines[lines.index(next(ln for ln in lines if ln.split() == ["rank"])) + 1]  # the best row
    i = np.unravel_index(int(np.nanargmin(t.values)), t.shape)
    labels = [str(ds[d].values[k]) for d, k in zip(t.dims, i)]
    assert all(lab in first for lab in labels), (first, labels)
    # the bound alone would put the 64 B ring first (its bound is the smaller); with latency recursive doubling wins
    assert "recursive_doubling" in first and " 64 " in first
    # plot's default metric is query's (it was completion_time whatever the dataset: refused on tiles datasets)
    assert cli.main(["plot", str(next(tmp_path.glob("*/latest"))), "--x", "traffic.bytes"]) == 0
    assert capsys.readouterr().out.strip().endswith("-time_with_latency.png")


def test_plot_of_a_tiles_dataset_draws_its_ranked_time(tmp_path, capsys):
    assert cli.main(["tiles", "--grid", "64,64,64", "--nodes", "8", "--tasks-per-node", "8",
                     "--out", str(tmp_path), "--no-plot"]) == 0
    capsys.readouterr()
    assert cli.main(["plot", str(next(tmp_path.glob("*.nc")))]) == 0
    assert capsys.readouterr().out.strip().endswith("-time_all.png")
