"""The sparse move evaluator (:class:`SparseMoveEvaluator`: a move touches only its flows' links, read from the
routing's pair table, :func:`pair_table`) and the choice between it and the dense one (:func:`move_evaluator`);
the model and the dense evaluator: :mod:`._moves`."""

from __future__ import annotations

import functools
import weakref

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Float, Int

from .._batch.compiled import batch_kernel
from ..topology import Topology
from ._moves import Q_NORM, MoveEvaluator

__all__ = ["PAIR_TABLE_LIMIT", "TOP", "SparseMoveEvaluator", "pair_table", "move_evaluator", "SPARSE_FROM"]

PAIR_TABLE_LIMIT = 1 << 24
"""Most entries (endpoint pairs times links per pair) of a pair table; beyond it the dense evaluator is used."""

TOP = 64
"""Links of every phase kept in the batch's top list (the largest times), for the maximum over untouched links."""


def pair_table(topology: Topology, routing, *, chunk: int = 2048
               ) -> tuple[Int[np.ndarray, "pair W"], Float[np.ndarray, "pair W"]] | None:
    """The router links of every endpoint pair and the share of its bytes on each, read off the routing's own
    ``apply`` (one unit flow per pair, ``chunk`` pairs per call): ``(links [pair, W] int32, share [pair, W])``,
    pairs ``s * E + d`` over the routing's endpoints (routers, or nodes where it routes by node); unused entries
    link 0, share 0. ``None`` when the table would exceed :data:`PAIR_TABLE_LIMIT` entries."""
    k = batch_kernel(topology, routing, False)
    op = k.operator
    E = op.endpoint_count(topology)
    n_rl = int(topology.n_router_links)
    if E * E * 4 > PAIR_TABLE_LIMIT:  # even four links a pair is too many
        return None
    tables = k.net.routing

    @functools.partial(jax.jit, static_argnums=(2,))
    def probe(s, d, width):
        def one(si, di):
            lds = op.apply(tables, si[None], di[None], jnp.where(si != di, 1.0, 0.0)[None])[:n_rl]
            nz = (jnp.abs(lds) > 1e-12).sum()
            if width == 0:
                return nz, jnp.zeros(0, jnp.int32), jnp.zeros(0)
            v, i = jax.lax.top_k(jnp.abs(lds), width)
            return nz, i.astype(jnp.int32), jnp.where(v > 1e-12, lds[i], 0.0)
        return jax.vmap(one)(s, d)

    pairs = np.arange(E * E, dtype=np.int64)
    width = 0
    nz_max = 0
    for lo in range(0, pairs.size, chunk):  # the widest pair first
        p = pairs[lo:lo + chunk]
        p = np.pad(p, (0, chunk - p.size))
        nz, _, _ = probe(jnp.asarray(p // E, jnp.int32), jnp.asarray(p % E, jnp.int32), 0)
        nz_max = max(nz_max, int(np.asarray(nz).max()))
    width = max(nz_max, 1)
    if E * E * width > PAIR_TABLE_LIMIT:
        return None
    links = np.zeros((E * E, width), np.int32)
    share = np.zeros((E * E, width))
    for lo in range(0, pairs.size, chunk):
        p = pairs[lo:lo + chunk]
        n = p.size
        p = np.pad(p, (0, chunk - n))
        _, i, v = probe(jnp.asarray(p // E, jnp.int32), jnp.asarray(p % E, jnp.int32), width)
        links[lo:lo + n] = np.asarray(i)[:n]
        share[lo:lo + n] = np.asarray(v)[:n]
    return links, share


class SparseMoveEvaluator(MoveEvaluator):
    """:class:`MoveEvaluator` whose moves touch only the links of the moved flows.

    A move's flows are looked up in the routing's pair table
    (:func:`pair_table`): its old and new paths give a few hundred (link,
    bytes) entries instead of a pass over every link. The new maximum of a
    phase is the larger of the touched links' new times and the largest
    untouched time, read from the phase's :data:`TOP` largest times (when
    all of those are touched, the smallest of them: an upper bound, so a
    move is never scored better than it is); the norm is updated by the
    touched links' terms. Same contract and scores (up to rounding) as the
    dense evaluator.
    """

    def __init__(self, topology: Topology, routing, traffic, slot_node, table):
        super().__init__(topology, routing, traffic, slot_node)
        links, share = table
        op = self.kernel.operator
        endpoint = (np.asarray(op.endpoints) if op.endpoints is not None else np.asarray(topology.node_router))
        self.n_endpoints = op.endpoint_count(topology)
        self._dev.update(jax.device_put(dict(pair_links=links, pair_share=share,
                                             endpoint=endpoint.astype(np.int32))))
        self.width = int(links.shape[1])

    @property
    def _key_type(self):
        """The type of the keys ``phase * n_links + link``: int32 while they stay below 2^31, else int64 (in int32
        the keys of 2^31 phase-links and more wrapped negative: bytes added to the wrong link)."""
        return jnp.int32 if self.table.n_phases * self.n_links < 2**31 else jnp.int64

    def _entries(self, dev, f, w, sn, dn, sign):
        """(keys, bytes) of flows ``f`` (bytes ``w``) between nodes ``sn -> dn``, signed: router links by the pair
        table, then the injection and ejection links; keys ``phase * n_links + link``."""
        n_rl = int(self.topology.n_router_links)
        n_nodes = int(self.topology.n_nodes)
        E = self.n_endpoints
        w = jnp.where(sn != dn, w, 0.0) * sign
        se, de = dev["endpoint"][sn], dev["endpoint"][dn]
        pair = se * E + de
        lk = dev["pair_links"][pair]  # [m, W]
        sh = dev["pair_share"][pair] * jnp.where(se != de, w, 0.0)[:, None]
        base = dev["phase"][f].astype(self._key_type) * self.n_links
        keys = jnp.concatenate([(base[:, None] + lk).ravel(), base + n_rl + sn, base + n_rl + n_nodes + dn])
        vals = jnp.concatenate([sh.ravel(), w, w])
        return keys, vals

    def _batch_state(self, dev, loads):
        """Per phase: the current maximum (reference), the norm's sum, the top list (times, keys)."""
        u = loads / dev["cap"][None, :]
        t = u.max(axis=1)
        ref = jnp.where(t > 0, t, 1.0)
        ssum = ((u / ref[:, None]) ** Q_NORM).sum(axis=1)
        top_v, top_i = jax.lax.top_k(u, min(TOP, self.n_links))
        top_k = top_i + (jnp.arange(u.shape[0], dtype=self._key_type) * self.n_links)[:, None]
        return loads.ravel(), ref, ssum, top_v, top_k

    def _score_entries(self, dev, bs, keys, vals):
        l_flat, ref, ssum, top_v, top_k = bs
        P = ref.shape[0]
        n = keys.shape[0]
        # one int32 operand (key, then the entry's index in the low bits): XLA:CPU sorts it 6x faster than a
        # (key, value) pair of operands
        bits = max(int(n - 1).bit_length(), 1)
        if (self.table.n_phases * self.n_links) << bits < 2 ** 31:
            packed = jnp.sort((keys.astype(jnp.int32) << bits) | jnp.arange(n, dtype=jnp.int32))
            keys, vals = packed >> bits, vals[packed & ((1 << bits) - 1)]
        else:  # too many keys to pack
            keys, vals = jax.lax.sort((keys.astype(self._key_type), vals), num_keys=1)
        pos = jnp.arange(n, dtype=jnp.int32)
        start = jnp.concatenate([jnp.array([True]), keys[1:] != keys[:-1]])
        end = jnp.concatenate([keys[1:] != keys[:-1], jnp.array([True])])
        first = jax.lax.cummax(jnp.where(start, pos, 0))
        cs = jnp.cumsum(vals)
        delta = cs - jnp.where(first > 0, cs[jnp.maximum(first - 1, 0)], 0.0)  # the key's total, at its last entry
        link = keys % self.n_links
        ph = keys // self.n_links
        cap = dev["cap"][link]
        old_u = l_flat[keys] / cap
        new_u = (l_flat[keys] + delta) / cap
        r = ref[ph]
        dq = jnp.where(end, (new_u / r) ** Q_NORM - (old_u / r) ** Q_NORM, 0.0)
        if P == 1:
            touched_max = jnp.where(end, new_u, -jnp.inf).max()[None]
            s_add = dq.sum()[None]
        else:
            in_p = end[None, :] & (ph[None, :] == jnp.arange(P, dtype=jnp.int32)[:, None])  # [phase, entry]
            touched_max = jnp.where(in_p, new_u[None, :], -jnp.inf).max(axis=1)
            s_add = jnp.where(in_p, dq[None, :], 0.0).sum(axis=1)
        # the largest untouched time of each phase: the first of its top list that no key touches
        at = jnp.clip(jnp.searchsorted(keys, top_k), 0, n - 1)
        hit = keys[at] == top_k
        untouched = jnp.where(hit, -jnp.inf, top_v).max(axis=1)
        untouched = jnp.where(hit.all(axis=1), top_v[:, -1], untouched)
        t_new = jnp.maximum(touched_max, untouched)
        s_new = jnp.maximum(ssum + s_add, 0.0)
        return t_new.sum(), (ref * s_new ** (1.0 / Q_NORM)).sum()

    def _compact_full(self, k: int, L: int | None) -> None:
        return None  # the pair table lists the links

    def _move_fn(self, k: int, L: int | None = None, size: int | None = None):
        def one(dev, bs, slot_task, task_node, loads, a, b):
            f, w, (s0, d0), (s1, d1) = self._moved_flows(dev, slot_task, task_node, a, b, L)
            k0, v0 = self._entries(dev, f, w, s0, d0, -1.0)
            k1, v1 = self._entries(dev, f, w, s1, d1, 1.0)
            return self._score_entries(dev, bs, jnp.concatenate([k0, k1]), jnp.concatenate([v0, v1]))

        return one

    step_choices = ()  # one step: the sort dominates

    @property
    def default_step(self) -> int:
        return 512

    def _state(self, dev, loads, k: int, size: int | None = None):
        return self._batch_state(dev, loads)

    def _fit_state(self, bs, size: int | None):
        return bs  # one state for every listing

    def _heat_fn(self, dev, task_node, loads, tasks):
        bs = self._batch_state(dev, loads)
        q0 = (bs[1] * bs[2] ** (1.0 / Q_NORM)).sum()

        def one(t):
            f = dev["incident"][t]
            ok = f >= 0
            f = jnp.where(ok, f, 0)
            w = jnp.where(ok, dev["nbytes"][f], 0.0)
            keys, vals = self._entries(dev, f, w, task_node[dev["src"][f]], task_node[dev["dst"][f]], -1.0)
            return q0 - self._score_entries(dev, bs, keys, vals)[1]

        return jax.lax.map(one, tasks, batch_size=256)


SPARSE_FROM = 1 << 15
"""Phases times links from which the sparse evaluator is used (where its pair table fits): a dense move costs a
pass over every link of every phase, a sparse one a sort of its few hundred entries (on 2 CPU cores, DF(4,8,4)
with 5,016 links: about 90,000 dense moves/s, 19,000 sparse)."""

_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def move_evaluator(topology: Topology, routing, traffic, slot_node) -> MoveEvaluator:
    """The dense evaluator, or the sparse one where phases times links reach :data:`SPARSE_FROM` and the routing's
    pair table fits (:data:`PAIR_TABLE_LIMIT`; built once per topology and routing)."""
    dense = MoveEvaluator(topology, routing, traffic, slot_node)
    if dense.table.n_phases * dense.n_links < SPARSE_FROM:
        return dense
    per_topo = _TABLES.setdefault(topology, {})
    if routing not in per_topo:
        per_topo[routing] = pair_table(topology, routing)
    table = per_topo[routing]
    if table is None:
        return dense
    return SparseMoveEvaluator(topology, routing, traffic, slot_node, table)
