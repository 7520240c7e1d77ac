"""The public API's second audit (2026-12-06): arguments that were read as something else, or raised Python's own
error instead of naming the argument. Each test failed on the code before it (an accepted value, or an
AttributeError / ValueError that named no argument)."""
from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import routing as RT
from evaluator import topology as T
from evaluator.errors import ConfigError
from evaluator.traffic import DenseTraffic
from evaluator.traffic.base import from_flows


@pytest.fixture(scope="module")
def torus44():
    t = T.torus((4, 4))
    return t, P.linear(t, 4), from_flows(4, [0, 1], [1, 2], [10.0, 10.0])


@pytest.mark.parametrize("value", ["1e9", "2e9", b"1"])
def test_a_number_as_text_is_refused(value):
    # float("1e9") read the text as 2 GB/s's neighbour; a config's number is never text
    # (one value is named by the key the user set, not its [0] entry, since 2026-12-07)
    with pytest.raises(ConfigError, match=r"topology\.link_bandwidth = .*a finite number"):
        T.torus((4, 4), link_bandwidth=value)


def test_a_time_budget_as_text_is_refused(torus44):
    from evaluator.mapping import search_mapping

    t, _, tr = torus44
    with pytest.raises(ConfigError, match=r"mapping\.time_budget = '1'"):
        search_mapping(t, tr, "dor", time_budget="1", max_iterations=1)


@pytest.mark.parametrize("flag", ["no", "False", 0, None])
def test_keep_link_load_must_be_a_bool(torus44, flag):
    t, pl, tr = torus44  # bool("no") is True: the loads were kept
    with pytest.raises(ConfigError, match=r"keep_link_load .*True or False"):
        ev.evaluate_batch(t, "dor", tr, pl, keep_link_load=flag)


@pytest.mark.parametrize("name", ["exclusive_nodes", "interference", "keep_link_load"])
def test_evaluate_jobs_flags_must_be_bools(torus44, name):
    from evaluator.jobs import Job, evaluate_jobs

    t, pl, tr = torus44
    with pytest.raises(ConfigError, match=rf"{name} = 'no'"):
        evaluate_jobs(t, [Job(tr, pl)], "dor", **{name: "no"})


def test_from_flows_refuses_a_2d_array():
    # [[0, 1], [2, 3]] was flattened into four flows
    with pytest.raises(ConfigError, match=r"traffic\.src .*shape \(2, 2\).*1-D"):
        from_flows(4, [[0, 1], [2, 3]], [[1, 2], [3, 0]], 10.0)
    with pytest.raises(ConfigError, match=r"traffic\.bytes .*shape \(2, 1\)"):
        from_flows(4, [0, 1], [1, 2], [[10.0], [10.0]])


def test_bytes_whose_total_overflows_are_refused(torus44):
    t, pl, _ = torus44  # two flows of 1e308 B gave an infinite time and a NaN throughput
    with pytest.raises(ConfigError, match=r"traffic\.nbytes .*finite total"):
        ev.evaluate(t, from_flows(4, [0, 0], [1, 1], [1e308, 1e308]), pl, "dor")
    with pytest.raises(ConfigError, match=r"traffic\.bytes_per_pair .*finite"):
        DenseTraffic(1000, np.ones(1000), np.ones(1000), 1e306)
    assert from_flows(4, [0], [1], [1e308]).total_bytes == 1e308  # one large flow is a finite total


def test_routings_for_an_unknown_kind_is_refused():
    assert "dor" in RT.routings_for("torus")
    with pytest.raises(ConfigError, match=r"topology\.kind = 'torrus'.*Did you mean 'torus'"):
        RT.routings_for("torrus")


def test_dor_order_of_a_dragonfly_is_refused():
    from evaluator.routing._dor import dor_order

    with pytest.raises(ConfigError, match=r"topology = 'DF\(2,4,2,9\)'.*a torus"):
        dor_order(T.dragonfly(2, 4, 2), (0, 1))


@pytest.mark.parametrize("keys, bad", [([-3, 5], -3), ([5, 256], 256), ([5, 17], 17)])
def test_pair_set_keys_are_router_pairs(keys, bad):
    from evaluator.routing._paths import PairSet

    # -3 and 256 are no pair of 16 routers; 17 = 1 * 16 + 1 is a router to itself
    with pytest.raises(ConfigError, match=rf"pairs\.keys = {bad} "):
        PairSet(keys, 16)
    assert len(PairSet([1, 16, 254], 16)) == 3


def test_alps_free_of_the_wrong_length_is_refused():
    from evaluator.placement._alps import alps

    t = T.torus((4, 4, 4))
    with pytest.raises(ConfigError, match=r"placement\.free .*one per node \(64\)"):
        alps(t, 4, free=np.ones(3, bool))
    with pytest.raises(ConfigError, match=r"placement\.free"):
        alps(t, 4, free=np.ones(64))  # floats, not booleans
    assert alps(t, 4, free=np.ones(64, bool)).n_tasks == 4


def test_query_helpers_name_their_argument():
    from evaluator.display import rank_labels
    from evaluator.query import tied

    with pytest.raises(ConfigError, match=r"a = 'a'"):
        tied("a", "b")
    assert tied(1.0, 1.0 + 1e-12) and not tied(1.0, 2.0)
    with pytest.raises(ConfigError, match=r"index = 'ab'"):
        rank_labels("ab")
    assert rank_labels([1, 1, 3]) == ["1=", "1=", "3"]


