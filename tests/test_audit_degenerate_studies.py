"""Degenerate sizes through the studies and the other commands (audit, 2026-12-07).

tests/test_audit_degenerate_sizes.py covered evaluate, evaluate_batch, jobs, bounds, mapping and sweep; this
module drives the library behind ``evaluator study buyer`` / ``study rdn``, ``schedule`` (workload, policies),
``partitions``, ``tiles``, the cost model, the collectives and machine files, with one node, one job, one size,
one group, a job that fills the machine, a machine of one router or one midplane, a machine file whose allowed
list has one entry, zero-byte collectives, zero prices, an empty size list and sizes below what is allowed. Each
case gives the number of a closed form written here or one error line naming the field or argument, the value
and what is allowed; never NaN where a number is defined, never a hang (library calls run in a thread joined with
a time limit), never a NumPy error from deep inside, never a size dropped without a note.

References: docs/buyer.md (sizes of at least 16 nodes; tolerance in (0, 1); the mix needs 4 | N), docs/cost.md
("The counting rules" table and the default prices), docs/partitions.md and evaluator/partitions/bisection.py (a
ring of k >= 3 wrapped is cut at 2 links, a ring of 2 at 1), docs/tiles.md and ``evaluator.tiles.closed_form``
(a halo face of the tile over the link bandwidth), docs/workload.md (FCFS + EASY backfilling), docs/rdn.md
(sizes above the machine's G are left out, G is always a size), docs/collectives.md (the byte convention).

Defects found and fixed here:

* ``evaluator.studies.buyer.buyer_study`` took any size list: ``[]`` returned a dataset of no size, ``[1]`` and
  ``[2]`` raised ``ValueError: min() arg is an empty sequence`` and ``[0]`` ``TypeError: 'NoneType' object is not
  subscriptable`` from the candidates' search; ``equal``, ``tolerance`` and ``link`` were not checked
  (``equal="x"`` ran the study at equal power, ``tolerance=-1`` flagged every network, a bad link was refused as
  ``topology.bandwidth_p``), and a size not a multiple of 4 with the mix failed mid-study. They are refused now,
  before any work, naming ``sizes``, ``equal``, ``tolerance`` or ``link`` (``equal_networks`` too).
* ``evaluator.studies.buyer.evaluate_point`` of a workload that moves no byte (an all-to-all of one task) raised
  ``ZeroDivisionError`` (bytes / time with time 0); the throughput of no byte in no time is NaN, the time 0.
* ``evaluator.tiles.advise`` on a machine with a dimension of one router (a 2x1x1 or 1x1x1 torus machine file)
  raised NumPy's "zero-size array to reduction operation minimum" (the capacity of a link class without links);
  after that, the times of such a class were NaN. A class without links takes no time now.
* ``evaluator.studies.rdn.allocation_mode_study`` dropped job sizes above the machine's groups without a word in
  its dataset (only the command printed it); the dataset names them in ``attrs["groups_left_out"]``.
* ``evaluator.partitions.isoperimetric_bound`` on a torus of one vertex said "allowed: an integer in [1, 0]"; it
  names ``dims`` and says a torus needs two vertices.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from evaluator import cli
from tests.helpers import within as run_within
from evaluator.cost import network_cost, parts_of
from evaluator.cost.dataset import with_cost
from evaluator.errors import ConfigError
from evaluator.machines import machine_from_dict
from evaluator.partitions import bisection as B
from evaluator.partitions import geometry as G
from evaluator.studies import buyer
from evaluator.studies.rdn import RdnMachine, allocation_mode_study
from evaluator import tiles as TL
from evaluator.topology import dragonfly, fat_tree, gemini, torus
from evaluator.traffic._collectives import COLLECTIVES, SELECTIONS, collective, collective_steps
from evaluator.workload import Trace, simulate, synthetic_trace
from evaluator.workload import analysis as A
from evaluator.workload._policy import POLICY_NAMES, make_policy

LIMIT_S = 120.0  # every case answers in seconds; a hang fails after this


def within(fn, seconds: float = LIMIT_S):
    """``fn()`` within ``seconds`` (tests/helpers.py): a hang fails the test, not the suite."""
    return run_within(fn, seconds)


def refused(fn, field: str, value: str, allowed: str, exc=ConfigError) -> str:
    """``fn()`` raises one error line (``exc``) naming ``field``, ``value`` and what is ``allowed``."""
    with pytest.raises(exc) as info:
        within(fn)
    msg = str(info.value)
    assert "\n" not in msg.strip(), msg
    for part in (field, value, allowed):
        assert part in msg, (part, msg)
    return msg


# ------------------------------------------------------------------------------------------- buyer
@pytest.mark.parametrize("sizes, shown", [([], "[]"), ([1], "[1]"), ([0], "[0]"), ([2], "[2]"), ([15], "[15]"),
                                          ([16, 16], "[16, 16]"), ([True], "[True]"), ([16.0], "[16.0]")])
def test_buyer_study_refuses_sizes_below_or_beside_the_range(sizes, shown):
    """docs/buyer.md: sizes of at least 16 nodes, distinct. Before: [] gave a dataset of no size, [1] and [2]
    ValueError ('min() arg is an empty sequence'), [0] TypeError, from deep inside the candidates' search."""
    allowed = "distinct sizes" if sizes == [16, 16] else "integers in [16, 200,000]"
    refused(lambda: buyer.buyer_study(sizes, 1, workloads=("permutation",)), "sizes", shown, allowed)


