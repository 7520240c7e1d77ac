"""Mapping search (evaluator.mapping: search_mapping, MappingResult; ._moves; ._search).

Every check is against something independent of the search's own arithmetic: the batched kernel
(:func:`evaluator.evaluate_batch`) on the moved mapping, an exhaustive enumeration of every injective map,
launcher files parsed here. The starting points and the partitioning are tested in tests/test_mapping_starts.py;
a trace whose ranks exceed the job in tests/test_trace_otf2.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import xarray as xr

from evaluator.errors import ConfigError
from evaluator.evaluation import evaluate, evaluate_batch
from evaluator.io import write_netcdf
from evaluator.mapping import Start, search_mapping
from evaluator.mapping._moves import MoveEvaluator
from evaluator.mapping._sparse_moves import SparseMoveEvaluator, pair_table
from evaluator.placement import explicit
from evaluator.routing import dmodk, dor, ecmp_spray, kshortest, minimal, valiant
from evaluator.topology import dragonfly, fat_tree, torus
from evaluator.traffic import collective, from_flows, phased
from helpers import TOL

REL = TOL["rel"]

_TOPOS: dict[str, object] = {}


def topo(name):
    """The module's tiny topologies, built once."""
    if name not in _TOPOS:
        _TOPOS[name] = {"torus": lambda: torus((4, 4, 2)), "df": lambda: dragonfly(2, 4, 2, 9),
                        "ft": lambda: fat_tree(k=4, levels=3)}[name]()
    return _TOPOS[name]


