"""The bench's SciPy routing matrix for fat trees (``dmodk``, ``ecmp``): built once, applied per point.

What a competent engineer writes for an XGFT without this project. A flow
from node ``a`` to node ``d`` climbs ``T`` switch tiers (``T`` = the levels
``j < h`` whose subtrees, ``node // (m_1 ... m_j)``, differ) and comes down
again, so its router links split into an up part and a down part:

* ECMP: every switch splits evenly over its up ports, so the up part depends
  only on the source leaf and ``T`` (the climb reaches each ancestor with
  equal probability), and the down part, by the same symmetry, only on the
  destination leaf and ``T`` (the reverse links of the destination leaf's own
  climb, with the same fractions). ``R`` has ``2 x leaves x (h - 1)`` columns.
* D-mod-k: the up port at tier ``t`` is ``v = floor(d / (w_1 ... w_t)) mod U_t``
  (parent ``v mod w_{t+1}``, copy ``v div w_{t+1}``), a function of ``d mod P``,
  ``P = lcm_t(w_1 ... w_t U_t)``, so the up part depends on the
  source leaf, that key and ``T``; the down part on ``d`` and ``T`` (the same
  ports, from ``d``'s leaf). ``R`` has ``leaves x P x (h - 1) + nodes
  x (h - 1)`` columns.

A point's demand is summed into those columns with ``bincount`` (sparse flows)
or from the subtree sums of the weights (dense rank-one traffic, never a flow
list), then ``loads = R @ x``; injection and ejection per node by
``bincount``. The matrix is built with vectorised NumPy from the topology's
public tables (``up_offset``, ``down_offset``, ``children``, ``parents``,
``parallel_links``), not from the routing operators; its size is estimated
from the parameters and refused before allocating when it would not fit.
"""

from __future__ import annotations

import math

import numpy as np

from .._types import LinkFloats
from ..placement import Placement
from ..routing import Routing
from ..topology import Topology
from ..traffic import AbstractTraffic
from ._matrix import MAX_BYTES, RoutingMatrix

__all__ = ["FatTreeMatrixBaseline"]