@pytest.mark.parametrize("kw, field, shown, allowed", [
    ({"equal": "x"}, "equal", "'x'", "cost or power"),
    ({"tolerance": -1.0}, "tolerance", "-1.0", "(0, 1)"),
    ({"tolerance": 0.0}, "tolerance", "0.0", "(0, 1)"),
    ({"tolerance": 1.0}, "tolerance", "1.0", "(0, 1)"),
    ({"link": 0.0}, "link", "0.0", "> 0"),
    ({"link": math.nan}, "link", "nan", "> 0"),
])
def test_buyer_measure_arguments_are_named(kw, field, shown, allowed):
    """Before: equal='x' ran at equal power, tolerance=-1 flagged every network OUTSIDE TOLERANCE, link=0 was
    refused as topology.bandwidth_p (a field the caller never gave)."""
    refused(lambda: buyer.equal_networks(16, **kw), field, shown, allowed)
    refused(lambda: buyer.buyer_study([16], 1, workloads=("permutation",), **kw), field, shown, allowed)


def test_buyer_mix_needs_a_multiple_of_four_before_any_work():
    """18 nodes build every family (a 3x3x2 fat tree, tori of 18 and 9 routers) but not the mix (N/4 jobs):
    refused up front naming ``sizes`` (it failed mid-study, naming --nodes, after other points had run)."""
    refused(lambda: buyer.buyer_study([18], 1, workloads=("permutation", "mix")), "sizes", "[18]", "multiples of 4")


def test_buyer_point_of_one_task_and_of_two():
    """An all-to-all of one task moves no byte: time 0, throughput NaN (README: no bytes in no time); before,
    ZeroDivisionError. Two tasks on DF(2,4,2,2) (balanced at 16 nodes) sit on router 0: each sends 32 MB / 2 to
    the other over its node link of 25e9 bytes/s: time 16e6 / 25e9, throughput 32e6 / that."""
    topo = buyer.balanced_dragonfly(16)
    assert (topo.p, topo.a, topo.h, topo.g) == (2, 4, 2, 2)
    t, thr, why = within(lambda: buyer.evaluate_point(topo, "all_to_all", "minimal", 1))
    assert (t, why) == (0.0, "") and math.isnan(thr)
    t, thr, why = within(lambda: buyer.evaluate_point(topo, "all_to_all", "minimal", 2))
    assert why == ""
    assert t == pytest.approx(16e6 / 25e9, rel=1e-12)
    assert thr == pytest.approx(32e6 / (16e6 / 25e9), rel=1e-12)