def test_bounds_and_latency_name_a_missing_argument(torus44):
    from evaluator.jobs._evaluate import job_summary_lines
    from evaluator.latency import Latency, link_latency
    from evaluator.mapping.bound import endpoint_bound, task_node_bound

    t, _, tr = torus44
    with pytest.raises(ConfigError, match=r"^traffic = None"):
        endpoint_bound(t, None)
    with pytest.raises(ConfigError, match=r"^topology = None"):
        endpoint_bound(None, tr)
    with pytest.raises(ConfigError, match=r"^tasks_per_node = 0"):
        task_node_bound(t, tr, tasks_per_node=0)
    with pytest.raises(ConfigError, match=r"^latency = 'None'"):
        link_latency(t, None)
    with pytest.raises(ConfigError, match=r"^topology = 'None'"):
        link_latency(None, Latency())
    with pytest.raises(ConfigError, match=r"^ds = 'NoneType'"):
        job_summary_lines(None)


def test_rank_order_shows_the_value_given(torus44):
    from evaluator.placement.rank_order import apply_rank_order

    _, pl, _ = torus44  # 1.5 was shown as 1, so the message showed a list that looked valid
    with pytest.raises(ConfigError, match=r"\[0\.0, 1\.0, 2\.0, 1\.5\].*integers"):
        apply_rank_order(pl, [0, 1, 2, 1.5])
    assert apply_rank_order(pl, [3.0, 2.0, 1.0, 0.0]).task_node.tolist() == pl.task_node[::-1].tolist()



def test_a_study_file_reads_9e_1_as_a_number(tmp_path):
    """PyYAML (YAML 1.1) reads ``9e-1`` and ``1.0e9`` as text, which float() once turned back into numbers.
    With text refused where a number goes, the YAML files the tool reads itself (studies, machines, prices) are
    read as YAML 1.2 writes numbers, as Hydra reads conf/; a quoted '9e-1' is text, and refused."""
    from pathlib import Path

    from evaluator.io import read_yaml
    from evaluator.sweep.schedule import load_study

    assert read_yaml("a: 2e9\nb: 1.0e9\nc: .5e-3\nd: e9\ne: '2e9'\nf: 12\ng: 1.5") == {
        "a": 2e9, "b": 1e9, "c": 5e-4, "d": "e9", "e": "2e9", "f": 12, "g": 1.5}
    smoke = (Path(__file__).parent.parent / "sweeps" / "workload" / "smoke.yaml").read_text()
    assert "trace: {synthetic: 2000, load: 0.9}" in smoke
    path = tmp_path / "smoke.yaml"
    path.write_text(smoke.replace("load: 0.9}", "load: 9e-1}"))
    assert load_study(path)["trace"]["load"] == 0.9
    path.write_text(smoke.replace("load: 0.9}", "load: '9e-1'}"))
    with pytest.raises(ConfigError, match=r"load.*'9e-1'.*a finite number"):
        load_study(path)


def test_a_kind_that_ran_under_its_own_label_is_not_skipped():
    """``search_mapping``'s ``skipped`` listed ``random`` beside the ``random (as configured)`` start that ran
    (``evaluator map`` filtered it out itself); the library now leaves out a kind that ran as ``NAME (...)``."""
    from evaluator.mapping import Start, search_mapping
    from evaluator.traffic import stencil

    t, tr = T.torus((4, 4, 4)), stencil([16, 16, 16], [4, 4, 4], 8.0, False)
    alone = search_mapping(t, tr, "dor", time_budget=2, max_iterations=1, progress=False)
    assert "random" in alone.skipped
    tn = np.random.default_rng(5).permutation(64)
    res = search_mapping(t, tr, "dor", time_budget=2, max_iterations=1, progress=False,
                         extra_starts=[Start("random (as configured)", tn)])
    assert "random (as configured)" in res.starts and "random" not in res.skipped
    assert set(res.skipped) == set(alone.skipped) - {"random"}


def test_alps_counts_the_free_nodes_after_skip():
    """``alps(n_tasks=8, skip=60)`` on 64 nodes said "at most ... = 64 x 1 = 64": the count before the skip, so 8
    looked allowed; it now gives the 4 nodes left after it."""
    from evaluator.placement._alps import alps

    t = T.torus((4, 4, 4))
    with pytest.raises(ConfigError, match=r"after skip \(60\) x tasks_per_node = 4 x 1 = 4"):
        alps(t, 8, skip=60)
    assert alps(t, 4, skip=60).task_node.tolist() == alps(t, 64).task_node[60:].tolist()


def test_evaluate_draws_checks_its_points_before_answering_none(torus44):
    """``evaluate_draws(topology, "dor", None, None)`` returned None (DOR has no draws) without a look at its
    points; a job that could not be evaluated got the answer "no draws"."""
    t, pl, tr = torus44
    assert ev.evaluate_draws(t, "dor", tr, pl) is None
    with pytest.raises(ConfigError, match=r"^traffics"):
        ev.evaluate_draws(t, "dor", None, None)
    with pytest.raises(ConfigError, match=r"^topology = None"):
        ev.evaluate_draws(None, "dor", tr, pl)
    with pytest.raises(ConfigError, match=r"^placement"):
        ev.evaluate_draws(t, "dor", tr, P.linear(T.torus((4, 4, 4)), 4))
