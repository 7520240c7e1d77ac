"""`evaluator eval` under a random routing (hashed ECMP: one hash seed is one draw) also evaluates 16 draws and
prints their mean, 95th percentile and range, where it printed the configured draw alone (one-sided: on an 8-ary
3-tree stencil, ecmp-s0 is the 14th fastest of 16 seeds).

The reference is the README's way, independent of :func:`evaluator.evaluation.evaluate_draws`: ``evaluate_batch``
under each spec of ``evaluator.routing.ecmp_seeds(16)``, and NumPy's mean, quantile, max and min.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator.cli.evaluate as eval_cli
from evaluator import cli, placement, routing, topology, traffic
from evaluator.display import format_value
from evaluator.errors import ResourceError
from evaluator.evaluation import evaluate_batch, evaluate_draws
from evaluator.query import open_results

POINT = ["topology=fat_tree", "topology.k=4", "topology.levels=3", "routing=ecmp", "traffic=random_permutation",
         "traffic.n_tasks=16", "placement=linear"]


def _reference(seed: int = 0, k: int = 16) -> np.ndarray:
    """The README's way: one evaluate_batch per spec of ``ecmp_seeds``."""
    from evaluator import config

    p = config.build(config.to_object(config.compose(POINT)))  # the point the command evaluates
    return np.array([float(evaluate_batch(p.topology, r, p.traffic, p.placement).metrics["completion_time"][0])
                     for r in routing.ecmp_seeds(k, seed=seed)])


