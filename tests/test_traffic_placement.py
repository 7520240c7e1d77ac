"""Traffic generators and placements against plain brute-force definitions."""

import itertools
import math

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T


def dense_stencil_reference(alpha, beta, bpe, periodic):
    """Plain loops over task coordinates: message = shared face, +/- each dimension."""
    n = math.prod(beta)
    M = np.zeros((n, n))
    coords = list(itertools.product(*(range(b) for b in beta)))
    rank = {c: i for i, c in enumerate(coords)}
    for c in coords:
        for k in range(len(beta)):
            if beta[k] == 1:
                continue
            face = bpe
            for i in range(len(beta)):
                if i != k:
                    face *= alpha[i] // beta[i]
            for step in (1, -1):
                y = list(c)
                y[k] += step
                if periodic[k]:
                    y[k] %= beta[k]
                elif not 0 <= y[k] < beta[k]:
                    continue
                M[rank[c], rank[tuple(y)]] += face
    return M


@pytest.mark.parametrize("alpha,beta,periodic", [
    ((16, 18), (8, 6), (True, True)),
    ((8, 8, 8), (2, 4, 1), (True, True, True)),
    ((12, 6, 4), (3, 2, 2), (False, True, False)),
    ((4, 4, 4, 4), (2, 2, 2, 2), (True, False, True, False)),
])
def test_stencil_matches_loops(alpha, beta, periodic):
    tr = T.stencil(alpha, beta, 8.0, periodic=list(periodic))
    np.testing.assert_array_equal(tr.to_dense(), dense_stencil_reference(alpha, beta, 8.0, periodic))


def test_stencil_beta2_both_faces_same_neighbour():
    tr = T.stencil((8,), (2,), 1.0)
    np.testing.assert_array_equal(tr.to_dense(), [[0, 2], [2, 0]])  # 1-D face = 1 element


def test_all_to_all_and_permutation_and_shift():
    a = T.all_to_all(5, 2.0).to_dense()
    np.testing.assert_array_equal(a, 2.0 * (1 - np.eye(5)))
    p = T.random_permutation(50, 3.0, seed=7)
    assert sorted(p.dst.tolist()) == list(range(50))
    np.testing.assert_array_equal(p.dst, T.random_permutation(50, 3.0, seed=7).dst)
    s = T.shift(grid=(4, 3), offset=(1, 2)).to_dense()
    for x, y in itertools.product(range(4), range(3)):
        assert s[x * 3 + y, ((x + 1) % 4) * 3 + (y + 2) % 3] == 1.0
    t = T.tornado((8, 5))
    assert t.dst[0] == 3 * 5 + 2  # shift by ceil(8/2)-1 = 3 and ceil(5/2)-1 = 2


@pytest.mark.parametrize("mode,m,n,expect_dst", [
    ("disjoint", 3, 4, {3, 4, 5, 6}),
    ("overlap", 4, 4, {2, 3, 4, 5}),
    ("subset", 5, 3, {0, 1, 2}),
    ("superset", 2, 5, {0, 1, 2, 3, 4}),
])
def test_many_to_many_modes(mode, m, n, expect_dst):
    tr = T.many_to_many(m, n, 1.0, mode=mode)
    M = tr.to_dense()
    assert set(np.nonzero(M.sum(0))[0].tolist()) == expect_dst
    assert set(np.nonzero(M.sum(1))[0].tolist()) == set(range(m))
    assert np.trace(M) == 0
    for s in range(m):
        assert M[s].sum() == len(expect_dst - {s})


def test_file_formats_roundtrip(tmp_path):
    rng = np.random.default_rng(0)
    M = rng.integers(0, 3, (6, 6)).astype(float) * 100
    np.savez(tmp_path / "dense.npz", matrix=M)
    r, c = np.nonzero(M)
    np.savez(tmp_path / "coo.npz", row=r, col=c, data=M[r, c], shape=np.array([6, 6]))
    (tmp_path / "t.csv").write_text("src,dst,bytes\n" + "".join(f"{i},{j},{M[i, j]}\n" for i, j in zip(r, c)))
    for f in ("dense.npz", "coo.npz"):
        np.testing.assert_array_equal(T.from_file(tmp_path / f).to_dense(), M)
    np.testing.assert_array_equal(T.from_file(tmp_path / "t.csv", n_tasks=6).to_dense(), M)


@pytest.mark.parametrize("args", [(1, 3, 1, None), (2, 4, 2, None), (1, 4, 2, 5)])
def test_bisection_pairing_on_dragonfly_is_furthest(args):
    import networkx as nx

    df = ev.dragonfly(*args)
    tr = T.bisection_pairing(df)
    assert sorted(tr.dst.tolist()) == list(range(df.n_nodes))  # a permutation of the nodes
    G = nx.DiGraph([(s, d) for s, d, _ in df.router_edges()])
    dist = dict(nx.all_pairs_shortest_path_length(G))
    for s, d in zip(tr.src // df.p, tr.dst // df.p):
        assert dist[s][d] == max(dist[s].values())


def test_dragonfly_cartesian_blocks_in_one_group():
    df = ev.dragonfly(2, 4, 2)  # 9 groups of 8 nodes
    beta, gamma = (4, 4, 2), (2, 2, 2)
    pl = P.dragonfly_cartesian(df, beta, gamma, seed=5)
    group = pl.task_node // (df.a * df.p)
    for t, c in enumerate(itertools.product(*(range(b) for b in beta))):
        block = tuple(x // g for x, g in zip(c, gamma))
        first = np.ravel_multi_index(tuple(x * g for x, g in zip(block, gamma)), beta)
        assert group[t] == group[first]
    assert len(set(group.tolist())) == 4 and np.bincount(pl.task_node).max() == 1


def test_dragonfly_random_sparsity():
    df = ev.dragonfly(2, 4, 2)
    pl = P.dragonfly_random(df, 24, tasks_per_group=4, seed=1)
    counts = np.bincount(pl.task_node // 8, minlength=9)
    assert sorted(counts[counts > 0].tolist()) == [4] * 6 and np.bincount(pl.task_node).max() == 1
    other = P.dragonfly_random(df, 24, tasks_per_group=4, seed=2)
    assert not np.array_equal(pl.task_node, other.task_node)


def test_linear_random_block():
    topo = ev.torus([4, 4], nodes_per_router=2)
    np.testing.assert_array_equal(P.linear(topo, 6, tasks_per_node=2).task_node, [0, 0, 1, 1, 2, 2])
    r = P.fully_random(topo, 32, tasks_per_node=2, seed=3)
    assert np.bincount(r.task_node, minlength=32).max() <= 2
    b = P.torus_block(topo, (8, 4))  # 2 tasks per router along dim 0
    router = b.task_node // 2
    for t, (x, y) in enumerate(itertools.product(range(8), range(4))):
        assert router[t] == (x // 2) * 4 + y
    assert np.bincount(b.task_node).max() == 1
