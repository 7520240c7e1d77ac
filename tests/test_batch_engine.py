"""The one batch engine (:mod:`evaluator._batch`): its rules against closed forms and brute force.

* the block and step sizes follow the documented rule (one rule for evaluate, jobs and sweep);
* ``block_size`` and its old name ``chunk_size`` give the same results, a refusal names the one given;
* the sort-based unique of router pair keys is ``sorted(set(keys))``;
* the metric formulas (:func:`evaluator.dataset.metric_values`) are the same in NumPy and jax.numpy, and
  their special cases (no link used, nothing sent, nothing off node) are the documented ones;
* DOR's tie note names exactly the dimensions where some communicating router pair is half a ring apart
  (a per-flow walk over the coordinates), whatever the order or repeats of the pairs.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T
from evaluator._batch.blocks import BLOCK_CPU, STEP_BYTES, block_sizes
from evaluator._batch.pathsets import unique_keys
from evaluator.dataset import metric_values
from evaluator.errors import MEMORY_ENV, ConfigError, ResourceError
from evaluator.jobs import Job, evaluate_jobs

CPU = jax.default_backend() == "cpu"


@pytest.mark.skipif(not CPU, reason="the CPU rule (cache-sized steps)")
@pytest.mark.parametrize("block_size,per_point,n_points,expected", [
    (64, 1, 5, (8, 8)),            # at most the bucket of 5 points (8); a step of the whole block
    (64, 100_000, 1000, (64, 2)),  # 256 kB / 100 kB -> 2 points per step
    (64, 300_000, 1000, (64, 1)),  # larger than a step's budget: one point at a time
    (7, 100_000, 1000, (8, 2)),    # the block a multiple of the step
    (256, 1, None, (BLOCK_CPU, BLOCK_CPU)),  # one block for calls of any size: at most BLOCK_CPU on CPU
    (4, 1, None, (4, 4)),
])
def test_block_and_step_sizes_follow_the_rule(block_size, per_point, n_points, expected):
    assert STEP_BYTES == 256 << 10
    assert block_sizes(block_size, per_point, n_points) == expected


def test_block_size_and_its_old_name_give_the_same_results(monkeypatch):
    topo = ev.torus((4, 4, 2))
    tr = T.stencil((8, 8, 4), (4, 4, 2), 8.0)
    pls = [P.fully_random(topo, 32, seed=s) for s in range(5)]
    a = ev.evaluate_batch(topo, ev.dor(), tr, pls, keep_link_load=True, block_size=2)
    b = ev.evaluate_batch(topo, ev.dor(), tr, pls, keep_link_load=True, chunk_size=2)
    c = ev.evaluate_batch(topo, ev.dor(), tr, pls, True, 2, chunk_size=2)  # both, agreeing
    for r in (b, c):
        for k, v in a.metrics.items():
            np.testing.assert_array_equal(r.metrics[k], v)
        np.testing.assert_array_equal(r.link_load, a.link_load)
    with pytest.raises(ConfigError) as e:
        ev.evaluate_batch(topo, ev.dor(), tr, pls, block_size=4, chunk_size=2)
    assert e.value.field == "chunk_size" and "block_size" in str(e.value)
    for name in ("block_size", "chunk_size"):
        with pytest.raises(ConfigError) as e:
            ev.evaluate_batch(topo, ev.dor(), tr, pls, **{name: 0})
        assert e.value.field == name
    jobs = [Job(tr, P.linear(topo, 32), name="a")]
    xa = evaluate_jobs(topo, jobs, ev.dor(), block_size=3)
    xb = evaluate_jobs(topo, jobs, ev.dor(), chunk_size=3)
    np.testing.assert_array_equal(xa.completion_time.values, xb.completion_time.values)


def test_a_refused_block_names_the_argument_given(monkeypatch):
    """The same refusal as tests/test_bad_sizes.py's ``chunk-size`` case, with the new name."""
    topo = ev.torus([16, 16, 16])
    perm = T.random_permutation(topo.n_nodes, 1.0, seed=0)
    pls = [P.fully_random(topo, topo.n_nodes, seed=s) for s in range(512)]
    monkeypatch.setenv(MEMORY_ENV, str(int(20e6)))
    for name in ("block_size", "chunk_size"):
        with pytest.raises(ResourceError) as e:
            ev.evaluate_batch(topo, ev.dor(), perm, pls, **{name: 512})
        assert e.value.field == name and f"Lower {name}" in str(e.value)


@pytest.mark.parametrize("n,high", [(0, 10), (1, 10), (1000, 50), (5000, 10**12)])
def test_unique_keys_is_the_sorted_set(n, high):
    keys = np.random.default_rng(n).integers(0, high, n)
    got = unique_keys(keys)
    assert got.dtype == np.int64
    assert got.tolist() == sorted(set(keys.tolist()))


