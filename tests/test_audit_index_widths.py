"""Audit: integer index widths at scale (silent wrong numbers past 2^31).

Each defect is probed where the overflow needs more memory than a test may
use: the index-computing code runs on extreme values (a handful of entries
holding indices near 2^31), or is traced with abstract shapes (``jax.make_jaxpr``
allocates nothing) and every scatter's index type is checked against the
size of the buffer it writes (the buffer's last index must fit). References
are Python integers and ``numpy`` int64 arithmetic written here.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evaluator import topology as T
from evaluator import _ops
from evaluator._ops import add_at, segment_add
from evaluator.errors import ConfigError, ResourceError
from evaluator.mapping import _moves
from evaluator.mapping._sparse_moves import SparseMoveEvaluator
from evaluator.placement import _random
from evaluator.placement._seeded import ranks, sort_keys, seed_words
from evaluator.routing import _dragonfly, _tago

jax.config.update("jax_enable_x64", True)

BIG = 2**30 + 8
"""Rows of a batch of two whose flat buffer passes 2^31 entries (point 1's last entry: 2^31 + 15)."""


def _sds(shape, dtype):
    return jax.ShapeDtypeStruct(tuple(int(x) for x in shape), dtype)


def _scatters(jaxpr) -> list[tuple[int, np.dtype]]:
    """(operand entries, index type) of every scatter in ``jaxpr`` and the jaxprs inside it."""
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name.startswith("scatter"):
            operand, indices = eqn.invars[0].aval, eqn.invars[1].aval
            out.append((int(np.prod(operand.shape)), np.dtype(indices.dtype)))
        for v in eqn.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    out.extend(_scatters(inner))
    return out


def _assert_indices_fit(closed) -> int:
    """Every scatter's index type holds its operand's last index; returns how many scatters were checked."""
    found = _scatters(closed.jaxpr)
    assert found, "no scatter traced"
    for size, dt in found:
        assert np.iinfo(dt).max >= size - 1, f"a scatter into {size:,} entries indexes with {dt}"
    return len(found)


# -- the batched scatters: point b's indices offset by b * n --------------------------------------------------------

def test_batch_index_past_2_31_is_exact():
    idx = jnp.asarray([[0, 5], [BIG - 2, BIG - 1]], jnp.int32)
    flat = np.asarray(_ops.batch_index(idx, 2, BIG))
    want = [0, 5, BIG + BIG - 2, BIG + BIG - 1]  # Python ints: b * n + i
    assert [int(x) for x in flat] == want


def test_batch_index_small_batch_keeps_int32():
    idx = jnp.asarray([[1], [2], [3]], jnp.int32)
    flat = _ops.batch_index(idx, 3, 1000)
    assert flat.dtype == jnp.int32  # the fast scatter stays
    assert [int(x) for x in flat] == [1, 1002, 2003]


def test_vmapped_add_at_indexes_a_big_batch_in_int64():
    """vmap(add_at) over 2 points of 2^30 + 8 entries: a flat buffer of 2^31 + 16 (the real run, 2 GB of uint8,
    lost point 1's bytes at entry 2^30 + 7: they went to a negative index)."""
    f = jax.vmap(add_at)
    closed = jax.make_jaxpr(f)(_sds((2, BIG), jnp.uint8), _sds((2, 1), jnp.int32), _sds((2, 1), jnp.uint8))
    _assert_indices_fit(closed)


def test_vmapped_segment_add_indexes_a_big_batch_in_int64():
    f = jax.vmap(lambda d, i: segment_add(d, i, BIG))
    closed = jax.make_jaxpr(f)(_sds((2, 1), jnp.float64), _sds((2, 1), jnp.int32))
    _assert_indices_fit(closed)


def test_vmapped_add_at_small_batch_keeps_int32_and_adds_right():
    buf = jnp.zeros((3, 7))
    idx = jnp.asarray([[0, 6], [6, 6], [2, 3]], jnp.int32)
    val = jnp.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    out = np.asarray(jax.jit(jax.vmap(add_at))(buf, idx, val))
    ref = np.zeros((3, 7))
    for b in range(3):
        for i, v in zip(np.asarray(idx[b]), np.asarray(val[b])):
            ref[b, i] += v
    np.testing.assert_array_equal(out, ref)
    dts = {dt for _, dt in _scatters(jax.make_jaxpr(jax.vmap(add_at))(buf, idx, val).jaxpr)}
    assert dts == {np.dtype(np.int32)}


# -- the threefry random placement ----------------------------------------------------------------------------------

def test_ranks_of_more_than_2_31_items_are_int64():
    """The ranks of 2^31 + 2 slots (a draw of ~137 GB: a large host passes the memory check) were int32: ranks
    2^31 and up wrapped negative, node ids negative."""
    out = jax.eval_shape(lambda k: ranks(jnp, k), _sds((2**31 + 2,), jnp.uint64))
    assert np.iinfo(out.dtype).max >= 2**31 + 1


@pytest.mark.parametrize("m", [5, 64, 65, 300])
def test_ranks_match_double_argsort(m):
    k0, k1 = seed_words(12345)
    key = sort_keys(np, k0, k1, 0, m)
    ref = np.empty(m, np.int64)
    ref[np.argsort(np.asarray(key, np.uint64), kind="stable")] = np.arange(m)
    for xp in (np, jnp):
        got = np.asarray(ranks(xp, xp.asarray(key)))
        assert got.dtype == np.int32  # small draws keep int32
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("m", [40, 300])
def test_ranks_int64_path_matches_double_argsort(monkeypatch, m):
    """The wide path (taken past 2^31 items) run on a small draw: the same permutation, in int64."""
    from evaluator.placement import _seeded
    monkeypatch.setattr(_seeded, "rank_type", lambda xp, m, rows=1: xp.int64)
    k0, k1 = seed_words(99)
    key = sort_keys(np, k0, k1, 3, m)
    ref = np.empty(m, np.int64)
    ref[np.argsort(np.asarray(key, np.uint64), kind="stable")] = np.arange(m)
    for xp in (np, jnp):
        got = np.asarray(ranks(xp, xp.asarray(key)))
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, ref)


