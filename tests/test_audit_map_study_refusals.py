"""Refusals found by an audit of map and the studies as a user runs them (2026-12-06): a node range that filled
the memory, a binary node list that raised an internal error, a speedup table written over the study's own
dataset, and buyer sizes that spun, repeated or could not be built; each is now one line naming the option,
before anything is computed or written."""

from __future__ import annotations

import os

import pytest

from evaluator import cli

SAMPLE = os.path.join(os.path.dirname(__file__), "data", "sample.swf")
SMOKE = os.path.join(os.path.dirname(__file__), os.pardir, "sweeps", "workload", "smoke.yaml")
MAP = ["map", "topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=stencil",
       "traffic.alpha=[16,16,16]", "traffic.beta=[4,4,2]", "save=false", "--iterations", "1", "--no-progress"]


@pytest.mark.parametrize("nodes", ["0-999999999", "0-99999999999999", "99999999999999999999999"])
def test_node_ranges_no_machine_has_are_refused_before_they_are_listed(nodes, capsys):
    assert cli.main([*MAP, "--nodes", nodes]) == 2
    assert "is invalid: allowed is at most 10,000,000 ids in all, each below 2^62" in capsys.readouterr().err


def test_node_lists_and_starts_in_files_are_checked_the_same(tmp_path, capsys):
    (tmp_path / "junk").write_bytes(bytes(range(128, 256)) * 2)
    assert cli.main([*MAP, "--nodes", str(tmp_path / "junk")]) == 2
    assert "a readable node list file (text)" in capsys.readouterr().err
    (tmp_path / "huge").write_text("0-99999999999999\n")
    assert cli.main([*MAP, "--nodes", str(tmp_path / "huge")]) == 2
    assert "allowed is at most 10,000,000 ids in all" in capsys.readouterr().err
    (tmp_path / "start.txt").write_text("0-30\n0-99999999999999\n")
    assert cli.main([*MAP, "--start", str(tmp_path / "start.txt")]) == 2
    assert "allowed is at most 10,000,000 ids in all" in capsys.readouterr().err
    (tmp_path / "nodes.txt").write_text("\n".join(map(str, range(31))) + "\n64-9999999\n")  # a node list
    assert cli.main([*MAP, "--start", f"node_list:{tmp_path / 'nodes.txt'}"]) == 2
    err = capsys.readouterr().err
    assert "allowed is node ids of torus 4x4x4: integers in [0, 63]. Node 9999999 is out of range" in err


def test_parse_node_ids_caps_what_it_lists():
    from evaluator.errors import ConfigError
    from evaluator.mapping import parse_node_ids
    from evaluator.mapping._user_starts import MAX_LISTED_IDS

    assert parse_node_ids("0-3, 8", limit=9).tolist() == [0, 1, 2, 3, 8]
    with pytest.raises(ConfigError, match="at most 10,000,000 ids"):
        parse_node_ids(f"0-{MAX_LISTED_IDS - 1} 0")  # one more than the cap, counted before listing


def test_a_speedup_table_over_the_studys_own_dataset_is_refused(tmp_path, capsys):
    same = tmp_path / "same.nc"
    assert cli.main(["study", "rdn", "--machine", "2,2,2,5", "--seeds", "1", "--out", str(same),
                     "--speedup-out", str(same)]) == 2
    assert "--speedup-out = " in capsys.readouterr().err and not same.exists()


@pytest.mark.parametrize("nodes, says", [("10000000000000000", "integers in [16, 200,000]"),
                                         ("32,32", "32 given twice"), ("17", "At 17 nodes no fat tree"),
                                         ("33", "At 33 nodes no fat tree")])