# ------------------------------------------------------------------------------------------- rdn
def test_rdn_sizes_above_the_machine_are_named_not_dropped():
    """DF(1,2,1,2): two groups of two nodes. groups=[2, 9]: 9 > G is left out (docs/rdn.md) and the dataset says
    so; the point of 2 groups is a positive finite time. groups=[1] and a machine whose all-to-all job cannot
    fill more than half a group are refused naming the argument."""
    m = RdnMachine(p=1, a=2, h=1, g=2, bandwidth=1e9)
    ds = within(lambda: allocation_mode_study(m, [2, 9], patterns=["stencil"], n_seeds=1, bounds=(), adaptive=()))
    assert ds.groups.values.tolist() == [2]
    assert "9" in ds.attrs["groups_left_out"] and "2 groups" in ds.attrs["groups_left_out"]
    t = float(ds["rdn_time"].sel(pattern="stencil", groups=2))
    assert math.isfinite(t) and t > 0
    plain = within(lambda: allocation_mode_study(m, [2], patterns=["stencil"], n_seeds=1, bounds=(), adaptive=()))
    assert "groups_left_out" not in plain.attrs
    refused(lambda: allocation_mode_study(m, [1], patterns=["stencil"], n_seeds=1), "groups", "1", ">= 2")
    refused(lambda: allocation_mode_study(m, [2], n_seeds=1, bounds=(), adaptive=()), "machine", "DF(1,2,1,2)",
            "all-to-all job fills more than half")


# ------------------------------------------------------------------------------------------- workload
def trace(nodes, run, submit=None) -> Trace:
    n = len(nodes)
    return Trace(job_id=np.arange(n), submit=np.zeros(n) if submit is None else np.asarray(submit, float),
                 run_time=np.asarray(run, float), requested_time=2 * np.asarray(run, float), nodes=np.asarray(nodes))


EMPTY = Trace(job_id=np.zeros(0, int), submit=np.zeros(0), run_time=np.zeros(0), requested_time=np.zeros(0),
              nodes=np.zeros(0, int))


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_one_job_that_fills_the_machine_and_a_machine_of_one_node(policy):
    """One job of all 4 nodes (1 group of 4) runs at 0 for its run time: wait 0, utilisation 1, makespan 10 s.
    Two one-node jobs on a machine of one node run one after the other (FCFS): starts 0 and 5, ends 5 and 12."""
    ds = within(lambda: simulate(trace([4], [10.0]), make_policy(policy, 1, 4), nodes_per_group=4))
    assert ds.start.values.tolist() == [0.0] and ds.end.values.tolist() == [10.0] and ds.wait.values.tolist() == [0]
    s = A.summary(ds)
    assert s["mean_utilisation"] == pytest.approx(1.0) and s["makespan"] == 10.0 and s["mean_wait"] == 0.0
    assert not any(math.isnan(v) for v in s.values()), s
    ds = within(lambda: simulate(trace([1, 1], [5.0, 7.0]), make_policy(policy, 1, 1), nodes_per_group=1))
    assert ds.start.values.tolist() == [0.0, 5.0] and ds.end.values.tolist() == [5.0, 12.0]
    assert ds.sizes["job"] == 2  # no job dropped


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_workload_sizes_refused(policy):
    """No job, a job of 0 nodes and a job larger than the machine: one line naming what and what is allowed."""
    refused(lambda: simulate(EMPTY, make_policy(policy, 2, 4), nodes_per_group=4), "trace", "in memory",
            "at least one job")
    refused(lambda: simulate(trace([0], [1.0]), make_policy(policy, 1, 4), nodes_per_group=4), "trace.nodes", "0",
            ">= 1")
    refused(lambda: simulate(trace([5], [1.0]), make_policy(policy, 1, 4), nodes_per_group=4), "nodes", "5",
            "[1, 4]")


