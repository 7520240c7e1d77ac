"""`evaluator query --draws AXIS`: a point summarised over its random draws (hashed ECMP's hash seed, a random
placement's or traffic's seed) instead of ranked draw by draw, where the best row is only the luckiest draw.

The references are independent of :func:`evaluator.query.draw_summary`: NumPy's mean, quantile, max and min of the
dataset's own values, the points evaluated again one seed at a time by ``evaluate_batch`` over
``evaluator.routing.ecmp_seeds`` (the README's way), and ``evaluator.routing.ecmp_seed_summary``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from evaluator import cli, routing
from evaluator.display import format_table
from evaluator.errors import ConfigError
from evaluator.query import best, draw_summary, open_results
from tests.helpers import once

SEEDS = 8
SWEEP = ["topology=fat_tree", "topology.k=4", "topology.levels=3", "routing=ecmp", "traffic=random_permutation",
         "traffic.n_tasks=16", "placement=linear,random", f"routing.seed=range(0,{SEEDS})", "traffic.seed=0,1",
         "ray.enabled=false", "--no-progress"]


@pytest.fixture(scope="module")
@once
def swept(tmp_path_factory) -> tuple[Path, str]:
    """A sweep of hashed ECMP's seeds (and two placements, two traffic draws), by the CLI: the dataset and what
    it printed."""
    import contextlib
    import io

    t = tmp_path_factory.mktemp("draws")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["sweep", *SWEEP, f"sweep.output_dir={t}"]) == 0
    files = sorted(t.rglob("*.nc"))
    assert len(files) == 1, files
    return files[0], out.getvalue()


def test_each_row_is_the_mean_tail_and_range_of_its_draws(swept):
    """The ranked table against NumPy over the dataset's own values: one row per (placement, traffic.seed), the
    mean over the 8 hash seeds ranked smallest first, the 95th percentile, the largest and the smallest."""
    path, _ = swept
    ds = open_results(path)
    t = ds["completion_time"].transpose("placement", "traffic.seed", "routing.seed").values
    assert t.shape == (2, 2, SEEDS) and np.isfinite(t).all() and bool(ds["feasible"].all())
    table = best(ds, "completion_time", draws=["routing.seed"])
    assert list(table.columns[:6]) == ["placement", "traffic.seed", "completion_time_mean", "ahead_by",
                                       "completion_time_p95", "completion_time_max"]
    assert len(table) == 4
    for _, row in table.iterrows():
        i = ["linear", "random"].index(row["placement"])
        j = int(row["traffic.seed"])
        v = t[i, j]
        assert row["completion_time_mean"] == pytest.approx(v.mean(), rel=1e-12)
        assert row["completion_time_p95"] == pytest.approx(np.quantile(v, 0.95), rel=1e-12)
        assert row["completion_time_max"] == pytest.approx(v.max(), rel=1e-12)
        assert row["completion_time_min"] == pytest.approx(v.min(), rel=1e-12)
    means = t.mean(axis=2)
    assert np.all(np.diff(table["completion_time_mean"].to_numpy()) >= 0)
    first = np.unravel_index(np.argmin(means), means.shape)
    assert (table.iloc[0]["placement"], int(table.iloc[0]["traffic.seed"])) == (["linear", "random"][first[0]],
                                                                                first[1])
    # the draws differ (else the summary says nothing a single draw does not): the range is not one value
    assert (t.max(axis=2) > t.min(axis=2)).any()
    # both seed axes as draws: one row per placement over 16 draws
    both = best(ds, "completion_time", draws=["routing.seed", "traffic.seed"])
    assert sorted(both["placement"]) == ["linear", "random"]
    for _, row in both.iterrows():
        v = t[["linear", "random"].index(row["placement"])].reshape(-1)
        assert row["completion_time_mean"] == pytest.approx(v.mean(), rel=1e-12)
        assert row["completion_time_p95"] == pytest.approx(np.quantile(v, 0.95), rel=1e-12)


def test_the_sweep_draws_are_the_readmes_seeds_and_the_summary_is_ecmp_seed_summary(swept):
    """Each sweep draw equals ``evaluate_batch`` under ``ecmp_seeds(8)``'s spec of that seed, and the mean and
    95th percentile equal ``ecmp_seed_summary``'s expected and p95 of those times."""
    from evaluator import config
    from evaluator.evaluation import evaluate_batch

    path, _ = swept
    ds = open_results(path)
    cfg = config.compose(["topology=fat_tree", "topology.k=4", "topology.levels=3", "traffic=random_permutation",
                          "traffic.n_tasks=16", "traffic.seed=1", "placement=linear"])
    topo = config.build_topology(cfg.topology)
    tr = config.build_traffic(cfg.traffic, topo)
    pl = config.build_placement(cfg.placement, topo, cfg.traffic, tr.n_tasks, cfg.topology)
    specs = routing.ecmp_seeds(SEEDS)
    times = [float(evaluate_batch(topo, r, tr, pl).metrics["completion_time"][0]) for r in specs]
    swept_times = ds["completion_time"].sel(placement="linear", **{"traffic.seed": "1"}).transpose("routing.seed").values
    np.testing.assert_allclose(swept_times, times, rtol=1e-12)
    ref = routing.ecmp_seed_summary(times, [r.seed for r in specs])
    row = best(ds, "completion_time", draws=["routing.seed"], where={"placement": "linear", "traffic.seed": "1"})
    assert len(row) == 1
    assert row.iloc[0]["completion_time_mean"] == pytest.approx(float(ref["completion_time_expected"]), rel=1e-12)
    assert row.iloc[0]["completion_time_p95"] == pytest.approx(float(ref["completion_time_p95"]), rel=1e-12)
    assert row.iloc[0]["completion_time_max"] == pytest.approx(float(ref["completion_time_max"]), rel=1e-12)


