"""The mapping search and its lower bound on degenerate jobs (docs/mapping.md): one task, as many tasks as nodes
(only swaps), every task on one node, a node list of one node, nodes on one router, a one-router network, 1-D tori
of 2 and 3 routers, a Dragonfly job inside one group, a fat-tree job on one leaf, one flow, only self flows, a star,
a phased traffic with an empty phase; user start files of one line, with a repeated node, a node outside the list,
too few entries; a budget of 0 s and 0 iterations.

The reference is this module's own: a per-flow walk (DOR along dimension 0 then 1 on the tori, the direct local
link inside a Dragonfly group, the node links alone on one router), time = sum over phases of the busiest link's
bytes / capacity, and the exhaustive optimum over every mapping of the tiny job. Every part of ``mapping_bound``
is finite, >= 0 and at most that optimum, or absent with a note saying why; the search's time is the walk of the
mapping it returns and never above the walk of its best start; the launcher files name every task once.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
import xarray as xr

from evaluator import cli
from evaluator.errors import ConfigError
from evaluator.mapping import read_start_file, search_mapping
from evaluator.mapping.bound import mapping_bound
from evaluator.topology import dragonfly, fat_tree, torus
from evaluator.traffic import from_flows, phased
from helpers import TOL, within

REL = TOL["rel"]


def flows(n, src, dst, nbytes):
    return from_flows(n, np.array(src, np.int64), np.array(dst, np.int64), np.array(nbytes, float))


# ----------------------------------------------------------------------------------------- the reference walk


def _router_path(topo, a: int, b: int) -> list[int]:
    """Router links of the route ``a`` -> ``b``: on a torus dimension-ordered (each dimension's links in turn,
    the shortest way along it; the rings here have no tie), elsewhere the one direct link (a Dragonfly group is
    a complete graph of routers)."""
    n_rl = int(topo.n_router_links)
    src, dst = np.asarray(topo.link_src)[:n_rl], np.asarray(topo.link_dst)[:n_rl]
    cls = np.asarray(topo.link_class)[:n_rl]
    if a == b:
        return []
    if not topo.class_names[0].startswith("torus"):
        direct = np.flatnonzero((src == a) & (dst == b))
        assert direct.size == 1, (a, b)
        return [int(direct[0])]
    path, here = [], a
    for c in np.unique(cls):
        # the router reached along dimension c from `here` that lies on b's line of the remaining dimensions
        later = [k for k in np.unique(cls) if k > c]
        target = _reach(src, dst, cls, b, later) & _reach(src, dst, cls, here, [c])
        goal = int(np.flatnonzero(target)[0]) if target.any() else here
        path += _bfs_links(src, dst, cls == c, here, goal)
        here = goal
    assert here == b
    return path


def _reach(src, dst, cls, r, classes) -> np.ndarray:
    seen = np.zeros(int(max(src.max(), dst.max())) + 1, bool)
    seen[r], todo = True, [r]
    while todo:
        u = todo.pop()
        for l in np.flatnonzero((src == u) & np.isin(cls, classes)):
            if not seen[dst[l]]:
                seen[dst[l]] = True
                todo.append(int(dst[l]))
    return seen


def _bfs_links(src, dst, allowed, a, b) -> list[int]:
    prev, frontier = {a: None}, [a]
    while b not in prev:
        nxt = []
        for u in frontier:
            for l in np.flatnonzero((src == u) & allowed):
                v = int(dst[l])
                if v not in prev:
                    prev[v] = (u, int(l))
                    nxt.append(v)
        assert nxt, (a, b)
        frontier = nxt
    out, v = [], b
    while prev[v] is not None:
        v, l = prev[v]
        out.append(l)
    return out[::-1]


def walk(topo, phases, task_node) -> float:
    """Sum over phases of max over links of bytes / capacity, every flow walked on its own."""
    n_rl, N = int(topo.n_router_links), int(topo.n_nodes)
    cap = np.asarray(topo.capacity, float)
    router = np.asarray(topo.node_router)
    total = 0.0
    for src, dst, nbytes in phases:
        load = np.zeros(cap.size)
        for s, d, b in zip(src, dst, nbytes):
            u, v = int(task_node[s]), int(task_node[d])
            if u == v:
                continue
            for l in [n_rl + u, n_rl + N + v, *_router_path(topo, int(router[u]), int(router[v]))]:
                load[l] += b
        total += float((load / cap).max())
    return total


def every_mapping(nodes, n, tpn):
    nodes = np.asarray(nodes)
    idx = np.array(list(itertools.product(range(nodes.size), repeat=n)))
    counts = np.stack([(idx == k).sum(axis=1) for k in range(nodes.size)], axis=1)
    return nodes[idx[(counts <= tpn).all(axis=1)]]


# ------------------------------------------------------------------------------------------------ the cases

F3 = ([0, 1, 2], [1, 2, 0], [1e6, 2e6, 3e6])
CASES = {  # name: (topology, routing, nodes (None: all), tasks per node, n tasks, phases [(src, dst, bytes)])
    "one task": (lambda: torus((3,)), "dor", None, 1, 1, [([0], [0], [5e6])]),
    "as many tasks as nodes, ring of 3": (lambda: torus((3,)), "dor", None, 1, 3, [F3]),
    "ring of 2": (lambda: torus((2,)), "dor", None, 1, 2, [([0, 1], [1, 0], [1e6, 2e6])]),
    "tasks_per_node = tasks": (lambda: torus((3,)), "dor", None, 3, 3, [F3]),
    "node list of one node": (lambda: torus((3,)), "dor", [1], 2, 2, [([0, 1], [1, 0], [1e6, 4e6])]),
    "nodes on one router": (lambda: torus((3,), nodes_per_router=3), "dor", [3, 4, 5], 1, 3, [F3]),
    "one-router network": (lambda: torus((1,), nodes_per_router=4), "dor", None, 1, 3, [F3]),
    "torus 2x2, one flow": (lambda: torus((2, 2)), "dor", None, 1, 3, [([0], [2], [1e6])]),
    "self flows only": (lambda: torus((2, 2)), "dor", None, 1, 3, [([0, 1, 2], [0, 1, 2], [1e6, 2e6, 3e6])]),
    "star": (lambda: torus((3,)), "dor", None, 1, 3, [([1, 2, 0, 0], [0, 0, 1, 2], [1e6, 2e6, 5e5, 5e5])]),
    "phased, one empty phase": (lambda: torus((3,)), "dor", None, 1, 3, [([0, 2], [1, 1], [1e6, 3e6]),
                                                                        ([], [], [])]),
    "Dragonfly, one group": (lambda: dragonfly(2, 4, 2, 9), "minimal", [0, 1, 2, 3], 1, 3, [F3]),
    "fat tree, one leaf": (lambda: fat_tree(k=4, levels=2), "dmodk", [0, 1], 1, 2, [([0], [1], [1e6])]),
}
STANDARD = ("injection", "ejection")  # parts every job with a byte between two nodes has


def _job(case):
    make, routing, nodes, tpn, n, phases = CASES[case]
    topo = make()
    tr = [flows(n, *p) for p in phases]
    traffic = tr[0] if len(tr) == 1 else phased(tr)
    nodes = np.arange(topo.n_nodes) if nodes is None else np.asarray(nodes)
    return topo, routing, nodes, tpn, n, phases, traffic


_OPT: dict = {}


def optimum(case) -> float:
    if case not in _OPT:
        topo, _, nodes, tpn, n, phases, _ = _job(case)
        _OPT[case] = min(walk(topo, phases, m) for m in every_mapping(nodes, n, tpn))
    return _OPT[case]


@pytest.mark.parametrize("case", list(CASES))
def test_every_bound_part_is_finite_and_at_most_the_exhaustive_optimum(case):
    topo, routing, nodes, tpn, n, phases, traffic = _job(case)
    best = optimum(case)
    bd = within(lambda: mapping_bound(topo, traffic, routing, nodes=nodes, tasks_per_node=tpn), 60)
    assert bd.parts and bd.value == max(bd.parts.values()) and bd.parts[bd.binding] == bd.value
    for name, v in bd.parts.items():
        assert math.isfinite(v) and v >= 0, (name, v)
        assert v <= best * (1 + REL) + 1e-300, (name, v, best)
    crossing = any(u != v for p in phases for u, v in zip(p[0], p[1])) and nodes.size > 1
    for name in STANDARD:  # a part that is absent says why
        if name not in bd.parts:
            assert bd.notes, (name, bd.parts)
    if not crossing:
        assert best == 0.0 and bd.value == 0.0
        assert any("left out" in note for note in bd.notes), bd.notes


def test_absent_parts_name_their_reason():
    """Each network part a job cannot load is either there or named in a note (the original left them out in
    silence: a node list of one node, or nodes on one router, gave the endpoint part alone and no note)."""
    for case in ("one task", "self flows only", "node list of one node", "nodes on one router",
                 "one-router network", "fat tree, one leaf", "Dragonfly, one group"):
        topo, routing, nodes, tpn, n, phases, traffic = _job(case)
        bd = mapping_bound(topo, traffic, routing, nodes=nodes, tasks_per_node=tpn)
        classes = [f"class:{c}" for c in topo.class_names if c not in ("injection", "ejection")]
        for name in [*classes, *STANDARD]:
            assert name in bd.parts or any(name in note or "no byte goes between two tasks" in note
                                           for note in bd.notes), (case, name, bd.parts, bd.notes)


SEARCHED = {  # case: (time budget, iterations)
    "one task": (0.0, 0), "as many tasks as nodes, ring of 3": (5.0, 3), "ring of 2": (0.0, 0),
    "tasks_per_node = tasks": (5.0, 2), "node list of one node": (5.0, 2), "star": (5.0, 3),
    "phased, one empty phase": (0.0, 0), "Dragonfly, one group": (5.0, 2), "torus 2x2, one flow": (5.0, 2),
}


@pytest.mark.parametrize("case", list(SEARCHED))
def test_search_result_is_its_walk_never_above_a_start(case):
    topo, routing, nodes, tpn, n, phases, traffic = _job(case)
    budget, iterations = SEARCHED[case]
    res = within(lambda: search_mapping(topo, traffic, routing, nodes=nodes, tasks_per_node=tpn,
                                        time_budget=budget, max_iterations=iterations, candidates=32,
                                        progress=False), 60)
    tn = np.asarray(res.task_node)
    assert tn.shape == (n,) and set(tn.tolist()) <= set(nodes.tolist())
    assert np.bincount(tn).max() <= tpn
    t = walk(topo, phases, tn)
    assert res.completion_time == pytest.approx(t, rel=REL, abs=1e-300)
    starts = {k: walk(topo, phases, v) for k, v in res.start_nodes.items()}
    assert starts and all(math.isfinite(v) for v in res.starts.values())
    for k, v in starts.items():
        assert res.starts[k] == pytest.approx(v, rel=REL, abs=1e-300), k
    assert t <= min(starts.values()) * (1 + REL)
    assert optimum(case) * (1 - REL) <= t
    assert math.isfinite(res.lower_bound) and 0 <= res.lower_bound <= optimum(case) * (1 + REL)
    for k in res.starts:
        assert math.isfinite(res.gain(k)) and res.gain(k) >= -REL, k


def _launched(directory, n) -> np.ndarray:
    """The mapping ``aprun -L node_list`` runs from ``MPICH_RANK_ORDER`` (fill in ascending id: not a 3-D torus)."""
    from evaluator.mapping import parse_node_ids

    lines = [ln.split("#")[0].strip() for ln in (directory / "MPICH_RANK_ORDER").read_text().splitlines()]
    lines = [ln for ln in lines if ln]
    nodes = np.sort(parse_node_ids((directory / "node_list").read_text()))
    ranks = [parse_node_ids(ln) for ln in lines]
    assert len(ranks) <= nodes.size
    every = np.concatenate(ranks)
    assert sorted(every.tolist()) == list(range(n))  # every task exactly once
    tn = np.empty(n, np.int64)
    for node, r in zip(nodes.tolist(), ranks):
        tn[r] = node
    return tn


RING3 = ["topology=torus", "topology.dims=[3]", "routing=dor"]
LEAF = ["topology=fat_tree", "topology.k=4", "topology.levels=2", "routing=ecmp"]


@pytest.mark.parametrize("argv, n, tpn", [
    ([*RING3, "traffic.n_tasks=1", "--budget", "0"], 1, 1),
    ([*RING3, "traffic.n_tasks=3", "--nodes", "1", "--tasks-per-node", "3", "--budget", "0"], 3, 3),
    ([*LEAF, "traffic.n_tasks=2", "--nodes", "0,1", "--iterations", "0"], 2, 1),
], ids=["one task", "one node", "fat tree one leaf, ecmp"])
def test_command_outputs_read_back_naming_every_task_once(argv, n, tpn, tmp_path, capsys):
    """The dataset and the launcher files of a degenerate job name every task once and read back as the mapping;
    no NaN is printed; a search that gained nothing over a start claims no gain that the draws undo (under ECMP
    the original printed "the search's gain over linear does not hold over the draws" for a mapping that was
    linear itself, 0 % below it)."""
    out = tmp_path / "out"
    rc = within(lambda: cli.main(["map", *argv, "traffic=random_pairs", "--no-progress", "--candidates", "32",
                                  f"output_dir={out}", "--write-rank-order", str(tmp_path / "launch")]), 60)
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "nan" not in text.lower()
    ds = xr.open_dataset(next(out.glob("*.nc")))
    tn = ds["task_node"].values
    assert _launched(tmp_path / "launch", n).tolist() == tn.tolist()
    assert np.bincount(tn).max() <= tpn
    for v in ("completion_time", "lower_bound", "start_completion_time", "gain"):
        assert np.isfinite(ds[v].values).all(), v
    assert 0 <= float(ds["lower_bound"]) <= float(ds["completion_time"]) * (1 + REL)
    starts = dict(zip(ds["start"].values.tolist(), ds["start_completion_time"].values.tolist()))
    for name in starts:  # "gain over NAME does not hold" only where the searched draw had a gain over NAME
        if f"gain over {name} does not hold" in text:
            assert float(ds["completion_time"]) < starts[name], (name, text)
    topo = torus((3,)) if "topology=torus" in argv else fat_tree(k=4, levels=2)
    avail = np.arange(3) if "topology=torus" in argv else np.arange(topo.n_nodes)
    back = read_start_file(tmp_path / "launch" / "MPICH_RANK_ORDER", topo, n, avail, tpn)
    assert back.task_node.tolist() == tn.tolist()


# --------------------------------------------------------------------------------------------- start files

START_FILES = {  # name: (text, n tasks, available nodes, tasks per node, expected task_node or (field bit, allowed))
    "one line, one task": ("2\n", 1, [0, 1, 2], 1, [2]),
    "one line of ranks, one node": ("0,1,2\n", 3, [0, 1, 2], 3, [0, 0, 0]),
    "repeated node, one slot": ("0\n0\n1\n", 3, [0, 1, 2], 1, "at most 1 rank(s) per node (--tasks-per-node)"),
    "repeated node, two slots": ("0\n0\n1\n", 3, [0, 1], 2, [0, 0, 1]),
    "node outside the list": ("0\n1\n2\n", 3, [0, 1], 2, "a mapping onto the 2 nodes available to the job"),
    "node outside the machine": ("0\n1\n7\n", 3, [0, 1, 2], 1, "node ids of torus 3: integers in [0, 2]"),
    "too few entries": ("0\n1\n", 3, [0, 1, 2], 1, "a node list of one node id per rank: 3 ids for the job's 3 "
                        "ranks"),
    "too few ranks": ("0\n1\n", 3, [0, 1, 2], 1, "a node list of one node id per rank"),
    "rank order with a rank twice": ("0,0\n1\n", 3, [0, 1, 2], 2, "each of 0..2 once"),
    "empty": ("# nothing\n", 1, [0, 1, 2], 1, "at least one node id: a node list of one node id per rank, 1 ids for "
              "the job's 1 ranks. It lists none"),
}


@pytest.mark.parametrize("case", list(START_FILES))
def test_start_files_read_or_refused_in_one_line(case, tmp_path):
    text, n, nodes, tpn, want = START_FILES[case]
    name = "MPICH_RANK_ORDER" if "rank order" in case else "start.txt"
    (tmp_path / name).write_text(text)
    topo = torus((3,))
    call = lambda: read_start_file(tmp_path / name, topo, n, np.asarray(nodes), tpn)  # noqa: E731
    if isinstance(want, list):
        assert within(call, 30).task_node.tolist() == want
        return
    with pytest.raises(ConfigError) as e:
        within(call, 30)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"--start = {str(tmp_path / name)!r} is invalid: allowed is "), msg
    assert want in msg, msg


def test_a_one_line_start_is_the_search_s_first_and_the_result_is_never_worse(tmp_path):
    """A start file of one line (one node holds every rank) on a ring of 3 with 3 slots a node: the search keeps
    it as a start, its time is the walk (0 s: every byte on one node) and the result is no slower."""
    topo, phases = torus((3,)), [F3]
    (tmp_path / "MPICH_RANK_ORDER").write_text("0-2\n")
    (tmp_path / "node_list").write_text("2\n")
    st = read_start_file(tmp_path / "MPICH_RANK_ORDER", topo, 3, np.arange(3), 3)
    assert st.task_node.tolist() == [2, 2, 2]
    res = within(lambda: search_mapping(topo, flows(3, *F3), "dor", tasks_per_node=3, time_budget=0.0,
                                        max_iterations=0, candidates=32, progress=False, user_starts=[st]), 60)
    assert list(res.starts)[0] == st.name and res.starts[st.name] == walk(topo, phases, st.task_node) == 0.0
    assert res.completion_time == walk(topo, phases, res.task_node) == 0.0


@pytest.mark.parametrize("kw, field", [
    ({"time_budget": -1.0}, "time_budget"), ({"time_budget": float("nan")}, "time_budget"),
    ({"max_iterations": -1}, "max_iterations"), ({"candidates": 0}, "candidates"),
    ({"tasks_per_node": 0}, "tasks_per_node"), ({"nodes": [5]}, "mapping.nodes"),
    ({"nodes": [0, 0]}, "mapping.nodes"),
])
def test_bad_search_arguments_are_one_line_naming_field_value_and_allowed(kw, field):
    topo = torus((3,))
    with pytest.raises(ConfigError) as e:
        within(lambda: search_mapping(topo, flows(2, [0], [1], [1e6]), "dor", progress=False,
                                      **{"time_budget": 0.0, "max_iterations": 0, **kw}), 30)
    msg = str(e.value)
    assert "\n" not in msg and field in msg and "allowed is" in msg, msg
    value = next(iter(kw.values()))
    shown = str(value[0]) if isinstance(value, list) else str(value)  # the scalar, or the id in the list
    assert re.search(rf"(?<![\d.]){re.escape(shown)}(?![\d.])", msg), msg
