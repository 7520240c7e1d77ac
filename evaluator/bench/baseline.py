"""The benchmark's two baselines: a per-flow Python walk and a SciPy sparse routing matrix.

:class:`PerFlowBaseline` (:mod:`._perflow`): the straightforward per-flow evaluator.

:class:`SparseMatrixBaseline` (what a competent engineer writes without this
project): a SciPy sparse routing matrix ``R`` and ``loads = R @ demand``.
For a Dragonfly ``R`` is links x router pairs, the expected fraction of a
router pair's bytes on every router link under minimal or Valiant routing,
built once per (topology, routing) and applied per point to the router-pair
demand of the traffic and placement (injection and ejection by ``bincount``).
For a torus ``R`` is links x flows, each flow's DOR path (a split tie as two
halves) with its injection and ejection link, built for one (traffic,
placement) and applied to the flow bytes. For a fat tree (D-mod-k, ECMP)
``R``'s columns are a flow's up and down parts, which depend on fewer
indices than the node pair (:mod:`evaluator.bench._fat_tree_matrix`); it is
built once and applied per point. Tori and Dragonflies apply ``R`` two ways,
:meth:`SparseMatrixBaseline.apply_batch`'s ``batched`` (``R @ D`` over a batch
of points) and ``per point``, and the bench keeps the faster per routing class
(:func:`strongest`). :func:`routing_matrix` picks the class. ``R`` is built with vectorised
NumPy from the topology's public tables (``global_owner``, ``global_link``,
``local_link``; ``link_src``/``link_dst``/``router_coords`` for tori) and the
same expectation rules as the per-flow walk, not from the routing operators.
Its size is estimated from the parameters before anything is allocated, and
a matrix that would not fit is refused with a
:class:`~evaluator.errors.ResourceError`.

Both are used by :mod:`evaluator.bench` only.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._types import LinkFloats
from ..errors import ConfigError
from ..placement import Placement
from ..routing import Routing
from ..topology import DragonflyTopology, Topology
from ..traffic import AbstractTraffic, Traffic
from ._matrix import BYTES_PER_ENTRY, MAX_BYTES, RoutingMatrix
from ._perflow import PerFlowBaseline, _check_routing, _dor_order

__all__ = ["PerFlowBaseline", "RoutingMatrix", "SparseMatrixBaseline", "routing_matrix", "scipy_serves", "BYTES_PER_ENTRY",
           "MAX_BYTES", "BATCH_POINTS", "BATCH_BUDGET", "METHODS", "strongest"]

Path = tuple[float, list[int]]

BATCH_POINTS = 512
"""Most points in one :meth:`SparseMatrixBaseline.apply_batch` product (on DF(4,8,4) 512 was as fast as 1,024 and
up to 1.3x faster than 128-256)."""
BATCH_BUDGET = 512 * 10**6
"""Bytes one batch may use when :meth:`SparseMatrixBaseline.batch_size` picks its size (512 MB)."""
BATCH_BYTES_PER_FLOW = 112
"""Peak bytes per (point, flow) of a batch: [point, flow] node pair, mask, point, bytes, router pair and column
(int64/float64, ~64), the COO triplet (24) and its CSC copy with SciPy's sort buffer (~24)."""
BATCH_BYTES_PER_LINK = 40
"""Peak bytes per (point, link) of a batch: the product's sparse column (12), its dense copy (8), the times and
the link-load copy (16), rounded up."""
METHODS = ("batched", "per point")
"""The ways :meth:`SparseMatrixBaseline.apply_batch` applies ``R`` (its ``method``); the bench times both on the same
points and keeps the faster per routing class (:func:`strongest`)."""


def strongest(seconds: dict[str, float]) -> str:
    """The method (a key of ``seconds``, e.g. :data:`METHODS`) with the fewest seconds: the strongest reference.

    Ties go to the first key in ``seconds``'s order; a method without a time (``nan`` or missing) never wins
    unless no method has one.
    """
    if not seconds:
        raise ValueError("no method timed")
    timed = {m: float(t) for m, t in seconds.items() if t is not None and not math.isnan(float(t))}
    if not timed:
        return next(iter(seconds))
    return min(timed, key=lambda m: timed[m])  # min keeps the first of equal keys


PAIR_TABLE_MAX = 2**22
"""A torus with at most this many router pairs gives its per-batch ``R`` one column per distinct pair (found with a
lookup table); a larger one (Mira: 2.4e9 pairs) one column per (point, flow)."""

# ======================================================================================
# SciPy sparse routing matrix
# ======================================================================================

_SCIPY = {"dor": "torus", "minimal": "dragonfly", "valiant": "dragonfly", "dmodk": "fat_tree", "ecmp_spray": "fat_tree"}
"""Routing kind -> the topology kind whose SciPy routing matrix :func:`routing_matrix` builds."""


def scipy_serves(topology: Topology, routing: Routing) -> bool:
    """Whether :func:`routing_matrix` builds a routing matrix for ``routing`` on ``topology``."""
    return _SCIPY.get(routing.kind) == topology.kind