def test_random_generate_past_2_31_slots_gives_int32_nodes():
    """2^31 + 8 slots at 2 tasks a node: node ids (below 2^30 + 4) stay int32, the slot ranks behind them int64."""
    out = jax.eval_shape(lambda a, b: _random._generate(jnp, a, b, {}, (2**31 + 8, 2), 16),
                         _sds((), jnp.uint32), _sds((), jnp.uint32))
    assert out.shape == (16,) and out.dtype == jnp.int32


def test_random_generate_small_matches_reference():
    """The slots' node = rank // tasks_per_node, ranks from the keys' order (numpy int64 reference)."""
    k0, k1 = seed_words(7)
    n_slots, tpn = 24, 3
    key = np.asarray(sort_keys(np, k0, k1, 0, n_slots), np.uint64)
    rank = np.empty(n_slots, np.int64)
    rank[np.argsort(key, kind="stable")] = np.arange(n_slots)
    for xp in (np, jnp):
        got = np.asarray(_random._generate(xp, k0, k1, {}, (n_slots, tpn), 10))
        np.testing.assert_array_equal(got, rank[:10] // tpn)


def test_threefry_refuses_more_than_2_32_slots_by_name():
    """4 nodes x 2^31 tasks a node = 2^33 slots: the 32-bit index in the sort keys would repeat (keys tie, the
    permutation is wrong); refused naming placement.tasks_per_node and the 2^32 limit, before any allocation."""
    topo = T.torus((2, 2))
    with pytest.raises(ConfigError) as e:
        _random.fully_random_spec(topo, 10, 2**31)
    msg = str(e.value)
    assert "placement.tasks_per_node" in msg and "4,294,967,296" in msg and "2147483648" in msg.replace(",", "")
    assert "tasks_per_node=3" in msg  # the fix: ceil(10 / 4)


def test_threefry_2_32_slots_exactly_passes_the_limit():
    """2^32 slots exactly is within the limit: on this machine the memory check (275 GB) refuses it instead."""
    topo = T.torus((2, 2))
    with pytest.raises(ResourceError) as e:
        _random.fully_random_spec(topo, 10, 2**30)
    assert "fits in memory" in str(e.value) and "at most 2^32" not in str(e.value)


# -- routing buffers whose flat size passes 2^31 (traced, not allocated) --------------------------------------------

def _dummy_route(tables, A, B, C, GG, W=None):
    return GG.reshape(-1)


def test_dragonfly_valiant_router_buffer_past_2_31_indexes_in_int64():
    """valiant_router on DF(a=32, g=8192): W[g, R] alone is g^2 a = 2^31 entries (~35 GB in all: a large host
    passes the memory check); in int32, OFF_W + Gs * R + dst wrapped negative."""
    g, a, m = 8192, 32, 1
    s = _dragonfly._Shape(g * a, a, g, m, 10**6, False, True)
    size = s.offsets[-1]
    assert size == 3 * g * a * a + g * g + g * g * a  # the layout's closed form
    apply = _dragonfly._apply_fn(s, _dummy_route, _dummy_route)
    tables = {"hop": _sds((g * g, m), jnp.int32)}
    closed = jax.make_jaxpr(apply)(tables, _sds((4,), jnp.int32), _sds((4,), jnp.int32), _sds((4,), jnp.float64))
    assert _assert_indices_fit(closed) >= 3


def test_dragonfly_small_buffer_keeps_int32():
    s = _dragonfly._Shape(8 * 4, 4, 8, 1, 200, False, True)
    apply = _dragonfly._apply_fn(s, _dummy_route, _dummy_route)
    closed = jax.make_jaxpr(apply)({"hop": _sds((64, 1), jnp.int32)}, _sds((4,), jnp.int32), _sds((4,), jnp.int32),
                                   _sds((4,), jnp.float64))
    assert {dt for _, dt in _scatters(closed.jaxpr)} == {np.dtype(np.int32)}


def test_tago_buffer_past_2_31_indexes_in_int64():
    """TAGO on an RDN of g=6000 groups of a=32 routers: 2 g^2 a + g^2 + g a^2 = 2.34e9 buffer entries."""
    g, a = 6000, 32
    apply = _tago._apply_fn(g, a, lambda tables, A, B, C, GG: GG.reshape(-1))
    closed = jax.make_jaxpr(apply)({"own": _sds((g, g, a), jnp.float64)}, _sds((4,), jnp.int32),
                                   _sds((4,), jnp.int32), _sds((4,), jnp.float64))
    found = _scatters(closed.jaxpr)
    assert max(sz for sz, _ in found) == 2 * g * g * a + g * g + g * a * a
    _assert_indices_fit(closed)


# -- the mapping search's flow tables -------------------------------------------------------------------------------

def test_csr_start_past_2_31_entries():
    """Tasks of 2^30, 2^30 and 5 flow entries: the third starts at 2^31 (int32 gave -2^31)."""
    deg = np.array([2**30, 2**30, 5], np.int64)
    start = _moves.csr_start(deg)
    assert [int(x) for x in start] == [0, 2**30, 2**31]


def test_csr_start_small_is_int32_and_exact():
    deg = np.array([3, 0, 2, 7])
    start = _moves.csr_start(deg)
    assert start.dtype == np.int32
    assert start.tolist() == [0, 3, 3, 5]


@pytest.mark.parametrize("phases,links", [(1, 2**31 - 1), (3000, 10**6), (2, 2**30), (4, 1000)])
def test_sparse_move_keys_hold_phase_times_links(phases, links):
    """Keys phase * n_links + link: the type must hold phases * links - 1 (3,000 phases on 10^6 links wrapped)."""
    fake = SimpleNamespace(table=SimpleNamespace(n_phases=phases), n_links=links)
    kt = SparseMoveEvaluator._key_type.fget(fake)
    assert np.iinfo(kt).max >= phases * links - 1
    if phases * links < 2**31:
        assert kt == jnp.int32  # the small searches keep their int32 sort


# -- the batched kernels' int32 task and node rows ------------------------------------------------------------------

def _traffic(n_tasks, src, dst):
    return SimpleNamespace(n_tasks=n_tasks, n_flows=len(src), src=np.asarray(src, np.int64),
                           dst=np.asarray(dst, np.int64), nbytes=np.ones(len(src)), n_senders=1)


def test_pad_flows_refuses_task_ids_past_int32():
    """Task 2^31 of a 2^31 + 1 task traffic was written as -2^31 into the int32 row, silently."""
    from evaluator._batch import blocks
    with pytest.raises(ResourceError) as e:
        blocks.pad_flows([_traffic(2**31 + 1, [2**31], [0])], 4)
    assert "traffic" in str(e.value) and "2,147,483,649 tasks" in str(e.value) and "2,147,483,648" in str(e.value)


def test_pad_flows_keeps_the_largest_int32_task_exactly():
    from evaluator._batch import blocks
    src, dst, nb, senders = blocks.pad_flows([_traffic(2**31, [2**31 - 1, 3], [0, 2**31 - 2])], 4)
    assert [int(x) for x in src[0]] == [2**31 - 1, 3, 0, 0]
    assert [int(x) for x in dst[0]] == [0, 2**31 - 2, 0, 0]


def test_task_nodes_refuses_node_ids_past_int32():
    from evaluator._batch import blocks
    p = SimpleNamespace(n_nodes=2**31 + 5, task_node=np.array([2**31 + 4], np.int64))
    with pytest.raises(ResourceError) as e:
        blocks.task_nodes([p], 1)
    assert "topology" in str(e.value) and "2,147,483,653 nodes" in str(e.value)


def test_a_network_of_2_31_links_is_refused_by_name():
    """Links and nodes are int32 ids in the kernels: a topology of 2^31 links (arrays broadcast from one entry
    here: nothing allocated) is refused when it is made, naming the count and the limit; 2^31 - 1 passes."""
    import dataclasses

    from evaluator.topology.base import MAX_IDS

    t = T.torus([4, 4])
    assert MAX_IDS == 2**31 - 1
    with pytest.raises(ResourceError) as e:
        dataclasses.replace(t, link_src=np.broadcast_to(np.int32(0), (2**31,)))
    assert e.value.field == "topology" and "2,147,483,648 links" in str(e.value) and "2,147,483,647" in str(e.value)
    ok = dataclasses.replace(t, link_src=np.broadcast_to(np.int32(0), (2**31 - 1,)))
    assert ok.n_links == 2**31 - 1
