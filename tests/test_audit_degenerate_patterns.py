"""Every traffic pattern and placement family of the registries at its smallest and edge parameters (audit,
2026-12-07).

The traffic kinds are listed from ``evaluator.traffic.KINDS`` and the placement kinds from
``evaluator.placement.KINDS``; a kind without a case here fails :func:`test_every_registered_kind_has_edge_cases`.
Each kind is built through its registry entry (its config schema and builder, as a config reaches it) at the
smallest sizes: stencils with dimensions of 1 and 2 task(s), periodic and not (two tasks along a periodic
dimension are one neighbour, sent both faces, ``2 mu_k`` bytes, in one merged flow: the ``stencil`` docstring),
edge, corner and per-dimension variants; pencil transposes with a process grid of 1 along a dimension, with and
without ``xy_planes_on_node``; all-to-all, many-to-many and m_to_n of 1 and 2 tasks; bisection pairing on odd
rings and meshes; random permutations and pairs of 1 to 3 tasks; shift and tornado of 1 and 2 tasks; group
tornado of two one-node groups; neighbouring blocks of 1 and 2 tasks; files and OTF2 traces of one message and
of one rank; phased traffic; every collective algorithm with 1, 2 and 3 ranks and 0 or 1 byte. Placements:
as many tasks as nodes, one task, ``tasks_per_node = 2`` filling every node exactly, a node subset of one
router (``first_node``, ``offset``/``prism``, a one-router feature, ALPS ``skip``) and Dragonfly Cartesian
placements with a gamma of all 1s.

Each flow list is compared, phase by phase, with a reference written here from the documented definition
(``stencil``/``pencil``/``many_to_many``/``m_to_n``/``neighbouring`` docstrings, docs/collectives.md's table of
bytes per rank, docs/traffic_files.md) as a multiset of ``(src, dst, bytes)``; a refusal must be one
ConfigError line naming the field, the value and what is allowed. Then each is evaluated on a small torus
with DOR (a Dragonfly with minimal routing for the Dragonfly-only kinds) and ``total_bytes`` (every byte sent,
self messages included) and ``off_node_bytes`` (bytes between tasks on different nodes) are compared with the
reference's, and the injection links must carry exactly the off-node bytes (DESIGN.md: node injection is a
link; traffic within a node uses none).

No defect was found in evaluator/traffic, evaluator/placement or evaluator/io.py by these cases.
"""

from __future__ import annotations

import itertools
import math
import os
from collections import Counter

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.errors import ConfigError
from evaluator.machines import machine_from_dict
from evaluator.placement import PlacementContext
from evaluator.topology import machine_topology

BW = 1.0e9
RING = ev.torus([4], wrap=True, link_bandwidth=BW, nodes_per_router=2)  # 8 nodes, 2 per router
CUBE = ev.torus([2, 2, 2], wrap=True, link_bandwidth=BW, nodes_per_router=2)  # 16 nodes
CUBE1 = ev.torus([2, 2, 2], wrap=True, link_bandwidth=BW)  # 8 nodes, one a router
DF = ev.dragonfly(1, 1, 1)  # p = a = h = 1: g = 2 groups of one router and one node
DF12 = ev.dragonfly(2, 2, 1)  # 3 groups of 2 routers of 2 nodes


def _key(b):
    return float(f"{float(b):.9g}")


def _merge(flows):
    """Multiset of ``(src, dst, bytes)`` after summing repeated ``(src, dst)`` (a reference's own duplicates)."""
    acc: dict = {}
    for s, d, b in flows:
        acc[(int(s), int(d))] = acc.get((int(s), int(d)), 0.0) + float(b)
    return Counter((s, d, _key(b)) for (s, d), b in acc.items())


def _phases(tr):
    """The traffic's phases as lists of ``(src, dst, bytes)`` (dense phases expanded by ``to_flows``)."""
    out = []
    for ph in tr.to_flows().phases:
        out.append([(int(s), int(d), float(b)) for s, d, b in zip(ph.src, ph.dst, ph.nbytes)])
    return out


def _one_line_refusal(fn, field, value, allowed):
    with pytest.raises(ConfigError) as info:
        fn()
    msg = str(info.value)
    assert "\n" not in msg.strip(), msg
    for part in (field, value, allowed):
        assert part in msg, (part, msg)


# ------------------------------------------------------------------------------------------------
# references from the documented definitions
# ------------------------------------------------------------------------------------------------