def test_workload_of_zero_run_time_and_synthetic_of_one_job():
    """A job of 0 s: it starts and ends at 0, every summary finite (no 0/0). A synthetic trace of one job on one
    node has one job of one node; of no job is refused naming synthetic.n_jobs."""
    ds = within(lambda: simulate(trace([2], [0.0]), make_policy("unrestricted", 1, 4), nodes_per_group=4))
    assert ds.start.values.tolist() == [0.0] and ds.end.values.tolist() == [0.0]
    s = A.summary(ds)
    assert s["makespan"] == 0.0 and s["mean_wait"] == 0.0
    assert all(math.isfinite(v) for k, v in s.items() if k != "mean_utilisation"), s
    tr = within(lambda: synthetic_trace(1, 1))
    assert tr.nodes.tolist() == [1]
    refused(lambda: synthetic_trace(0, 1), "synthetic.n_jobs", "0", ">= 1")


# ------------------------------------------------------------------------------------------- partitions
def ring_cut(k: int, wrap: bool = True) -> int:
    """Links a bisection cuts in one ring of ``k`` routers: 2 wrapped (k >= 3), 1 for k = 2 or a line, 0 for 1."""
    return 0 if k == 1 else (2 if wrap and k >= 3 else 1)


def torus_cut(dims) -> int:
    """The bisection of a wrapped torus with an even side: the fewest links over a cut across one even side."""
    n = math.prod(dims)
    return min(ring_cut(k) * n // k for k in dims if k % 2 == 0)


ONE_MIDPLANE = dict(name="One", kind="bgq", midplanes=[1, 1, 1, 1], link_bandwidth=2e9, nodes_per_router=1)


def test_one_midplane_machine_file_and_an_allowed_list_of_one():
    """A BG/Q of one midplane is the 4x4x4x4x2 torus of 512 nodes: its one size, one shape (1,1,1,1), bisection
    links of the closed form (a cut across a 4-ring: 2 x 512/4 = 256, across the 2-ring: 512/2 = 256) at 2e9
    bytes/s each. An allowed list of one entry gives that shape as best allowed; an empty one is refused."""
    m = machine_from_dict(ONE_MIDPLANE)
    assert G.feasible_sizes(m) == [512]
    geoms = within(lambda: G.partition_geometries(m, 512))
    assert [g.shape for g in geoms] == [(1, 1, 1, 1)]
    assert geoms[0].bisection.links == torus_cut([4, 4, 4, 4, 2]) == 256
    assert geoms[0].bisection.bandwidth == pytest.approx(256 * 2e9)
    analyses = within(lambda: G.analyse_machine(machine_from_dict(dict(ONE_MIDPLANE, allowed_partitions=[[1, 1, 1,
                                                                                                          1]]))))
    assert [(a.nodes, a.best_allowed.shape) for a in analyses] == [(512, (1, 1, 1, 1))]
    refused(lambda: machine_from_dict(dict(ONE_MIDPLANE, allowed_partitions=[])), "allowed_partitions", "[]",
            "non-empty list", exc=Exception)
    assert list(within(lambda: G.compare_machines([m], [512]))) == [512]


@pytest.mark.parametrize("nodes, says", [(0, "a positive number of nodes"), (1, "multiple of 512"),
                                         (1024, "larger than the machine")])
def test_one_midplane_sizes_refused(nodes, says):
    refused(lambda: G.partition_geometries(machine_from_dict(ONE_MIDPLANE), nodes), "partition size", str(nodes),
            says, exc=Exception)


def test_empty_size_lists_refused():
    m = machine_from_dict(ONE_MIDPLANE)
    for fn in (lambda: G.analyse_machine(m, []), lambda: G.compare_machines([m], [])):
        refused(fn, "sizes", "[]", "one or more partition sizes", exc=Exception)


@pytest.mark.parametrize("dims, wrap, links", [([1], True, 0), ([2], True, 1), ([4], True, 2), ([4], False, 1),
                                               ([1, 1], True, 0), ([2, 1, 1], True, 1), ([3], False, 1)])
def test_bisection_of_tiny_tori(dims, wrap, links):
    """torus_bisection against the ring closed form: one router none, a ring of 2 one link, of 4 wrapped two."""
    b = within(lambda: B.torus_bisection(dims, wrap=wrap))
    assert b.links == links
    assert b.bandwidth == pytest.approx(links)


def test_isoperimetric_bound_of_one_vertex_names_dims():
    """Before: 'allowed: an integer in [1, 0]'. A ring of 4: one vertex leaves by 2 links (closed form)."""
    refused(lambda: B.isoperimetric_bound([1], 1), "dims", "[1]", "at least 2 vertices", exc=Exception)
    assert B.isoperimetric_bound([4], 1) == pytest.approx(2.0)


def test_torus_machine_of_one_and_two_routers():
    one = machine_from_dict(dict(name="T1", kind="torus", dims=[1, 1, 1], link_bandwidth=1e9, nodes_per_router=1))
    two = machine_from_dict(dict(name="T2", kind="torus", dims=[2, 1, 1], link_bandwidth=1e9, nodes_per_router=1))
    g1 = within(lambda: G.partition_geometries(one, 1))
    assert [(g.shape, g.bisection.links) for g in g1] == [((1, 1, 1), 0)]
    g2 = within(lambda: G.partition_geometries(two, 2))
    assert [(g.shape, g.bisection.links, g.bisection.bandwidth) for g in g2] == [((2, 1, 1), 1, 1e9)]


# ------------------------------------------------------------------------------------------- tiles
def tiny_machine(dims):
    return machine_from_dict(dict(name="T" + "x".join(map(str, dims)), kind="torus", dims=list(dims),
                                  link_bandwidth=1e9, nodes_per_router=1, injection_bandwidth=1e9))


@pytest.mark.parametrize("dims, grid, nodes, periodic, face_points", [
    ((1, 1, 1), (1, 1, 1), 1, False, 0), ((1, 1, 1), (4, 4, 4), 1, True, 0),
    ((2, 1, 1), (2, 1, 1), 2, False, 1), ((2, 1, 1), (4, 1, 1), 2, False, 1), ((2, 1, 1), (4, 2, 2), 2, True, 8)])
def test_tiles_on_a_machine_with_dimensions_of_one(dims, grid, nodes, periodic, face_points):
    """One task per node; the only decomposition is nodes x 1 x 1. Along x each task sends its y-z face
    (``face_points`` points of 8 bytes in all: a periodic pair sends both of its x faces, 2 x 4 points, to its
    one neighbour, over the ring of 2's one link per direction; tiles.closed_form's "two and periodic"), over a
    link and an injection port of 1e9 bytes/s: time face x 8 / 1e9 at once and per dimension.
    One node sends nothing off node: 0. Before: NumPy 'zero-size array to reduction operation minimum'."""
    req = TL.TileRequest(grid=grid, nodes=nodes, tasks_per_node=1, machine=tiny_machine(dims), periodic=periodic)
    ds = within(lambda: TL.advise(req))
    assert ds.sizes["candidate"] == 1
    want = face_points * 8.0 / 1e9
    for v in ("time_all", "time_seq", "links_all", "links_seq", "injection_all", "closed_all"):
        got = float(ds[v][0])
        assert not math.isnan(got), v
        assert got == pytest.approx(want, rel=1e-12, abs=0.0), (v, got, want)
    assert "nan" not in TL.format_advice(ds)


def test_tiles_sizes_refused():
    m = tiny_machine((1, 1, 1))
    refused(lambda: TL.advise(TL.TileRequest(grid=(1, 1, 1), nodes=0, tasks_per_node=1, machine=m)), "--nodes",
            "0", ">= 1")
    refused(lambda: TL.advise(TL.TileRequest(grid=(1, 1, 1), nodes=2, tasks_per_node=1, machine=m)), "--nodes",
            "2", "at most the 1 nodes")
    refused(lambda: TL.advise(TL.TileRequest(grid=(0, 1, 1), nodes=1, tasks_per_node=1, machine=m)), "--grid",
            "[0, 1, 1]", "positive integers")


# ------------------------------------------------------------------------------------------- cost
PRICE = {"switch": 5, "switch_port": 1, "nic": 2, "electrical_cable_short": 0.3, "electrical_cable_long": 0.8,
         "optical_cable_short": 0.1, "optical_cable_long": 0.2, "transceiver": 1.5}  # docs/cost.md's table


def expected_parts(kind: str, *a) -> dict:
    """docs/cost.md, "The counting rules", written out for the smallest networks."""
    if kind == "torus":  # dims, wrap, nodes per router
        dims, wrap, npr = a
        R = math.prod(dims)
        short = sum(R // n * (n - 1) for n in dims if n >= 2)
        long = sum(R // n for n in dims if wrap and n >= 3)
        radix = 2 * len(dims) + npr
        return dict(n_switches=R, n_switch_ports=R * radix, n_nics=R * npr, n_electrical_cables_short=short,
                    n_electrical_cables_long=long, n_ports_used=2 * (short + long) + R * npr)
    if kind == "fat_tree1":  # one level of m hosts: one switch of radix m
        (m,) = a
        return dict(n_switches=1, n_switch_ports=m, n_nics=m, n_electrical_cables_short=m, n_ports_used=m)
    p, a_, h, g = a  # Dragonfly
    m = (a_ * h) // (g - 1)
    glob = g * (g - 1) * m // 2
    return dict(n_switches=g * a_, n_switch_ports=g * a_ * (p + a_ - 1 + h), n_nics=g * a_ * p,
                n_electrical_cables_short=g * a_ * p + g * a_ * (a_ - 1) // 2, n_optical_cables_long=glob,
                n_transceivers=2 * glob, n_ports_used=g * a_ * p + g * a_ * (a_ - 1) + 2 * glob)


def default_cost(parts: dict) -> float:
    names = {"n_switches": "switch", "n_switch_ports": "switch_port", "n_nics": "nic",
             "n_electrical_cables_short": "electrical_cable_short", "n_electrical_cables_long": "electrical_cable_long",
             "n_optical_cables_short": "optical_cable_short", "n_optical_cables_long": "optical_cable_long",
             "n_transceivers": "transceiver"}
    return sum(parts.get(k, 0) * PRICE[v] for k, v in names.items())


@pytest.mark.parametrize("topo, kind, args", [
    (lambda: torus([1]), "torus", ([1], True, 1)), (lambda: torus([2]), "torus", ([2], True, 1)),
    (lambda: torus([3], wrap=False), "torus", ([3], False, 1)), (lambda: gemini([1, 1, 1]), "torus", ([1, 1, 1],
                                                                                                     True, 2)),
    (lambda: fat_tree([4], [1]), "fat_tree1", (4,)), (lambda: dragonfly(1, 2, 1, 2), "df", (1, 2, 1, 2))])
def test_cost_of_the_smallest_networks(topo, kind, args):
    """One router, a ring of 2, a line of 3, a Gemini of one router (2 nodes), a fat tree of one leaf, DF(1,2,1,2):
    counts and default cost of docs/cost.md's closed forms; zero prices give cost 0, power 0, and a throughput per
    cost that is NaN (not inf, not a ZeroDivisionError)."""
    t = topo()
    got = parts_of(t).as_dict()
    want = expected_parts(kind, *args)
    assert {k: got[k] for k in want} == want
    assert all(got[k] == 0 for k in got if k not in want and k != "switch_radix")
    assert network_cost(t).cost == pytest.approx(default_cost(want), rel=1e-12)
    zero = {"parts": {p: {"price": 0, "power": 0} for p in (*PRICE, "optical_switch", "optical_switch_port")}}
    nc = network_cost(t, zero)
    assert (nc.cost, nc.power) == (0.0, 0.0)
    ds = with_cost(xr.Dataset({"throughput": ((), 1e9)}), t, zero)
    assert float(ds["cost"]) == 0.0 and math.isnan(float(ds["throughput_per_cost"]))


def test_cost_prices_refused():
    refused(lambda: network_cost(torus([2]), {"parts": {"nic": {"price": -2}}}), "cost.parts.nic.price", "-2",
            "finite number >= 0")
    refused(lambda: network_cost(torus([2]), {"budget": -1}), "cost.budget", "-1", ">= 0")


# ------------------------------------------------------------------------------------------- collectives
@pytest.mark.parametrize("op", list(COLLECTIVES))
def test_collectives_of_two_ranks_and_of_zero_bytes(op):
    """Two ranks: allreduce, allgather and alltoall move 2n bytes in all (each rank's n to the other, or its
    half twice), a binomial or linear broadcast n; every message between two different ranks; n = 0 moves 0;
    one rank gives no step. ``collective`` refuses one rank and 0 bytes naming the field."""
    for alg in (*COLLECTIVES[op], "auto"):
        for sel in (SELECTIONS if alg == "auto" else ("mpich",)):
            for n in (0.0, 1000.0):
                steps = within(lambda: collective_steps(op, alg, 2, n, selection=sel))
                assert steps, (op, alg, sel)
                total = sum(float(np.sum(b)) for _, _, b in steps)
                assert all(np.all(s != d) for s, d, _ in steps)
                if op != "broadcast":
                    assert total == pytest.approx(2 * n), (op, alg, sel, n)
                elif alg in ("binomial", "linear"):
                    assert total == pytest.approx(n), (op, alg, n)
                else:
                    assert math.isfinite(total) and (total == 0) == (n == 0)
            assert collective_steps(op, alg, 1, 8.0, selection=sel) == []
    refused(lambda: collective(op, n_tasks=1), "traffic.n_tasks", "1", "at least 2 ranks")
    refused(lambda: collective(op, n_tasks=2, nbytes=0), "traffic.bytes", "0", "> 0")
    refused(lambda: collective(op, ranks=[5]), "traffic.ranks", "[5]", "at least 2 ranks")


# ------------------------------------------------------------------------------------------- machines, commands
def test_gemini_of_one_router():
    """Gemini 1x1x1: two nodes on one router; a pair exchange crosses no router link and takes its bytes over
    the 6.4e9 bytes/s injection (and ejection): 1e6 / 6.4e9 s."""
    import evaluator as ev
    from evaluator import traffic as T

    t = gemini([1, 1, 1])
    ds = within(lambda: ev.evaluate(t, T.from_flows(2, [0, 1], [1, 0], [1e6, 1e6]), ev.placement.linear(t, 2),
                                    "dor"))
    assert float(ds["completion_time"]) == pytest.approx(1e6 / 6.4e9, rel=1e-12)
    refused(lambda: gemini([0, 1, 1]), "topology.dims[0]", "0", ">= 1")


def test_commands_on_degenerate_sizes(tmp_path, capsys):
    """Three in-process commands: buyer with a size given twice and with 8 nodes (one line each, exit 2), and
    the tile advisor on a machine file of one router (before: a NumPy traceback)."""
    for nodes, says in (("16,16", "distinct sizes"), ("8", "[16, 200,000]")):
        capsys.readouterr()
        rc = within(lambda: cli.main(["study", "buyer", "--nodes", nodes, "--seeds", "1", "--out",
                                      str(tmp_path / "b")]))
        err = capsys.readouterr().err.strip()
        assert rc == 2 and "--nodes" in err and nodes in err and says in err, err
    f = tmp_path / "one.yaml"
    f.write_text("name: One\nkind: torus\ndims: [1, 1, 1]\nlink_bandwidth: 1.0e+9\nnodes_per_router: 1\n"
                 "injection_bandwidth: 1.0e+9\n")
    capsys.readouterr()
    rc = within(lambda: cli.main(["tiles", "--machine", str(f), "--grid", "1,1,1", "--nodes", "1",
                                  "--tasks-per-node", "1", "--no-save"]))
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "1x1x1" in out.out and "nan" not in out.out
