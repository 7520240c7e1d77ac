"""An audit of the traffic pattern generators (stencil, all-to-all, many-to-many, m_to_n, shift, tornado, group
tornado, random pairs and permutations, neighbouring, bisection pairing, pencil, the task grid a config carries)
against references written here from the documented definitions: plain Python loops over task coordinates, closed
forms (Prisacari Eq. 8, the pencil volumes), nothing from the generators. Each flow list is compared as a multiset
of ``(src, dst, bytes)``. The last tests are refusals that named the wrong field or the wrong cause before their
fix (evaluator/traffic/_many_to_many.py, evaluator/traffic/_m_to_n.py)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

import evaluator as ev
from evaluator import traffic as T
from evaluator.errors import ConfigError
from evaluator.traffic._many_to_many import many_to_many_dense
from evaluator.traffic.grid import task_grid


def _multiset(tr):
    """``Counter`` of ``(src, dst, bytes)`` of a sparse traffic (bytes rounded to 1e-6)."""
    return Counter((int(s), int(d), round(float(b), 6)) for s, d, b in zip(tr.src, tr.dst, tr.nbytes))


def _merged(flows):
    """``Counter`` of ``(src, dst, bytes)`` after summing the bytes of repeated ``(src, dst)``."""
    acc: dict[tuple[int, int], float] = {}
    for s, d, b in flows:
        acc[(s, d)] = acc.get((s, d), 0.0) + b
    return Counter((s, d, round(b, 6)) for (s, d), b in acc.items())


def _rowmajor(coord, dims):
    t = 0
    for c, n in zip(coord, dims):
        t = t * n + c
    return t


# ---------------------------------------------------------------------------------------------------------------
# stencil (Prisacari Sec. 3.2, Eq. 8)

def _stencil_ref(alpha, beta, bpe, periodic, offsets):
    """Every task, every offset: the neighbour's row-major id and the shared part's bytes (a plain loop)."""
    d = len(beta)
    per = list(periodic) if isinstance(periodic, (list, tuple)) else [periodic] * d
    sub = [a // b for a, b in zip(alpha, beta)]
    flows = []
    for me in itertools.product(*[range(b) for b in beta]):
        for off in offsets:
            there = []
            for k in range(d):
                x = me[k] + off[k]
                if off[k] and beta[k] == 1:
                    break
                if per[k]:
                    x %= beta[k]
                elif not 0 <= x < beta[k]:
                    break
                there.append(x)
            else:
                size = bpe
                for k in range(d):
                    if off[k] == 0:
                        size *= sub[k]
                flows.append((_rowmajor(me, beta), _rowmajor(there, beta), float(size)))
    return _merged(flows)


def _faces(d, dims=None):
    dims = range(d) if dims is None else dims
    return [tuple(s if i == k else 0 for i in range(d)) for k in dims for s in (1, -1)]


STENCIL_CASES = [
    ([12, 10, 8], [3, 5, 4], True),          # uneven sub-domains 4 x 2 x 2
    ([12, 10, 8], [3, 5, 4], False),
    ([12, 10, 8], [3, 5, 4], [True, False, True]),
    ([8, 6, 4], [2, 3, 1], True),            # beta_k = 2 (both faces to one task) and beta_k = 1 (no exchange)
    ([8, 6, 4], [2, 3, 1], [False, True, True]),
    ([9, 4], [3, 4], False),
    ([7], [7], True),                        # 1-D ring
    ([6, 6], [1, 1], True),                  # one task: nothing to send
]


@pytest.mark.parametrize("alpha,beta,periodic", STENCIL_CASES)
def test_stencil_faces_every_flow(alpha, beta, periodic):
    tr = T.stencil(alpha, beta, 24.0, periodic)
    assert tr.n_tasks == math.prod(beta)
    assert _multiset(tr) == _stencil_ref(alpha, beta, 24.0, periodic, _faces(len(beta)))
    assert not np.any(tr.src == tr.dst)


@pytest.mark.parametrize("alpha,beta,periodic", STENCIL_CASES[:6])
def test_stencil_full_every_flow(alpha, beta, periodic):
    d = len(beta)
    offs = [o for o in itertools.product((-1, 0, 1), repeat=d) if any(o)]
    tr = T.stencil(alpha, beta, 3.0, periodic, neighbours="full")
    assert _multiset(tr) == _stencil_ref(alpha, beta, 3.0, periodic, offs)


@pytest.mark.parametrize("alpha,beta,periodic", STENCIL_CASES[:6])
def test_stencil_per_dimension_phases(alpha, beta, periodic):
    """One phase per dimension, named dim0, dim1, ... in order, each that dimension's faces only; together the
    all-at-once exchange."""
    d = len(beta)
    ph = T.stencil(alpha, beta, 5.0, periodic, exchange="per_dimension")
    assert list(ph.phase_names) == [f"dim{k}" for k in range(d)]
    total: Counter = Counter()
    for k, p in enumerate(ph.phases):
        assert p.n_tasks == math.prod(beta)
        ref = _stencil_ref(alpha, beta, 5.0, periodic, _faces(d, [k]))
        assert _multiset(p) == ref
        total.update({(s, t): b for s, t, b in ref})
    flat = {(s, t): b for s, t, b in _stencil_ref(alpha, beta, 5.0, periodic, _faces(d))}
    assert {k: round(v, 6) for k, v in total.items()} == flat


def test_stencil_message_sizes_and_periodic_per_task_bytes():
    """Eq. (8): mu_k = bpe prod_{i != k} alpha_i / beta_i; a periodic task with beta_k >= 2 everywhere sends and
    receives 2 sum_k mu_k; the total is n 2 sum_k mu_k."""
    alpha, beta, bpe = [12, 10, 8], [3, 5, 4], 1024.0
    mu = [bpe * (10 // 5) * (8 // 4), bpe * (12 // 3) * (8 // 4), bpe * (12 // 3) * (10 // 5)]
    np.testing.assert_array_equal(T.stencil_message_sizes(alpha, beta, bpe), mu)
    tr = T.stencil(alpha, beta, bpe, True)
    n = 60
    np.testing.assert_array_equal(np.bincount(tr.src, tr.nbytes, n), np.full(n, 2 * sum(mu)))
    np.testing.assert_array_equal(np.bincount(tr.dst, tr.nbytes, n), np.full(n, 2 * sum(mu)))
    assert float(tr.nbytes.sum()) == n * 2 * sum(mu)


# ---------------------------------------------------------------------------------------------------------------
# all-to-all, many-to-many, m_to_n

def test_all_to_all_sparse_and_dense():
    tr = T.all_to_all(5, 7.0)
    assert _multiset(tr) == Counter((s, d, 7.0) for s in range(5) for d in range(5) if s != d)
    dn = T.all_to_all_dense(5, 7.0)
    assert dn.n_tasks == 5 and _multiset(dn.to_flows()) == _multiset(tr)


def _m2m_ref(m, n, mode, overlap, b):
    if mode == "disjoint":
        dst = range(m, m + n)
    elif mode == "overlap":
        ov = min(m, n) // 2 if overlap is None else overlap
        dst = range(m - ov, m - ov + n)
    else:
        dst = range(n)
    return Counter((s, d, b) for s in range(m) for d in dst if s != d)


@pytest.mark.parametrize("m,n,mode,overlap,n_tasks,nt", [
    (3, 4, "disjoint", None, None, 7), (3, 4, "disjoint", None, 10, 10),
    (5, 4, "overlap", None, None, 7), (5, 4, "overlap", 4, None, 5), (5, 4, "overlap", 0, None, 9),
    (5, 3, "subset", None, None, 5), (3, 5, "superset", None, 8, 8),
])
def test_many_to_many_sparse_and_dense(m, n, mode, overlap, n_tasks, nt):
    tr = T.many_to_many(m, n, 2.5, mode, overlap, n_tasks)
    assert tr.n_tasks == nt and _multiset(tr) == _m2m_ref(m, n, mode, overlap, 2.5)
    dn = many_to_many_dense(m, n, 2.5, mode, overlap, n_tasks)
    assert dn.n_tasks == nt and _multiset(dn.to_flows()) == _multiset(tr)


def _m2n_ref(m, n, d, b, dests):
    return Counter((i, dests[(i * d + t) % n], b) for i in range(m) for t in range(d) if dests[(i * d + t) % n] != i)


@pytest.mark.parametrize("kw,dests,nt", [
    (dict(n_sources=4, n_destinations=8, dests_per_source=2), list(range(4, 12)), 12),
    (dict(n_sources=4, n_destinations=8, dests_per_source=3, n_tasks=20), list(range(12, 20)), 20),
    (dict(n_sources=4, n_destinations=6, dests_per_source=4, n_tasks=20, dst_start=9), list(range(9, 15)), 20),
    (dict(n_sources=6, n_destinations=4, dests_per_source=2, mode="overlap"), list(range(4, 8)), 10),
    (dict(n_sources=6, n_destinations=4, dests_per_source=3, mode="overlap", overlap=4), list(range(2, 6)), 10),
    (dict(n_sources=9, n_destinations=3, dests_per_source=2, mode="subset_concentrated"), [0, 1, 2], 9),
    (dict(n_sources=9, n_destinations=4, dests_per_source=1, mode="subset_spread"), [0, 2, 4, 6], 9),
    (dict(n_sources=8, n_destinations=4, dests_per_source=3, mode="subset_spread", n_tasks=12), [0, 2, 4, 6], 12),
])
def test_m_to_n_every_flow(kw, dests, nt):
    tr = T.m_to_n(bytes_per_pair=3.0, **kw)
    assert tr.n_tasks == nt
    assert _multiset(tr) == _m2n_ref(kw["n_sources"], kw["n_destinations"], kw["dests_per_source"], 3.0, dests)


def test_m_to_n_every_destination_once_when_m_d_equals_n():
    tr = T.m_to_n(6, 12, 2, 1.0, "disjoint", 30)
    np.testing.assert_array_equal(np.bincount(tr.dst, minlength=30), [0] * 18 + [1] * 12)


# ---------------------------------------------------------------------------------------------------------------
# shift, tornado

@pytest.mark.parametrize("grid,offset", [([4, 3], [1, 2]), ([4, 3], -1), ([5, 2, 3], [7, -3, 0]), ([6], 4)])
def test_shift_every_flow(grid, offset):
    offs = offset if isinstance(offset, list) else [offset] * len(grid)
    ref = Counter()
    for me in itertools.product(*[range(k) for k in grid]):
        there = [(c + o) % k for c, o, k in zip(me, offs, grid)]
        ref[(_rowmajor(me, grid), _rowmajor(there, grid), 9.0)] += 1
    assert _multiset(T.shift(grid=grid, offset=offset, bytes_per_task=9.0)) == ref
    if len(grid) == 1:
        assert _multiset(T.shift(grid[0], offset, 9.0)) == ref


@pytest.mark.parametrize("grid", [[4, 5], [3, 6, 2], [7]])
def test_tornado_is_shift_by_ceil_half_minus_one(grid):
    offs = [math.ceil(k / 2) - 1 for k in grid]
    ref = Counter()
    for me in itertools.product(*[range(k) for k in grid]):
        there = [(c + o) % k for c, o, k in zip(me, offs, grid)]
        ref[(_rowmajor(me, grid), _rowmajor(there, grid), 2.0)] += 1
    assert _multiset(T.tornado(grid, 2.0)) == ref


# ---------------------------------------------------------------------------------------------------------------
# random pairs, random permutation

@pytest.mark.parametrize("n", [1, 2, 7, 10])
def test_random_pairs_is_a_seeded_matching(n):
    tr = T.random_pairs(n, 4.0, seed=3)
    flows = set(zip(tr.src.tolist(), tr.dst.tolist()))
    assert len(flows) == tr.n_flows == n // 2 * 2 and all((d, s) in flows for s, d in flows)
    assert not any(s == d for s, d in flows)
    assert np.bincount(tr.src, minlength=n).max(initial=0) <= 1           # one partner each
    assert (tr.nbytes == 4.0).all()
    again = T.random_pairs(n, 8.0, seed=3)                                   # other bytes: the same draw
    assert set(zip(again.src.tolist(), again.dst.tolist())) == flows


def test_random_draws_depend_on_the_seed_only():
    a = [T.random_permutation(12, 1.0, seed=s).dst.tolist() for s in range(4)]
    T.random_pairs(12, 1.0, seed=0)                                        # another draw in between
    np.random.seed(99)                                                     # and the global state moved
    np.random.rand(5)
    b = [T.random_permutation(12, 5.0, seed=s).dst.tolist() for s in range(4)]
    assert a == b and len({tuple(x) for x in a}) == 4
    for p in a:
        assert sorted(p) == list(range(12))
    pa = {tuple(sorted(zip(T.random_pairs(12, 1.0, seed=s).src.tolist(),
                           T.random_pairs(12, 1.0, seed=s).dst.tolist()))) for s in range(4)}
    assert len(pa) == 4


# ---------------------------------------------------------------------------------------------------------------
# neighbouring (Feng et al. Sec. 5.1.3)

def _alternating(k):
    out = []
    for i in range(1, k + 1):
        out += [i, -i]
    return out[:k]


@pytest.mark.parametrize("sizes,intra,inter", [([8, 8, 8, 8], 4, 4), ([5, 3, 6], 4, 4), ([2, 4, 1, 3, 6], 3, 5),
                                               ([4], 2, 3), ([3, 3], 0, 1)])
def test_neighbouring_every_flow(sizes, intra, inter):
    start = [sum(sizes[:b]) for b in range(len(sizes))]
    ref = Counter()
    nb = len(sizes)
    for b, s in enumerate(sizes):
        locs = []
        for o in _alternating(intra):
            if o % s != 0 and o % s not in locs:
                locs.append(o % s)
        blocks = []
        for o in _alternating(inter):
            c = (b + o) % nb
            if c != b and c not in blocks:
                blocks.append(c)
        for l in range(s):
            for o in locs:
                ref[(start[b] + l, start[b] + (l + o) % s, 6.0)] += 1
            for c in blocks:
                ref[(start[b] + l, start[c] + l % sizes[c], 6.0)] += 1
    tr = T.neighbouring(sizes, intra, inter, 6.0)
    assert tr.n_tasks == sum(sizes) and _multiset(tr) == ref


# ---------------------------------------------------------------------------------------------------------------
# bisection pairing, group tornado

@pytest.mark.parametrize("dims,wrap,npr", [([4, 6], True, 1), ([4, 3], [True, False], 2), ([5, 2], False, 1)])
def test_bisection_pairing_on_a_torus(dims, wrap, npr):
    """Partner: x_k + floor(n_k/2) mod n_k (wrapped), n_k - 1 - x_k (open), same port; none to itself."""
    topo = ev.torus(dims=dims, wrap=wrap, nodes_per_router=npr)
    wr = wrap if isinstance(wrap, list) else [wrap] * len(dims)
    ref = Counter()
    for me in itertools.product(*[range(k) for k in dims]):
        there = [(c + k // 2) % k if w else k - 1 - c for c, k, w in zip(me, dims, wr)]
        for port in range(npr):
            s, d = _rowmajor(me, dims) * npr + port, _rowmajor(there, dims) * npr + port
            if s != d:
                ref[(s, d, 11.0)] += 1
    tr = T.bisection_pairing(topo, 11.0)
    assert tr.n_tasks == topo.n_nodes and _multiset(tr) == ref


class _Grouped:
    """A stand-in network whose nodes' groups interleave (node_groups is all group_tornado reads)."""

    name = "interleaved"

    def __init__(self, group):
        self.group = np.asarray(group)

    def node_groups(self):
        return np.stack([np.arange(self.group.size), self.group])