def routing_matrix(topology: Topology, routing: Routing, max_bytes: float = MAX_BYTES):
    """The SciPy routing-matrix baseline of ``(topology, routing)``: :class:`SparseMatrixBaseline` (tori and
    Dragonflies) or :class:`~evaluator.bench._fat_tree_matrix.FatTreeMatrixBaseline` (fat trees), one
    interface."""
    if _SCIPY.get(routing.kind) == "fat_tree" and topology.kind == "fat_tree":
        from ._fat_tree_matrix import FatTreeMatrixBaseline

        _check_routing(topology, routing, "SciPy baseline")
        return FatTreeMatrixBaseline(topology, routing, max_bytes)
    return SparseMatrixBaseline(topology, routing, max_bytes)


class SparseMatrixBaseline(RoutingMatrix):
    """SciPy sparse routing matrix ``R`` with ``loads = R @ demand`` for one (topology, routing).

    Dragonfly (``minimal``, ``valiant``): ``R`` has one row per router link and
    one column per ordered router pair ``s * n_routers + d``; entry = expected
    fraction of the pair's bytes on the link (``1/m`` per parallel global link,
    ``1/((g-2) m^2)`` per Valiant route through intermediate group ``I``,
    copy ``c`` out and copy ``c'`` on). It is built once (:meth:`build`) and
    applied per point by :meth:`link_loads`: the flows' bytes summed per router
    pair (``unique`` or ``bincount``), ``R[:, used pairs] @ bytes`` (or ``R @
    demand`` when a quarter of the pairs or more are used), injection and
    ejection per node by ``bincount``.
    Dense rank-one traffic gives the demand ``outer(U, V)`` of the routers'
    summed weights.

    Torus (``dor``): ``R`` has one row per link (router links, injection,
    ejection) and one column per flow of the (traffic, placement) given to
    :meth:`build`; entry = fraction of the flow's bytes on the link (1 on its
    DOR path, 1/2 on each half of a split tie, 1 on its injection and
    ejection links). :meth:`link_loads` is ``R @ bytes``.

    Parameters
    ----------
    topology, routing
        A Dragonfly with ``minimal`` or ``valiant``, or a torus with ``dor``.
    max_bytes
        Largest estimated build (bytes); :meth:`build` refuses a larger one
        (and one above half the available memory) with a
        :class:`~evaluator.errors.ResourceError` before allocating.
    """

    def __init__(self, topology: Topology, routing: Routing, max_bytes: float = MAX_BYTES):
        _check_routing(topology, routing, "SciPy baseline")
        self.topology = topology
        self.routing = routing
        self.max_bytes = float(max_bytes)
        self.per_pair = isinstance(topology, DragonflyTopology)
        self.n_routers = int(topology.n_routers)
        self.n_nodes = int(topology.n_nodes)
        self.node_router = np.asarray(topology.node_router, dtype=np.int64)
        self.n_rl = int(topology.n_router_links)
        self.n_links = self.n_rl + 2 * self.n_nodes
        self.R = None  # scipy.sparse.csc_array once built
        self._R_rows = None  # a Dragonfly's R as a csr_array (apply_batch)
        self.last_build_s = 0.0  # apply_batch on a torus: seconds its last call spent building R
        # per topology, outside any per-point cost: the torus link lookup table
        self._table = None if self.per_pair else self._torus_link_table()
        self._built_for: tuple | None = None  # torus: (traffic, placement) the columns belong to
        self._flow_bytes: np.ndarray | None = None

    # ------------------------------------------------------------- estimate

    def estimate(self, traffic: AbstractTraffic | None = None,
                 placement: Placement | None = None) -> int:
        """Entries generated while building ``R`` (an upper bound of its non-zeros), from sizes alone.

        Dragonfly: intra-group pairs x 1 + inter-group pairs x ``m*3``
        (minimal) or ``(g-2)*m*(2+3m)`` (Valiant). Torus: per flow 2 + its
        DOR hops (a split tie counted twice), computed from the coordinates for
        a sparse traffic with a placement, from the senders' and receivers'
        coordinates per dimension for a dense one with a placement (never
        materialised here), or, without a placement, from the mean ring distance.
        """
        t = self.topology
        if self.per_pair:
            a, g, m = int(t.a), int(t.g), int(t.links_per_pair)
            intra = g * a * (a - 1)
            inter = g * a * (g - 1) * a
            per = 3 * m if self.routing.kind == "minimal" else (g - 2) * m * (2 + 3 * m)
            return int(intra + inter * per)
        dims, wrap = [int(n) for n in t.dims], [bool(w) for w in t.wrap]
        split = self.routing.tie == "split"
        if placement is not None and traffic.kernel_input == "dense":
            return 2 * int(traffic.n_flows) + self._dense_dor_count(traffic, placement)
        if placement is None or traffic.kernel_input != "flows":  # no flow list to walk (dense: never listed)
            mean = 0.0
            for n, w in zip(dims, wrap):  # mean ring distance over all coordinate pairs, ties twice
                d = np.arange(n)
                dist = np.minimum(d, n - d) if w else np.abs(d[:, None] - d[None, :]).ravel()
                if w and split and n > 2 and n % 2 == 0:
                    dist = np.where(d == n // 2, n, dist)
                mean += float(np.mean(dist))
            return int(math.ceil(traffic.n_flows * (2 + mean)))
        tn = np.asarray(placement.task_node)
        sr = self.node_router[tn[traffic.src]]
        dr = self.node_router[tn[traffic.dst]]
        return 2 * int(traffic.n_flows) + self._dor_count(sr, dr)

    def _dense_dor_count(self, traffic: AbstractTraffic, placement: Placement) -> int:
        """Router-link entries of the DOR paths of every (sending task, receiving task) pair of a dense traffic
        on ``placement``, a split tie counted twice (an upper bound: same-task pairs add 0): per dimension, the
        senders' and receivers' counts per coordinate and the ring distances between coordinates, ``S @ dist @
        D`` (never a flow list). The mean ring distance over all coordinate pairs, used before, counted the
        pairs at distance 0 among ``n_flows``: 1,200 entries for the 1,248 of a 4x4 torus's all-to-all."""
        t = self.topology
        n_tasks = int(traffic.n_tasks)
        coords = np.asarray(t.router_coords, np.int64)[self.node_router[np.asarray(placement.task_node, np.int64)]]
        sends = np.broadcast_to(np.asarray(traffic.src_weight), (n_tasks,)) > 0
        receives = np.broadcast_to(np.asarray(traffic.dst_weight), (n_tasks,)) > 0
        split = self.routing.tie == "split"
        total = 0
        for k, (n, w) in enumerate(zip([int(n) for n in t.dims], [bool(w) for w in t.wrap])):
            c = np.arange(n)
            if w:
                fwd = (c[None, :] - c[:, None]) % n
                dist = np.minimum(fwd, n - fwd)
                if split and n > 2:
                    dist = np.where(2 * fwd == n, n, dist)
            else:
                dist = np.abs(c[None, :] - c[:, None])
            S = np.bincount(coords[sends, k], minlength=n).astype(np.float64)
            D = np.bincount(coords[receives, k], minlength=n).astype(np.float64)
            total += int(round(float(S @ dist @ D)))
        return total

    # ---------------------------------------------------------------- build

    def build(self, traffic: AbstractTraffic | None = None, placement: Placement | None = None,
              check: bool = True) -> None:
        """Build ``R`` (Dragonfly: once, for every router pair; torus: for this traffic and placement).

        ``check``: refuse a matrix that would not fit (:meth:`check_size`) first; ``False`` where the caller
        has checked already (the bench, so that the estimate is not timed as part of the build).
        """
        import scipy.sparse as sp

        if self.per_pair and self.R is not None:
            return
        traffic_in = traffic
        if check:
            self.check_size(traffic, placement)
        if self.per_pair:
            rows, cols, vals = self._df_entries()
            shape = (self.n_rl, self.n_routers * self.n_routers)
        else:
            traffic = traffic.to_flows()
            rows, cols, vals = self._torus_entries(traffic, placement)
            shape = (self.n_links, int(traffic.n_flows))
            self._flow_bytes = np.asarray(traffic.nbytes, dtype=np.float64)
        self.R = sp.coo_array((vals, (rows, cols)), shape=shape).tocsc()
        self.R.sum_duplicates()
        # a Dragonfly's CSR copy for :meth:`apply_batch` (built once too)
        self._R_rows = self.R.tocsr() if self.per_pair else None
        self._built_for = None if self.per_pair else (traffic_in, placement)

    def release(self) -> None:
        """Drop ``R`` (a torus's, before the next point; a Dragonfly's is rebuilt on the next use)."""
        self.R = None
        self._R_rows = None
        self._built_for = None
        self._flow_bytes = None

    def _df_entries(self):
        """``(row, column, fraction)`` arrays of the Dragonfly routing matrix."""
        t = self.topology
        a, g, m = int(t.a), int(t.g), int(t.links_per_pair)
        NR = self.n_routers
        go = np.asarray(t.global_owner)
        gl = np.asarray(t.global_link)
        ll = np.asarray(t.local_link)
        rows, cols, vals = [], [], []

        def add(r, c, v):
            rows.append(np.asarray(r, np.int64).ravel())
            cols.append(np.asarray(c, np.int64).ravel())
            vals.append(np.broadcast_to(np.float64(v), rows[-1].shape))

        def minimal_leg(s, d, col, w):  # routers s, d in different groups; each copy with w / m
            S, D = s // a, d // a
            for c in range(m):
                o = go[S, D, c]  # index in S of the router owning copy c of S -> D
                x = go[D, S, c]  # index in D where it lands
                k = (s % a) != o
                add(ll[S[k], s[k] % a, o[k]], col[k], w / m)
                add(gl[S, D, c], col, w / m)
                k = x != (d % a)
                add(ll[D[k], x[k], d[k] % a], col[k], w / m)

        s = np.repeat(np.arange(NR), NR)
        d = np.tile(np.arange(NR), NR)
        col = s * NR + d
        same = (s // a) == (d // a)
        k = same & (s != d)
        add(ll[s[k] // a, s[k] % a, d[k] % a], col[k], 1.0)
        s, d, col = s[~same], d[~same], col[~same]
        if self.routing.kind == "minimal":
            minimal_leg(s, d, col, 1.0)
        else:
            w = 1.0 / ((g - 2) * m)  # per (intermediate group, copy out)
            S, D = s // a, d // a
            for I in range(g):
                k = (S != I) & (D != I)
                sI, dI, cI, SI = s[k], d[k], col[k], S[k]
                for c in range(m):
                    o = go[SI, I, c]
                    j = (sI % a) != o
                    add(ll[SI[j], sI[j] % a, o[j]], cI[j], w)
                    add(gl[SI, I, c], cI, w)
                    minimal_leg(I * a + go[I, SI, c], dI, cI, w)
        return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)

    def _torus_link_table(self) -> np.ndarray:
        """``[router, dim, 2]`` link id leaving each router in the +1 / -1 direction (-1: none)."""
        t = self.topology
        dims = np.asarray(t.dims, np.int64)
        wrap = np.asarray(t.wrap, bool)
        coords = np.asarray(t.router_coords, np.int64)
        src = np.asarray(t.link_src[: self.n_rl], np.int64)
        dst = np.asarray(t.link_dst[: self.n_rl], np.int64)
        cs, cd = coords[src], coords[dst]
        k = np.argmax(cs != cd, axis=1)
        lid = np.arange(self.n_rl)
        sk, dk, n = cs[lid, k], cd[lid, k], dims[k]
        plus = np.where(wrap[k], (sk + 1) % n == dk, dk == sk + 1)
        table = -np.ones((self.n_routers, dims.size, 2), np.int64)
        table[src, k, np.where(plus, 0, 1)] = lid
        for j in range(dims.size):
            if wrap[j] and dims[j] == 2:  # one link joins the two routers of a 2-ring
                table[:, j, 1] = table[:, j, 0]
        return table

    def _torus_entries(self, traffic: Traffic, placement: Placement):
        """``(row, column, fraction)`` arrays of the links x flows DOR matrix."""
        tn = np.asarray(placement.task_node, np.int64)
        sn, dn = tn[traffic.src], tn[traffic.dst]
        flow = np.flatnonzero(sn != dn)
        sn, dn = sn[flow], dn[flow]
        rows = [self.n_rl + sn, self.n_rl + self.n_nodes + dn]
        cols = [flow, flow]
        vals = [np.ones(flow.size), np.ones(flow.size)]
        self._dor_entries(self.node_router[sn], self.node_router[dn], flow, rows, cols, vals)
        return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)

    def _dor_entries(self, sr: np.ndarray, dr: np.ndarray, col: np.ndarray, rows: list, cols: list,
                     vals: list) -> None:
        """Append the router-link entries of the DOR paths from routers ``sr`` to routers ``dr`` (one per column
        ``col``) to ``rows``, ``cols``, ``vals``."""
        t = self.topology
        dims = [int(n) for n in t.dims]
        wrap = [bool(w) for w in t.wrap]
        split = self.routing.tie == "split"
        coords = np.asarray(t.router_coords, np.int64)
        strides = np.cumprod([1] + dims[::-1])[:-1][::-1].astype(np.int64)  # row-major router ids
        table = self._table
        flow = col
        pos = coords[sr]  # current router coordinate of every flow (a copy)
        dst = coords[dr]
        for k in _dor_order(dims, self.routing.order):
            mv = np.flatnonzero(pos[:, k] != dst[:, k])  # flows that travel along dimension k
            n, s, tk = dims[k], pos[mv, k], dst[mv, k]
            if wrap[k]:
                fwd = (tk - s) % n
                bwd = n - fwd
                tie = (fwd == bwd) & split & (n > 2)
                plus = (fwd < bwd) | ((fwd == bwd) & ~tie)
                moves = [(0, +1, plus, fwd, 1.0), (1, -1, bwd < fwd, bwd, 1.0), (0, +1, tie, fwd, 0.5),
                         (1, -1, tie, bwd, 0.5)]
            else:
                moves = [(0, +1, tk > s, tk - s, 1.0), (1, -1, tk < s, s - tk, 1.0)]
            base = pos[mv] @ strides - s * strides[k]  # router id with coordinate k zeroed
            for direction, step, sel, length, frac in moves:
                idx = np.flatnonzero(sel)
                if idx.size == 0:
                    continue
                L = length[idx]
                rep = np.repeat(idx, L)
                j = np.arange(rep.size) - np.repeat(np.cumsum(L) - L, L)  # hop number within the run
                router = base[rep] + ((s[rep] + step * j) % n) * strides[k]
                link = table[router, k, direction]
                if link.size and link.min() < 0:
                    raise AssertionError(f"DOR run in dimension {k} leaves the torus")
                rows.append(link)
                cols.append(flow[mv[rep]])
                vals.append(np.full(rep.size, frac))
            pos[mv, k] = tk

    # ---------------------------------------------------------------- apply

    def link_loads(self, traffic: AbstractTraffic, placement: Placement) -> LinkFloats:
        """Expected bytes on every link (router links, injection, ejection), shape [link].

        Builds ``R`` first if needed (a torus: when ``traffic``/``placement``
        are not the ones it was built for).
        """
        if not self.per_pair:
            if self._built_for is None or self._built_for[0] is not traffic or self._built_for[1] is not placement:
                self.build(traffic, placement)
            return self.R @ self._flow_bytes
        if self.R is None:
            self.build()
        NR, n_nodes, nr = self.n_routers, self.n_nodes, self.node_router
        tn = np.asarray(placement.task_node, np.int64)
        if traffic.kernel_input == "dense":  # the rank-one demand as a router-pair matrix (never a flow list)
            bpp = float(traffic.bytes_per_pair)
            U = np.bincount(tn, traffic.src_weight, n_nodes)
            V = np.bincount(tn, traffic.dst_weight, n_nodes)
            inj = bpp * U * (V.sum() - V)
            ej = bpp * V * (U.sum() - U)
            Ur, Vr = np.bincount(nr, U, NR), np.bincount(nr, V, NR)
            demand = bpp * np.outer(Ur, Vr)
            np.fill_diagonal(demand, 0.0)
            return np.concatenate([self.R @ demand.ravel(), inj, ej])
        sn, dn = tn[traffic.src], tn[traffic.dst]
        b = np.asarray(traffic.nbytes, np.float64)
        off = sn != dn
        sn, dn, b = sn[off], dn[off], b[off]
        inj = np.bincount(sn, b, n_nodes)
        ej = np.bincount(dn, b, n_nodes)
        col = nr[sn] * NR + nr[dn]  # same-router pairs hit an empty column
        return np.concatenate([self._pair_loads(col, b), inj, ej])

    def _pair_loads(self, col: np.ndarray, b: np.ndarray) -> np.ndarray:
        """A Dragonfly: router-link loads [router link] of ``b`` bytes on router-pair columns ``col`` (one point):
        the bytes summed per pair, then ``R[:, used pairs] @ demand`` (the whole ``R @ demand`` when a quarter of
        the pairs or more are used)."""
        n_cols = self.n_routers * self.n_routers
        if 8 * col.size < n_cols:  # few flows: sort them by pair
            used, inv = np.unique(col, return_inverse=True)
            demand = np.bincount(inv, b, used.size)
        else:
            demand = np.bincount(col, b, n_cols)
            used = np.flatnonzero(demand)
            if 4 * used.size >= n_cols:  # most pairs used: the whole product
                return self.R @ demand
            demand = demand[used]
        # only the used pairs' columns: cost proportional to their non-zeros
        return self.R[:, used] @ demand

    # -------------------------------------------------------------- batched

    def batch_bytes(self, traffic: AbstractTraffic, n_points: int) -> int:
        """Estimated peak bytes of :meth:`apply_batch` on ``n_points`` points at once, from sizes alone.

        Per point: sparse traffic ``BATCH_BYTES_PER_FLOW`` per flow (the stacked node, router-pair and point
        arrays, the COO triplets and their CSC copy), a dense one (Dragonfly) 16 bytes per router pair (the
        dense demand column and its product); ``BATCH_BYTES_PER_LINK`` per link (the product's sparse
        column, its dense copy, the times). A torus adds its per-batch ``R`` over the batch's router pairs
        (:attr:`bytes_per_entry` per entry, at most :meth:`estimate` per point) and, when it has few enough
        routers, the router-pair lookup table. A Dragonfly's ``R`` is built once and not counted here.
        """
        n = int(n_points)
        if traffic.kernel_input == "dense" and self.per_pair:
            per_point = 16 * self.n_routers ** 2
        else:
            per_point = BATCH_BYTES_PER_FLOW * int(traffic.n_flows)
        per_point += BATCH_BYTES_PER_LINK * self.n_links
        need = n * per_point
        if not self.per_pair:
            need += n * self.bytes_per_entry * self.estimate(traffic)
            if self.n_routers ** 2 <= PAIR_TABLE_MAX:
                need += 8 * self.n_routers ** 2
        return int(need)

    def batch_size(self, traffic: AbstractTraffic, n_points: int, batch_size: int | None = None) -> int:
        """Points per :meth:`apply_batch` product: ``batch_size`` when given, else the most (at most
        ``n_points`` and ``BATCH_POINTS``) within ``BATCH_BUDGET`` bytes (:meth:`batch_bytes`).

        A :class:`~evaluator.errors.ResourceError` before anything is allocated when the batch (or one point,
        without ``batch_size``) needs more than ``max_bytes`` or than half the available memory.
        """
        from ..errors import ResourceError, check_memory, fmt_size

        n_points = max(int(n_points), 1)
        if batch_size is None:
            per_point = max(self.batch_bytes(traffic, 1), 1)
            batch_size = max(1, min(n_points, BATCH_POINTS, int(min(BATCH_BUDGET, self.max_bytes) // per_point)))
        else:
            batch_size = min(int(batch_size), n_points)
            if batch_size < 1:
                raise ConfigError("bench.scipy_batch_size", batch_size, "a positive number of points")
        need = self.batch_bytes(traffic, batch_size)
        what = (f"a batch of {batch_size:,} points of the SciPy routing-matrix baseline ({self.routing.kind} on "
                f"{self.topology.name}, {traffic.n_flows:,} flows a point)")
        if need > self.max_bytes:
            raise ResourceError("bench.scipy_batch_size", batch_size,
                                f"a batch within {fmt_size(self.max_bytes)}: {what} needs about {fmt_size(need)}",
                                "Use fewer points per batch." if batch_size > 1 else None)
        check_memory("bench.scipy_batch_size", batch_size, need, what, fraction=0.5)
        return batch_size

    def apply_batch(self, traffic: AbstractTraffic, placements, batch_size: int | None = None,
                    keep_link_load: bool = False, method: str = "batched") -> dict[str, np.ndarray]:
        """The engine's per-point metrics of many placements of one traffic, applied ``method``'s way.

        ``method`` (:data:`METHODS`): ``"batched"`` (below) or ``"per point"``: a Dragonfly's points one at a time,
        as :meth:`link_loads` applies them (the point's bytes summed per router pair, ``R[:, used pairs] @
        bytes``, a CSC column slice and a mat-vec; dense traffic ``R @ outer(U, V)``), the demand arrays and the
        metrics still built for the batch at once; a torus's ``R`` links x flows built for each point
        (:meth:`build`, timed into ``last_build_s``), then ``R @ bytes``. Neither way wins everywhere, so the bench
        times both on the same points and keeps the faster per routing class (:func:`strongest`).

        Batched: for each batch (:meth:`batch_size` points; the size is checked before anything is allocated) the
        demand of every point is built at once, vectorised over points and flows, as ONE sparse matrix ``D``
        [column, point] in ``R``'s column space (router pairs: ``(task_node[:, src], task_node[:, dst])``
        stacked over the points; a same-node flow gets 0 bytes), then ``loads = R @ D``. Formats: ``R`` CSR
        (a CSR copy made once by :meth:`build`) and ``D`` CSR, converted from COO grouped by column with the
        points already in order, so only duplicate pairs are summed and nothing is sorted. Measured on
        DF(4,8,4) stencils, 64-256 points (Valiant's ``R`` has 7.0e6 entries, minimal's 1.9e5): 1.0-2.1x
        CSC ``R`` x CSC ``D`` (deduplicated through CSR, or sorted), 1.0-1.5x ``R[:, used pairs]`` x ``D[used]``
        (either format); a CSR ``D.T`` with duplicates left in, times ``R.T``, was up to 1.3x faster for minimal
        routing but 0.5-1.9x slower for Valiant; a dense ``D`` [pair, point] (69,696 x 256) was slower still
        (one pass over ``R``'s entries per point). Against the per-point :meth:`link_loads` (``R[:, used
        pairs] @ bytes``, a column copy and a CSC mat-vec, no metrics) the batch was 1.4x faster for minimal
        routing and 0.5-0.9x as fast for Valiant (SciPy's sparse-sparse product costs more per entry than
        its mat-vec, and passes over all of ``R``'s entries per product).

        Third ways tried for Valiant, 2026-11-28, on scenario 1's quick points (DF(4,8,4), 252 placements per
        class, a loaded 2-vCPU machine; the product alone, ``D`` prebuilt, best of 3; points/s, beta 8x8x4 /
        16x8x8): CSR ``R @ D`` (the batched way's product) 1,249 / 647; ``R`` restricted to the columns the
        batch's demand uses, ``R[:, used] @ D[used]``, CSR 1,094 / 411 and CSC 1,083 / 222; the transpose
        formulation ``D^T @ R^T`` (``R^T`` as CSR from ``R``'s CSC arrays, no copy; it never passes over the
        unused columns) 1,101 / 303; each non-zero of ``D`` expanded into its column of ``R`` and summed with one
        ``np.bincount`` 480 / 134. None beat the plain product, and the whole batched apply (1,215 / 578) lost to
        the per-point :meth:`link_loads` (1,975 / 666) on the same points, so the per-point way stays as the
        second method rather than a third one. (Minimal routing, same run: product 13,834 / 4,443, restricted
        7,751 / 1,702, transposed 6,595 / 1,901, expanded 5,065 / 1,438.)

        Injection and ejection are one ``bincount`` over (point, node). A Dragonfly's ``R`` (every router pair)
        is built once by :meth:`build`; a torus's per batch, over the router pairs the batch uses (distinct
        pairs, via a lookup table, when ``n_routers**2 <= PAIR_TABLE_MAX``, else one column per (point, flow)),
        its build timed into ``last_build_s`` (summed over the call's batches). Dense rank-one traffic on a
        Dragonfly gives a dense ``D`` (``outer(U, V)`` per point, never a flow list) times CSC ``R``; on a torus
        it is listed first (``to_flows``).

        Returns per point (arrays [point]): ``completion_time`` (s): the largest ``load / capacity`` over links,
        ``bottleneck_link`` (its first link; -1 when no bytes cross a link), ``mean_hops`` (router-link bytes
        over off-node bytes, 0 when none), and with ``keep_link_load`` ``link_load`` [point, link] (bytes).
        """
        if method not in METHODS:
            raise ConfigError("bench.scipy_method", method, f"one of {list(METHODS)}")
        placements = list(placements)
        tns = np.stack([np.asarray(p.task_node, np.int64) for p in placements])  # [point, task]
        torus_points = method == "per point" and not self.per_pair  # no batch: R built and applied per point
        size = None if torus_points else self.batch_size(traffic, tns.shape[0], batch_size)
        if not self.per_pair and traffic.kernel_input == "dense":
            traffic = traffic.to_flows()
        self.last_build_s = 0.0
        if torus_points:  # a torus: R (links x flows) built and applied per point (its size: check_size)
            parts = [self._torus_point(traffic, pl, keep_link_load) for pl in placements]
        else:
            parts = [self._apply_chunk(traffic, tns[i:i + size], keep_link_load, method)
                     for i in range(0, tns.shape[0], size)]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def _torus_point(self, traffic, placement: Placement, keep: bool) -> dict[str, np.ndarray]:
        """:meth:`apply_batch`'s per-point way on a torus, one point: ``R`` links x flows (:meth:`build`, timed
        into ``last_build_s``), ``R @ bytes``, the metrics."""
        t0 = time.perf_counter()
        self.build(traffic, placement, check=False)
        self.last_build_s += time.perf_counter() - t0
        loads = self.R @ self._flow_bytes
        n_rl, n_nodes = self.n_rl, self.n_nodes
        return self._metrics(loads[:n_rl, None], loads[None, n_rl:n_rl + n_nodes], loads[None, n_rl + n_nodes:], keep)

    def _apply_chunk(self, traffic, tn: np.ndarray, keep: bool, method: str = "batched") -> dict[str, np.ndarray]:
        """:meth:`apply_batch` of one batch; ``tn``: [point, task] nodes."""
        import scipy.sparse as sp

        P, n_nodes, nr, NR = tn.shape[0], self.n_nodes, self.node_router, self.n_routers
        per_point = method == "per point"
        if self.per_pair and self.R is None:
            self.build()
        if traffic.kernel_input == "dense" and per_point:  # a Dragonfly, one point at a time: R @ outer(U, V)
            bpp = float(traffic.bytes_per_pair)
            sw = np.asarray(traffic.src_weight, np.float64)
            dw = np.asarray(traffic.dst_weight, np.float64)
            rl, inj, ej = np.empty((self.n_rl, P)), np.empty((P, n_nodes)), np.empty((P, n_nodes))
            for p in range(P):
                U, V = np.bincount(tn[p], sw, n_nodes), np.bincount(tn[p], dw, n_nodes)
                inj[p], ej[p] = bpp * U * (V.sum() - V), bpp * V * (U.sum() - U)
                demand = bpp * np.outer(np.bincount(nr, U, NR), np.bincount(nr, V, NR))
                np.fill_diagonal(demand, 0.0)
                rl[:, p] = self.R @ demand.ravel()
        elif traffic.kernel_input == "dense":  # a Dragonfly: demand outer(U, V) per point, dense [pair, point]
            bpp = float(traffic.bytes_per_pair)
            at = (np.arange(P)[:, None] * n_nodes + tn).ravel()
            U = np.bincount(at, np.tile(np.asarray(traffic.src_weight, np.float64), P), P * n_nodes)
            V = np.bincount(at, np.tile(np.asarray(traffic.dst_weight, np.float64), P), P * n_nodes)
            U, V = U.reshape(P, n_nodes), V.reshape(P, n_nodes)
            inj = bpp * U * (V.sum(1, keepdims=True) - V)
            ej = bpp * V * (U.sum(1, keepdims=True) - U)
            at = (np.arange(P)[:, None] * NR + nr).ravel()
            Ur = np.bincount(at, U.ravel(), P * NR).reshape(P, NR)
            Vr = np.bincount(at, V.ravel(), P * NR).reshape(P, NR)
            demand = bpp * Ur[:, :, None] * Vr[:, None, :]
            demand[:, np.arange(NR), np.arange(NR)] = 0.0
            rl = np.asarray(self.R @ demand.reshape(P, NR * NR).T)  # [link, point]
        else:
            # [point * flow] arrays, point-major; int32 where the largest index fits
            it = np.int32 if max(NR * NR, P * n_nodes) < 2**31 else np.int64
            src, dst = np.asarray(traffic.src), np.asarray(traffic.dst)
            node = (tn + (np.arange(P) * n_nodes)[:, None]).astype(it)  # [point, task] (point, node) index
            sn, dn = np.take(node, src, axis=1).ravel(), np.take(node, dst, axis=1).ravel()
            b = np.tile(np.asarray(traffic.nbytes, np.float64), P) * (sn != dn)  # same node: 0 bytes
            inj = np.bincount(sn, b, P * n_nodes).reshape(P, n_nodes)
            ej = np.bincount(dn, b, P * n_nodes).reshape(P, n_nodes)
            router = nr.astype(it)[tn]  # [point, task]
            if self.per_pair:  # column s * NR + d (a same-router pair: an empty column)
                col = (np.take(router * it(NR), src, axis=1) + np.take(router, dst, axis=1)).ravel()
                R, n_cols = self._R_rows, NR * NR
            else:
                t0 = time.perf_counter()
                R, col, n_cols = self._pair_matrix(np.take(router, src, axis=1).ravel().astype(np.int64),
                                                   np.take(router, dst, axis=1).ravel().astype(np.int64))
                self.last_build_s += time.perf_counter() - t0
            if per_point:  # a Dragonfly, one point at a time: R[:, used pairs] @ bytes (CSC column slice, mat-vec)
                F = int(traffic.n_flows)
                rl = np.empty((self.n_rl, P))
                for p in range(P):
                    c, w = col[p * F:(p + 1) * F], b[p * F:(p + 1) * F]
                    off = w != 0  # same-node flows (0 bytes) left out, as link_loads does
                    rl[:, p] = self._pair_loads(c[off].astype(np.int64), w[off])
            else:
                point = np.repeat(np.arange(P, dtype=it), traffic.n_flows)
                # CSR [column, point]: grouped by column, points already in order, so only duplicates are summed
                D = sp.coo_array((b, (col, point)), shape=(n_cols, P)).tocsr()
                rl = (R @ D).toarray()  # [link, point]
        return self._metrics(rl, inj, ej, keep)

    def _metrics(self, rl: np.ndarray, inj: np.ndarray, ej: np.ndarray, keep: bool) -> dict[str, np.ndarray]:
        """The engine's metrics from router-link loads ``rl`` [router link, point] and injection and ejection loads
        ``inj``, ``ej`` [point, node] (bytes)."""
        P, n_nodes = inj.shape
        cap = np.asarray(self.topology.capacity, np.float64)
        times = np.concatenate([rl.T / cap[:self.n_rl], inj / cap[self.n_rl:self.n_rl + n_nodes],
                                ej / cap[self.n_rl + n_nodes:]], axis=1)  # [point, link]
        worst = np.argmax(times, axis=1)
        t = times[np.arange(P), worst]
        off_bytes = inj.sum(1)
        out = {"completion_time": t, "bottleneck_link": np.where(t > 0, worst, -1),
               "mean_hops": np.where(off_bytes > 0, rl.sum(0) / np.where(off_bytes > 0, off_bytes, 1.0), 0.0)}
        if keep:
            out["link_load"] = np.concatenate([rl.T, inj, ej], axis=1)
        return out

    def _pair_matrix(self, sr: np.ndarray, dr: np.ndarray):
        """A torus: ``(R, column of every flow, columns)``, ``R`` [router link, column] over the distinct pairs
        of routers ``sr`` -> ``dr`` (or one column per flow, ``PAIR_TABLE_MAX``; a same-router pair: an empty
        column); ``R`` is kept as ``self.R`` (its size checked first, from the pairs' DOR hop counts)."""
        import scipy.sparse as sp

        from ..errors import ResourceError, check_memory, fmt_size

        NR = self.n_routers
        if NR * NR <= PAIR_TABLE_MAX:  # distinct pairs (a same-router pair gets a column without entries)
            key = sr * NR + dr
            seen = np.zeros(NR * NR, bool)
            seen[key] = True
            used = np.flatnonzero(seen)
            col = (np.cumsum(seen) - 1)[key]
            us, ud = used // NR, used % NR
        else:  # one column per (point, flow): sorting to find repeated pairs costs more than they save
            us, ud, col = sr, dr, np.arange(sr.size)
        entries = self._dor_count(us, ud)
        need = self.bytes_per_entry * entries
        what = f"a SciPy routing matrix of {entries:.3g} entries ({self.routing.kind} on {self.topology.name})"
        if need > self.max_bytes:
            raise ResourceError("bench.scipy_baseline", self.topology.name,
                                f"a routing matrix within {fmt_size(self.max_bytes)}: {what} needs about "
                                f"{fmt_size(need)}")
        check_memory("bench.scipy_baseline", self.topology.name, need, what, fraction=0.5)
        rows, cols, vals = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0)]
        self._dor_entries(us, ud, np.arange(us.size), rows, cols, vals)
        R = sp.coo_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(self.n_rl, us.size)).tocsr()
        self.R = R
        self._built_for = None
        return R, col, us.size

    def _dor_count(self, sr: np.ndarray, dr: np.ndarray) -> int:
        """Router-link entries of the DOR paths ``sr`` -> ``dr`` (a split tie counted twice)."""
        t = self.topology
        coords = np.asarray(t.router_coords)
        split = self.routing.tie == "split"
        total = 0
        for k, (n, w) in enumerate(zip([int(n) for n in t.dims], [bool(w) for w in t.wrap])):
            s, d = coords[sr, k], coords[dr, k]
            if w:
                fwd = (d - s) % n
                hops = np.minimum(fwd, n - fwd)
                if split and n > 2:
                    hops = np.where(2 * fwd == n, n, hops)
            else:
                hops = np.abs(d - s)
            total += int(hops.sum())
        return total