def random_flows(n, m, seed, lo=1e5, hi=1e6):
    """``m`` random weighted flows between ``n`` tasks (no self flows)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = (src + 1 + rng.integers(0, n - 1, m)) % n
    return from_flows(n, src, dst, rng.uniform(lo, hi, m))


def two_phases(n, m, seed):
    a, b = random_flows(n, m, seed), random_flows(n, m, seed + 100, 1e4, 1e5)
    return phased([a, b])


def disjoint_moves(rng, n_slots, n_moves, k):
    """``n_moves`` moves of two groups of ``k`` slots each, the 2k slots of a move distinct."""
    s = np.array([rng.choice(n_slots, 2 * k, replace=False) for _ in range(n_moves)])
    return s[:, :k], s[:, k:]


def swap(slot_task, a, b):
    out = slot_task.copy()
    out[a], out[b] = slot_task[b], slot_task[a]
    return out


# --------------------------------------------------------------------------------------------------------
# 1. incremental scores = a full evaluation
# --------------------------------------------------------------------------------------------------------

# (topology, routing, traffic, tasks_per_node, k): one case per routing; flows, two phases and a collective's
# steps, tasks_per_node 1 and 2, moves of k = 1 and 2 slots a side spread over them (each evaluator compiles once per
# k); fewer tasks than slots everywhere (moves to and from empty slots).
CASES = {
    "torus-dor-allreduce-2": ("torus", dor, lambda: collective("allreduce", "ring", n_tasks=6, nbytes=4e6), 2, (2,)),
    "df-minimal-flows-2": ("df", minimal, lambda: random_flows(40, 100, 2), 2, (2,)),
    "df-valiant-phased-1": ("df", valiant, lambda: two_phases(30, 60, 3), 1, (1,)),
    "ft-dmodk-allreduce-1": ("ft", dmodk, lambda: collective("allreduce", "ring", n_tasks=5, nbytes=1e6), 1, (2,)),
    "ft-ecmp_spray-flows-2": ("ft", ecmp_spray, lambda: random_flows(50, 120, 6), 2, (1,)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_incremental_scores_equal_a_full_evaluation(case):
    tname, make_routing, make_traffic, tpn, ks = CASES[case]
    t = topo(tname)
    routing = make_routing()
    traffic = make_traffic()
    rng = np.random.default_rng(len(case))
    n_nodes = -(-traffic.n_tasks // tpn) + 4  # spare slots
    nodes = rng.permutation(t.n_nodes)[:n_nodes]
    slot_node = np.repeat(nodes, tpn)
    S = slot_node.size
    assert traffic.n_tasks < S
    state = rng.permutation(S)
    dense = MoveEvaluator(t, routing, traffic, slot_node)
    sparse = SparseMoveEvaluator(t, routing, traffic, slot_node, pair_table(t, routing))

    moves = {k: disjoint_moves(rng, S, 24, k) for k in ks}
    moved = [swap(state, a[i], b[i]) for k in ks for a, b in [moves[k]] for i in range(a.shape[0])]
    # the kernel on the moved mappings (independent of ._moves), one batched call
    placements = [explicit(t, dense.task_node(s), "moved") for s in moved]
    for s, p in zip(moved, placements):  # the slot assignment's mapping: tasks_per_node respected
        assert np.bincount(p.task_node, minlength=t.n_nodes).max() <= tpn
        assert set(p.task_node.tolist()) <= set(nodes.tolist())
    want_t = evaluate_batch(t, routing, traffic, placements).metrics["completion_time"]
    want_q = np.array([dense.score(dense.loads(s))[1] for s in moved])
    assert np.all(want_t > 0)

    loads = dense.loads(state)
    for ev in (dense, sparse):
        st, tn = ev.device_state(state)
        got = [ev.scores(st, tn, loads, *moves[k]) for k in ks]
        got_t = np.concatenate([np.asarray(g[0]) for g in got])
        got_q = np.concatenate([np.asarray(g[1]) for g in got])
        np.testing.assert_allclose(got_t, want_t, rtol=REL, atol=0, err_msg=type(ev).__name__)
        np.testing.assert_allclose(got_q, want_q, rtol=1e-9, atol=0, err_msg=type(ev).__name__)

    # the state's own score: the kernel's time of the state
    t0 = evaluate_batch(t, routing, traffic, explicit(t, dense.task_node(state), "state")).metrics
    assert dense.score(loads)[0] == pytest.approx(float(t0["completion_time"][0]), rel=REL)
    # heat: the sparse and the dense evaluator agree (q-norm differences: absolute, on the norm's scale)
    hd, hs = dense.heat(state, loads), sparse.heat(state, loads)
    q0 = dense.score(loads)[1]
    assert hd.shape == hs.shape == (S,)
    # (heat only ranks candidate moves: the two evaluators sum the q-norm's powers in different orders, which on
    # the fat tree's spray differs by up to 1e-6 relative in a few slots)
    np.testing.assert_allclose(hs, hd, rtol=1e-6, atol=1e-9 * q0)
    assert np.all(np.abs(hd[state >= traffic.n_tasks]) <= 1e-12 * q0)  # empty slots send nothing
    assert hd.max() > 0


# --------------------------------------------------------------------------------------------------------
# 2. the contract of search_mapping
# --------------------------------------------------------------------------------------------------------

def check_result(r, t, traffic, routing, nodes, tpn):
    tn = np.asarray(r.task_node)
    assert tn.shape == (traffic.n_tasks,)
    allowed = set(np.asarray(nodes).tolist())
    count: dict[int, int] = {}
    for v in tn.tolist():
        assert v in allowed
        count[v] = count.get(v, 0) + 1
    assert max(count.values()) <= tpn
    fresh = float(evaluate(t, traffic, r.placement, routing)["completion_time"])
    assert r.completion_time == pytest.approx(fresh, rel=REL)
    assert r.search_time == pytest.approx(fresh, rel=1e-9)
    assert r.completion_time <= min(r.starts.values()) * (1 + REL)
    assert r.best_start in r.starts and r.starts[r.best_start] == min(r.starts.values())
    for s, ts in r.starts.items():
        assert r.gain(s) == pytest.approx(1 - r.completion_time / ts, rel=REL, abs=1e-15)
        assert r.gain(s) >= -REL
    assert np.array_equal(np.asarray(r.nodes), np.asarray(nodes))
    assert r.tasks_per_node == tpn


DF_NODES = np.random.default_rng(11).permutation(np.random.default_rng(11).choice(72, 20, replace=False))


@pytest.fixture(scope="module")
def df_job():
    """A scrambled free list of 20 nodes of DF(2,4,2,9), two slots per node, 33 tasks; the default starts."""
    t = topo("df")
    tr = random_flows(33, 90, 12)
    r = search_mapping(t, tr, "minimal", nodes=DF_NODES, tasks_per_node=2, time_budget=60, max_iterations=15,
                       seed=1, candidates=512, progress=False)
    return t, tr, r


def test_search_contract_on_a_fragmented_dragonfly(df_job):
    t, tr, r = df_job
    check_result(r, t, tr, minimal(), DF_NODES, 2)
    assert "linear" in r.starts and len(r.starts) >= 2
    assert r.info["evaluator"] == "MoveEvaluator"
    # the starts' times are the kernel's (linear: the nodes in the order given, two tasks each)
    lin = explicit(t, DF_NODES[np.arange(33) // 2], "linear")
    assert r.starts["linear"] == pytest.approx(float(evaluate(t, tr, lin, "minimal")["completion_time"]), rel=REL)
    assert 0 < r.lower_bound <= r.completion_time * (1 + REL)  # several tasks per node: a bound too


@pytest.fixture(scope="module")
def ft_job():
    """A full job (every slot used, two per node) on 8 scrambled nodes of a fat tree, ECMP, from one scrambled
    start; the sparse evaluator (its threshold lowered: on a network this small the dense one is the default)."""
    import evaluator.mapping._sparse_moves as moves

    t = topo("ft")
    rng = np.random.default_rng(5)
    nodes = rng.permutation(t.n_nodes)[:8]
    tr = two_phases(16, 40, 31)
    start = Start("scrambled", rng.permutation(np.repeat(nodes, 2)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(moves, "SPARSE_FROM", 0)
        r = search_mapping(t, tr, ecmp_spray(), nodes=nodes, tasks_per_node=2, starts=[start], time_budget=60,
                           max_iterations=20, candidates=256, progress=False)
    return t, tr, r, nodes, start


def test_search_contract_sparse_evaluator_on_a_fat_tree(ft_job):
    t, tr, r, nodes, start = ft_job
    assert r.info["evaluator"] == "SparseMoveEvaluator"
    check_result(r, t, tr, ecmp_spray(), nodes, 2)
    assert list(r.starts) == ["scrambled"]
    assert r.starts["scrambled"] == pytest.approx(float(evaluate(
        t, tr, explicit(t, start.task_node, "s"), "ecmp_spray")["completion_time"]), rel=REL)
    assert r.completion_time < r.starts["scrambled"]  # random flows from a scrambled start: room to improve


# --------------------------------------------------------------------------------------------------------
# 3. the exhaustive optimum of a small case
# --------------------------------------------------------------------------------------------------------

def test_search_reaches_the_exhaustive_optimum():
    """6 tasks of random weighted flows on 8 scattered nodes of a 4x4x2 torus (DOR), one task per node: every
    injective map (8*7*6*5*4*3 = 20,160) evaluated by the kernel; the search from the worst of them reaches the
    minimum, which is strictly better than linear."""
    t = topo("torus")
    tr = random_flows(6, 12, 0)
    nodes = np.random.default_rng(2).permutation(t.n_nodes)[:8]
    maps = np.array(list(itertools.permutations(range(8), 6)))
    assert maps.shape == (20160, 6)
    ct = evaluate_batch(t, "dor", tr, [explicit(t, nodes[m], "m") for m in maps]).metrics["completion_time"]
    best = float(ct.min())
    linear = float(ct[0])  # maps[0] = (0, 1, ..., 5): linear on the nodes in fill order
    assert np.array_equal(maps[0], np.arange(6))
    assert best < linear * (1 - 0.1)
    n_opt = int((ct <= best * (1 + REL)).sum())
    assert n_opt <= 10  # a needle: 3 of the 20,160 maps are optimal
    worst = int(np.argmax(ct))
    r = search_mapping(t, tr, dor(), nodes=nodes, starts=[Start("worst", nodes[maps[worst]])], time_budget=60,
                       max_iterations=200, candidates=256, progress=False)
    check_result(r, t, tr, dor(), nodes, 1)
    assert r.starts == {"worst": pytest.approx(float(ct[worst]), rel=REL)}
    assert r.completion_time == pytest.approx(best, rel=REL)
    assert r.lower_bound <= best * (1 + REL)  # the mapping bound: below every mapping's time



def test_a_short_search_leaves_the_evaluators_levels_alone():
    """A search below STRUCTURED_FROM seconds scores with no intermediate flow-list levels, passed to each call;
    the evaluator's own setting is kept for its next user (it was overwritten with () before)."""
    from evaluator.mapping._search import STRUCTURED_FROM, local_search

    t = topo("torus")
    tr = random_flows(6, 12, 0)
    nodes = np.random.default_rng(2).permutation(t.n_nodes)[:8]
    ev = MoveEvaluator(t, dor(), tr, nodes)
    assert ev.level_fractions is None
    levels = ev.levels(1)
    local_search(ev, np.arange(8), budget=min(5, STRUCTURED_FROM - 1), seed=0, candidates=16, max_iterations=2,
                 progress=False)
    assert ev.level_fractions is None and ev.levels(1) == levels