def test_buyer_sizes_that_spin_repeat_or_cannot_be_built_are_refused_at_once(nodes, says, tmp_path, capsys):
    out = tmp_path / "buy"
    assert cli.main(["study", "buyer", "--workloads", "allreduce_8B", "--nodes", nodes, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--nodes = " in err and says in err and not os.path.exists(out)


@pytest.mark.parametrize("option, value, says", [
    ("--candidates", "100000000", "at most 1,048,576 candidate moves per device call"),
    ("--candidates", "10000000000000", "at most 1,048,576 candidate moves per device call"),
    ("--tasks-per-node", "100000000000", "an integer in [1, 1,024] (slots per node)"),
])
def test_candidates_and_slots_no_memory_holds_are_refused_before_anything_is_built(option, value, says, capsys):
    """--candidates 10^8 grew past 6 GB, 10^13 raised MemoryError (73 TiB); --tasks-per-node 10^11 raised
    MemoryError (12 TiB): refused from the options alone."""
    assert cli.main([*MAP, option, value]) == 2
    assert f"{option} = {value} is invalid: allowed is {says}" in capsys.readouterr().err


def test_a_search_stopped_at_a_bound_of_zero_prints_that_bound(capsys):
    """Random pairs, two tasks a node: the partition keeps every pair on its node (0 s), the search stops at once
    saying the mapping meets 'the lower bound below', which was never printed (a bound of 0 was left out)."""
    assert cli.main(["map", "topology=dragonfly", "routing=valiant", "traffic=random_pairs", "traffic.n_tasks=64",
                     "placement=linear", "--tasks-per-node", "2", "--nodes", "0-47", "--iterations", "3",
                     "--no-progress", "save=false"]) == 0
    out = capsys.readouterr().out
    assert "meets the lower bound below" in out
    assert "mapping found: 0 s" in out and "no mapping is below 0 s: no byte of the mapping found crosses a link" in out


@pytest.mark.parametrize("args,option,says", [
    (["--synthetic", "50", "--procs-per-node", "4"], "--procs-per-node = 4", "only with --swf"),
    (["--swf", SAMPLE, "--load", "0.5"], "--load = 0.5", "no --load with --swf"),
    (["--synthetic", "50", "--backfill-depth", "-2"], "--backfill-depth = -2", "or -1 for every queued job"),
    (["--study", SMOKE, "--seed", "3"], "--seed = 3", "Given with --study: --seed."),
    (["--study", SMOKE, "--policy", "grap", "--allow-foreign-speedups"], "--policy = 'grap'",
     "Given with --study: --policy, --allow-foreign-speedups."),
])
def test_schedule_options_the_run_would_ignore_are_refused(args, option, says, tmp_path, capsys):
    """Each ran before and changed nothing: --procs-per-node on a synthetic trace, --load on an SWF trace, a study's
    trace, machine, runs and seed given beside --study (the file's were used); a --backfill-depth of -2 meant all."""
    out = tmp_path / "out"
    assert cli.main(["schedule", *args, "--groups", "4", "--nodes-per-group", "8", "--no-plot", "--no-progress",
                     "--out", str(out)] if "--study" not in args else ["schedule", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert option in err and says in err, err
    assert not out.exists() or not any(out.glob("*.nc"))


def test_schedule_options_the_run_reads_still_run(tmp_path, capsys):
    out = tmp_path / "out"
    for args in (["--swf", SAMPLE, "--procs-per-node", "2"], ["--synthetic", "40", "--load", "0.5",
                                                                               "--backfill-depth", "-1"]):
        assert cli.main(["schedule", *args, "--groups", "4", "--nodes-per-group", "8", "--policy", "unrestricted",
                         "--no-plot", "--no-progress", "--out", str(out)]) == 0
    assert len(list(out.glob("*.nc"))) == 2


@pytest.mark.parametrize("args,says", [
    (["--placement", "dragonfly_cartesian,linear"], "--placement = 'dragonfly_cartesian,linear' is invalid: allowed "
                                                    "is one option of the placement group"),
    (["traffic.alpha=[16,16,16]"], "traffic.alpha = '[16,16,16]' is invalid: allowed is no override of "
                                   "traffic.alpha: give --alpha instead"),
    (["traffic=all_to_all"], "traffic = 'all_to_all' is invalid"),
    (["output_dir=/proc/x"], "give sweep.output_dir"),
    (["ray.address=1.2.3.4:1"], "ray.* settings with --ray only"),
])
def test_optimize_refuses_options_it_would_override_drop_or_ignore(args, says, tmp_path, capsys):
    """Each ran before: a placement list searched gamma for none of them (every dragonfly_cartesian point
    infeasible), traffic.alpha replaced --alpha, output_dir and ray.* were ignored."""
    rc = cli.main(["optimize", "--tasks", "8", "--alpha", "8,8,8", "--no-progress", *args,
                   f"sweep.output_dir={tmp_path}"])
    assert rc == 2 and says in capsys.readouterr().err
    assert not any(tmp_path.rglob("*.nc"))


def test_optimize_alpha_of_too_many_dimensions_or_a_huge_prime_is_refused_at_once(capsys):
    """65 dimensions raised NumPy's internal error; a prime of 10^18 spun in the nearest-count hint's trial
    division (killed after 60 s)."""
    import time

    assert cli.main(["optimize", "--tasks", "2", "--alpha", ",".join(["2"] * 65)]) == 2
    assert "at most 32 dimensions" in capsys.readouterr().err
    t = time.perf_counter()
    assert cli.main(["optimize", "--tasks", "2", "--alpha", "1000000000000000003,1,1"]) == 2
    assert "no factorization of 2 does" in capsys.readouterr().err and time.perf_counter() - t < 10
