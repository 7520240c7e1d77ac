"""Infeasible points are summarised by the cause that covers most of them, in words a user can act on; ``evaluator
map --tasks-per-node`` is what the capacity check counts (issue 34).

Before: ``evaluator map ... traffic.n_tasks=40 --tasks-per-node 4`` on 12 nodes failed with "at most nodes x
tasks_per_node = 12 x 1 = 12 ... use more tasks per node"; a study of 4,096 ranks on DF(4,8,4) (1,056 nodes)
gave "0 feasible of 250 points: 38 x placement.gamma: |gamma| <= ... got |gamma| = 64, 36 x ... = 128, ..."
and never said that the default placement puts one task per node.
"""

from __future__ import annotations

import pytest

from evaluator import cli, config
from evaluator.errors import ConfigError
from evaluator.sweep.reasons import summarize_reasons

SMALL_DF = ["topology=dragonfly", "topology.p=2", "topology.a=2", "topology.h=1"]  # DF(2,2,1,3): 12 nodes
MAP = [*SMALL_DF, "routing=minimal", "traffic=random_pairs", "traffic.n_tasks=40", "save=false", "--no-progress",
       "--budget", "1", "--iterations", "1"]


def test_map_tasks_per_node_is_what_the_capacity_check_counts(capsys):
    assert cli.main(["map", *MAP, "--tasks-per-node", "4"]) == 0, capsys.readouterr().err
    assert "(12 nodes available, 4 per node)" in capsys.readouterr().out


def test_map_too_few_slots_names_the_option_and_the_value_that_fits(capsys):
    assert cli.main(["map", *MAP, "--tasks-per-node", "2"]) == 2
    err = capsys.readouterr().err
    assert "--tasks-per-node = 2" in err and "12 x 2 = 24" in err and "--tasks-per-node 4" in err, err
    assert cli.main(["map", *MAP, "--nodes", "0-5", "--tasks-per-node", "4"]) == 2
    err = capsys.readouterr().err
    assert "6 x 4 = 24" in err and "--tasks-per-node 7" in err, err


def test_map_tasks_per_node_against_the_placement_own(capsys):
    assert cli.main(["map", *MAP, "placement.tasks_per_node=3", "--tasks-per-node", "4"]) == 2
    err = capsys.readouterr().err
    assert "--tasks-per-node = 4" in err and "placement.tasks_per_node=3" in err, err