def test_the_search_counts_its_compilations():
    """SearchTrace.compile_seconds: the seconds JAX reported lowering and compiling during the search: some for a
    new evaluator's first search, none for the same search again (every call compiled), and within the search's
    time."""
    from evaluator.mapping._search import compile_seconds, local_search

    t = topo("torus")
    ev = MoveEvaluator(t, dor(), random_flows(6, 12, 3), np.random.default_rng(4).permutation(t.n_nodes)[:8])
    runs = [local_search(ev, np.arange(8), budget=60, seed=0, candidates=16, max_iterations=3, progress=False)[1]
            for _ in range(2)]
    assert 0.0 < runs[0].compile_seconds <= runs[0].elapsed[-1]
    assert runs[1].compile_seconds == 0.0 and compile_seconds() > 0.0


@pytest.mark.parametrize("budget,iterations,tuned", [(600, 3, False), (60, None, False), (120, 100, True)])
def test_the_step_is_tuned_only_where_the_search_can_earn_it(budget, iterations, tuned):
    """A search tunes its step (each of the evaluator's step_choices on two batches) only from TUNE_FROM seconds of
    budget and TUNE_MIN_BATCHES batches: each step tried compiles every scorer again. The steps passed to the
    evaluator's scores: its choices in turn, or the default (None) throughout."""
    from evaluator.mapping import _search

    assert (_search.TUNE_FROM, _search.TUNE_MIN_BATCHES) == (120.0, 100)
    assert _search._tunes(budget, iterations) is tuned
    t = topo("torus")
    ev = MoveEvaluator(t, dor(), random_flows(6, 12, 0), np.random.default_rng(2).permutation(t.n_nodes)[:8])
    steps = []
    real = ev.scores
    ev.scores = lambda *args, step=None, **kw: steps.append(step) or real(*args, step=step, **kw)
    _search.local_search(ev, np.arange(8), budget=budget, seed=0, candidates=16, progress=False, kinds=("swap",),
                         max_iterations=iterations or 8, patience=10 ** 6)
    if tuned:  # each choice twice, then the fastest of them throughout
        want = [s for s in ev.step_choices for _ in range(2)]
        assert steps[:len(want)] == want and len(set(steps[len(want):])) == 1 < len(steps) - len(want)
        assert steps[-1] in ev.step_choices
    else:
        assert steps and set(steps) == {None}