def ref_stencil(alpha, beta, bpe, periodic, neighbours="faces", dims=None):
    """Every task's message to each neighbour offset (faces: +-e_k of the dimensions ``dims``; full: every
    ``o`` in {-1,0,1}^d but 0) of ``bpe * prod_{i: o_i = 0} alpha_i/beta_i`` bytes; nothing along a dimension
    of one task or across a non-periodic boundary; the same target twice is one flow of the sum."""
    nd = len(beta)
    per = periodic if isinstance(periodic, (list, tuple)) else [periodic] * nd
    sub = [a // b for a, b in zip(alpha, beta)]
    dims = range(nd) if dims is None else dims
    if neighbours == "faces":
        offs = [tuple(s if i == k else 0 for i in range(nd)) for k in dims for s in (1, -1)]
    else:
        offs = [o for o in itertools.product((-1, 0, 1), repeat=nd) if any(o)]
    flows = []
    for c in itertools.product(*[range(b) for b in beta]):
        for o in offs:
            if any(x and beta[i] == 1 for i, x in enumerate(o)):
                continue
            t = [c[i] + o[i] for i in range(nd)]
            if any(not per[i] and not 0 <= t[i] < beta[i] for i in range(nd)):
                continue
            t = [t[i] % beta[i] for i in range(nd)]
            flows.append((np.ravel_multi_index(c, beta), np.ravel_multi_index(t, beta),
                          bpe * math.prod(s for s, x in zip(sub, o) if x == 0)))
    return flows


def ref_pencil(grid, pr, pc, bpp, on_node=False):
    """docs: D = bpp*Nx*Ny*Nz/P; xy: D/p_row to every other rank of a row (ranks t//p_row alike); yz: D/p_col
    to every other rank of a column (ranks t%p_row alike). On node: p_col row-tasks, xy empty, yz p_row*D/p_col."""
    d = bpp * math.prod(grid) / (pr * pc)
    if on_node:
        return [[], [(s, t, pr * d / pc) for s in range(pc) for t in range(pc) if s != t]]
    n = pr * pc
    xy = [(s, t, d / pr) for s in range(n) for t in range(n) if s != t and s // pr == t // pr]
    yz = [(s, t, d / pc) for s in range(n) for t in range(n) if s != t and s % pr == t % pr]
    return [xy, yz]


def ref_neighbouring(sizes, intra, inter, b):
    start = [sum(sizes[:i]) for i in range(len(sizes))]
    offs = lambda k: [(i // 2 + 1) * (1 if i % 2 == 0 else -1) for i in range(k)]  # noqa: E731
    flows = []
    for blk, s in enumerate(sizes):
        partners_in = sorted({o % s for o in offs(intra)} - {0})
        blocks = []
        for o in offs(inter):
            c = (blk + o) % len(sizes)
            if c != blk and c not in blocks:
                blocks.append(c)
        for j in range(s):
            flows += [(start[blk] + j, start[blk] + (j + o) % s, b) for o in partners_in]
            flows += [(start[blk] + j, start[c] + j % sizes[c], b) for c in blocks]
    return flows


def _write_trace(path, n, sends):
    """An OTF2 trace of ``n`` ranks whose only events are ``(rank, tick, receiver, bytes)`` sends."""
    import otf2
    from otf2.enums import GroupType, Paradigm
    with otf2.writer.open(str(path), timer_resolution=10 ** 6) as tr:
        de = tr.definitions
        node = de.system_tree_node("m")
        locs = [de.location(f"rank {r}", group=de.location_group(f"R{r}", system_tree_parent=node))
                for r in range(n)]
        de.group("wl", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
        comm = de.comm("W", group=de.group("w", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                                           members=list(range(n))))
        for r in range(n):
            w = tr.event_writer_from_location(locs[r])
            for s, tick, dst, b in sends:
                if s == r:
                    w.mpi_send(tick, dst, comm, 0, b)
    return os.path.join(str(path), "traces.otf2")


# ------------------------------------------------------------------------------------------------
# traffic cases: (kind, config keys, topology it is built on, reference phases, task count)
# ------------------------------------------------------------------------------------------------

def _a2a(n, b):
    return [(s, d, b) for s in range(n) for d in range(n) if s != d]


TRAFFIC = {
    "stencil 1 task": ("stencil", dict(alpha=[4], beta=[1], bytes_per_element=2.0), RING, [[]], 1),
    "stencil 2 periodic": ("stencil", dict(alpha=[4], beta=[2], bytes_per_element=2.0), RING,
                           [ref_stencil([4], [2], 2.0, True)], 2),
    "stencil 2 open": ("stencil", dict(alpha=[4], beta=[2], bytes_per_element=2.0, periodic=False), RING,
                       [ref_stencil([4], [2], 2.0, False)], 2),
    "stencil 2x1x2 mixed": ("stencil", dict(alpha=[4, 6, 2], beta=[2, 1, 2], bytes_per_element=3.0,
                                            periodic=[True, True, False]), RING,
                            [ref_stencil([4, 6, 2], [2, 1, 2], 3.0, [True, True, False])], 4),
    "stencil 2x2 full periodic": ("stencil", dict(alpha=[4, 6], beta=[2, 2], bytes_per_element=1.0,
                                                  neighbours="full"), RING,
                                  [ref_stencil([4, 6], [2, 2], 1.0, True, "full")], 4),
    "stencil 2x1 full open": ("stencil", dict(alpha=[4, 6], beta=[2, 1], bytes_per_element=1.0, periodic=False,
                                              neighbours="full"), RING,
                              [ref_stencil([4, 6], [2, 1], 1.0, False, "full")], 2),
    "stencil 2x1 per dimension": ("stencil", dict(alpha=[2, 4], beta=[2, 1], bytes_per_element=1.0,
                                                  exchange="per_dimension"), RING,
                                  [ref_stencil([2, 4], [2, 1], 1.0, True, dims=[0]), []], 2),
    "pencil 1x1": ("pencil", dict(grid=[1, 1, 1], p_row=1, p_col=1, bytes_per_point=16.0), RING,
                   ref_pencil([1, 1, 1], 1, 1, 16.0), 1),
    "pencil 1x2 grid 1 along x": ("pencil", dict(grid=[1, 2, 2], p_row=1, p_col=2, bytes_per_point=16.0), RING,
                                  ref_pencil([1, 2, 2], 1, 2, 16.0), 2),
    "pencil 2x1": ("pencil", dict(grid=[2, 2, 1], p_row=2, p_col=1, bytes_per_point=8.0), RING,
                   ref_pencil([2, 2, 1], 2, 1, 8.0), 2),
    "pencil 2x2": ("pencil", dict(grid=[2, 2, 2], p_row=2, p_col=2, bytes_per_point=8.0), RING,
                   ref_pencil([2, 2, 2], 2, 2, 8.0), 4),
    "pencil on node 2x1": ("pencil", dict(grid=[2, 2, 1], p_row=2, p_col=1, xy_planes_on_node=True), RING,
                           ref_pencil([2, 2, 1], 2, 1, 16.0, True), 1),
    "pencil on node 1x2": ("pencil", dict(grid=[1, 2, 2], p_row=1, p_col=2, xy_planes_on_node=True), RING,
                           ref_pencil([1, 2, 2], 1, 2, 16.0, True), 2),
    "all_to_all 1": ("all_to_all", dict(n_tasks=1, bytes=5.0), RING, [[]], 1),
    "all_to_all 2": ("all_to_all", dict(n_tasks=2, bytes=5.0), RING, [_a2a(2, 5.0)], 2),
    "all_to_all null: one per node": ("all_to_all", dict(bytes=1.0), RING, [_a2a(8, 1.0)], 8),
    "many_to_many 1->1 disjoint": ("many_to_many", dict(n_sources=1, n_destinations=1, bytes=5.0), RING,
                                   [[(0, 1, 5.0)]], 2),
    "many_to_many 1->1 subset": ("many_to_many", dict(n_sources=1, n_destinations=1, bytes=5.0, mode="subset"),
                                 RING, [[]], 1),
    "many_to_many 1->2 superset": ("many_to_many", dict(n_sources=1, n_destinations=2, bytes=5.0,
                                                        mode="superset"), RING, [[(0, 1, 5.0)]], 2),
    "many_to_many 2->1 overlap 1": ("many_to_many", dict(n_sources=2, n_destinations=1, bytes=5.0, mode="overlap",
                                                         overlap=1, n_tasks=3), RING, [[(0, 1, 5.0)]], 3),
    "m_to_n 1->1": ("m_to_n", dict(n_sources=1, n_destinations=1, dests_per_source=1, bytes=5.0, n_tasks=2),
                    RING, [[(0, 1, 5.0)]], 2),
    "m_to_n 2->1 subset_spread": ("m_to_n", dict(n_sources=2, n_destinations=1, dests_per_source=1, bytes=5.0,
                                                 mode="subset_spread", n_tasks=2), RING, [[(1, 0, 5.0)]], 2),
    "m_to_n 2->2 overlap 1": ("m_to_n", dict(n_sources=2, n_destinations=2, dests_per_source=2, bytes=5.0,
                                             mode="overlap", overlap=1, n_tasks=3), RING,
                              [[(0, 1, 5.0), (0, 2, 5.0), (1, 2, 5.0)]], 3),
    "random_permutation 1": ("random_permutation", dict(n_tasks=1, bytes=5.0), RING, [[(0, 0, 5.0)]], 1),
    "random_pairs 1": ("random_pairs", dict(n_tasks=1, bytes=5.0), RING, [[]], 1),
    "random_pairs 2": ("random_pairs", dict(n_tasks=2, bytes=5.0), RING, [[(0, 1, 5.0), (1, 0, 5.0)]], 2),
    "shift 1": ("shift", dict(n_tasks=1, offset=1, bytes=5.0), RING, [[(0, 0, 5.0)]], 1),
    "shift grid 1x2 offset -1": ("shift", dict(grid=[1, 2], offset=-1, bytes=5.0), RING,
                                 [[(0, 1, 5.0), (1, 0, 5.0)]], 2),
    "tornado 1": ("tornado", dict(grid=[1], bytes=5.0), RING, [[(0, 0, 5.0)]], 1),
    "tornado 2 (offset 0)": ("tornado", dict(grid=[2], bytes=5.0), RING, [[(0, 0, 5.0), (1, 1, 5.0)]], 2),
    "tornado 3x1": ("tornado", dict(grid=[3, 1], bytes=5.0), RING, [[(0, 1, 5.0), (1, 2, 5.0), (2, 0, 5.0)]], 3),
    "group_tornado 2 one-node groups": ("group_tornado", dict(bytes=5.0), DF, [[(0, 1, 5.0), (1, 0, 5.0)]], 2),
    "bisection_pairing ring of 1": ("bisection_pairing", dict(bytes=5.0),
                                    ev.torus([1], link_bandwidth=BW), [[]], 1),
    "bisection_pairing ring of 3 (odd)": ("bisection_pairing", dict(bytes=5.0), ev.torus([3], link_bandwidth=BW),
                                          [[(x, (x + 1) % 3, 5.0) for x in range(3)]], 3),
    "bisection_pairing mesh of 5 (odd)": ("bisection_pairing", dict(bytes=5.0),
                                          ev.torus([5], wrap=False, link_bandwidth=BW),
                                          [[(x, 4 - x, 5.0) for x in range(5) if x != 2]], 5),
    "bisection_pairing 1x3, 2 nodes a router": (
        "bisection_pairing", dict(bytes=5.0), ev.torus([1, 3], link_bandwidth=BW, nodes_per_router=2),
        [[(2 * r + q, 2 * ((r + 1) % 3) + q, 5.0) for r in range(3) for q in range(2)]], 6),
    "neighbouring [1]": ("neighbouring", dict(block_sizes=[1], bytes=5.0), RING, [[]], 1),
    "neighbouring [2]": ("neighbouring", dict(block_sizes=[2], bytes=5.0), RING,
                         [ref_neighbouring([2], 4, 4, 5.0)], 2),
    "neighbouring [1, 1]": ("neighbouring", dict(block_sizes=[1, 1], bytes=5.0), RING,
                            [ref_neighbouring([1, 1], 4, 4, 5.0)], 2),
    "neighbouring [2, 1] intra 3 inter 1": ("neighbouring", dict(block_sizes=[2, 1], intra=3, inter=1, bytes=5.0),
                                            RING, [ref_neighbouring([2, 1], 3, 1, 5.0)], 3),
    "phased: stencil of 2 then shift of 2": (
        "phased", dict(phases=[dict(kind="stencil", alpha=[2], beta=[2], bytes_per_element=1.0),
                               dict(kind="shift", n_tasks=2, bytes=3.0)]), RING,
        [ref_stencil([2], [2], 1.0, True), [(0, 1, 3.0), (1, 0, 3.0)]], 2),
    "phased: one phase of one task": ("phased", dict(phases=[dict(kind="all_to_all", n_tasks=1, bytes=1.0)]),
                                      RING, [[]], 1),
}
FILE_CASES = {  # traffic=file and traffic=trace: (kind, writer of the file -> config keys, reference, tasks)
    "file: one message": ("file", lambda d: dict(path=_text(d / "one.csv", "0,1,5\n")), [[(0, 1, 5.0)]], 2),
    "file: one rank, self message": ("file", lambda d: dict(path=_text(d / "self.csv", "src,dst,bytes\n0,0,5\n")),
                                     [[(0, 0, 5.0)]], 1),
    "file: one message, 3 tasks": ("file", lambda d: dict(path=_text(d / "one3.csv", "1,2,5\n"), n_tasks=3),
                                   [[(1, 2, 5.0)]], 3),
    "trace: one message": ("trace", lambda d: dict(path=_write_trace(d / "t1", 2, [(0, 5, 1, 7)])),
                           [[(0, 1, 7.0)]], 2),
    "trace: one rank": ("trace", lambda d: dict(path=_write_trace(d / "t0", 1, [(0, 5, 0, 7)]), mode="phased"),
                        [[(0, 0, 7.0)]], 1),
}


def _text(path, text):
    path.write_text(text)
    return str(path)


def _build_traffic(kind, keys, topology):
    k = T.KINDS[kind]
    return k.build(k.schema(kind=kind, **keys), topology)


def _check_flows(tr, ref, n_tasks):
    assert tr.n_tasks == n_tasks
    got = _phases(tr)
    assert len(got) == len(ref), (len(got), len(ref))
    for g, r in zip(got, ref):
        assert all(math.isfinite(b) and b >= 0 for _, _, b in g), g
        assert _merge(g) == _merge(r), (sorted(g), sorted(r))
    assert math.isclose(tr.total_bytes, sum(b for ph in ref for _, _, b in ph), rel_tol=1e-12, abs_tol=0)


def _check_evaluation(topology, tr, ref, task_node, routing):
    """total_bytes, off_node_bytes and the injection links' bytes against the reference flows on ``task_node``."""
    pl = P.explicit(topology, task_node)
    ds = ev.evaluate(topology, tr, pl, routing)
    total = sum(b for ph in ref for _, _, b in ph)
    off = sum(b for ph in ref for s, d, b in ph if task_node[s] != task_node[d])
    assert math.isclose(float(ds.total_bytes), total, rel_tol=1e-9, abs_tol=1e-12), (float(ds.total_bytes), total)
    assert math.isclose(float(ds.off_node_bytes), off, rel_tol=1e-9, abs_tol=1e-12), (float(ds.off_node_bytes), off)
    inj = float(ds.link_load.where(ds.link_class == "injection", 0.0).sum())
    assert math.isclose(inj, off, rel_tol=1e-9, abs_tol=1e-12), (inj, off)
    for name in ("completion_time", "total_bytes", "off_node_bytes", "mean_hops"):
        if name in ds:
            assert math.isfinite(float(ds[name])), (name, float(ds[name]))
    assert not bool(np.isnan(ds.link_load.values).any())
    return ds


def _routing(topology):
    return "minimal" if topology.kind == "dragonfly" else "dor"


@pytest.mark.parametrize("case", list(TRAFFIC))
def test_traffic_edge_cases_equal_their_definition_and_evaluate(case):
    kind, keys, topology, ref, n = TRAFFIC[case]
    tr = _build_traffic(kind, keys, topology)
    _check_flows(tr, ref, n)
    if kind == "stencil":  # offsets that reach the same task are one flow (both faces: 2 mu_k), not two
        assert all(len({(s, d) for s, d, _ in ph}) == len(ph) for ph in _phases(tr))
    # one task per node where the kind places task t on node t, else two tasks a node (pairs share a node)
    one_per_node = kind in ("bisection_pairing", "group_tornado") or n > topology.n_nodes // 2
    task_node = list(range(n)) if one_per_node else [t // 2 for t in range(n)]
    _check_evaluation(topology, tr, ref, task_node, _routing(topology))


@pytest.mark.parametrize("case", list(FILE_CASES))
def test_files_and_traces_of_one_message_or_one_rank(case, tmp_path):
    kind, write, ref, n = FILE_CASES[case]
    tr = _build_traffic(kind, write(tmp_path), RING)
    _check_flows(tr, ref, n)
    _check_evaluation(RING, tr, ref, list(range(n)), "dor")


REFUSED = {  # smallest sizes that are not a pattern: one line naming the field, the value and what is allowed
    "m_to_n 1->1 subset: only a self pair": (
        "m_to_n", dict(n_sources=1, n_destinations=1, dests_per_source=1, mode="subset_concentrated", n_tasks=1),
        "traffic.mode", "'subset_concentrated'", "some source sends to another task"),
    "stencil beta not dividing alpha": ("stencil", dict(alpha=[3], beta=[2]), "traffic.beta[0]", "2",
                                        "a divisor of alpha[0] = 3"),
    "pencil p_col not dividing Nz = 1": ("pencil", dict(grid=[2, 2, 1], p_row=1, p_col=2), "traffic.p_col", "2",
                                         "a divisor of Nz = 1"),
    "all_to_all of 0 tasks": ("all_to_all", dict(n_tasks=0), "traffic.n_tasks", "0", "an integer >= 1"),
    "random_permutation of 0 tasks": ("random_permutation", dict(n_tasks=0), "traffic.n_tasks", "0", "an integer >= 1"),
    "many_to_many superset m > n": ("many_to_many", dict(n_sources=2, n_destinations=1, mode="superset"),
                                    "traffic.n_sources", "2", "<= n_destinations = 1"),
    "group_tornado on a torus": ("group_tornado", dict(), "traffic.kind", "'group_tornado'", "form groups"),
    "neighbouring no block": ("neighbouring", dict(block_sizes=[]), "traffic.block_sizes", "[]",
                              "a non-empty list"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_sizes_that_are_no_pattern_are_refused_by_field(case):
    kind, keys, field, value, allowed = REFUSED[case]
    _one_line_refusal(lambda: _build_traffic(kind, keys, RING), field, value, allowed)


# ------------------------------------------------------------------------------------------------
# collectives: every op and algorithm at 1, 2 and 3 ranks, 0 and 1 byte
# ------------------------------------------------------------------------------------------------

def coll_total(op, alg, p, n):
    """Bytes all ranks send (docs/collectives.md, "bytes sent per rank"; the folds of "Non-power-of-two process
    counts": MPICH's pre- and post-step move the whole vector, Open MPI's fold n/2 + n/2 + n/2, then n)."""
    if op in ("alltoall", "allgather"):
        return p * (p - 1) * n
    if op == "broadcast":
        return (p - 1) * n
    pof2 = 1 << (p.bit_length() - 1)
    if alg in ("ring", "binomial") or p == pof2:
        return 2 * (p - 1) * n
    inner = 2 * (pof2 - 1) * n
    return inner + (1.5 * n + n if alg == "rabenseifner_ompi" else 2 * n) * (p - pof2)


COLLS = [(op, alg) for op, algs in T.COLLECTIVES.items() for alg in algs]


@pytest.mark.parametrize("op,alg", COLLS)
def test_every_collective_at_one_two_three_ranks_and_zero_one_byte(op, alg):
    for p, n in itertools.product((1, 2, 3), (0.0, 1.0)):
        keys = dict(op=op, algorithm=alg, n_tasks=p, bytes=n)
        if p == 1:
            _one_line_refusal(lambda: _build_traffic("collective", keys, RING), "traffic.n_tasks", "1",
                              "at least 2 ranks")
            continue
        if n == 0.0:
            _one_line_refusal(lambda: _build_traffic("collective", keys, RING), "traffic.bytes", "0",
                              "> 0")
            continue
        tr = _build_traffic("collective", keys, RING)
        got = _phases(tr)
        assert tr.n_tasks == p and len(got) == len(tr.phase_names) >= 1
        assert all(math.isfinite(b) and b >= 0 for ph in got for *_, b in ph)
        assert all(0 <= s < p and 0 <= d < p and s != d for ph in got for s, d, _ in ph)
        total = coll_total(op, alg, p, n)
        assert math.isclose(sum(b for ph in got for *_, b in ph), total), (p, n, total, got)
        received = np.zeros(p)
        for ph in got:
            for _, d, b in ph:
                received[d] += b
        need = n * (p - 1) if op in ("alltoall", "allgather") else n
        others = [r for r in range(p) if not (op == "broadcast" and r == 0)]
        assert all(received[r] >= need - 1e-12 for r in others), (received, need)
        if (p, n) == (3, 1.0):  # evaluated once per algorithm: tasks 0 and 1 share a node
            _check_evaluation(RING, tr, got, [0, 0, 1], "dor")


# ------------------------------------------------------------------------------------------------
# placements: as many tasks as nodes, one task, tasks_per_node = 2 filling exactly, one router's nodes
# ------------------------------------------------------------------------------------------------

FEATURED = machine_topology(machine_from_dict(dict(
    name="Mini", kind="torus", dims=[2, 2, 2], link_bandwidth=[2.0, 1.0, 2.0], nodes_per_router=2,
    injection_bandwidth=4.0, routing_order="as_given",
    features=[{"name": "one", "offset": [1, 1, 1], "shape": [1, 1, 1]},
              {"name": "all", "offset": [0, 0, 0], "shape": [2, 2, 2]}])))
ALL = "every node once"  # expectations other than an exact node list
STENCIL = lambda beta: dict(kind="stencil", beta=list(beta))  # noqa: E731
R7 = [14, 15]  # router (1, 1, 1) of a 2x2x2 torus is router 7 (row-major), its nodes 7*2 + port


def _fill(nodes, tpn):
    return sorted(n for n in nodes for _ in range(tpn))


PLACEMENTS = {  # (kind, topology, tasks, config keys, traffic config, expected task_node: a list, sorted, or ALL)
    "linear N": ("linear", RING, 8, {}, None, list(range(8))),
    "linear 1": ("linear", RING, 1, {}, None, [0]),
    "linear tpn 2 fills": ("linear", RING, 16, dict(tasks_per_node=2), None, [t // 2 for t in range(16)]),
    "linear last node": ("linear", RING, 2, dict(tasks_per_node=2, first_node=7), None, [7, 7]),
    "random N": ("random", RING, 8, {}, None, ALL),
    "random 1": ("random", RING, 1, dict(seed=3), None, None),
    "random tpn 2 fills": ("random", RING, 16, dict(tasks_per_node=2), None, ("sorted", _fill(range(8), 2))),
    "block N": ("block", RING, 8, dict(size=2), None, ALL),
    "block 1": ("block", RING, 1, {}, None, None),
    "block tpn 2 fills": ("block", RING, 16, dict(tasks_per_node=2, size=4), None, ("sorted", _fill(range(8), 2))),
    "torus_block N": ("torus_block", CUBE, 16, dict(task_grid=[2, 2, 4]), None, ALL),
    "torus_block 1": ("torus_block", CUBE, 1, dict(task_grid=[1, 1, 1]), None, None),
    "torus_block grid from the stencil": ("torus_block", CUBE, 16, {}, STENCIL([4, 2, 2]), ALL),
    "subprism N": ("subprism", CUBE, 16, dict(task_grid=[2, 2, 2]), None, ALL),
    "subprism tpn 2 fills": ("subprism", CUBE, 32, dict(task_grid=[2, 2, 2], tasks_per_node=2), None,
                             ("sorted", _fill(range(16), 2))),
    "subprism 1": ("subprism", CUBE, 1, dict(task_grid=[1, 1, 1]), None, [0]),
    "subprism one router": ("subprism", CUBE, 2, dict(task_grid=[1, 1, 1], offset=[1, 1, 1]), None, R7),
    "subprism one router tpn 2": ("subprism", CUBE, 4, dict(task_grid=[1, 1, 1], offset=[1, 1, 1],
                                                            tasks_per_node=2), None, ("sorted", _fill(R7, 2))),
    "alps N": ("alps", CUBE, 16, {}, None, ALL),
    "alps 1": ("alps", CUBE, 1, {}, None, None),
    "alps tpn 2 fills": ("alps", CUBE, 32, dict(tasks_per_node=2), None, ("sorted", _fill(range(16), 2))),
    "alps skip all but one": ("alps", CUBE, 1, dict(skip=15), None, None),
    "fragmented N, empty machine": ("fragmented", CUBE, 16, dict(occupancy=0.0, job_nodes=[1, 1]), None, ALL),
    "fragmented tpn 2 fills": ("fragmented", CUBE, 32, dict(occupancy=0.0, job_nodes=[1, 1], tasks_per_node=2),
                               None, ("sorted", _fill(range(16), 2))),
    "fragmented 1": ("fragmented", CUBE, 1, dict(occupancy=0.9, job_nodes=[1, 1]), None, None),
    "topaware N": ("topaware", CUBE, 16, dict(grid=[2, 2, 4]), None, ALL),
    "topaware 1, one node a router": ("topaware", CUBE1, 1, dict(grid=[1, 1, 1]), None, [0]),
    "topaware one router": ("topaware", CUBE, 2, dict(grid=[1, 2], prism=[1, 1, 1], offset=[1, 1, 1]), None, R7),
    "topaware one router tpn 2": ("topaware", CUBE, 4, dict(grid=[2, 2], prism=[1, 1, 1], offset=[1, 1, 1],
                                                            tasks_per_node=2), None, ("sorted", _fill(R7, 2))),
    "features N": ("features", FEATURED, 16, dict(oneof=["all"]), None, ALL),
    "features 1": ("features", FEATURED, 1, dict(oneof=["one"]), None, [14]),
    "features one router": ("features", FEATURED, 2, dict(oneof=["one"]), None, R7),
    "features one router tpn 2": ("features", FEATURED, 4, dict(oneof=["one"], tasks_per_node=2), None,
                                  ("sorted", _fill(R7, 2))),
    "dragonfly_cartesian gamma 1x1, linear": ("dragonfly_cartesian", DF12, 2,
                                              dict(gamma=[1, 1], group_order="linear", node_order="linear"),
                                              STENCIL([1, 2]), [0, 4]),  # group g's first node: g * a * p
    "dragonfly_cartesian gamma 1, linear": ("dragonfly_cartesian", DF12, 3,
                                            dict(beta=[3], gamma=[1], group_order="linear", node_order="linear"),
                                            None, [0, 4, 8]),
    "dragonfly_cartesian gamma 1x1x1, random": ("dragonfly_cartesian", DF12, 3, dict(beta=[1, 3, 1],
                                                                                    gamma=[1, 1, 1]), None,
                                                "one a group"),
    "dragonfly_cartesian 1 task": ("dragonfly_cartesian", DF12, 1, dict(beta=[1], gamma=[1]), None, None),
    "dragonfly_cartesian N": ("dragonfly_cartesian", DF12, 12, dict(beta=[3, 4], gamma=[1, 4]), None, ALL),
    "dragonfly_random N": ("dragonfly_random", DF12, 12, dict(tasks_per_group=4), None, ALL),
    "dragonfly_random 1": ("dragonfly_random", DF12, 1, dict(tasks_per_group=1), None, None),
    "dragonfly_random one a group": ("dragonfly_random", DF12, 3, dict(tasks_per_group=1), None, "one a group"),
}


def _check_placement(task_node, topology, n, tpn, expected):
    tn = [int(x) for x in task_node]
    assert len(tn) == n and all(0 <= x < topology.n_nodes for x in tn), tn
    assert max(Counter(tn).values()) <= tpn, tn
    if expected is ALL:
        assert sorted(tn) == list(range(topology.n_nodes)), tn
    elif expected == "one a group":
        groups = np.asarray(topology.node_groups())[-1]
        assert len({int(groups[x]) for x in tn}) == n, tn
    elif isinstance(expected, tuple):
        assert sorted(tn) == expected[1], tn
    elif expected is not None:
        assert tn == expected, tn


@pytest.mark.parametrize("case", list(PLACEMENTS))
def test_placement_edge_cases_place_every_task_and_evaluate(case):
    kind, topology, n, keys, traffic_cfg, expected = PLACEMENTS[case]
    k = P.KINDS[kind]
    pl = k.build(k.schema(kind=kind, **keys), PlacementContext(topology, n, traffic_cfg))
    tpn = keys.get("tasks_per_node", 1)
    _check_placement(pl.task_node, topology, n, tpn, expected)
    # a dense all-to-all of 1 byte a pair on it: every byte counted, the on-node pairs off the links
    tr = T.all_to_all_dense(n, 1.0)
    ref = [[(s, d, 1.0) for s in range(n) for d in range(n) if s != d]]
    _check_evaluation(topology, tr, ref, [int(x) for x in pl.task_node], _routing(topology))


def test_every_registered_kind_has_edge_cases():
    traffic = {c[0] for c in TRAFFIC.values()} | {c[0] for c in FILE_CASES.values()} | {"collective"}
    assert set(T.KINDS) == traffic, set(T.KINDS) ^ traffic
    assert set(P.KINDS) == {c[0] for c in PLACEMENTS.values()}, set(P.KINDS) ^ {c[0] for c in PLACEMENTS.values()}
    for kind in P.KINDS:  # every family has its one-task and its whole-machine case
        sizes = {(c[2], c[1].n_nodes) for c in PLACEMENTS.values() if c[0] == kind}
        assert any(t == 1 for t, _ in sizes), kind
        assert any(t == nn for t, nn in sizes), kind


def test_topaware_grid_no_tile_divides_names_the_grid_not_the_unset_tile():
    """One task on a torus of 2 nodes a router: no tile of 1 task a node, repeated over the router's 2 nodes, divides
    the grid [1, 1, 1]. The refusal named ``placement.node_tile = None``, a key the user had not set."""
    from evaluator.placement._topaware import topaware

    with pytest.raises(ConfigError) as info:
        topaware(ev.torus([4, 4, 4], nodes_per_router=2), [1, 1, 1], 1)
    msg = str(info.value)
    assert "placement.grid = [1, 1, 1]" in msg and "2 nodes" in msg and "node_tile = None" not in msg, msg