def test_issue_study_4096_ranks_on_df484_leads_with_one_task_per_node(tmp_path, capsys):
    rc = cli.main(["sweep", "sweeps=dragonfly_nne_placement", "+sweep.axes.traffic.beta=[[16,16,16]]",
                   "ray.enabled=false", f"sweep.output_dir={tmp_path}", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2
    head = err.split("0 feasible of 250 points: ", 1)[1]
    assert head.startswith("250 x traffic.beta: at most 1056 tasks: placement dragonfly_cartesian puts one task "
                           "per node and DF(4,8,4,33) has 1056 nodes"), err
    assert "placement.tasks_per_node=4 fits 4096 tasks" in head, err


def test_partly_infeasible_sweep_prints_the_cause(tmp_path, capsys):
    rc = cli.main(["sweep", "topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=all_to_all",
                   "placement=linear", "traffic.n_tasks=8,32", f"sweep.output_dir={tmp_path}", "ray.enabled=false",
                   "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "1 infeasible: 1 x placement.n_tasks: at most nodes x tasks_per_node = 16 x 1 = 16 on torus 4x4 (one " \
           "task per node; placement.tasks_per_node=2 fits 32 tasks)" in out, out


def test_the_counts_recorded_at_assembly_are_the_datasets(tmp_path):
    """The sweep records its infeasible points' reasons counted (attribute reason_counts_json), which the command's
    summary reads instead of the strings: the same counts, in the same order, as counting the dataset's ``reason``
    (several reasons, repeated, in a sweep of 3 x 3 points)."""
    import numpy as np

    from evaluator.query import open_results
    from evaluator.sweep.reasons import reason_counts

    assert cli.main(["sweep", *SMALL_DF, "routing=minimal", "traffic=all_to_all", "placement=linear",
                     "traffic.n_tasks=8,16,40", "placement.tasks_per_node=1,2,3", f"sweep.output_dir={tmp_path}",
                     "ray.enabled=false", "--no-progress"]) == 0
    path = next(tmp_path.rglob("*.nc"))
    full = open_results(path)
    lean = open_results(path, drop_variables=["reason"])
    assert "reason" in full and "reason" not in lean
    counted = reason_counts(full)
    assert len(counted) >= 2 and sum(counted.values()) == int((~np.asarray(full.feasible.values)).sum())
    assert list(reason_counts(lean).items()) == list(counted.items())


def test_optimize_names_the_cause(tmp_path, monkeypatch, capsys):
    """More tasks than the placement can place: refused naming --tasks and the cause before the search (which
    found all 1,050 configurations infeasible for that reason, 2 min on DF(8,16,8) for 100,000 tasks), for a
    placement of one task per node and one of placement.tasks_per_node; a count that fits runs."""
    from evaluator.cli import optimize

    monkeypatch.chdir(tmp_path)
    ran = []
    def started(*args, **kw):
        ran.append(args)
        raise KeyboardInterrupt

    monkeypatch.setattr(optimize, "run_sweep", started)
    assert cli.main(["optimize", "--tasks", "16", "--alpha", "16,16,16", *SMALL_DF[1:], "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--tasks = 16 is invalid: allowed is at most 12 tasks: placement dragonfly_cartesian puts one task per " \
           "node" in err, err
    assert cli.main(["optimize", "--tasks", "32", "--alpha", "16,16,16", "--placement", "linear", *SMALL_DF[1:],
                     "placement.tasks_per_node=2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--tasks = 32 is invalid: allowed is at most nodes x tasks_per_node = 12 x 2 = 24" in err, err
    assert not ran and not list(tmp_path.rglob("*.nc"))
    # 24 fit: the search starts (and is stopped there: a Ctrl-C)
    assert cli.main(["optimize", "--tasks", "24", "--alpha", "24,24,24", "--placement", "linear", *SMALL_DF[1:],
                     "placement.tasks_per_node=2", "--no-progress"]) != 0
    assert len(ran) == 1


def test_dragonfly_random_too_many_tasks_says_one_per_node():
    import evaluator as ev

    with pytest.raises(ConfigError, match="placement dragonfly_random puts one task per node") as info:
        ev.placement.dragonfly_random(ev.dragonfly(2, 2, 1), 16, 4)
    assert info.value.field == "placement.n_tasks"
    with pytest.raises(ConfigError, match="placement.tasks_per_node=2 fits 16 tasks"):
        config.build(config.to_object(config.compose([*SMALL_DF, "traffic=all_to_all", "traffic.n_tasks=16",
                                                      "placement=linear"])))


def test_reasons_are_grouped_by_rule_and_the_largest_group_leads():
    rows = (["g: |gamma| <= 32; got |gamma| = 64"] * 3 + ["g: |gamma| <= 32; got |gamma| = 128"] * 3
            + ["b: a divisor of alpha[0] = 512"] * 4 + ["b: a divisor of alpha[1] = 512"] + ["x: other"])
    # before: "4 x b: a divisor of alpha[0] = 512, 3 x g: ...; got |gamma| = 64, 3 x ..., 1 x ..."
    assert summarize_reasons(rows, 2) == ("6 x g: |gamma| <= 32 (2 variants), 5 x b: a divisor of alpha[0] = 512 "
                                          "(2 variants), and 1 other reason(s)")
    assert summarize_reasons(["a: b."] * 2 + [""]) == "2 x a: b, 1 x no reason recorded"


def test_reason_counts_summarise_as_the_reasons_do():
    """The sweep's end counts reasons by a hash table (reason_counts); the summary is the one the list of reasons
    gives, ties in order of first appearance included."""
    import numpy as np
    import xarray as xr

    from evaluator.sweep.reasons import infeasible_reasons, reason_counts

    texts = ["placement.gamma: a divisor of beta[0] = 8; got 3", "traffic.beta: too big; got 12",
             "placement.gamma: a divisor of beta[0] = 8; got 5", "", "traffic.beta: too big; got 12"]
    rng = np.random.default_rng(0)
    reason = np.array([texts[i] for i in rng.integers(0, len(texts), 400)], dtype=object).reshape(20, 20)
    feasible = reason == ""
    ds = xr.Dataset({"reason": (("a", "b"), reason), "feasible": (("a", "b"), feasible)})
    counts = reason_counts(ds)
    assert sum(counts.values()) == int((~feasible).sum()) and "" not in counts
    assert list(counts) == list(dict.fromkeys(infeasible_reasons(ds)))  # first appearance order
    for n in (1, 2, 4):
        assert summarize_reasons(counts, n) == summarize_reasons(infeasible_reasons(ds), n)
