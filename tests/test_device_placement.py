"""The counter-based placement generator (``placement.generator=threefry``), checked independently.

* Threefry-2x32 against the Random123 known-answer vectors and against JAX's own
  ``threefry_2x32`` (the generator behind ``jax.random``, which JAX keeps
  bit-identical across CPU and GPU), in NumPy and in JAX;
* the placement a seed gives is the same drawn on the host (NumPy) and inside a
  jitted call (JAX), at any task padding;
* device-drawn placements are valid: a permutation of allowed nodes with the
  group and sub-domain structure the kind promises (Prisacari's Cartesian and
  random placements), checked by brute force;
* reproducible from the seed, and distributed as the NumPy ``default_rng``
  reference (``generator=numpy``): per-position node frequencies over a fixed
  set of seeds, chi-square homogeneity test;
* ``generator=numpy`` still gives the reference algorithm's placements exactly.
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import evaluator as ev
from evaluator import placement as P
from evaluator.errors import ConfigError
from evaluator.placement import _seeded as S
from evaluator.placement._dragonfly_cartesian import cartesian_spec
from evaluator.placement._dragonfly_random import random_spec
from evaluator.placement._random import fully_random_spec

# Random123 threefry2x32_20 known-answer vectors: (key, counter) -> output
KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


@pytest.mark.parametrize("key,ctr,want", KAT)
def test_threefry_known_answers_numpy_and_jax(key, ctr, want):
    for xp in (np, jnp):
        y0, y1 = S.threefry2x32(xp, xp.uint32(key[0]), xp.uint32(key[1]), xp.asarray([ctr[0]], dtype=xp.uint32),
                                xp.asarray([ctr[1]], dtype=xp.uint32))
        assert (int(y0[0]), int(y1[0])) == want


def test_threefry_equals_jax_random_threefry():
    from jax.extend.random import threefry_2x32

    rng = np.random.default_rng(0)
    for _ in range(5):
        key = rng.integers(0, 2**32, 2, dtype=np.uint64).astype(np.uint32)
        ctr = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
        ref = np.asarray(threefry_2x32(jnp.asarray(key), jnp.asarray(ctr)))  # counter halves: (x0, x1)
        for xp in (np, jnp):
            y0, y1 = S.threefry2x32(xp, xp.uint32(key[0]), xp.uint32(key[1]), xp.asarray(ctr[:32]),
                                    xp.asarray(ctr[32:]))
            np.testing.assert_array_equal(np.concatenate([np.asarray(y0), np.asarray(y1)]), ref)


@pytest.mark.parametrize("m,rows", [(1, None), (7, None), (33, None), (64, None), (65, None), (300, None),
                                    (32, 33), (100, 3)])
def test_permutation_same_on_host_and_device_and_is_the_rank_of_the_keys(m, rows):
    for seed in (0, 1, 2**40 + 7, 2**64 - 1):
        k0, k1 = S.seed_words(seed)
        host = S.permutation(np, k0, k1, 3, m, rows)
        dev = np.asarray(jax.jit(lambda a, b: S.permutation(jnp, a, b, 3, m, rows))(k0, k1))
        np.testing.assert_array_equal(host, dev)
        keys = np.atleast_2d(S.sort_keys(np, k0, k1, 3, m, rows))
        for r, row in enumerate(np.atleast_2d(host)):  # brute force: pi[j] = #keys smaller than key j
            np.testing.assert_array_equal(row, [(keys[r] < keys[r, j]).sum() for j in range(m)])


DF = (2, 4, 2)  # p, a, h: 9 groups of 8 nodes


def _specs(df):
    return [
        ("cartesian", cartesian_spec(df, (4, 4, 2), (2, 2, 2))),
        ("cartesian", cartesian_spec(df, (8, 2, 2), (2, 2, 1))),
        ("cartesian", cartesian_spec(df, (4, 4, 2), (2, 2, 2), group_order="linear")),
        ("cartesian", cartesian_spec(df, (4, 4, 2), (2, 2, 2), node_order="linear")),
        ("random", random_spec(df, 24, 4)),
        ("random", random_spec(df, 72, 8)),
        ("random", random_spec(df, 9, 1)),
        ("fully", fully_random_spec(df, 50, 1)),
        ("fully", fully_random_spec(df, 100, 2)),
    ]


def _device(spec, seeds, size):
    """Placements drawn inside a jitted, vmapped call (as a sweep does), padded to ``size`` tasks."""
    k0, k1 = S.seed_words(np.asarray(seeds, dtype=np.uint64))
    prm = {k: jnp.asarray(np.broadcast_to(v, (len(seeds),) + np.shape(v))) for k, v in spec.params(size).items()}
    fn = jax.jit(jax.vmap(lambda a, b, p: spec.generate(jnp, a, b, p, spec.static, size)))
    return np.asarray(fn(k0, k1, prm))[:, : spec.n_tasks]


@pytest.mark.parametrize("case", range(9))
def test_device_equals_host_at_any_padding(case):
    df = ev.dragonfly(*DF)
    _, spec = _specs(df)[case]
    seeds = [0, 1, 2, 12345, 2**33 + 5]
    host = np.stack([spec.placement(s).task_node for s in seeds])
    for pad in (0, 3, 128):
        np.testing.assert_array_equal(_device(spec, seeds, spec.n_tasks + pad), host)


def _check_valid(kind, spec, df, task_node, params):
    per_group = df.a * df.p
    tn = np.asarray(task_node)
    assert tn.shape == (spec.n_tasks,) and tn.min() >= 0 and tn.max() < df.n_nodes
    if kind == "fully":
        tpn = spec.static[1]
        assert np.bincount(tn, minlength=df.n_nodes).max() <= tpn
        return
    assert len(set(tn.tolist())) == tn.size  # one task per node
    group = tn // per_group
    if kind == "cartesian":
        beta, gamma, order = params
        lam = [b // g for b, g in zip(beta, gamma)]
        blocks = {}
        for t, x in enumerate(itertools.product(*(range(b) for b in beta))):
            blk = tuple(c // g for c, g in zip(x, gamma))
            blocks.setdefault(blk, set()).add(int(group[t]))
        assert all(len(g) == 1 for g in blocks.values())  # a gamma sub-domain per group
        used = [next(iter(g)) for g in blocks.values()]
        assert len(set(used)) == math.prod(lam)  # distinct groups
        if order == "group_linear":  # block b on group b
            for blk, g in blocks.items():
                assert next(iter(g)) == np.ravel_multi_index(blk, lam)
        if order == "node_linear":  # the first |gamma| nodes of each group
            assert set((tn % per_group).tolist()) == set(range(math.prod(gamma)))
    else:  # random: tasks_per_group tasks on each of n / k groups
        k = spec.scalars["tasks_per_group"]
        counts = np.bincount(group, minlength=df.g)
        assert sorted(counts[counts > 0].tolist()) == [k] * (spec.n_tasks // k)


def test_device_placements_are_valid_and_reproducible():
    df = ev.dragonfly(*DF)
    params = [((4, 4, 2), (2, 2, 2), ""), ((8, 2, 2), (2, 2, 1), ""), ((4, 4, 2), (2, 2, 2), "group_linear"),
              ((4, 4, 2), (2, 2, 2), "node_linear"), None, None, None, None, None]
    seeds = list(range(200))
    for (kind, spec), prm in zip(_specs(df), params):
        dev = _device(spec, seeds, spec.n_tasks + 5)
        for s, tn in zip(seeds, dev):
            _check_valid(kind, spec, df, tn, prm)
        np.testing.assert_array_equal(dev, _device(spec, seeds, spec.n_tasks))  # reproducible
        distinct = {tuple(row) for row in dev}
        assert len(distinct) > 150, kind  # different seeds, different placements


def _frequencies(draw, seeds, positions, n_nodes):
    out = np.zeros((len(positions), n_nodes), np.int64)
    for s in seeds:
        tn = draw(s)
        out[np.arange(len(positions)), tn[positions]] += 1
    return out


@pytest.mark.parametrize("kind", ["cartesian", "random", "fully"])
def test_same_distribution_as_the_numpy_reference(kind):
    """Per-position node frequencies over seeds 0..1999: threefry against default_rng, chi-square homogeneity."""
    df = ev.dragonfly(*DF)
    if kind == "cartesian":
        def draw(gen):
            return lambda s: P.dragonfly_cartesian(df, (4, 4, 2), (2, 2, 2), seed=s, generator=gen).task_node
    elif kind == "random":
        def draw(gen):
            return lambda s: P.dragonfly_random(df, 24, 4, seed=s, generator=gen).task_node
    else:
        def draw(gen):
            return lambda s: P.fully_random(df, 50, 1, seed=s, generator=gen).task_node
    seeds = range(2000)
    positions = [0, 5, 17, 23]
    new = _frequencies(draw("threefry"), seeds, positions, df.n_nodes)
    ref = _frequencies(draw("numpy"), seeds, positions, df.n_nodes)
    for a, b in zip(new, ref):
        used = (a + b) > 0
        _, p, _, _ = stats.chi2_contingency(np.stack([a[used], b[used]]))
        assert p > 1e-3, (kind, p)
        # and each close to uniform over the nodes a task can reach (every node, here)
        assert stats.chisquare(a).pvalue > 1e-3
    # pairs: how often two tasks of different sub-domains share a group (Cartesian: never; random: same rate)
    if kind != "cartesian":
        t1, t2 = 0, 3
        same = [np.mean([draw(g)(s)[t1] // 8 == draw(g)(s)[t2] // 8 for s in range(1000)])
                for g in ("threefry", "numpy")]
        n = 1000
        pooled = (same[0] + same[1]) / 2
        z = (same[0] - same[1]) / math.sqrt(max(pooled * (1 - pooled) * 2 / n, 1e-12))
        assert abs(z) < 4, same


def test_numpy_generator_is_the_reference_algorithm():
    """generator=numpy: default_rng draws as before the threefry generator existed (written out here)."""
    df = ev.dragonfly(*DF)
    beta, gamma, seed = (4, 4, 2), (2, 2, 2), 11
    rng = np.random.default_rng(seed)
    n, per_group = math.prod(beta), df.a * df.p
    lam = tuple(b // g for b, g in zip(beta, gamma))
    x = np.stack(np.unravel_index(np.arange(n), beta), axis=1)
    block = np.ravel_multi_index(tuple((x // np.array(gamma)).T), lam)
    local = np.ravel_multi_index(tuple((x % np.array(gamma)).T), gamma)
    groups = rng.permutation(df.g)[: math.prod(lam)]
    slots = np.stack([rng.permutation(per_group)[: math.prod(gamma)] for _ in range(math.prod(lam))])
    want = groups[block] * per_group + slots[block, local]
    got = P.dragonfly_cartesian(df, beta, gamma, seed=seed, generator="numpy").task_node
    np.testing.assert_array_equal(got, want)
    rng = np.random.default_rng(seed)
    want = rng.choice(df.n_nodes, size=20, replace=False)
    np.testing.assert_array_equal(P.fully_random(df, 20, seed=seed, generator="numpy").task_node, want)


def test_default_generator_and_bad_generator_or_seed():
    df = ev.dragonfly(*DF)
    a = P.dragonfly_cartesian(df, (4, 4, 2), (2, 2, 2), seed=3)
    b = P.dragonfly_cartesian(df, (4, 4, 2), (2, 2, 2), seed=3, generator="threefry")
    np.testing.assert_array_equal(a.task_node, b.task_node)
    with pytest.raises(ConfigError, match="placement.generator = 'pcg'"):
        P.dragonfly_cartesian(df, (4, 4, 2), (2, 2, 2), generator="pcg")
    with pytest.raises(ConfigError, match=r"placement.seed = 18446744073709551616 .*2\^64"):
        P.dragonfly_random(df, 24, 4, seed=2**64)
    assert P.fully_random(df, 4, seed=2**64, generator="numpy").n_tasks == 4  # default_rng takes any size
    with pytest.raises(ConfigError, match="placement.seed = -1"):
        P.fully_random(df, 4, seed=-1)