def test_metric_formulas_are_one_in_numpy_and_jax():
    rng = np.random.default_rng(0)
    n = 200
    time = np.where(rng.random(n) < 0.2, 0.0, rng.random(n))
    total = np.where(rng.random(n) < 0.2, 0.0, rng.random(n) * 1e6)
    off = np.where(rng.random(n) < 0.3, 0.0, total * rng.random(n))
    hops = off * rng.integers(0, 6, n)
    senders = rng.integers(0, 40, n)
    cls, link = rng.integers(0, 4, n), rng.integers(0, 100, n)
    a = metric_values(np, time, total, off, hops, senders, cls, link)
    b = jax.vmap(lambda *x: metric_values(jnp, *x))(time, total, off, hops, senders, cls, link)
    for k in a:
        np.testing.assert_array_equal(np.asarray(b[k]), a[k], err_msg=k)
    busy = time > 0
    with np.errstate(divide="ignore", invalid="ignore"):  # the closed forms, case by case
        thr = np.where(busy, total / np.where(busy, time, 1), np.where(total > 0, np.inf, np.nan))
    np.testing.assert_array_equal(a["throughput"], thr)
    np.testing.assert_array_equal(a["effective_injection_bandwidth"][busy],
                                  total[busy] / np.maximum(senders[busy], 1) / time[busy])
    assert np.all(a["mean_hops"][off == 0] == 0)
    np.testing.assert_array_equal(a["mean_hops"][off > 0], hops[off > 0] / off[off > 0])
    assert np.all(a["bottleneck_class"][~busy] == -1) and np.all(a["bottleneck_link"][~busy] == -1)
    np.testing.assert_array_equal(a["bottleneck_link"][busy], link[busy])


def _tie_dims_by_walk(topo, traffic, placement) -> list[int]:
    """Dimensions where some flow with bytes between two routers is exactly half a ring apart, flow by flow."""
    coords = np.asarray(topo.router_coords)
    router = np.asarray(topo.node_router)[np.asarray(placement.task_node)]
    hit = set()
    for s, d, b in zip(traffic.src.tolist(), traffic.dst.tolist(), traffic.nbytes.tolist()):
        rs, rd = int(router[s]), int(router[d])
        if b <= 0 or rs == rd:
            continue
        for k, (n, w) in enumerate(zip(topo.dims, topo.wrap)):
            if w and n > 2 and n % 2 == 0 and (int(coords[rd, k]) - int(coords[rs, k])) % n == n // 2:
                hit.add(k)
    return sorted(hit)


def _noted_dims(ds) -> list[int]:
    m = re.search(r"dimension\(s\) \[([0-9, ]*)\]", ds.attrs.get("notes", ""))
    return [] if m is None else [int(x) for x in m.group(1).split(",")]


@pytest.mark.parametrize("seed", range(6))
def test_dor_tie_note_names_the_dimensions_a_walk_finds(seed):
    rng = np.random.default_rng(seed)
    topo = ev.torus((8, 6, 4), wrap=(True, True, bool(seed % 2)))
    n = int(rng.integers(2, topo.n_nodes))
    f = int(rng.integers(1, 12))
    src, dst = rng.integers(0, n, f), rng.integers(0, n, f)
    nb = np.where(rng.random(f) < 0.2, 0.0, rng.random(f) * 100)
    tr = T.from_flows(n, np.concatenate([src, src]), np.concatenate([dst, dst]), np.concatenate([nb, nb]))  # repeats
    pl = P.fully_random(topo, n, seed=seed)
    expected = _tie_dims_by_walk(topo, tr, pl)
    assert _noted_dims(ev.evaluate(topo, tr, pl, ev.dor())) == expected
    assert "notes" not in ev.evaluate(topo, tr, pl, ev.dor(tie="positive")).attrs


@pytest.mark.parametrize("seed", range(6))
def test_dor_tie_note_of_dense_and_phased_traffic_names_the_dimensions_a_walk_finds(seed):
    """Dense traffic's pairs are never listed for the note (:meth:`~evaluator.traffic.AbstractTraffic.pair_sets`:
    the sending and receiving routers' sets); the dimensions it names are those of every pair walked flow by flow
    (the pattern's flow list), alone and as a phase beside a flow list."""
    rng = np.random.default_rng(100 + seed)
    topo = ev.torus((8, 6, 4), wrap=(True, True, bool(seed % 2)))
    n = int(rng.integers(2, 12))
    sw = np.where(rng.random(n) < 0.6, 0.0, rng.random(n))  # few senders and receivers: ties in some dims only
    dw = np.where(rng.random(n) < 0.6, 0.0, rng.random(n))
    sw[0], dw[-1] = 1.0, 1.0
    dense = T.DenseTraffic(n, sw, dw, float(seed % 3))  # bytes_per_pair 0: no bytes, no note
    pl = P.fully_random(topo, n, seed=seed)
    expected = _tie_dims_by_walk(topo, dense.to_flows(), pl)
    assert _noted_dims(ev.evaluate(topo, dense, pl, ev.dor())) == expected
    f = int(rng.integers(1, 6))
    flows = T.from_flows(n, rng.integers(0, n, f), rng.integers(0, n, f), rng.random(f) * 100)
    both = T.phased([flows, dense, flows])
    assert _noted_dims(ev.evaluate(topo, both, pl, ev.dor())) == sorted(
        set(expected) | set(_tie_dims_by_walk(topo, flows, pl)))


def test_dor_tie_note_on_a_shift_by_half_a_ring():
    """A shift by half of the first ring (grid 8 x 4, offset (4, 0)): a tie in dimension 0 only."""
    topo = ev.torus((8, 4))
    tr = T.shift(offset=(4, 0), grid=(8, 4))
    pl = P.linear(topo, topo.n_nodes)
    assert _tie_dims_by_walk(topo, tr, pl) == [0]
    assert _noted_dims(ev.evaluate(topo, tr, pl, ev.dor())) == [0]
