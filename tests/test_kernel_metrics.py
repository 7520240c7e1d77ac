"""The kernel's per-point metrics: the fast path over blocks of links (a repeated pattern of classes and capacities)
against NumPy.

The completion time is the largest ``load / capacity``; the bottleneck is
the FIRST link with that time (-1 when it is 0) (IEEE division element by element, as NumPy
computes it), and ``max_load_class`` the largest load of each class. The
fast path (:func:`evaluator.kernel.link_blocks`) must give the same three
values as the general path and as NumPy, including ties between blocks and
loads that differ but round to the same time.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evaluator import kernel as K
from evaluator import topology as T


def network(topo) -> K.NetworkArrays:
    cls = np.asarray(topo.link_class)
    return K.NetworkArrays(node_router=jnp.asarray(topo.node_router), capacity=jnp.asarray(topo.capacity),
                           link_class=jnp.asarray(cls, jnp.int32),
                           class_order=jnp.asarray(np.argsort(cls, kind="stable"), jnp.int32), routing={})


def numpy_metrics(topo, loads):
    times = loads / np.asarray(topo.capacity)
    t = times.max()
    cls = np.asarray(topo.link_class)
    per_class = [loads[cls == c].max() if np.any(cls == c) else -np.inf for c in range(len(topo.class_names))]
    worst = int(np.flatnonzero(times == t)[0]) if t > 0 else -1  # -1: nothing crosses a link
    return worst, t, np.array(per_class)


def kernel_metrics(topo, blocks):
    """``loads -> (bottleneck link, completion time, max load per class)`` through the kernel's metrics."""
    counts = np.bincount(np.asarray(topo.link_class), minlength=len(topo.class_names))
    bounds = tuple(int(x) for x in np.concatenate([[0], np.cumsum(counts)]))
    net = network(topo)

    @jax.jit
    def run(net, x):  # the network as an argument, as in the kernels (not constants XLA could fold)
        out = K._metrics(net, x, x.sum(), 1.0, 1, class_bounds=bounds, n_router_links=topo.n_router_links,
                         blocks=blocks)
        return out["bottleneck_link"], out["completion_time"], out["max_load_class"]

    def metrics(loads):
        worst, t, per_class = run(net, jnp.asarray(loads))
        return int(worst), float(t), np.asarray(per_class)

    return metrics


def colliding_pair(c: float, rng) -> tuple[float, float]:
    """Two different loads ``x < y`` with ``x / c == y / c`` in float64."""
    for _ in range(100_000):
        x = float(rng.uniform(1e6, 1e9))
        y = float(np.nextafter(x, np.inf))
        if x / c == y / c:
            return x, y
    raise AssertionError("no colliding pair found")  # pragma: no cover


def uneven_dragonfly():
    """DF(2,4,2) with global links slower than local ones, and one class (injection) split into two runs of
    different capacity: five runs, classes still in link order."""
    topo = T.dragonfly(2, 4, 2)
    cap = np.asarray(topo.capacity, np.float64).copy()
    cls = np.asarray(topo.link_class)
    cap[cls == 1] = 3.0e9
    inj = np.flatnonzero(cls == 2)
    cap[inj[: inj.size // 2]] = 7.0e9
    return dataclasses.replace(topo, capacity=cap)


def check_blocks(topo, blocks):
    """Blocks cover link order; every position of a block's pattern has one class and one capacity."""
    assert blocks[0][0] == 0 and blocks[-1][1] == topo.n_links
    assert all(b[1] == c[0] for b, c in zip(blocks, blocks[1:]))
    cls, cap = np.asarray(topo.link_class), np.asarray(topo.capacity)
    for lo, hi, classes in blocks:
        P = len(classes)
        assert (hi - lo) % P == 0
        assert np.all(cls[lo:hi].reshape(-1, P) == np.array(classes))
        assert np.all(cap[lo:hi].reshape(-1, P) == cap[lo:lo + P])


@pytest.mark.parametrize("make", [lambda: T.dragonfly(4, 8, 4), uneven_dragonfly,
                                  lambda: T.bgq_partition((1, 1, 1, 1))], ids=["DF(4,8,4)", "uneven", "BG/Q"])
def test_fast_path_matches_numpy_and_the_general_path(make):
    topo = make()
    blocks = K.link_blocks(topo)
    assert blocks is not None
    check_blocks(topo, blocks)
    # segments: (lo, hi, capacity) of runs of one position's links (for the engineered cases below)
    cap = np.asarray(topo.capacity)
    segs = [(lo + k, hi, len(c), cap[lo + k]) for lo, hi, c in blocks for k in range(len(c))]
    rng = np.random.default_rng(3)
    n = topo.n_links
    cases = [np.zeros(n), rng.integers(0, 5, n).astype(np.float64)]  # nothing loaded; many exact ties
    for _ in range(6):
        loads = rng.random(n) * rng.choice([1.0, 1e9])
        cases.append(loads)
    # the same largest time in two runs (the first run's link wins), and in the middle of a run
    loads = rng.random(n)
    lo0, hi0, p0, c0 = segs[0]
    lo1, hi1, p1, c1 = segs[-1]
    # the same largest time in two blocks or positions (the first link wins); integer capacities: both exactly 100
    loads[hi1 - p1], loads[lo0 + p0 * ((hi0 - lo0) // (2 * p0))] = 100.0 * c1, 100.0 * c0
    cases.append(loads)
    # a smaller load earlier that rounds to the same time as the largest load of its position
    for lo, hi, p, c in (segs[0], segs[-1]):
        x, y = colliding_pair(c, rng)
        loads = rng.random(n)
        loads[lo + p], loads[hi - p] = x, y
        cases.append(loads)
    paths = {"fast": kernel_metrics(topo, blocks), "general": kernel_metrics(topo, None)}
    for loads in cases:
        want = numpy_metrics(topo, loads)
        for path, metrics in paths.items():
            worst, t, per_class = metrics(loads)
            assert worst == want[0], (path, worst, want[0])
            assert t == want[1], (path, t, want[1])
            np.testing.assert_array_equal(per_class, want[2])


def test_link_blocks_of_a_dragonfly_a_torus_and_a_shuffle():
    df = T.dragonfly(2, 4, 2)
    blocks = K.link_blocks(df)
    assert [len(c) for *_, c in blocks] == [1, 1, 1, 1]  # local, global, injection, ejection
    assert [c for *_, c in blocks] == [(0,), (1,), (2,), (3,)]
    topo = T.torus((4, 4, 4))
    blocks = K.link_blocks(topo)
    check_blocks(topo, blocks)
    assert len(blocks[0][2]) == 6 and blocks[0][1] == topo.n_router_links  # 6 links per router, router by router
    rng = np.random.default_rng(0)
    shuffled = dataclasses.replace(topo, link_class=rng.permutation(np.asarray(topo.link_class)))
    assert K.link_blocks(shuffled) is None  # no short pattern: the general path
