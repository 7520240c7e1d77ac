"""Routing: maps router-to-router demand to the expected bytes on every link.

A routing is described by a small :class:`Routing` spec (what the user
chooses) and compiled on the host, once per topology, into a
:class:`RoutingOperator`: small NumPy tables plus two pure, jit-compatible
functions for ONE design point,

* ``apply(tables, src_router, dst_router, weight)``: router-level flows
  (sparse traffic) -> router-link loads;
* ``apply_dense(tables, u, v)``: the dense rank-one router demand
  ``u[s] * v[d]`` for every ordered pair ``s != d`` (all-to-all,
  many-to-many; see :mod:`evaluator.structured`) -> router-link loads.

Neither builds a router-pair matrix: the cost is linear in the flows and the
links (tori), or in flows plus routers x groups (Dragonflies), so the same
code serves a 16-node test torus and the 49,152-node Mira.

Randomised choices (tie splitting, Valiant intermediates, several parallel
global links) contribute their expectation, not a sample. Every load is a
sum of non-negative terms except two exact-in-expectation differences in
Valiant (``out - to_group``), whose rounding is bounded by one ulp of a
router's total.

Supported routings
------------------
* ``dor``: torus dimension-order routing. Dimensions are travelled in
  ``order`` ("as_given", "longest_first" — the Blue Gene/Q rule, a stable
  sort by size, largest first — or an explicit permutation). Wrapped
  dimensions go the shortest way round; a tie at exactly half a ring is
  split evenly between both directions (``tie="split"``) or sent in the
  positive direction (``tie="positive"``). Mesh dimensions go straight.
* ``minimal``: Dragonfly local-global-local routing. Traffic between two
  groups is split evenly over their parallel global links.
* ``valiant``: Dragonfly Valiant routing [Kim 2008], Prisacari Eq. (3):
  inter-group traffic goes minimally to an intermediate group chosen
  uniformly among the ``g-2`` others (to the router where the global link
  lands), then minimally on to the destination. Intra-group traffic stays
  minimal.

How the torus operator works
----------------------------
Under DOR a route travels dimension ``k`` along one ring (the coordinates of
the dimensions before ``k`` in the order are the destination's, the others
the source's) as one *run*: a start router, a direction and a length. The
kernel histograms the runs by ``(start router, length)`` per (dimension,
direction) — one scatter entry per flow and dimension, two for a split
tie — then a suffix sum over the length and ``H`` shifted adds along the
ring (``H`` = longest run) turn the histogram into link loads: cost
``O(flows x dims + links x H)``, independent of the route lengths, and every
step adds non-negative numbers only (no prefix-sum cancellation).

Dense rank-one demand factorises per dimension: the load on a dimension-``k``
link is ``sum_{s_k, t_k} M[x_k, s_k, t_k] U_k[.., s_k] V_k[.., t_k]`` where
``U_k`` sums ``u`` over the dimensions travelled before ``k``, ``V_k`` sums
``v`` over those after, and ``M`` is the 1-D ring crossing tensor: cost
``O(routers x n_k)`` per dimension, near-linear in N.

How the Dragonfly operator works
--------------------------------
Minimal routes are aggregated, never enumerated per router pair: each flow
adds its bytes to four small arrays, ``A[router, exit router]`` (first
local hop towards the owner of the global link), ``B[router, router]``
(intra-group), ``C[router, landing router]`` (last local hop) and
``GG[group, group]`` (global links); static gathers map them to the links.
Valiant is exact by the same aggregates, not by sampling intermediates:
leg one from router ``s`` towards every intermediate group uses
``(out[s] * own_count - A) / (g - 2)``; at an intermediate group ``I`` the
bytes landing on router ``x`` and leaving through router ``o`` are the block
sum of ``GG`` over the groups landing on ``x`` and the groups owned by
``o``, over ``g - 2``; the last hop is ``(land_count * in[d] - C) / (g -
2)``. For dense rank-one traffic ``GG`` is rank one and the block sum
factorises, which keeps the cost near-linear in the machine size.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

import jax.numpy as jnp
import numpy as np

from ._ops import segment_add, take
from .errors import ConfigError, require
from .topology import DragonflyTopology, Topology, TorusTopology

__all__ = ["Routing", "RoutingOperator", "dor", "minimal", "valiant", "build_routing", "ROUTING_KINDS"]

ROUTING_KINDS = {"torus": ("dor",), "dragonfly": ("minimal", "valiant")}
DOR_ORDERS = ("as_given", "longest_first")
TIE_RULES = ("split", "positive")


@dataclasses.dataclass(frozen=True)
class Routing:
    """A routing choice.

    Attributes
    ----------
    kind
        ``"dor"`` (torus), ``"minimal"`` or ``"valiant"`` (Dragonfly).
    order
        DOR only: ``"as_given"``, ``"longest_first"`` or a permutation of the
        dimensions.
    tie
        DOR only: ``"split"`` (half each way) or ``"positive"``.
    """

    kind: str
    order: str | tuple[int, ...] = "as_given"
    tie: str = "split"

    @property
    def label(self) -> str:
        if self.kind == "dor":
            order = self.order if isinstance(self.order, str) else "".join(map(str, self.order))
            return f"dor-{order}-{self.tie}"
        return self.kind


def dor(order: str | Sequence[int] = "as_given", tie: str = "split") -> Routing:
    """Torus dimension-order routing (see module docstring)."""
    if not isinstance(order, str):
        order = tuple(int(o) for o in order)
    else:
        require(order in DOR_ORDERS, "routing.order", order, f"one of {list(DOR_ORDERS)} or a list of dimensions")
    require(tie in TIE_RULES, "routing.tie", tie, f"one of {list(TIE_RULES)}")
    return Routing("dor", order, tie)


def minimal() -> Routing:
    """Dragonfly minimal (local-global-local) routing."""
    return Routing("minimal")


def valiant() -> Routing:
    """Dragonfly Valiant routing through a uniformly chosen intermediate group."""
    return Routing("valiant")


@dataclasses.dataclass(frozen=True, eq=False)
class RoutingOperator:
    """A routing compiled for one topology.

    ``tables`` are NumPy arrays (moved to the device once by the caller).
    ``apply(tables, src_router, dst_router, weight)`` maps router-level flows
    (``Int[Array, "flow"]`` twice and ``Float[Array, "flow"]`` bytes; a flow
    with ``src == dst`` must carry weight 0) to the router-link loads
    ``Float[Array, "router_link"]`` (bytes). With ``extra=(idx, w, size)``
    it also sums ``w`` into ``size`` bins by ``idx`` in the same scatter and
    returns ``(router_loads, sums)`` (the kernel's injection/ejection loads). ``apply_dense(tables, u, v)``
    maps the dense demand ``u[s] * v[d]`` (bytes, every ordered router pair
    ``s != d``; ``u, v: Float[Array, "router"]``) to the same. Both are pure
    and written for one design point; static sizes are bound in closures.
    ``nnz`` is the number of table entries (a size indicator).
    """

    routing: Routing
    topology_name: str
    tables: dict[str, np.ndarray]
    apply: Callable
    apply_dense: Callable
    nnz: int


# --------------------------------------------------------------------------------------
# Torus DOR
# --------------------------------------------------------------------------------------


def dor_order(topo: TorusTopology, order) -> tuple[int, ...]:
    """Resolve a DOR order spec to a permutation of the dimensions."""
    nd = topo.ndim
    if order == "as_given":
        return tuple(range(nd))
    if order == "longest_first":
        return tuple(sorted(range(nd), key=lambda k: -topo.dims[k]))
    perm = tuple(order)
    require(sorted(perm) == list(range(nd)), "routing.order", list(perm),
            f"'as_given', 'longest_first' or a permutation of 0..{nd - 1}")
    return perm


@dataclasses.dataclass(frozen=True)
class _Segment:
    """Links of one (dimension, direction): one per router (the link leaving it), -1 where none."""

    dim: int
    direction: int  # 0: +1, 1: -1
    max_run: int  # longest run (hops) a route makes in this dimension and direction


def _torus_segments(topo: TorusTopology) -> list[_Segment]:
    segs = []
    for k, n in enumerate(topo.dims):
        if n == 1:
            continue
        if topo.wrap[k]:
            if n == 2:  # one link each way between the two routers: always "positive"
                segs.append(_Segment(k, 0, 1))
            else:
                segs += [_Segment(k, 0, n // 2), _Segment(k, 1, n // 2)]
        else:
            segs += [_Segment(k, 0, n - 1), _Segment(k, 1, n - 1)]
    return segs


def _crossing_tensor(n: int, wrap: bool, direction: int, tie: str) -> np.ndarray:
    """``M[x, s, t]``: probability that the 1-D route ``s -> t`` uses the link leaving ``x`` in ``direction``."""
    M = np.zeros((n, n, n))
    for s in range(n):
        for t in range(n):
            if s == t:
                continue
            if wrap:
                fwd = (t - s) % n
                bwd = n - fwd
                if n == 2:
                    runs = [(+1, 1, 1.0)]
                elif fwd < bwd:
                    runs = [(+1, fwd, 1.0)]
                elif bwd < fwd:
                    runs = [(-1, bwd, 1.0)]
                elif tie == "split":
                    runs = [(+1, fwd, 0.5), (-1, bwd, 0.5)]
                else:
                    runs = [(+1, fwd, 1.0)]
            else:
                runs = [(+1 if t > s else -1, abs(t - s), 1.0)]
            for step, hops, prob in runs:
                if (step == +1) != (direction == 0):
                    continue
                for j in range(hops):
                    M[(s + step * j) % n, s, t] += prob
    return M


def _build_dor(topo: TorusTopology, routing: Routing) -> RoutingOperator:
    order = dor_order(topo, routing.order)
    dims = tuple(int(n) for n in topo.dims)
    wrap = tuple(bool(w) for w in topo.wrap)
    R = topo.n_routers
    nd = len(dims)
    split = routing.tie == "split"
    strides = tuple(int(np.prod(dims[k + 1:], dtype=np.int64)) for k in range(nd))
    segs = _torus_segments(topo)
    seg_index = {(s.dim, s.direction): i for i, s in enumerate(segs)}
    hist_off, off = [], 0
    for s in segs:
        hist_off.append(off)
        off += R * s.max_run
    hist_size = max(off, 1)

    # Router link l leaves router r in (dim, direction): its load is slot seg * R + r.
    slot = -np.ones(topo.n_router_links, dtype=np.int64)
    nb = np.asarray(topo.neighbor_link)
    for i, s in enumerate(segs):
        lk = nb[:, s.dim, s.direction]
        r = np.nonzero(lk >= 0)[0]
        slot[lk[r]] = i * R + r
    assert (slot >= 0).all(), "torus link not covered by a (dimension, direction) segment"
    tables: dict[str, np.ndarray] = {"slot": slot.astype(np.int32)}
    for i, s in enumerate(segs):
        tables[f"cross{i}"] = _crossing_tensor(dims[s.dim], wrap[s.dim], s.direction, routing.tie)

    def coord(r, k):
        return (r // strides[k]) % dims[k]

    def loads_from_segments(tables, per_seg):
        if not segs:
            return jnp.zeros(topo.n_router_links)
        return jnp.concatenate(per_seg)[tables["slot"]]

    def apply(tables, src, dst, weight, extra=None):
        """Router-link loads of router-level flows (one design point); see :class:`RoutingOperator`."""
        if not segs:
            loads = jnp.zeros(topo.n_router_links)
            return loads if extra is None else (loads, segment_add(extra[1], extra[0], extra[2]))
        src = src.astype(jnp.int32)
        dst = dst.astype(jnp.int32)
        idx_parts, w_parts = [], []
        done = jnp.zeros_like(src)  # sum over dims already travelled of dst_k * stride_k
        rest = src  # router id with the travelled dims still at the source's coordinates
        for k in order:
            n = dims[k]
            s = coord(src, k)
            t = coord(dst, k)
            base = rest - s * strides[k] + done  # router id of the ring position 0
            start = base + s * strides[k]  # = the current router when dim k starts
            if n == 1:
                continue
            if wrap[k] and n == 2:
                i = seg_index[(k, 0)]
                idx_parts.append(hist_off[i] + start)  # max_run 1: length index 0
                w_parts.append(jnp.where(s != t, weight, 0.0))
            elif wrap[k]:
                fwd = (t - s) % n
                bwd = (n - fwd) % n
                go_pos = fwd <= bwd
                hops = jnp.where(go_pos, fwd, bwd)
                tie = (fwd == bwd) & (fwd > 0)
                H = n // 2
                ip, ineg = seg_index[(k, 0)], seg_index[(k, 1)]
                seg_off = jnp.where(go_pos, hist_off[ip], hist_off[ineg])
                w_main = jnp.where(tie, weight * 0.5, weight) if split else weight
                idx_parts.append(seg_off + start * H + jnp.maximum(hops - 1, 0))
                w_parts.append(jnp.where(hops > 0, w_main, 0.0))
                if split and n % 2 == 0:
                    idx_parts.append(hist_off[ineg] + start * H + (H - 1))
                    w_parts.append(jnp.where(tie, weight * 0.5, 0.0))
            else:
                go_pos = t > s
                hops = jnp.abs(t - s)
                H = n - 1
                ip, ineg = seg_index[(k, 0)], seg_index[(k, 1)]
                seg_off = jnp.where(go_pos, hist_off[ip], hist_off[ineg])
                idx_parts.append(seg_off + start * H + jnp.maximum(hops - 1, 0))
                w_parts.append(jnp.where(hops > 0, weight, 0.0))
            done = done + t * strides[k]
            rest = rest - s * strides[k]
        if extra is not None:
            idx_parts.append(extra[0] + hist_size)
            w_parts.append(extra[1])
        buf = segment_add(jnp.concatenate(w_parts), jnp.concatenate(idx_parts),
                          hist_size + (0 if extra is None else extra[2]))
        hist = buf[:hist_size]
        per_seg = []
        for i, sg in enumerate(segs):
            H = sg.max_run
            h = hist[hist_off[i]: hist_off[i] + R * H].reshape(R, H)
            # covers[r, j]: bytes of runs starting at r that are longer than j hops.
            covers = jnp.flip(jnp.cumsum(jnp.flip(h, axis=1), axis=1), axis=1)
            step = 1 if sg.direction == 0 else -1
            load = jnp.zeros(dims)
            for j in range(H):
                # the link leaving x is hop j of a run that started j positions back
                load = load + jnp.roll(covers[:, j].reshape(dims), step * j, axis=sg.dim)
            per_seg.append(load.reshape(R))
        loads = loads_from_segments(tables, per_seg)
        return loads if extra is None else (loads, buf[hist_size:])

    def apply_dense(tables, u, v):
        """Router-link loads of the demand ``u[s] v[d]`` over ordered router pairs (one design point)."""
        if not segs:
            return jnp.zeros(topo.n_router_links)
        U = u.reshape(dims)
        V = v.reshape(dims)
        per_seg = []
        for i, sg in enumerate(segs):
            k = sg.dim
            pos = order.index(k)
            before, after = order[:pos], order[pos + 1:]
            Uk = U.sum(axis=tuple(before), keepdims=True) if before else U
            Vk = V.sum(axis=tuple(after), keepdims=True) if after else V
            Uk = jnp.moveaxis(Uk, k, -1)
            Vk = jnp.moveaxis(Vk, k, -1)
            M = tables[f"cross{i}"]
            W = jnp.einsum("...t,xst->...xs", Vk, M)  # [.. after dims 1 .., x, s]
            load = (W * Uk[..., None, :]).sum(-1)  # broadcast over the before/after dims
            per_seg.append(jnp.moveaxis(load, -1, k).reshape(R))
        return loads_from_segments(tables, per_seg)

    nnz = int(sum(t.size for t in tables.values()))
    return RoutingOperator(routing, topo.name, tables, apply, apply_dense, nnz)


# --------------------------------------------------------------------------------------
# Dragonfly
# --------------------------------------------------------------------------------------


def _dragonfly_tables(topo: DragonflyTopology) -> dict[str, np.ndarray]:
    """Static tables of a Dragonfly's minimal routes (host side).

    * ``exit_land[S*g + D, c] = own * a + land``: index ``own`` in group ``S`` of
      the router owning copy ``c`` of the global link ``S -> D`` and index
      ``land`` in ``D`` of the router where it lands (0 on the diagonal);
    * ``own[S, D, o]``: fraction of ``S``'s traffic to ``D`` that leaves through
      router ``o`` of ``S`` (``1/m`` per parallel link); ``land[D, x, S]``: the
      fraction that lands on router ``x`` of ``D``;
    * ``own_count[S, o] = sum_D own[S, D, o]``, ``land_count[D, x] = sum_S land[D, x, S]``;
    * ``src_idx``/``src_w`` ``[G*a + r, k]``: the groups ``S`` whose traffic to ``G``
      lands on router ``r`` and the fraction ``land[G, r, S]``; ``dst_idx``/``dst_w``:
      the groups ``D`` that ``G`` reaches through router ``r`` and ``own[G, D, r]``;
      ``src_pair = G*g + src_idx`` indexes ``own_rows = own.reshape(g*g, a)``;
    * ``mid_idx``/``mid_w`` ``[I*a + x, o, k]``: flat ``(I*a + o)*g + S`` and weight
      ``land[I, x, S]`` of the groups ``S`` whose Valiant traffic through
      intermediate group ``I`` lands on ``x`` (to combine per-exit rows of ``GG^T``);
    * ``local_idx``: flat ``i*a + j`` of local link ``i -> j``, in link order per group;
    * ``global_pair``: flat ``S*g + D`` of every global link, in link order.
    """
    a, g, m = topo.a, topo.g, topo.links_per_pair
    go = np.asarray(topo.global_owner)
    own = np.zeros((g, g, a))
    land = np.zeros((g, a, g))
    own_idx = np.zeros((g * g, m), np.int32)
    land_idx = np.zeros((g * g, m), np.int32)
    S, D = np.nonzero(~np.eye(g, dtype=bool))
    for c in range(m):
        np.add.at(own, (S, D, go[S, D, c]), 1.0 / m)
        np.add.at(land, (D, go[D, S, c], S), 1.0 / m)
        own_idx[S * g + D, c] = go[S, D, c]
        land_idx[S * g + D, c] = go[D, S, c]
    # Per router (G, r): the groups whose traffic lands on it / leaves through it, with fractions.
    src_lists = [[np.nonzero(land[G, r])[0] for r in range(a)] for G in range(g)]
    dst_lists = [[np.nonzero(own[G, :, r])[0] for r in range(a)] for G in range(g)]
    h_max = max(1, max(len(x) for row in src_lists + dst_lists for x in row))
    src_idx = np.zeros((g * a, h_max), np.int32)
    src_w = np.zeros((g * a, h_max))
    dst_idx = np.zeros((g * a, h_max), np.int32)
    dst_w = np.zeros((g * a, h_max))
    for G in range(g):
        for r in range(a):
            Ss, Ds = src_lists[G][r], dst_lists[G][r]
            src_idx[G * a + r, : Ss.size] = Ss
            src_w[G * a + r, : Ss.size] = land[G, r, Ss]
            dst_idx[G * a + r, : Ds.size] = Ds
            dst_w[G * a + r, : Ds.size] = own[G, Ds, r]
    # Valiant, phase two at intermediate I: via_row[I*a + o, S] = sum_D own[I, D, o] GG[S, D] (rows of GG^T
    # gathered whole), then mid[I, x, o] = sum_S land[I, x, S] via_row[I*a + o, S].
    mid_idx = ((np.arange(g).repeat(a)[:, None, None] * a + np.arange(a)[None, :, None]) * g
               + src_idx[:, None, :]).astype(np.int32)  # [I*a + x, o, k]
    mid_w = np.broadcast_to(src_w[:, None, :], mid_idx.shape).copy()
    # own[I, S, :] rows of the groups landing on (I, x), flat index I*g + S (dense rank-one Valiant)
    src_pair = (np.arange(g).repeat(a)[:, None] * g + src_idx).astype(np.int32)
    i, j = np.nonzero(~np.eye(a, dtype=bool))
    local_idx = i * a + j
    n_local = g * a * (a - 1)
    ll = np.asarray(topo.local_link)
    assert (ll[:, i, j].reshape(-1) == np.arange(n_local)).all(), "local links not in (group, i, j) order"
    n_global = topo.n_router_links - n_local
    global_pair = np.zeros(n_global, dtype=np.int32)
    gl = np.asarray(topo.global_link)
    G_, H_, C_ = np.nonzero(gl >= 0)
    global_pair[gl[G_, H_, C_] - n_local] = G_ * g + H_
    return {"exit_land": own_idx * a + land_idx, "own_count": own.sum(1), "land_count": land.sum(2),
            "src_idx": src_idx, "src_w": src_w, "dst_idx": dst_idx, "dst_w": dst_w, "src_pair": src_pair,
            "own_rows": own.reshape(g * g, a), "mid_idx": mid_idx, "mid_w": mid_w,
            "local_idx": local_idx.astype(np.int32), "global_pair": global_pair}


def _build_dragonfly(topo: DragonflyTopology, routing: Routing) -> RoutingOperator:
    R, a, g, m = topo.n_routers, topo.a, topo.g, topo.links_per_pair
    is_valiant = routing.kind == "valiant"
    if is_valiant:
        require(g >= 3, "routing.kind", "valiant", "'minimal' on a Dragonfly with fewer than 3 groups",
                f"Valiant needs an intermediate group other than source and destination; g = {g}.")
    tables = _dragonfly_tables(topo)
    if not is_valiant:
        for k in ("own_count", "land_count", "src_pair", "own_rows", "mid_idx", "mid_w"):
            del tables[k]
    off_group = ~np.eye(g, dtype=bool)
    # Aggregates of one point, in one flat buffer (see `route`).
    OFF_A, OFF_B, OFF_C, OFF_G = 0, R * a, 2 * R * a, 3 * R * a
    SIZE = 3 * R * a + g * g

    def local_and_global(tables, local, GG):
        """Router-link loads from ``local[G, i, j]`` (bytes on link i -> j of group G) and group-pair bytes."""
        loc = take(local.reshape(g, a * a), tables["local_idx"], axis=1).reshape(-1)
        glob = take(GG.reshape(-1), tables["global_pair"]) * (1.0 / m)
        return jnp.concatenate([loc, glob])

    def route(tables, A, B, C, GG, mid=None):
        """Router-link loads from the aggregates of one point.

        ``A[S, i, o]``: inter-group bytes leaving router ``(S, i)`` that exit
        ``S`` through router ``o`` (``o == i``: no local hop); ``B[S, i, j]``:
        intra-group bytes ``(S, i) -> (S, j)``; ``C[D, j, x]``: inter-group bytes
        for router ``(D, j)`` that land on router ``x`` of ``D``; ``GG[S, D]``:
        inter-group bytes (zero diagonal). ``mid[I, x, o]`` (Valiant only,
        optional): bytes landing on router ``x`` of intermediate group ``I``
        that leave it through router ``o``, if the caller has them cheaper.
        """
        if not is_valiant:
            return local_and_global(tables, A + B + jnp.swapaxes(C, 1, 2), GG)
        inv = 1.0 / (g - 2)
        mask = jnp.asarray(off_group)
        out = A.sum(2, keepdims=True)  # [S, i, 1] inter-group bytes leaving (S, i)
        inn = C.sum(2, keepdims=True)  # [D, j, 1] inter-group bytes arriving for (D, j)
        # leg one towards every intermediate I != S, D: first local hop and the global link S -> I
        leg1 = jnp.maximum(tables["own_count"][:, None, :] * out - A, 0.0) * inv
        row = GG.sum(1, keepdims=True)
        col = GG.sum(0, keepdims=True)
        glob = jnp.where(mask, jnp.maximum(row - GG, 0.0) + jnp.maximum(col - GG, 0.0), 0.0) * inv
        # at I: lands on x from S, leaves via o towards D; then I -> D; then the last local hop in D
        if mid is None:
            via_row = (take(GG.T, tables["dst_idx"]) * tables["dst_w"][:, :, None]).sum(1)  # [I*a + o, S]
            mid = (take(via_row.reshape(-1), tables["mid_idx"]) * tables["mid_w"]).sum(2).reshape(g, a, a)
        mid = mid * inv
        last = jnp.maximum(tables["land_count"][:, None, :] * inn - C, 0.0) * inv  # [D, j, x]
        return local_and_global(tables, leg1 + mid + B + jnp.swapaxes(last, 1, 2), glob)

    def apply(tables, src, dst, weight, extra=None):
        src = src.astype(jnp.int32)
        dst = dst.astype(jnp.int32)
        Gs, Gd = src // a, dst // a
        j = dst - Gd * a
        inter = Gs != Gd
        w_inter = jnp.where(inter, weight, 0.0)
        pair = Gs * g + Gd
        idx, w = [], []
        for c in range(m):
            exit_land = take(tables["exit_land"][:, c], pair)
            own, land = exit_land // a, exit_land % a
            idx.append(jnp.where(inter, OFF_A + src * a + own, OFF_B + src * a + j))
            w.append(jnp.where(inter, weight * (1.0 / m), weight if c == 0 else 0.0))
            idx.append(OFF_C + dst * a + land)
            w.append(w_inter * (1.0 / m))
        idx.append(OFF_G + pair)
        w.append(w_inter)
        if extra is not None:
            idx.append(extra[0] + SIZE)
            w.append(extra[1])
        buf = segment_add(jnp.concatenate(w), jnp.concatenate(idx), SIZE + (0 if extra is None else extra[2]))
        A = buf[OFF_A:OFF_B].reshape(g, a, a)
        B = buf[OFF_B:OFF_C].reshape(g, a, a)
        C = buf[OFF_C:OFF_G].reshape(g, a, a)
        GG = buf[OFF_G:SIZE].reshape(g, g)
        loads = route(tables, A, B, C, GG)
        return loads if extra is None else (loads, buf[SIZE:])

    def apply_dense(tables, u, v):
        mask = jnp.asarray(off_group)
        U = u.reshape(g, a)
        V = v.reshape(g, a)
        Ug, Vg = U.sum(1), V.sum(1)
        GG = jnp.where(mask, Ug[:, None] * Vg[None, :], 0.0)
        exit_via = (take(Vg, tables["dst_idx"]) * tables["dst_w"]).sum(1).reshape(g, a)  # [S, o]
        land_on = (take(Ug, tables["src_idx"]) * tables["src_w"]).sum(1).reshape(g, a)  # [D, x]
        A = U[:, :, None] * exit_via[:, None, :]
        B = U[:, :, None] * V[:, None, :]
        C = V[:, :, None] * land_on[:, None, :]
        mid = None
        if is_valiant:
            # GG = Ug Vg^T off the diagonal: the phase-two sum factorises, minus the S == D terms.
            UV = Ug * Vg
            diag = (take(UV, tables["src_idx"]) * tables["src_w"])[:, :, None] * take(tables["own_rows"],
                                                                                    tables["src_pair"])
            mid = jnp.maximum(land_on[:, :, None] * exit_via[:, None, :] - diag.sum(1).reshape(g, a, a), 0.0)
        return route(tables, A, B, C, GG, mid)

    nnz = int(sum(t.size for t in tables.values()))
    return RoutingOperator(routing, topo.name, tables, apply, apply_dense, nnz)


# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def _cached_build(topo: Topology, routing: Routing) -> RoutingOperator:
    # Topology compares and hashes by identity (eq=False), so the cache is per topology object.
    if routing.kind == "dor":
        return _build_dor(topo, routing)  # type: ignore[arg-type]
    return _build_dragonfly(topo, routing)  # type: ignore[arg-type]


def build_routing(topology: Topology, routing: Routing) -> RoutingOperator:
    """Compile ``routing`` for ``topology`` on the host (cached per topology object)."""
    allowed = ROUTING_KINDS[topology.kind]
    if routing.kind not in allowed:
        raise ConfigError("routing.kind", routing.kind, f"one of {list(allowed)} on a {topology.kind}",
                          "Pick a routing group that matches the topology.")
    return _cached_build(topology, routing)
