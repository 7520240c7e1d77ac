"""Degenerate but legal (or just illegal) sizes through the public entry points (audit, 2026-12-07).

What is checked: ``evaluator.evaluate`` (bandwidth bound, latency model, flow-level max-min sharing),
``evaluate_batch``, ``evaluator.jobs.evaluate_jobs``, ``evaluator.lp.bounds.optimal`` (the edge LP and
Garg-Konemann), ``evaluator.mapping.search_mapping``, the ``evaluator sweep`` / ``evaluator map`` commands (run
in process through ``evaluator.cli.main``, no subprocess) and the traffic-file readers, on one task, two tasks on
one node, more slots per node than tasks, self traffic only, zero bytes, no flow, one flow, tori with dimensions
of 1 and 2 (wrapped and not), the smallest Dragonfly DF(1,1,1) (g = a*h + 1 = 2), fat trees of one leaf and of
one pod, a node list of one node and an empty one, a stencil with a dimension of one task, an all-to-all of one
task, files and traces with no message, a sweep axis of one value and a mapping search of two tasks. Each case
gives either the number of a closed form written here (not the code's output) or one error line naming the
field or argument, the value given and what is allowed; never NaN where a number is defined (the throughput of
no byte at all is NaN by README "Model notes"), never a hang (every library call runs in a thread joined with a
time limit), never a NumPy/JAX error from deep inside.

References: ../shared/DESIGN.md (the model: links, injection/ejection, on-node traffic uses no link; a wrapped
dimension of 2 has one link per direction, README "Model notes"), docs/latency.md ("The latency model": lambda
= o_s + o_r + sum over links of wire + router per router entered; a pair on one node pays o_s + o_r),
docs/traffic_files.md (zero-flow files with a task count), evaluator/traffic/_stencil.py (beta_k = 1 sends
nothing along k), docs/sweeps.md (axes on the command line: ``+sweep.axes.KEY=[...]``, so one of one value is ``[v]``).

Defect found and fixed here (evaluator/config/hydra/composition.py): an override that Hydra's grammar cannot
read - ``routing=dor,`` or ``traffic.n_tasks=2,`` (a sweep "axis of one value" written with a trailing comma),
``topology.dims=[1,2`` - was refused with Hydra's parser text alone, "mismatched input '<EOF>' expecting {':',
BRACKET_OPEN, ...}", naming neither the key nor the value; it now names both, what the grammar reads and, for
a stray comma, how to write an axis of one value.

Second defect, fixed in evaluator/mapping/_moves.py (``flow_table``): a mapping search of a traffic with no
flow between two tasks (an all-to-all of one task, only zero-byte flows) failed with JAX's TypePromotionError
("Input dtypes (float, int64) have no available implicit dtype promotion path") under the strict dtype
promotion the test suite runs with: ``np.bincount`` of no flow returns int64 even with float weights, so the
table's ``nbytes`` was int64[0]. It is float64 now and the search answers 0 s.

Two more found here and fixed beside it (tests/test_audit_degenerate_routes.py): the path-set routings
(``kshortest``, ``optiq_heuristic``, ``optiq_lp``) raised NumPy's "operands could not be broadcast together
with shape (1,) (0,)" from evaluator/routing/_paths.py ``_link_rows`` whenever no byte goes between two
different routers (zero bytes, self traffic, tasks on one router, a one-router network, a one-leaf fat tree);
``ft_adaptive`` on a one-level fat tree and ``torus_adaptive`` on a one-router torus (no router link) raised
JAX's "Slice size at index 1 in gather op is out of range" from evaluator/routing/_adaptive.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from tests.helpers import within as run_within
from tests.test_audit_degenerate_studies import refused  # (one error line naming field, value, allowed)
import evaluator as ev
from evaluator import cli
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.errors import ConfigError
from evaluator.jobs import Job, evaluate_jobs
from evaluator.latency import Latency
from evaluator.lp.bounds import optimal
from evaluator.mapping import search_mapping
from evaluator.topology import fat_tree

LIMIT_S = 120.0  # every case answers in seconds (a first compilation included); a hang fails after this
BW = 1e9  # link bandwidth of the small tori (bytes/s)
O_S, O_R, ROUTER, WIRE = 1e-6, 2e-6, 1e-7, 1e-8
LAT = Latency(send_overhead=O_S, recv_overhead=O_R, router=ROUTER, link=(("default", WIRE),))


def within(fn, seconds: float = LIMIT_S):
    """``fn()`` within ``seconds`` (tests/helpers.py): a hang fails the test, not the suite."""
    return run_within(fn, seconds)


def ring(k: int, wrap: bool = True, npr: int = 1):
    return ev.torus([k], wrap=wrap, link_bandwidth=BW, nodes_per_router=npr)


def flows(n, src, dst, nbytes):
    return T.from_flows(n, src, dst, [float(b) for b in nbytes])


def torus_router_links(dims, wrap=True) -> int:
    """Directed router links of a torus/mesh: a ring of k >= 3 has 2k, of 2 has 2 (one per direction, wrapped
    or not), of 1 none; a line of k has 2(k-1); times the rings of that dimension."""
    n = math.prod(dims)
    total = 0
    for k in dims:
        per_ring = 0 if k == 1 else 2 if k == 2 else (2 * k if wrap else 2 * (k - 1))
        total += per_ring * (n // k)
    return total


def scalars(ds):
    return {k: (ds[k].item() if k == "bottleneck" else float(ds[k])) for k in
            ("completion_time", "throughput", "total_bytes", "off_node_bytes", "mean_hops", "bottleneck")
            if k in ds}


# ------------------------------------------------------------------------------------------------
# No byte crosses a link: time 0, bottleneck none, every byte still counted
# ------------------------------------------------------------------------------------------------

NO_LINK = {  # name: (topology, traffic, placement, bytes sent, messages with bytes)
    "one task": (ring(4), lambda: T.all_to_all(1, 100.0), lambda t: P.linear(t, 1), 0.0, 0),
    "all-to-all of one task, dense": (ring(4), lambda: T.all_to_all_dense(1, 5.0), lambda t: P.linear(t, 1), 0.0, 0),
    "two tasks on one node": (ring(4), lambda: T.all_to_all(2, 100.0), lambda t: P.linear(t, 2, tasks_per_node=2),
                              200.0, 2),
    "tasks_per_node > tasks": (ring(4), lambda: T.all_to_all(2, 100.0), lambda t: P.linear(t, 2, tasks_per_node=8),
                               200.0, 2),
    "self traffic only": (ring(4), lambda: flows(2, [0, 1], [0, 1], [5, 5]), lambda t: P.linear(t, 2), 10.0, 2),
    "zero bytes": (ring(4), lambda: flows(2, [0, 1], [1, 0], [0, 0]), lambda t: P.linear(t, 2), 0.0, 0),
    "no flow": (ring(4), lambda: flows(2, [], [], []), lambda t: P.linear(t, 2), 0.0, 0),
    "node list of one node": (ring(4), lambda: T.all_to_all(3, 10.0), lambda t: P.explicit(t, [2, 2, 2]), 60.0, 6),
    "shift of one task": (ring(4), lambda: T.shift(1, 1, 5.0), lambda t: P.linear(t, 1), 5.0, 1),
    "stencil of one task": (ring(4), lambda: T.stencil((4, 4), (1, 1), bytes_per_element=1.0),
                            lambda t: P.linear(t, 1), 0.0, 0),
    "fat tree of one node": (fat_tree(children=[1], parents=[1]), lambda: flows(1, [0], [0], [0]),
                             lambda t: P.linear(t, 1), 0.0, 0),
}


@pytest.mark.parametrize("case", list(NO_LINK))
def test_no_byte_on_a_link_is_time_zero_with_every_byte_counted(case):
    topo, make_traffic, make_placement, sent, messages = NO_LINK[case]
    sharing = "max_min" if sent else "bound"  # (max-min adds its times to the bound's; both paths run)
    routing = "dmodk" if "fat tree" in case else "dor"
    ds = within(lambda: ev.evaluate(topo.with_latency(LAT), make_traffic(), make_placement(topo), routing,
                                    sharing=sharing))
    got = scalars(ds)
    assert got["completion_time"] == 0.0 and got["bottleneck"] == "none", got
    assert got["total_bytes"] == sent and got["off_node_bytes"] == 0.0 and got["mean_hops"] == 0.0, got
    # bytes over no time: infinite; no byte at all: undefined (README "Model notes")
    assert (math.isnan(got["throughput"]) if sent == 0 else got["throughput"] == math.inf), got
    on_node = O_S + O_R if messages else 0.0  # docs/latency.md: a pair on one node pays o_s + o_r
    assert float(ds.time_with_latency) == pytest.approx(on_node, rel=1e-12, abs=0.0)
    if sharing == "max_min":
        assert float(ds.time_max_min) == pytest.approx(on_node, rel=1e-12, abs=0.0)
        finish = ds.message_finish_time.values
        assert np.all(finish[np.isfinite(finish)] == pytest.approx(on_node, rel=1e-12))


# ------------------------------------------------------------------------------------------------
# Small networks against closed forms
# ------------------------------------------------------------------------------------------------

def _df111():
    df = ev.dragonfly(1, 1, 1)  # g = a*h + 1 = 2 groups of one router, one node each, one global link per direction
    assert (df.n_routers, df.n_nodes) == (2, 2)
    return df, T.all_to_all(2, 1e6), P.linear(df, 2), "minimal", 1e6 / 10e9, "global", 1.0


def _ft_leaf():
    ft = fat_tree(children=[4], parents=[1])  # one leaf switch: everything through injection and ejection
    return ft, T.all_to_all(4, 1e6), P.linear(ft, 4), "dmodk", 3e6 / 12.5e9, "injection", 0.0


def _ft_pod():
    ft = fat_tree(children=[2, 2], parents=[1, 2])  # one pod: 2 leaves of 2 nodes under 2 top switches
    # a node sends 3 MB through its injection link; of its 3 partners 1 is on its leaf (0 hops), 2 are 2 hops away
    return ft, T.all_to_all(4, 1e6), P.linear(ft, 4), "dmodk", 3e6 / 12.5e9, "injection", 4.0 / 3.0


def _ring2():  # a ring of 2: one link per direction, so both flows of a direction share it (no split in two)
    t = ring(2)
    return t, flows(2, [0, 1], [1, 0], [1e9, 1e9]), P.linear(t, 2), "dor", 1.0, "torus-dim0", 1.0


def _mesh2():
    t = ring(2, wrap=False)
    return t, flows(2, [0, 1], [1, 0], [1e9, 1e9]), P.linear(t, 2), "dor", 1.0, "torus-dim0", 1.0


def _torus121():
    t = ev.torus([1, 2, 1], link_bandwidth=BW)
    return t, flows(2, [0, 1], [1, 0], [1e9, 1e9]), P.linear(t, 2), "dor", 1.0, "torus-dim1", 1.0


def _one_router():  # a torus of 1 with 2 nodes: injection and ejection only (injection bandwidth = link bandwidth)
    t = ring(1, npr=2)
    return t, flows(2, [0], [1], [1e9]), P.linear(t, 2), "dor", 1e9 / BW, None, 0.0


def _ring4_one_flow():
    t = ring(4)
    return t, flows(2, [0], [1], [1e9]), P.linear(t, 2), "dor", 1.0, "torus-dim0", 1.0


SMALL = {"DF(1,1,1)": _df111, "fat tree of one leaf": _ft_leaf, "fat tree of one pod": _ft_pod,
         "ring of 2": _ring2, "mesh of 2": _mesh2, "torus 1x2x1": _torus121, "one router": _one_router,
         "one flow": _ring4_one_flow}


@pytest.mark.parametrize("case", list(SMALL))
def test_small_networks_match_their_closed_forms(case):
    topo, traffic, placement, routing, seconds, bottleneck, hops = SMALL[case]()
    got = scalars(within(lambda: ev.evaluate(topo, traffic, placement, routing)))
    assert got["completion_time"] == pytest.approx(seconds, rel=1e-12), got
    if bottleneck is not None:  # (one router: injection and ejection tie)
        assert got["bottleneck"] == bottleneck, got
    assert got["mean_hops"] == pytest.approx(hops, rel=1e-12), got
    assert got["throughput"] == pytest.approx(got["total_bytes"] / seconds, rel=1e-12), got
    assert got["off_node_bytes"] == got["total_bytes"] > 0, got


@pytest.mark.parametrize("dims,wrap", [([2], True), ([2], False), ([1], True), ([1, 2, 1], True), ([2, 2], True),
                                       ([3], False), ([3, 2], True), ([5], True)])
def test_torus_link_counts_with_dimensions_of_one_and_two(dims, wrap):
    t = ev.torus(dims, wrap=wrap)
    n = math.prod(dims)
    assert t.n_links == torus_router_links(dims, wrap) + 2 * n  # router links, then injection and ejection
    router = (t.link_src >= 0) & (t.link_dst >= 0)
    pairs = list(zip(t.link_src[router].tolist(), t.link_dst[router].tolist()))
    assert len(pairs) == len(set(pairs)) and all(a != b for a, b in pairs)  # a simple graph, no self loop


def test_latency_and_max_min_of_one_flow_are_the_closed_form():
    # ring of 4, 1 MB from node 0 to node 1: injection, one router link, ejection (3 wires), 2 routers entered
    lam = O_S + O_R + 3 * WIRE + 2 * ROUTER
    t = ring(4).with_latency(LAT)
    for topo, lam_k in ((t, lam), (ring(2).with_latency(LAT), lam),
                        (ring(1, npr=2).with_latency(LAT), O_S + O_R + 2 * WIRE + ROUTER)):
        ds = within(lambda: ev.evaluate(topo, flows(2, [0], [1], [1e6]), P.linear(topo, 2), "dor",
                                        sharing="max_min"))
        assert float(ds.completion_time) == pytest.approx(1e6 / BW, rel=1e-12)
        assert float(ds.time_with_latency) == pytest.approx(1e6 / BW + lam_k, rel=1e-12)
        assert float(ds.time_max_min) == pytest.approx(1e6 / BW + lam_k, rel=1e-12)
        assert ds.message_finish_time.values.tolist() == pytest.approx([1e6 / BW + lam_k], rel=1e-12)


def test_batch_of_degenerate_points_beside_a_real_one():
    t = ring(4).with_latency(LAT)
    lam = O_S + O_R + 3 * WIRE + 2 * ROUTER
    res = within(lambda: ev.evaluate_batch(
        t, "dor", [T.all_to_all(1, 5.0), flows(4, [], [], []), flows(2, [0, 1], [0, 1], [5, 5]),
                   flows(2, [0], [1], [1e6])],
        [P.linear(t, 1), P.linear(t, 4), P.linear(t, 2), P.linear(t, 2)], sharing="max_min", progression="rank"))
    m = res.metrics
    assert np.asarray(m["completion_time"]).tolist() == pytest.approx([0.0, 0.0, 0.0, 1e-3], rel=1e-12)
    assert np.asarray(m["total_bytes"]).tolist() == [0.0, 0.0, 10.0, 1e6]
    assert np.asarray(m["time_with_latency"]).tolist() == pytest.approx([0.0, 0.0, O_S + O_R, 1e-3 + lam], rel=1e-12)
    assert np.asarray(m["time_max_min"]).tolist() == pytest.approx([0.0, 0.0, O_S + O_R, 1e-3 + lam], rel=1e-12)


@pytest.mark.parametrize("method", ["edge", "garg_konemann"])
def test_optimal_bound_of_degenerate_traffic(method):
    t4 = ring(4)
    cases = [  # (topology, traffic, placement, the best time of any routing)
        (t4, T.all_to_all(1, 5.0), P.linear(t4, 1), 0.0),
        (t4, flows(2, [0, 1], [0, 1], [5, 5]), P.linear(t4, 2), 0.0),
        (t4, flows(2, [0], [1], [5]), P.linear(t4, 2, tasks_per_node=2), 0.0),
        (t4, flows(2, [0], [1], [0]), P.linear(t4, 2), 0.0),
        (t4, flows(2, [0], [1], [1e9]), P.linear(t4, 2), 0.5),  # both ways round the ring: half on each
        (ring(2), flows(2, [0], [1], [1e9]), P.linear(ring(2), 2), 1.0),  # one link per direction
        (ring(1, npr=2), flows(2, [0], [1], [1e9]), P.linear(ring(1, npr=2), 2), 1.0),  # the node links
    ]
    for topo, traffic, placement, best in cases:
        r = within(lambda: optimal(topo, traffic, placement, method=method))
        assert r.completion_time <= best * (1 + 1e-9) and math.isfinite(r.completion_time_upper)
        assert r.completion_time == pytest.approx(best, rel=1e-3, abs=0.0)
        assert r.completion_time_upper == pytest.approx(best, rel=1e-2, abs=0.0)


def test_jobs_with_a_job_that_uses_no_link():
    t = ring(4)
    ds = within(lambda: evaluate_jobs(t, [Job(T.all_to_all(1, 5.0), P.linear(t, 1))], "dor"))
    assert ds.completion_time.values.tolist() == [0.0] and ds.slowdown.values.tolist() == [1.0]
    assert float(ds.makespan) == 0.0
    for idle in (flows(2, [0], [1], [0]), flows(2, [0, 1], [0, 1], [5, 5])):  # zero bytes; self traffic only
        ds = within(lambda: evaluate_jobs(t, [Job(idle, P.explicit(t, [0, 1])),
                                              Job(flows(2, [0], [1], [1e9]), P.explicit(t, [2, 3]))], "dor"))
        assert ds.completion_time.values.tolist() == pytest.approx([0.0, 1.0], rel=1e-12)
        assert float(ds.makespan) == pytest.approx(1.0, rel=1e-12)


# ------------------------------------------------------------------------------------------------
# Illegal sizes: one line naming the field, the value and what is allowed
# ------------------------------------------------------------------------------------------------

def _t4():
    return ring(4)


REFUSALS = {  # name: (call, field, value, allowed)
    "torus dims 0": (lambda: ev.torus([0]), "topology.dims[0]", "= 0", "integer >= 1"),
    "torus dims []": (lambda: ev.torus([]), "topology.dims", "[]", "non-empty list"),
    "dragonfly p 0": (lambda: ev.dragonfly(0, 1, 1), "topology.p", "= 0", "integer >= 1"),
    "dragonfly a 0": (lambda: ev.dragonfly(1, 0, 1), "topology.a", "= 0", "integer >= 1"),
    "dragonfly h 0": (lambda: ev.dragonfly(1, 1, 0), "topology.h", "= 0", "integer >= 1"),
    "dragonfly g 1": (lambda: ev.dragonfly(1, 1, 1, g=1), "topology.g", "= 1", "integer >= 2"),
    "valiant on 2 groups": (lambda: ev.evaluate(ev.dragonfly(1, 1, 1), T.all_to_all(2), P.linear(
        ev.dragonfly(1, 1, 1), 2), "valiant"), "routing.kind", "'valiant'", "fewer than 3 groups"),
    "fat tree k 1": (lambda: fat_tree(k=1, levels=2), "topology.k", "= 1", "integer >= 2"),
    "fat tree levels 0": (lambda: fat_tree(k=2, levels=0), "topology.levels", "= 0", "integer >= 1"),
    "fat tree children []": (lambda: fat_tree(children=[], parents=[]), "topology.children", "[]", "non-empty"),
    "no task": (lambda: P.linear(_t4(), 0), "placement.n_tasks", "= 0", "integer >= 1"),
    "more tasks than nodes": (lambda: P.linear(_t4(), 5), "placement.n_tasks", "= 5", "at most nodes x"),
    "tasks_per_node 0": (lambda: P.linear(_t4(), 2, tasks_per_node=0), "placement.tasks_per_node", "= 0", ">= 1"),
    "empty node list": (lambda: P.explicit(_t4(), []), "placement.task_node", "[]", "non-empty list"),
    "traffic larger than placement": (lambda: ev.evaluate(_t4(), T.all_to_all(3), P.linear(_t4(), 2), "dor"),
                                      "placement.n_tasks", "= 2", "traffic's task count 3"),
    "stencil beta 0": (lambda: T.stencil((4, 4), (0, 4)), "traffic.beta[0]", "= 0", "integer >= 1"),
    "all-to-all of 0 tasks": (lambda: T.all_to_all(0), "traffic.n_tasks", "= 0", "integer >= 1"),
    "flows of 0 tasks": (lambda: T.from_flows(0, [], [], []), "traffic.n_tasks", "= 0", "integer >= 1"),
    "matrix 0x0": (lambda: T.from_matrix(np.zeros((0, 0))), "traffic.matrix", "(0, 0)", "square 2-D matrix"),
    "no phase": (lambda: T.phased([]), "traffic.phases", "[]", "non-empty list"),
    "batch of no point": (lambda: ev.evaluate_batch(_t4(), "dor", [], []), "traffics", "= 0", "at least one"),
    "block_size 0": (lambda: ev.evaluate_batch(_t4(), "dor", [T.all_to_all(2)], [P.linear(_t4(), 2)], block_size=0),
                     "block_size", "= 0", "integer >= 1"),
    "no job": (lambda: evaluate_jobs(_t4(), [], "dor"), "jobs", "[]", "non-empty list"),
    "draws 0": (lambda: ev.evaluate_draws(fat_tree(children=[2], parents=[1]), "ecmp", T.all_to_all(2),
                                          P.linear(fat_tree(children=[2], parents=[1]), 2), k=0),
                "draws", "= 0", "integer >= 1"),
    "mapping on no node": (lambda: search_mapping(_t4(), T.all_to_all(2), "dor", nodes=[], progress=False),
                           "mapping.nodes", "[]", "non-empty"),
    "mapping of 2 tasks on one slot": (lambda: search_mapping(_t4(), T.all_to_all(2), "dor", nodes=[0],
                                                              progress=False),
                                       "traffic.n_tasks", "= 2", "at most available nodes x tasks_per_node"),
    "mapping tasks_per_node 0": (lambda: search_mapping(_t4(), T.all_to_all(2), "dor", tasks_per_node=0,
                                                        progress=False),
                                 "mapping.tasks_per_node", "= 0", "integer >= 1"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_illegal_sizes_are_one_line_naming_field_value_and_allowed(case):
    refused(*REFUSALS[case])


# ------------------------------------------------------------------------------------------------
# Files and traces with no message
# ------------------------------------------------------------------------------------------------

def test_traffic_files_with_zero_messages(tmp_path):
    t = ring(4)
    np.save(tmp_path / "e.npy", np.zeros((0, 3)))
    np.savez(tmp_path / "c.npz", row=np.zeros(0, int), col=np.zeros(0, int), data=np.zeros(0), shape=[3, 3])
    (tmp_path / "e.mtx").write_text("%%MatrixMarket matrix coordinate real general\n3 3 0\n")
    for name, n_tasks, expect in (("e.npy", 2, 2), ("c.npz", None, 3), ("e.mtx", None, 3)):
        tr = within(lambda: T.from_file(tmp_path / name, n_tasks=n_tasks))
        assert tr.n_tasks == expect  # the task count from traffic.n_tasks, the COO shape, the size line
        got = scalars(within(lambda: ev.evaluate(t, tr, P.linear(t, expect), "dor")))
        assert got["completion_time"] == 0.0 and got["total_bytes"] == 0.0 and math.isnan(got["throughput"])
    (tmp_path / "h.csv").write_text("src,dst,bytes\n")
    (tmp_path / "z.mtx").write_text("%%MatrixMarket matrix coordinate real general\n0 0 0\n")
    for name, allowed in (("e.npy", "at least one flow"), ("h.csv", "at least one src,dst,bytes row"),
                          ("z.mtx", "square Matrix Market matrix")):
        refused(lambda: T.from_file(tmp_path / name), "traffic.path", name, allowed)


def _write_empty_trace(path: Path, n_ranks: int) -> str:
    """An OTF2 trace of ``n_ranks`` MPI ranks (their COMM_LOCATIONS group) and no event."""
    import otf2
    from otf2.enums import GroupType, Paradigm

    with otf2.writer.open(str(path), timer_resolution=10 ** 6) as tr:
        d = tr.definitions
        node = d.system_tree_node("machine")
        locs = [d.location(f"rank {r}", group=d.location_group(f"MPI Rank {r}", system_tree_parent=node))
                for r in range(n_ranks)]
        d.group("world locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
    return str(path / "traces.otf2")


def test_trace_with_no_message_is_named(tmp_path):
    anchor = _write_empty_trace(tmp_path / "t", 2)
    for mode in ("aggregate", "phased"):
        refused(lambda: T.from_trace(anchor, mode=mode), "traffic.path", "traces.otf2",
                "an OTF2 trace with MPI traffic")


# ------------------------------------------------------------------------------------------------
# Stencils with a dimension of one task (beta_k = 1 sends nothing along k)
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"neighbours": "full"}, {"exchange": "per_dimension"}])
def test_stencil_with_a_dimension_of_one_task(kw):
    # alpha (4, 4), beta (1, 4), 1 byte per element: 4 tasks, each a 4x1 block, sending its 4-element face to
    # its +1 and -1 neighbours along dimension 1 (periodic); linear on a ring of 4 puts task t on node t, so
    # every directed ring link carries one 4-byte face (corners/edges need two dimensions with beta > 1).
    t = ring(4)
    ds = within(lambda: ev.evaluate(t, T.stencil((4, 4), (1, 4), bytes_per_element=1.0, **kw), P.linear(t, 4), "dor"))
    got = scalars(ds)
    assert got["total_bytes"] == 4 * 2 * 4.0 and got["completion_time"] == pytest.approx(4.0 / BW, rel=1e-12)
    assert got["bottleneck"] == "torus-dim0" and got["mean_hops"] == 1.0


@pytest.mark.parametrize("periodic,faces", [(True, 2), (False, 1)])
def test_stencil_of_two_tasks_sends_both_faces_only_when_periodic(periodic, faces):
    t = ring(4)
    ds = within(lambda: ev.evaluate(t, T.stencil((4,), (2,), bytes_per_element=1.0, periodic=periodic),
                                    P.linear(t, 2), "dor"))
    got = scalars(ds)  # each task: `faces` 1-byte messages to the other, all over the one link 0->1 (or 1->0)
    assert got["total_bytes"] == 2.0 * faces and got["completion_time"] == pytest.approx(faces / BW, rel=1e-12)


# ------------------------------------------------------------------------------------------------
# Mapping search of two tasks, against an exhaustive search over node pairs
# ------------------------------------------------------------------------------------------------

def ring_time(k: int, inj: float, placed: dict[int, int], sends: list[tuple[int, int, float]]) -> float:
    """Completion time of ``sends`` (task, task, bytes) on a ring of ``k`` routers (one node each) under DOR
    with its tie split (a pair half way round sends half each way): a per-flow walk over the directed links."""
    load: dict[tuple[int, int], float] = {}
    node = np.zeros((2, k))  # bytes injected / ejected per node
    for s, d, b in sends:
        u, v = placed[s], placed[d]
        if u == v:
            continue
        node[0, u] += b
        node[1, v] += b
        step = (v - u) % k
        ways = [(+1, step)] if 2 * step < k else [(-1, k - step)] if 2 * step > k else [(+1, step), (-1, k - step)]
        for sign, hops in ways:
            for h in range(hops):
                a = (u + sign * h) % k
                load[(a, sign)] = load.get((a, sign), 0.0) + b / len(ways)
    return max(max(load.values(), default=0.0) / BW, node.max() / inj)


@pytest.mark.parametrize("nodes", [None, [0, 1], [1, 3]])
def test_mapping_search_of_two_tasks_finds_the_exhaustive_optimum(nodes):
    k, b = 4, 1e9
    t = ring(k)
    sends = [(0, 1, b), (1, 0, b)]
    avail = list(range(k)) if nodes is None else nodes
    best = min(ring_time(k, 2 * BW, {0: u, 1: v}, sends) for u in avail for v in avail if u != v)
    res = within(lambda: search_mapping(t, flows(2, [0, 1], [1, 0], [b, b]), "dor", nodes=nodes, time_budget=10,
                                        max_iterations=3, progress=False))
    assert res.completion_time == pytest.approx(best, rel=1e-12)
    tn = res.placement.task_node.tolist()
    assert len(set(tn)) == 2 and set(tn) <= set(avail)
    assert ring_time(k, 2 * BW, dict(enumerate(tn)), sends) == pytest.approx(best, rel=1e-12)
    assert res.lower_bound <= best * (1 + 1e-9)


@pytest.mark.parametrize("traffic,kw", [(lambda: T.all_to_all(1, 5.0), {}),
                                        (lambda: flows(2, [0, 1], [1, 0], [1e9, 1e9]),
                                         {"nodes": [3], "tasks_per_node": 2}),
                                        (lambda: flows(2, [0], [1], [1e9]), {"tasks_per_node": 8}),
                                        (lambda: flows(2, [0], [1], [0]), {})])
def test_mapping_search_where_nothing_needs_a_link(traffic, kw):
    res = within(lambda: search_mapping(ring(4), traffic(), "dor", time_budget=10, max_iterations=2,
                                        progress=False, **kw))
    assert res.completion_time == 0.0 and res.lower_bound == 0.0
    if "nodes" in kw:
        assert res.placement.task_node.tolist() == [3, 3]


# ------------------------------------------------------------------------------------------------
# The commands, in process: a one-value sweep axis, a stray comma, a mapping of two tasks
# ------------------------------------------------------------------------------------------------

CMD = ["topology=torus", "topology.dims=[4]", "topology.link_bandwidth=1e9", "routing=dor", "placement=linear",
       "traffic=all_to_all", "traffic.bytes=1e6"]


def test_sweep_axis_of_one_value_and_of_a_dimension_of_one(tmp_path, capsys):
    assert within(lambda: cli.main(["sweep", *CMD, "+sweep.axes.traffic.n_tasks=[2]", "ray.enabled=false",
                                    "--no-progress", f"sweep.output_dir={tmp_path}", "sweep.name=one"])) == 0
    (path,) = (tmp_path / "one").glob("*.nc")
    with xr.open_dataset(path) as ds:
        assert dict(ds.sizes).get("traffic.n_tasks") == 1
        # 2 tasks on nodes 0 and 1 of a ring of 4: 1 MB each way on one link of 1 GB/s
        assert ds.completion_time.values.tolist() == pytest.approx([1e6 / BW], rel=1e-12)
    assert within(lambda: cli.main(["sweep", *CMD[:1], *CMD[2:], "topology.dims=[1],[2]", "traffic.n_tasks=1",
                                    "ray.enabled=false", "--no-progress", f"sweep.output_dir={tmp_path}",
                                    "sweep.name=dims"])) == 0
    (path,) = (tmp_path / "dims").glob("*.nc")
    with xr.open_dataset(path) as ds:
        assert ds.completion_time.values.tolist() == [0.0, 0.0] and bool(ds.throughput.isnull().all())


@pytest.mark.parametrize("override,key,value", [("traffic.n_tasks=2,", "traffic.n_tasks", "'2,'"),
                                                ("routing=dor,", "routing", "'dor,'"),
                                                ("topology.dims=[1,2", "topology.dims", "'[1,2'")])
def test_an_override_hydra_cannot_read_is_named(override, key, value, tmp_path, capsys):
    capsys.readouterr()
    rc = within(lambda: cli.main(["sweep", *[c for c in CMD if not c.startswith(key + "=")], override,
                                  "ray.enabled=false", "--no-progress", f"sweep.output_dir={tmp_path}"]))
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err, err
    assert f"{key} = {value} is invalid: allowed is" in err and repr(override) in err, err
    if override.endswith(","):
        assert f"+sweep.axes.{key}=[a]" in err, err  # how an axis of one value is written


def test_map_command_on_two_tasks(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    rc = within(lambda: cli.main(["map", *CMD, "traffic.n_tasks=2", "--iterations", "2", "--budget", "10",
                                  "--no-progress"]))
    out = capsys.readouterr().out
    assert rc == 0, out
    best = min(ring_time(4, 2 * BW, {0: u, 1: v}, [(0, 1, 1e6), (1, 0, 1e6)]) for u in range(4) for v in range(4)
               if u != v)
    assert best == 5e-4 and "mapping found: 500.0 us" in out, out