def test_eval_prints_and_keeps_16_draws(tmp_path, capsys):
    assert cli.main(["eval", *POINT, "routing.seed=3", f"output_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    ref = _reference(seed=3)
    (line,) = [ln for ln in out.splitlines() if ln.startswith("draws ")]
    assert "over 16 draws of the routing (ecmp-s3 .. ecmp-s18)" in line
    for what, v in (("mean", ref.mean()), ("95th percentile", np.quantile(ref, 0.95))):
        assert f"{what} {format_value(float(v), 's')}" in line, (what, line)
    assert f"range {format_value(float(ref.min()), 's')} to {format_value(float(ref.max()), 's')}" in line
    assert f"ecmp-s3, above, ranks {1 + int((ref < ref[0]).sum())} of 16" in line
    (path,) = sorted(tmp_path.rglob("*.nc"))
    ds = open_results(path)
    np.testing.assert_allclose(ds["draw_completion_time"].values, ref, rtol=1e-12)
    assert list(ds["draw"].values) == [f"ecmp-s{s}" for s in range(3, 19)]
    assert float(ds["draw_completion_time"][0]) == pytest.approx(float(ds["completion_time"]), rel=1e-12)


def test_the_library_summary_is_numpys_and_other_routings_have_no_draws():
    t = topology.fat_tree(k=4, levels=3)
    trs = [traffic.random_permutation(16, seed=s) for s in range(3)]
    pl = placement.linear(t, 16)
    d = evaluate_draws(t, routing.ecmp(0), trs, [pl] * 3, 8)
    ref = np.array([[float(evaluate_batch(t, routing.ecmp(j), tr, pl).metrics["completion_time"][0])
                     for j in range(8)] for tr in trs])
    np.testing.assert_allclose(d["completion_time"].values, ref, rtol=1e-12)
    for name, v in (("mean", ref.mean(1)), ("p95", np.quantile(ref, 0.95, axis=1)), ("max", ref.max(1)),
                    ("min", ref.min(1))):
        np.testing.assert_allclose(d[f"completion_time_{name}"].values, v, rtol=1e-12)
    assert evaluate_draws(t, routing.dmodk(), trs, [pl] * 3) is None


def test_one_draw_and_fixed_routings_print_no_draws_line(tmp_path, capsys):
    assert cli.main(["eval", *POINT, "save=false", "--draws", "1"]) == 0
    assert "\ndraws " not in capsys.readouterr().out
    assert cli.main(["eval", *[p if p != "routing=ecmp" else "routing=dmodk" for p in POINT], "save=false"]) == 0
    assert "\ndraws " not in capsys.readouterr().out
    assert cli.main(["eval", *POINT, "save=false", "--draws", "0"]) != 0
    assert "--draws = 0 is invalid" in capsys.readouterr().err


def test_draws_that_do_not_fit_lose_nothing(tmp_path, capsys, monkeypatch):
    """The point's own result is printed and written when its draws are refused (memory), with the reason."""
    def refuse(*a, **k):
        raise ResourceError("traffics", 16, "draws that fit: these would need 99 GB")

    monkeypatch.setattr(eval_cli, "evaluate_draws", refuse)
    assert cli.main(["eval", *POINT, f"output_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    assert "draws       not evaluated: " in out and "99 GB" in out and "dataset: " in out
    (path,) = sorted(tmp_path.rglob("*.nc"))
    assert "draw_completion_time" not in open_results(path)


def test_a_ctrl_c_in_the_draws_keeps_the_point(tmp_path, capsys, monkeypatch):
    """The point's lines are printed before its draws run; a Ctrl-C there leaves the point printed and written,
    with a line that says no draw is summarised (not a summary of the draws done so far: one-sided)."""
    def interrupted(*a, **k):
        print("(draws running)")
        raise KeyboardInterrupt

    monkeypatch.setattr(eval_cli, "evaluate_draws", interrupted)
    assert cli.main(["eval", *POINT, f"output_dir={tmp_path}"]) == 130  # the shell's code for a Ctrl-C
    out = capsys.readouterr().out
    assert out.index("completion ") < out.index("(draws running)") < out.index("draws       interrupted (Ctrl-C)")
    assert "none summarised; the point's result above is kept" in out and "dataset: " in out
    (path,) = sorted(tmp_path.rglob("*.nc"))
    ds = open_results(path)
    assert "draw_completion_time" not in ds and np.isfinite(float(ds["completion_time"]))


JOBS = ["topology=fat_tree", "topology.k=4", "topology.levels=3", "traffic=random_pairs", "placement=random",
        "jobs=[{name: a, traffic: {n_tasks: 8, seed: 1}, placement: {seed: 1}}, "
        "{name: b, traffic: {n_tasks: 8, seed: 2}, placement: {seed: 2}}]", "exclusive_nodes=false"]


def test_several_jobs_under_ecmp_say_they_are_one_draw_and_the_way_given_works(tmp_path, capsys):
    """The jobs' times are one hash seed's; the note's way (the same overrides swept over routing.seed, then
    query --draws routing.seed --best makespan) gives the makespan's mean over the seeds, NumPy's here."""
    assert cli.main(["eval", *JOBS, "routing=dmodk", "save=false"]) == 0
    assert "one draw of a random routing" not in capsys.readouterr().out
    assert cli.main(["eval", *JOBS, "routing=ecmp", "save=false"]) == 0
    out = capsys.readouterr().out
    assert ("ecmp-s0: one draw of a random routing; the times above are that draw's, not what the routing gives on "
            "average: evaluator sweep with the same overrides and the axis routing.seed='range(0,16)', then "
            "evaluator query RUN --draws routing.seed --best makespan") in out
    # the jobs' own random pairs and placements are one draw each too, named with their jobs
    assert ("note        jobs.0.traffic random_pairs (seed 1) of job a; jobs.0.placement random (seed 1) of job a; "
            "jobs.1.traffic random_pairs (seed 2) of job b; jobs.1.placement random (seed 2) of job b are one random "
            "draw each, so the times above are those draws', not what the point gives on average: sweep the same "
            "overrides over the axes jobs.0.traffic.seed='range(0,16)' jobs.0.placement.seed='range(0,16)' "
            "jobs.1.traffic.seed='range(0,16)' jobs.1.placement.seed='range(0,16)' and rank with evaluator query RUN "
            "--draws jobs.0.traffic.seed jobs.0.placement.seed jobs.1.traffic.seed jobs.1.placement.seed") in out
    assert cli.main(["sweep", *JOBS, "routing=ecmp", "routing.seed=range(0,4)", "ray.enabled=false", "--no-progress",
                     f"sweep.output_dir={tmp_path}"]) == 0
    (path,) = sorted(tmp_path.rglob("*.nc"))
    capsys.readouterr()
    assert cli.main(["query", str(path), "--draws", "routing.seed", "--best", "makespan"]) == 0
    table = capsys.readouterr().out
    ms = open_results(path)["makespan"].values
    assert ms.shape == (4,)
    assert f" {format_value(float(ms.mean()), 's').split()[0]} " in table


LATENCY = ["topology=fat_tree", "topology.k=4", "topology.levels=3", "routing=ecmp", "traffic=collective",
           "traffic.op=allreduce", "traffic.algorithm=ring", "traffic.bytes=65536", "placement=random",
           "+topology.latency.link.level1-up=1e-6", "+topology.latency.link.level2-up=2e-6", "sharing=max_min"]


def test_draws_of_a_point_read_by_its_latency_and_max_min_times(tmp_path, capsys):
    """With a latency model and max-min sharing the point is read by its time with latency and its max-min time,
    so the draws summarise those too, not the bandwidth bound alone. Checked against evaluate() of each hash seed
    in turn (the configured one the point's own), NumPy's mean and range, and the model's own structure: every
    ECMP path of a pair on a fat tree has the same levels, so the latency a draw adds to its bound is the same in
    every draw."""
    from evaluator import config
    from evaluator.evaluation import evaluate

    assert cli.main(["eval", *LATENCY, "--draws", "4", f"output_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    p = config.build(config.to_object(config.compose(LATENCY)))
    refs = [evaluate(p.topology, p.traffic, p.placement, r, sharing="max_min") for r in routing.ecmp_seeds(4)]
    ds = open_results(sorted(tmp_path.rglob("*.nc"))[0])
    for v, what in (("completion_time", "completion"), ("time_with_latency", "time with latency"),
                    ("time_max_min", "max-min time")):
        ref = np.array([float(r[v]) for r in refs])
        np.testing.assert_allclose(ds[f"draw_{v}"].values, ref, rtol=1e-12)
        assert ref[0] == pytest.approx(float(ds[v]), rel=1e-12)  # the first draw: the point itself
        (line,) = [ln for ln in out.splitlines() if f"{what} over 4 draws of the routing (ecmp-s0 .. ecmp-s3)" in ln]
        assert f"mean {format_value(ref.mean(), 's')}" in line
        assert f"range {format_value(ref.min(), 's')} to {format_value(ref.max(), 's')}" in line
    added = ds["draw_time_with_latency"].values - ds["draw_completion_time"].values
    assert np.ptp(added) <= 1e-12 * added.max() and added.min() > 0
    assert len(set(ds["draw_completion_time"].values)) > 1  # the draws differ: not one draw four times


def test_a_jobs_own_hashed_routing_is_named_with_its_own_seed_axis(capsys):
    """A job with its own hashed ECMP (the others on D-mod-k): the note names that routing and the axis that draws
    it, jobs.<i>.routing.seed; the top-level routing, which no job here routes by, is not named."""
    jobs = ["topology=fat_tree", "topology.k=4", "topology.levels=3", "traffic=shift", "traffic.n_tasks=8",
            "placement=linear", "routing=ecmp", "exclusive_nodes=false",
            "jobs=[{name: a, routing: {kind: dmodk}}, {name: b, routing: {kind: ecmp, seed: 7}}]"]
    assert cli.main(["eval", *jobs, "save=false"]) == 0
    out = capsys.readouterr().out
    assert ("note        ecmp-s7: one draw of a random routing; the times above are that draw's, not what the routing "
            "gives on average: evaluator sweep with the same overrides and the axis jobs.1.routing.seed="
            "'range(0,16)', then evaluator query RUN --draws jobs.1.routing.seed --best makespan") in out
    assert "ecmp-s0" not in out


def test_the_backgrounds_own_hashed_routing_is_named_with_its_own_seed_axis(capsys):
    """A background load with its own hashed ECMP (the job on D-mod-k): the note names it and the axis that draws
    it, background.routing.seed (this raised an internal error: the key was read as a job's)."""
    point = ["topology=fat_tree", "topology.k=4", "topology.levels=3", "traffic=shift", "traffic.n_tasks=8",
             "placement=linear", "routing=dmodk", "background.fraction=0.5", "+background.routing={kind: ecmp, seed: 7}"]
    assert cli.main(["eval", *point, "save=false"]) == 0
    out = capsys.readouterr().out
    assert ("note        ecmp-s7: one draw of a random routing; the times above are that draw's, not what the routing "
            "gives on average: evaluator sweep with the same overrides and the axis background.routing.seed="
            "'range(0,16)', then evaluator query RUN --draws background.routing.seed --best makespan") in out


@pytest.mark.parametrize("k", [0, 10_001, 10**9])
def test_too_many_draws_are_refused_before_any_is_made(k, capsys):
    """--draws above 10,000 (each draw one evaluation; 10^9 listed its routing specs until memory ran out): one
    line naming the option and the allowed range; the library's evaluate_draws refuses the same."""
    from evaluator.errors import ConfigError

    assert cli.main(["eval", *POINT, "save=false", "--draws", str(k)]) == 2
    assert f"--draws = {k} is invalid: allowed is " in capsys.readouterr().err
    with pytest.raises(ConfigError, match="draws"):
        evaluate_draws(topology.fat_tree(k=4, levels=3), routing.ecmp(0), traffic.shift(16, 1, 1e6),
                       placement.linear(topology.fat_tree(k=4, levels=3), 16), k)


def test_draws_asked_for_where_the_routing_is_no_draw_say_they_do_nothing(capsys):
    """--draws K under a routing whose spec gives its paths (minimal on a Dragonfly) was accepted in silence: a
    line now says it does nothing; the default (not given) and --draws 1 print none."""
    base = ["topology=dragonfly", "topology.p=2", "topology.a=4", "topology.h=2", "routing=minimal",
            "traffic=shift", "placement=linear", "save=false"]
    assert cli.main(["eval", *base, "--draws", "5"]) == 0
    assert "draws       --draws 5 does nothing here: routing minimal is no random draw" in capsys.readouterr().out
    for extra in ([], ["--draws", "1"]):
        assert cli.main(["eval", *base, *extra]) == 0
        assert "does nothing here" not in capsys.readouterr().out