@pytest.mark.parametrize("off,shift", [(None, 1), (1, 1), (-1, 2), (5, 2)])
def test_group_tornado_position_within_group(off, shift):
    """Node at position j (id order) of group i to the node at position j of group (i + offset) mod G (module
    docstring), groups that are not runs of ids: 3 groups of 4."""
    group = [2, 0, 1, 0, 2, 2, 1, 0, 1, 1, 0, 2]
    members = [[t for t, g in enumerate(group) if g == i] for i in range(3)]
    ref = Counter()
    for t, g in enumerate(group):
        j = members[g].index(t)
        ref[(t, members[(g + shift) % 3][j], 5.0)] += 1
    assert _multiset(T.group_tornado(_Grouped(group), 5.0, off)) == ref


def test_group_tornado_on_a_fat_tree_of_pods():
    """k=4, 3 levels: 4 pods of 16 nodes, consecutive ids; node j of pod i to node j of pod (i + off) mod 4."""
    topo = ev.topology.fat_tree(k=4, levels=3)
    for off, expect in ((None, 2), (-1, 3), (7, 3)):
        tr = T.group_tornado(topo, 5.0, off)
        ref = Counter((16 * g + j, 16 * ((g + expect) % 4) + j, 5.0) for g in range(4) for j in range(16))
        assert _multiset(tr) == ref