def test_the_cli_summarises_and_the_sweep_says_its_rows_are_draws(swept, capsys):
    path, printed = swept
    assert "routing.seed, traffic.seed: random draws, one per row above" in printed
    assert f"evaluator query {path} --draws routing.seed traffic.seed" in printed
    assert cli.main(["query", str(path), "--draws", "routing.seed"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("each row: the mean over the draws of routing.seed")
    table = best(open_results(path), "completion_time", draws=["routing.seed"])
    assert format_table(table) in out
    assert "completion_time_mean [us]" in out and "completion_time_p95 [us]" in out
    # ranked by the tail instead of the mean
    assert cli.main(["query", str(path), "--draws", "routing.seed", "--best", "completion_time_p95"]) == 0
    by_tail = best(open_results(path), "completion_time_p95", draws=["routing.seed"])
    assert np.all(np.diff(by_tail["completion_time_p95"].to_numpy()) >= 0)
    assert format_table(by_tail) in capsys.readouterr().out


def test_a_plain_query_says_its_rows_are_draws(swept, capsys):
    """``evaluator query`` without --draws ranks single draws, as the sweep's end does, and says so the same
    way; with --over a seed axis each row is its point's luckiest draw; --draws or a metric without the seed
    axes prints nothing of it."""
    path, _ = swept
    assert cli.main(["query", str(path), "-n", "3"]) == 0
    assert (f"routing.seed, traffic.seed: random draws, one per row above (the best row is the luckiest draw); each "
            f"point's mean over them with its tail and range: evaluator query {path} --draws routing.seed "
            f"traffic.seed") in capsys.readouterr().out
    assert cli.main(["query", str(path), "--over", "routing.seed", "-n", "3"]) == 0
    assert "random draws, each row above the luckiest of its point's draws;" in capsys.readouterr().out
    assert cli.main(["query", str(path), "--draws", "routing.seed", "traffic.seed", "-n", "3"]) == 0
    assert "one per row above" not in capsys.readouterr().out


def test_a_sweep_without_seed_axes_prints_no_draws_line(tmp_path, capsys):
    assert cli.main(["sweep", "topology=fat_tree", "topology.k=4", "topology.levels=3", "routing=ecmp",
                     "traffic=random_permutation", "traffic.n_tasks=16", "placement=linear,random",
                     "ray.enabled=false", "--no-progress", f"sweep.output_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    assert "random draws" not in out
    # ... but its rows are one draw of hashed ECMP, the random permutation and the random placement (seed 0 each),
    # and the sweep says so, with the way to the mean
    assert ("routing ecmp (seed 0); traffic random_permutation (seed 0); placement random (seed 0) are one random "
            "draw each, so every row above is those draws', not what the point gives on average: add the axes "
            "routing.seed='range(0,16)' traffic.seed='range(0,16)' placement.seed='range(0,16)' and rank with "
            "evaluator query RUN --draws routing.seed traffic.seed placement.seed") in out


@pytest.mark.parametrize("groups,said", [
    (["routing=ecmp,dmodk", "traffic=shift"], ["routing ecmp (seed 0)"]),
    (["routing=dmodk,ecmp_spray", "traffic=shift"], []),
    (["routing=ecmp", "routing.seed=0,1", "traffic=shift"], []),
    (["routing=dmodk,ecmp_spray", "traffic=random_permutation", "traffic.seed=3"],
     ["traffic random_permutation (seed 3)"]),
    (["routing=ecmp", "routing.seed=0,1", "traffic=random_permutation", "traffic.seed=0,1", "placement=random"],
     ["placement random (seed 0)"]),
])
def test_a_sweep_names_its_one_draw_choices(groups, said, tmp_path, capsys):
    """Only the random choices whose seed no axis sets are named (the contract's ``is_drawn``: a kind with a
    ``seed``); D-mod-k, the spray, a shift and a linear placement fix their results, and a seed axis gets the
    draws line instead."""
    assert cli.main(["sweep", "topology=fat_tree", "topology.k=4", "topology.levels=3", "traffic.n_tasks=16",
                     "placement=linear", *groups, "ray.enabled=false", "--no-progress",
                     f"sweep.output_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if "random draw" in ln and "not what the point gives" in ln]
    assert len(lines) == (1 if said else 0), out
    if said:
        assert lines[0].startswith("; ".join(said) + (" is one random draw" if len(said) == 1 else " are"))
    seeds = [g.split("=")[0] for g in groups if g.split("=")[0].endswith(".seed") and "," in g]
    assert (": random draws, one per row above" in out) == bool(seeds)


def test_a_cartesian_placement_is_a_draw_only_where_an_order_is_random():
    """The README's main job (dragonfly_cartesian: random group and node order by default) ranks one draw of
    them; with both orders linear the seed does nothing, and the placement is no draw."""
    from evaluator import config
    from evaluator.config import drawn_choices

    def drawn(*o):
        return drawn_choices(config.to_object(config.compose(["placement=dragonfly_cartesian", *o])))

    assert drawn() == {"placement": "placement dragonfly_cartesian (seed 0)"}
    assert drawn("placement.group_order=linear") == {"placement": "placement dragonfly_cartesian (seed 0)"}
    assert drawn("placement.group_order=linear", "placement.node_order=linear") == {}


def test_several_jobs_name_each_jobs_random_choices():
    """With ``jobs``, each job's own random choices are named with the job and the key a sweep axis sets
    (``jobs.<i>.<group>.seed``); the top-level routing only where a job (or the background) routes by it; a
    background random permutation as ``background``, the background's own hashed routing as
    ``background.routing``. Written out by hand from the configs."""
    from evaluator import config
    from evaluator.config import drawn_choices

    def drawn(*o):
        return drawn_choices(config.to_object(config.compose(["topology=fat_tree", "topology.k=4",
                                                              "topology.levels=3", "traffic=random_pairs",
                                                              "placement=linear", *o])))

    two = ("jobs=[{name: a, traffic: {n_tasks: 8, seed: 1}}, {traffic: {kind: all_to_all, n_tasks: 8}, "
           "placement: {kind: random, seed: 4}, routing: {kind: ecmp, seed: 5}}]")
    assert drawn("routing=dmodk", two) == {"jobs.0.traffic": "jobs.0.traffic random_pairs (seed 1) of job a",
                                           "jobs.1.placement": "jobs.1.placement random (seed 4) of job 1",
                                           "jobs.1.routing": "jobs.1.routing ecmp (seed 5) of job 1"}
    assert list(drawn("routing=ecmp", two))[0] == "routing"  # job a routes by the top-level ecmp
    own = "jobs=[{traffic: {kind: all_to_all, n_tasks: 8}, routing: {kind: ecmp, seed: 5}}]"
    assert drawn("routing=ecmp", own) == {"jobs.0.routing": "jobs.0.routing ecmp (seed 5) of job 0"}
    assert drawn("routing=ecmp", own, "background.fraction=0.2", "background.pattern=random_permutation",
                 "background.seed=3") == {"routing": "routing ecmp (seed 0)",
                                          "jobs.0.routing": "jobs.0.routing ecmp (seed 5) of job 0",
                                          "background": "background random_permutation (seed 3)"}
    own_bg = ("background.fraction=0.2", "+background.routing={kind: ecmp, seed: 7}")
    assert drawn("routing=dmodk", own, *own_bg) == {
        "jobs.0.routing": "jobs.0.routing ecmp (seed 5) of job 0",
        "background.routing": "background.routing ecmp (seed 7) of the background"}
    assert drawn("routing=dmodk", own, "background.fraction=0.2", "+background.routing={kind: dmodk}") == {
        "jobs.0.routing": "jobs.0.routing ecmp (seed 5) of job 0"}


def test_a_jobs_sweep_names_the_jobs_draws_and_a_seed_axis_takes_one_away(tmp_path, capsys):
    """The Blue Waters two-jobs study (random pairs, seeds 1 and 2, one per job) ranks one draw of each job's
    pairs; an axis over the first job's seed leaves the second named (the plan, without running it)."""
    from evaluator import config
    from evaluator.sweep import plan_sweep

    def plan(*o):
        return plan_sweep(config.compose_sweep(["sweeps=bluewaters_two_jobs", *o]))

    assert plan().one_draw_choices() == {"jobs.0.traffic": "jobs.0.traffic random_pairs (seed 1) of job tall",
                                         "jobs.1.traffic": "jobs.1.traffic random_pairs (seed 2) of job mover"}
    assert list(plan("jobs.0.traffic.seed=range(0,4)").one_draw_choices()) == ["jobs.1.traffic"]


def _synthetic() -> xr.Dataset:
    """Two placements x four seeds; one draw of ``b`` infeasible."""
    t = np.array([[1.0, 2.0, 3.0, 10.0], [2.0, 2.0, 2.0, np.nan]])
    feasible = np.isfinite(t)
    return xr.Dataset({"completion_time": (("placement", "placement.seed"), t, {"units": "s"}),
                       "throughput": (("placement", "placement.seed"), 1.0 / t, {"units": "B/s"}),
                       "feasible": (("placement", "placement.seed"), feasible)},
                      coords={"placement": ["a", "b"], "placement.seed": [0, 1, 2, 3]})


def test_a_point_with_an_infeasible_draw_is_left_out_not_averaged_over_the_rest():
    """``b``'s feasible draws (2, 2, 2) would rank it first (mean 2 < 4): a one-sided mean. It is left out."""
    ds = _synthetic()
    table = best(ds, "completion_time", draws=["placement.seed"])
    assert list(table["placement"]) == ["a"]
    assert table.iloc[0]["completion_time_mean"] == pytest.approx(4.0)
    assert table.iloc[0]["completion_time_p95"] == pytest.approx(np.quantile([1.0, 2.0, 3.0, 10.0], 0.95))
    summary = draw_summary(ds, ["placement.seed"], "completion_time")
    assert summary["feasible"].values.tolist() == [True, False]
    assert np.isnan(float(summary["completion_time_mean"].sel(placement="b")))


def test_a_larger_is_better_metric_has_its_tail_at_the_5th_percentile():
    ds = _synthetic()
    table = best(ds, "throughput", draws=["placement.seed"])
    v = 1.0 / np.array([1.0, 2.0, 3.0, 10.0])
    row = table.iloc[0]
    assert row["throughput_mean"] == pytest.approx(v.mean())
    assert row["throughput_p05"] == pytest.approx(np.quantile(v, 0.05))
    assert row["throughput_max"] == pytest.approx(v.max()) and row["throughput_min"] == pytest.approx(v.min())
    with pytest.raises(ConfigError, match=r"metric = 'throughput_p95' is invalid: allowed is throughput_p05"):
        best(ds, "throughput_p95", draws=["placement.seed"])


@pytest.mark.parametrize("draws, over, match", [
    (["nope"], None, r"draws = \['nope'\] is invalid: allowed is axes of the dataset: \['placement', "
                     r"'placement.seed'\]"),
    ("placement.seed", None, r"draws = 'placement.seed' is invalid: allowed is a non-empty list"),
    ([], None, r"draws = \[\] is invalid"),
    (["placement.seed"], ["placement.seed"], r"over = \['placement.seed'\] is invalid: .*not both"),
])
def test_bad_draws_are_refused(draws, over, match):
    with pytest.raises(ConfigError, match=match):
        best(_synthetic(), "completion_time", over=over, draws=draws)


def test_optimize_says_a_hashed_routings_rows_are_one_draw(tmp_path, capsys):
    base = ["optimize", "--tasks", "16", "--alpha", "16,16,16", "--placement", "block", "--top", "3",
            "--no-progress", "topology=fat_tree", "topology.k=4", "topology.levels=3",
            f"sweep.output_dir={tmp_path}"]
    assert cli.main([*base, "--routings", "ecmp,dmodk"]) == 0
    out = capsys.readouterr().out
    assert ("routing ecmp (seed 0) is one random draw, so every row above is that draw's, not what the point gives "
            "on average: add the axis routing.seed='range(0,16)'") in out  # the sweep's own line
    assert cli.main([*base, "--routings", "dmodk"]) == 0
    assert "one random draw" not in capsys.readouterr().out
    random = [a if a != "block" else "random" for a in base]
    assert cli.main([*random, "--routings", "dmodk"]) == 0  # a random placement too (it said
    assert "placement random (seed 0) is one random draw" in capsys.readouterr().out  # nothing of it before)


def test_the_dataset_query_and_plot_say_its_rows_are_one_draw(tmp_path, capsys, monkeypatch):
    """The sweep's dataset records its random choices drawn once (``one_draw``); query prints it under its table
    and plot puts it in the title, where nothing else would tell a later reader."""
    import evaluator.plot as EP
    from evaluator.plot import plot_sweep

    assert cli.main(["sweep", "topology=fat_tree", "topology.k=4", "topology.levels=3", "traffic=shift",
                     "traffic.n_tasks=16", "placement=linear", "routing=ecmp,dmodk", "ray.enabled=false",
                     "--no-progress", f"sweep.output_dir={tmp_path}"]) == 0
    (path,) = sorted(tmp_path.rglob("*.nc"))
    ds = open_results(path)
    assert ds.attrs["one_draw"] == "routing ecmp (seed 0)"
    capsys.readouterr()
    assert cli.main(["query", str(path)]) == 0
    assert "every row is one draw of routing ecmp (seed 0): no axis draws their seeds" in capsys.readouterr().out
    drawn = []
    monkeypatch.setattr(EP, "save_figure", lambda fig, p, dpi=120: drawn.append(fig) or p)
    plot_sweep(ds, tmp_path / "p.png")  # (its one axis, routing, on x: no series)
    assert "one draw of routing ecmp (seed 0)" in drawn[0]._suptitle.get_text().replace("\n", " ")
    assert drawn[0].axes[0].get_xlabel() == "routing"  # (a dataset of one routing axis: before, refused as the series)
    assert cli.main(["sweep", "topology=fat_tree", "topology.k=4", "topology.levels=3", "traffic=shift",
                     "traffic.n_tasks=16", "placement=linear", "routing=dmodk,ecmp_spray", "ray.enabled=false",
                     "--no-progress", f"sweep.output_dir={tmp_path / 'fixed'}"]) == 0
    (fixed,) = sorted((tmp_path / "fixed").rglob("*.nc"))
    assert open_results(fixed).attrs["one_draw"] == ""