# --------------------------------------------------------------------------------------------------------
# 4. the launcher's files, read back
# --------------------------------------------------------------------------------------------------------

def parse_node_list(text):
    out = []
    for part in text.strip().split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    return out


def parse_rank_order(text):
    """One list of ranks per non-comment line."""
    return [[int(x) for x in line.split(",")] for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def read_back(directory, n_tasks, tpn):
    """task -> node from the launcher's files: the listed nodes filled in order, ``tpn`` ranks each."""
    node_ids = parse_node_list((directory / "node_list").read_text())
    lines = parse_rank_order((directory / "MPICH_RANK_ORDER").read_text())
    assert node_ids == sorted(node_ids) and len(set(node_ids)) == len(node_ids)
    assert len(lines) == len(node_ids)
    task_node = np.full(n_tasks, -1)
    for k, (node, ranks) in enumerate(zip(node_ids, lines)):
        assert len(ranks) == tpn or (k == len(lines) - 1 and len(ranks) <= tpn)
        for rank in ranks:
            assert task_node[rank] == -1
            task_node[rank] = node
    assert np.all(task_node >= 0)
    return task_node


def test_rank_order_files_read_back(ft_job, tmp_path):
    t, tr, r, nodes, _ = ft_job
    ro, nl = r.write_launch_files(tmp_path)
    assert (ro, nl) == (tmp_path / "MPICH_RANK_ORDER", tmp_path / "node_list")
    assert np.array_equal(read_back(tmp_path, tr.n_tasks, 2), r.task_node)
    before = (ro.read_text(), nl.read_text())
    with pytest.raises(ConfigError, match="MPICH_RANK_ORDER") as e:
        r.write_launch_files(tmp_path)
    assert e.value.field == "--write-rank-order"
    assert (ro.read_text(), nl.read_text()) == before
    r.write_launch_files(tmp_path, force=True)
    assert np.array_equal(read_back(tmp_path, tr.n_tasks, 2), r.task_node)


def test_rank_order_files_with_spare_slots(df_job, tmp_path):
    """Spare slots (33 tasks, 2 per node, 20 nodes): the search begins from the fastest start a launcher can run
    (every used node full but the highest) and keeps it so; the files read back give the mapping. A faster start
    that is not launchable would be returned instead: then writing is refused, naming the option."""
    t, tr, r = df_job
    from evaluator.mapping import launchable

    if r.launchable:
        r.write_launch_files(tmp_path)
        assert np.array_equal(read_back(tmp_path, tr.n_tasks, 2), r.task_node)
    else:
        with pytest.raises(ConfigError) as e:
            r.write_launch_files(tmp_path)
        assert e.value.field == "--write-rank-order"
    # from a launchable start alone the result is launchable (every node's count kept, the partial node fixed)
    nodes = np.sort(DF_NODES)
    start = Start("full nodes", nodes[np.arange(33) // 2])
    assert launchable(start.task_node, 2)
    r2 = search_mapping(t, tr, "minimal", nodes=DF_NODES, tasks_per_node=2, starts=[start], time_budget=60,
                        max_iterations=15, seed=1, candidates=512, progress=False)
    assert r2.launchable and r2.completion_time <= r2.starts["full nodes"]
    r2.write_launch_files(tmp_path / "full")
    assert np.array_equal(read_back(tmp_path / "full", tr.n_tasks, 2), r2.task_node)
    # a start that leaves nodes half full is searched as it is, and its files are refused
    uneven = Start("uneven", nodes[np.arange(33) % 20])
    assert not launchable(uneven.task_node, 2)
    r3 = search_mapping(t, tr, "minimal", nodes=DF_NODES, tasks_per_node=2, starts=[uneven], time_budget=60,
                        max_iterations=3, seed=1, candidates=256, progress=False)
    assert not r3.launchable
    with pytest.raises(ConfigError) as e:
        r3.write_launch_files(tmp_path / "uneven")
    assert e.value.field == "--write-rank-order" and "aprun" in str(e.value)


# --------------------------------------------------------------------------------------------------------
# 5. bad input
# --------------------------------------------------------------------------------------------------------

def test_bad_input():
    t = topo("df")  # 72 nodes
    tr = random_flows(16, 30, 0)
    kw = dict(time_budget=1, max_iterations=1, progress=False)

    def bad(field, **over):
        with pytest.raises(ConfigError) as e:
            search_mapping(t, tr, over.pop("routing", "minimal"), **{**kw, **over})
        assert e.value.field == field, (field, e.value.field, str(e.value))
        assert field in str(e.value)
        return e.value

    e = bad("traffic.n_tasks", nodes=np.arange(5), tasks_per_node=2)
    assert "5 x 2 = 10" in str(e)
    e = bad("mapping.nodes", nodes=[0, 10**6] + list(range(1, 20)))
    assert "1000000" in str(e) and "71" in str(e)
    bad("mapping.nodes", nodes=[3, 4, 3] + list(range(5, 20)))
    bad("mapping.tasks_per_node", nodes=np.arange(20), tasks_per_node=0)
    bad("mapping.time_budget", nodes=np.arange(20), time_budget=-1)
    e = bad("routing.kind", nodes=np.arange(20), routing=kshortest(4))
    assert "minimal" in str(e)
    bad("routing.kind", nodes=np.arange(20), routing="kshortest")
    bad("mapping.starts", nodes=np.arange(20), starts=[Start("outside", np.arange(20, 36))])
    bad("mapping.starts", nodes=np.arange(20), starts=[Start("short", np.arange(15))])


# --------------------------------------------------------------------------------------------------------
# 6. the dataset
# --------------------------------------------------------------------------------------------------------

def test_dataset(df_job, tmp_path):
    t, tr, r = df_job
    ds = r.to_dataset()
    units = {"task_node": "1", "completion_time": "s", "lower_bound": "s", "start_completion_time": "s", "gain": "1",
             "elapsed": "s", "moves_evaluated": "1", "moves_accepted": "1", "search_completion_time": "s",
             "best_completion_time": "s", "available_node": "1"}
    for k, u in units.items():
        assert ds[k].attrs["units"] == u, k
    names = list(r.starts)
    assert list(ds["start"].values) == names
    assert ds.sizes["task"] == tr.n_tasks and ds.sizes["iteration"] == len(r.trace.elapsed) == 16
    assert np.array_equal(ds["task_node"].values, r.task_node)
    assert float(ds["completion_time"]) == r.completion_time
    for i, n in enumerate(names):
        assert ds["start_completion_time"].values[i] == r.starts[n]
        assert ds["gain"].values[i] == pytest.approx(1 - r.completion_time / r.starts[n], rel=REL, abs=1e-15)
    best = ds["best_completion_time"].values
    assert np.all(np.diff(best) <= 0)
    assert best[0] == pytest.approx(min(r.starts.values()), rel=REL)
    assert best[-1] == pytest.approx(r.completion_time, rel=1e-9)
    assert np.all(best <= ds["search_completion_time"].values * (1 + REL))
    assert np.all(np.diff(ds["elapsed"].values) >= 0) and np.all(np.diff(ds["moves_evaluated"].values) > 0)
    assert np.array_equal(ds["available_node"].values, DF_NODES)
    assert ds.attrs["best_start"] == r.best_start and ds.attrs["tasks_per_node"] == 2

    path = write_netcdf(ds, tmp_path / "mapping.nc")
    with xr.open_dataset(path, engine="h5netcdf") as back:
        back = back.load()
    xr.testing.assert_identical(back, ds)