# ---------------------------------------------------------------------------------------------------------------
# pencil (Fiedler's slides, PSDNS)

@pytest.mark.parametrize("grid,pr,pc,bpp", [([8, 12, 6], 4, 3, 16.0), (12, 3, 2, 8.0), ([4, 4, 4], 1, 4, 16.0),
                                           ([6, 6, 5], 2, 1, 16.0)])
def test_pencil_flows_and_volumes_closed_form(grid, pr, pc, bpp):
    nx, ny, nz = grid if isinstance(grid, list) else (grid,) * 3
    P = pr * pc
    D = bpp * nx * ny * nz / P
    v = T.pencil_volumes(grid, pr, pc, bpp)
    assert v == pytest.approx({"total": bpp * nx * ny * nz, "per_rank": D, "xy_pair": D / pr, "yz_pair": D / pc,
                               "xy_sent": D * (pr - 1) / pr, "yz_sent": D * (pc - 1) / pc}, rel=1e-12)
    # the block a rank sends in the xy transpose: (Nx/p_row)(Ny/p_row)(Nz/p_col) points; in yz (Nx/pr)(Ny/pc)(Nz/pc)
    xy_b, yz_b = bpp * (nx // pr) * (ny // pr) * (nz // pc), bpp * (nx // pr) * (ny // pc) * (nz // pc)
    xy = Counter((r * pr + a, r * pr + b, round(xy_b, 6)) for r in range(pc) for a in range(pr) for b in range(pr)
                 if a != b)
    yz = Counter((a * pr + q, b * pr + q, round(yz_b, 6)) for q in range(pr) for a in range(pc) for b in range(pc)
                 if a != b)
    ph = T.pencil(grid, pr, pc, bpp)
    assert list(ph.phase_names) == ["xy", "yz"] and ph.n_tasks == P
    assert _multiset(ph.phases[0]) == xy and _multiset(ph.phases[1]) == yz
    sent = np.bincount(ph.phases[1].src, ph.phases[1].nbytes, P) if ph.phases[1].n_flows else np.zeros(P)
    np.testing.assert_allclose(sent, D * (pc - 1) / pc, rtol=1e-12)
    # whole xy planes on a node: one task per row, the yz phase a uniform all-to-all of p_row D / p_col per pair
    on = T.pencil(grid, pr, pc, bpp, xy_planes_on_node=True)
    assert on.n_tasks == pc and on.phases[0].n_flows == 0
    assert _multiset(on.phases[1].to_flows()) == Counter(
        (a, b, round(pr * D / pc, 6)) for a in range(pc) for b in range(pc) if a != b)


# ---------------------------------------------------------------------------------------------------------------
# the task grid a config carries (grid.py)

def test_task_grid_of_configs():
    assert task_grid({"kind": "stencil", "alpha": [8, 6], "beta": [4, 3]}, 12) == [4, 3]
    assert task_grid({"kind": "stencil", "alpha": [8, 6], "beta": [4, 3]}, 13) is None     # another task count
    assert task_grid({"kind": "shift", "grid": [2, 3, 2]}, 12) == [2, 3, 2]
    assert task_grid({"kind": "tornado", "grid": [4, 4]}, 16) == [4, 4]
    assert task_grid({"kind": "shift", "grid": [4, 0]}, 0) is None                          # not a grid
    assert task_grid({"kind": "shift", "n_tasks": 8}, 8) is None
    assert task_grid({"kind": "phased", "phases": [{"kind": "random_pairs"},
                                                    {"kind": "stencil", "beta": [2, 4]}]}, 8) == [2, 4]
    assert task_grid(None, 8) is None


# ---------------------------------------------------------------------------------------------------------------
# refusals

@pytest.mark.parametrize("call,field,value", [
    (lambda: T.stencil([8, 8], [3, 2]), "traffic.beta[0]", 3),
    (lambda: T.stencil([8, 8], [2.0, 2]), "traffic.beta[0]", 2.0),
    (lambda: T.stencil([8, 8], [True, 2]), "traffic.beta[0]", True),
    (lambda: T.stencil([8, "8"], [2, 2]), "traffic.alpha[1]", "8"),
    (lambda: T.stencil([8, 8], [2, 2], -1.0), "traffic.bytes_per_element", -1.0),
    (lambda: T.stencil([8, 8], [2, 2], periodic="false"), "traffic.periodic", "false"),
    (lambda: T.stencil([8, 8], [2, 2], periodic=[True]), "traffic.periodic", [True]),
    (lambda: T.stencil([8, 8], [2, 2], exchange="serial"), "traffic.exchange", "serial"),
    (lambda: T.all_to_all(0), "traffic.n_tasks", 0),
    (lambda: T.all_to_all(4, float("nan")), "traffic.bytes", float("nan")),
    (lambda: T.many_to_many(4, 4, 1.0, "overlap", 5), "traffic.overlap", 5),
    (lambda: T.many_to_many(4, 5, 1.0, "subset"), "traffic.n_destinations", 5),
    (lambda: T.many_to_many(4, 4, 1.0, "disjoint", None, 7), "traffic.n_tasks", 7),
    (lambda: T.m_to_n(4, 4, 0), "traffic.dests_per_source", 0),
    (lambda: T.m_to_n(4, 4, 1, 1.0, "overlap", overlap=1.5), "traffic.overlap", 1.5),
    (lambda: T.m_to_n(4, 4, 1, 1.0, "disjoint", 12, dst_start=True), "traffic.dst_start", True),
    (lambda: T.shift(4, True), "traffic.offset", True),
    (lambda: T.shift(4, [1, 1]), "traffic.offset", [1, 1]),
    (lambda: T.shift(5, 1, 1.0, [2, 2]), "traffic.n_tasks", 5),
    (lambda: T.tornado([4, -2]), "traffic.grid[1]", -2),
    (lambda: T.random_pairs(4, 1.0, seed="1"), "traffic.seed", "1"),
    (lambda: T.random_permutation(-3), "traffic.n_tasks", -3),
    (lambda: T.neighbouring([4, 4], intra=-1), "traffic.intra", -1),
    (lambda: T.neighbouring([4, 2.5]), "traffic.block_sizes[1]", 2.5),
    (lambda: T.pencil([8, 8, 8], 3, 2), "traffic.p_row", 3),
    (lambda: T.pencil([8, 8, 6], 2, 4), "traffic.p_col", 4),
    (lambda: T.pencil(8, 2, 2, xy_planes_on_node="yes"), "traffic.xy_planes_on_node", "yes"),
])
def test_bad_parameters_name_field_and_value(call, field, value):
    with pytest.raises(ConfigError) as e:
        call()
    assert e.value.field == field, str(e.value)
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(e.value.value)
    else:
        assert e.value.value == value and type(e.value.value) is type(value), str(e.value)
    assert e.value.allowed


def test_group_tornado_refusals():
    with pytest.raises(ConfigError) as e:
        T.group_tornado(ev.torus(dims=[4, 4]))
    assert e.value.field == "traffic.kind" and "groups" in str(e.value)
    with pytest.raises(ConfigError) as e:
        T.group_tornado(ev.topology.fat_tree(k=4, levels=3), 1.0, 8)
    assert e.value.field == "traffic.offset" and e.value.value == 8 and "multiple of the 4 groups" in str(e.value)


@pytest.mark.parametrize("value", [0.0, -1.0, "1e6", True])
def test_dense_many_to_many_refuses_bytes_under_its_key(value):
    """The config key is traffic.bytes (and the sparse form refuses it so): the dense form, the one a config
    builds, named traffic.bytes_per_pair, a key no traffic config has."""
    with pytest.raises(ConfigError) as e:
        many_to_many_dense(4, 4, value)
    assert e.value.field == "traffic.bytes" and e.value.value == value, str(e.value)


def test_m_to_n_disjoint_too_few_tasks_names_n_tasks():
    """4 sources and 8 disjoint destinations in 10 tasks: refused as 'traffic.dst_start = None ... an integer in
    [4, 2]' (an empty range, about a key the user did not set); the task count is what is short."""
    with pytest.raises(ConfigError) as e:
        T.m_to_n(4, 8, 2, 1.0, "disjoint", 10)
    assert e.value.field == "traffic.n_tasks" and e.value.value == 10, str(e.value)
    assert ">= 12" in e.value.allowed, str(e.value)


def test_m_to_n_config_default_on_a_small_network_names_n_tasks():
    """From a config, n_tasks null is one per node: 4 -> 16 destinations on a 16-node torus."""
    from evaluator import config
    obj = config.to_object(config.compose(["traffic=m_to_n", "traffic.n_sources=4", "traffic.n_destinations=16",
                                           "traffic.dests_per_source=4", "topology=torus", "topology.dims=[4,4]",
                                           "routing=dor", "placement=linear"]))
    with pytest.raises(ConfigError) as e:
        config.build(obj)
    assert e.value.field == "traffic.n_tasks" and e.value.value == 16 and ">= 20" in e.value.allowed, str(e.value)


@pytest.mark.parametrize("grid,offset", [([4], 2 ** 63 + 1), ([4, 3], [1, -(2 ** 64) - 1]), ([5, 2], 10 ** 30 + 2)])
def test_shift_offsets_past_int64_wrap_like_any_other(grid, offset):
    """An offset is taken mod the side (docstring): 2**63 + 1 on a ring of 4 is 1. Offsets past int64 crashed
    with an OverflowError in NumPy's conversion."""
    offs = offset if isinstance(offset, list) else [offset] * len(grid)
    ref = Counter()
    for me in itertools.product(*[range(k) for k in grid]):
        there = [(c + o) % k for c, o, k in zip(me, offs, grid)]
        ref[(_rowmajor(me, grid), _rowmajor(there, grid), 1.0)] += 1
    assert _multiset(T.shift(grid=grid, offset=offset)) == ref


def test_group_tornado_offset_past_int64_wraps():
    group = [0, 1, 2, 0, 1, 2]
    tr = T.group_tornado(_Grouped(group), 1.0, 3 * 2 ** 62 + 1)      # = 1 mod 3
    assert _multiset(tr) == Counter({(0, 1, 1.0): 1, (1, 2, 1.0): 1, (2, 0, 1.0): 1, (3, 4, 1.0): 1,
                                     (4, 5, 1.0): 1, (5, 3, 1.0): 1})


@pytest.mark.parametrize("call,field", [
    (lambda: T.m_to_n(4, 4, 1, 1.0, "disjoint", 10 ** 20), "traffic.n_tasks"),               # OverflowError
    (lambda: T.m_to_n(4, 2 ** 62, 1), "traffic.n_destinations"),                             # NumPy ValueError
    (lambda: T.stencil([10 ** 200] * 3, [2, 2, 2]), "traffic.alpha"),                        # OverflowError
    (lambda: T.stencil([10 ** 200] * 3, [2, 2, 2], neighbours="full"), "traffic.alpha"),
    (lambda: T.stencil_message_sizes([2 ** 60, 2 ** 60], [2, 2], 1e300), "traffic.alpha"),
    (lambda: T.stencil([2 ** 60, 2 ** 60], [4, 4], 1e300), "traffic.alpha"),                 # 'traffic.nbytes'
    (lambda: T.stencil([4], [2], 1e308), "traffic.bytes_per_element"),                       # 2 faces: inf
    (lambda: T.pencil_volumes([10 ** 200] * 3, 2, 2), "traffic.grid"),                       # answered inf
    (lambda: T.pencil([10 ** 120] * 3, 2, 2), "traffic.grid"),
])
def test_sizes_past_the_numbers_are_refused_by_field(call, field):
    with pytest.raises(ConfigError) as e:
        call()
    assert e.value.field == field, str(e.value)