class FatTreeMatrixBaseline(RoutingMatrix):
    """SciPy sparse routing matrix of a fat tree under ``dmodk`` or ``ecmp`` (module docstring).

    A :class:`~evaluator.bench._matrix.RoutingMatrix` (``check_size``, ``nnz``, ``nbytes`` from there):
    :meth:`estimate`, :meth:`build` (once per topology and routing: ``per_pair`` is True), :meth:`link_loads`,
    :meth:`release`.
    """

    per_pair = True
    bytes_per_entry = 112
    """Peak bytes per entry of :meth:`build`: the per-tier lists, their concatenation, the COO triplets, the CSC
    copy and its sort. Measured (``tracemalloc``, 2026-12-07): 81.1 (24-ary 3-tree, D-mod-k), 67.4 (its ECMP
    spray), 70.7 and 66.2 (8-ary 4-tree), up to 95 on small trees; the shared 48 until then was no bound."""

    def __init__(self, topology: Topology, routing: Routing, max_bytes: float = MAX_BYTES):
        t = topology
        self.topology, self.routing = t, routing
        self.max_bytes = float(max_bytes)
        self.dmodk = routing.kind == "dmodk"
        self.n_tiers = int(t.levels) - 1
        self.n_nodes, self.n_rl = int(t.n_nodes), int(t.n_router_links)
        self.n_links = self.n_rl + 2 * self.n_nodes
        self.m1, self.n_leaves = int(t.children[0]), int(t.switches(1))
        self.ports = [t.up_ports(k) for k in range(1, self.n_tiers + 1)]
        # D-mod-k's key d mod P: tier t reads (d // Y_t) mod U_t, a function of d mod (Y_t U_t)
        self.P = math.lcm(*(t.parallel(k) * t.up_ports(k) for k in range(1, self.n_tiers + 1))) if self.dmodk else 1
        self.n_up = self.n_leaves * self.P * self.n_tiers
        self.n_cols = self.n_up + (self.n_nodes if self.dmodk else self.n_leaves) * self.n_tiers
        self.sub = [t.subtree_nodes(j) for j in range(1, self.n_tiers + 2)]  # nodes per level-j subtree, j=1..h
        self.R = None

    # ------------------------------------------------------------- size

    def estimate(self, traffic: AbstractTraffic | None = None, placement: Placement | None = None) -> int:
        """Entries generated while building ``R``: per up column ``T`` (D-mod-k) or ``U_1 + ... + U_1...U_T``
        (ECMP), the same for the down columns."""
        tiers = range(1, self.n_tiers + 1)
        if self.dmodk:
            per_t = sum(tiers)
            return (self.n_leaves * self.P + self.n_nodes) * per_t
        climb = sum(sum(math.prod(self.ports[:i]) for i in range(1, T + 1)) for T in tiers)
        return 2 * self.n_leaves * climb

    # ------------------------------------------------------------- build

    def _step(self, c: np.ndarray, u: np.ndarray, t: int) -> np.ndarray:
        """Local index at level ``t + 1`` of the parent that up port ``u`` of level-``t`` switch ``c`` leads to."""
        topo = self.topology
        Y, m_next, w, pl = topo.parallel(t), int(topo.children[t]), int(topo.parents[t]), int(topo.parallel_links[t - 1])
        return (c // Y // m_next) * (w * Y) + (u // pl) * Y + c % Y

    def _dmodk_entries(self, start: np.ndarray, key: np.ndarray, col: np.ndarray, offsets) -> list:
        """Rows, columns and values of climbs from leaves ``start`` with D-mod-k keys ``key``: one link per tier
        up to each column's ``T`` (columns ``col * n_tiers + T - 1``)."""
        out = []
        topo = self.topology
        for T in range(1, self.n_tiers + 1):
            c = start.copy()
            for t in range(1, T + 1):
                U, w, pl = self.ports[t - 1], int(topo.parents[t]), int(topo.parallel_links[t - 1])
                v = (key // topo.parallel(t)) % U  # Zahavi's D-Mod-K: one digit per level among all U ports
                u = (v % w) * pl + v // w  # parent v mod w, parallel copy v div w
                out.append((int(offsets[t - 1]) + c * U + u, col * self.n_tiers + T - 1))
                c = self._step(c, u, t)
        return out

    def _ecmp_entries(self) -> list:
        """Up links of every leaf's climb of ``T`` tiers with ECMP's fractions: ``(link index within the tier
        + tier offset, column leaf * n_tiers + T - 1, fraction)``; states multiply by ``U_t`` per tier."""
        out = []
        leaf = np.arange(self.n_leaves, dtype=np.int64)
        for T in range(1, self.n_tiers + 1):
            col, c, prob = leaf * self.n_tiers + T - 1, leaf.copy(), np.ones(self.n_leaves)
            for t in range(1, T + 1):
                U = self.ports[t - 1]
                u = np.tile(np.arange(U, dtype=np.int64), c.size)
                col, c, prob = np.repeat(col, U), np.repeat(c, U), np.repeat(prob / U, U)
                out.append((t, c * U + u, col, prob))
                c = self._step(c, u, t)
        return out

    def build(self, traffic: AbstractTraffic | None = None, placement: Placement | None = None,
              check: bool = True) -> None:
        """Build ``R`` once (``traffic`` and ``placement`` are not needed: every column is built)."""
        import scipy.sparse as sp

        if self.R is not None:
            return
        if check:
            self.check_size()
        t = self.topology
        rows, cols, vals = [], [], []
        if self.dmodk:
            leaf = np.repeat(np.arange(self.n_leaves, dtype=np.int64), self.P)
            key = np.tile(np.arange(self.P, dtype=np.int64), self.n_leaves)
            for r, c in self._dmodk_entries(leaf, key, np.arange(leaf.size), t.up_offset):
                rows.append(r), cols.append(c)
            d = np.arange(self.n_nodes, dtype=np.int64)
            for r, c in self._dmodk_entries(d // self.m1, d, np.arange(self.n_nodes), t.down_offset):
                rows.append(r), cols.append(self.n_up + c)
            vals = [np.ones(r.size) for r in rows]
        else:
            for tier, idx, col, prob in self._ecmp_entries():
                for offset, shift in ((t.up_offset, 0), (t.down_offset, self.n_up)):
                    rows.append(int(offset[tier - 1]) + idx), cols.append(shift + col), vals.append(prob)
        R = sp.coo_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(self.n_rl, self.n_cols)).tocsc()
        R.sum_duplicates()
        self.R = R

    def release(self) -> None:
        """Drop ``R`` (rebuilt on the next use)."""
        self.R = None

    # ------------------------------------------------------------- apply

    def _columns(self, sn: np.ndarray, dn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Up column, down column and tiers climbed of flows ``sn -> dn`` (nodes)."""
        T = np.zeros(sn.size, np.int64)
        for j in range(self.n_tiers):  # subtrees nest: a pair apart at level j is apart below it
            T += (sn // self.sub[j]) != (dn // self.sub[j])
        key = dn % self.P
        up = ((sn // self.m1) * self.P + key) * self.n_tiers + T - 1
        down_id = dn if self.dmodk else dn // self.m1
        return up, self.n_up + down_id * self.n_tiers + T - 1, T

    def _dense_demand(self, U: np.ndarray, V: np.ndarray, bpp: float) -> np.ndarray:
        """Column demand of the rank-one traffic ``bpp U[a] V[d]`` (``a != d``) from subtree sums: the bytes
        from a leaf (node) to the nodes it reaches by exactly ``T`` tiers are its weight times the other
        side's sum over its level-``T+1`` subtree less that over its level-``T`` subtree."""
        x = np.zeros(self.n_cols)
        node = np.arange(self.n_nodes, dtype=np.int64)
        P, nt = self.P, self.n_tiers
        Ul = np.bincount(node // self.m1, U, self.n_leaves)
        leaf_first = np.arange(self.n_leaves, dtype=np.int64) * self.m1  # a node of each leaf
        key = node % P

        def sums(weights, j, by_key):  # per level-j subtree (and key): the weights' sums
            n_sub = -(-self.n_nodes // self.sub[j - 1])
            if by_key:
                return np.bincount((node // self.sub[j - 1]) * P + key, weights, n_sub * P).reshape(n_sub, P)
            return np.bincount(node // self.sub[j - 1], weights, n_sub)

        for T in range(1, nt + 1):
            hi, lo = T + 1, T
            Vh, Vl = sums(V, hi, True), sums(V, lo, True)
            reach = Vh[leaf_first // self.sub[hi - 1]] - Vl[leaf_first // self.sub[lo - 1]]  # [leaf, key]
            cols = (np.arange(self.n_leaves)[:, None] * P + np.arange(P)[None, :]) * nt + T - 1
            x[cols.ravel()] += bpp * (Ul[:, None] * reach).ravel()
            Uh, Ulo = sums(U, hi, False), sums(U, lo, False)
            if self.dmodk:
                x[self.n_up + node * nt + T - 1] += bpp * V * (Uh[node // self.sub[hi - 1]] - Ulo[node // self.sub[lo - 1]])
            else:
                Vleaf = np.bincount(node // self.m1, V, self.n_leaves)
                src = Uh[leaf_first // self.sub[hi - 1]] - Ulo[leaf_first // self.sub[lo - 1]]
                x[self.n_up + np.arange(self.n_leaves) * nt + T - 1] += bpp * Vleaf * src
        return x

    def link_loads(self, traffic: AbstractTraffic, placement: Placement) -> LinkFloats:
        """Expected bytes on every link (router links, injection, ejection), shape [link]."""
        if self.R is None:
            self.build()
        n = self.n_nodes
        tn = np.asarray(placement.task_node, np.int64)
        if traffic.kernel_input == "dense":
            bpp = float(traffic.bytes_per_pair)
            U = np.bincount(tn, traffic.src_weight, n)
            V = np.bincount(tn, traffic.dst_weight, n)
            inj, ej = bpp * U * (V.sum() - V), bpp * V * (U.sum() - U)
            return np.concatenate([self.R @ self._dense_demand(U, V, bpp), inj, ej])
        sn, dn = tn[traffic.src], tn[traffic.dst]
        b = np.asarray(traffic.nbytes, np.float64)
        off = sn != dn
        sn, dn, b = sn[off], dn[off], b[off]
        inj, ej = np.bincount(sn, b, n), np.bincount(dn, b, n)
        up, down, T = self._columns(sn, dn)
        climb = T > 0  # same-leaf flows use no router link
        col = np.concatenate([up[climb], down[climb]])
        w = np.concatenate([b[climb], b[climb]])
        if 8 * col.size < self.n_cols:  # few flows: only the used columns
            used, inv = np.unique(col, return_inverse=True)
            return np.concatenate([self.R[:, used] @ np.bincount(inv, w, used.size), inj, ej])
        return np.concatenate([self.R @ np.bincount(col, w, self.n_cols), inj, ej])
