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
Minimal routes are aggregated by groups: the first local hop and the global
link depend only on (source router, destination group), the last local hop
only on (source group, destination router). Flows are summed into
``RG[router, group]``, ``GR[group, router]`` and intra-group ``[group, a,
a]`` demand; two batched ``a x g`` by ``g x a`` products with the
ownership/landing tables give the local loads, group sums the global loads.
Valiant is exact by the same aggregation: leg one is ``(out[s] - RG[s, I]) /
(g - 2)`` towards every intermediate group ``I``; at the intermediate group
the demand landing on router ``x`` towards group ``D`` is ``sum_S B[x, S]
GG[S, D] / (g - 2)`` (``B`` the landing fractions), and the demand arriving
in ``D`` from ``I`` for router ``d`` is ``(sum_S GR[S, d] - GR[I, d]) / (g -
2)``; those are routed by the same minimal tables.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

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
    ``Float[Array, "router_link"]`` (bytes). ``apply_dense(tables, u, v)``
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

    def apply(tables, src, dst, weight):
        """Router-link loads of router-level flows (one design point)."""
        if not segs:
            return jnp.zeros(topo.n_router_links)
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
        hist = jax.ops.segment_sum(jnp.concatenate(w_parts), jnp.concatenate(idx_parts), num_segments=hist_size)
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
        return loads_from_segments(tables, per_seg)

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
    """Ownership (``own``), landing (``land``) and link-gather tables of a Dragonfly.

    * ``own[S, D, o]``: fraction of group ``S``'s traffic to group ``D`` that
      leaves through router ``o`` of ``S`` (``1/m`` per parallel link);
    * ``land[D, x, S]``: fraction of group ``S``'s traffic to ``D`` that lands
      on router ``x`` of ``D``;
    * ``local_idx``: flat ``i * a + j`` of the local link ``i -> j`` in the
      order of the topology's local links (per group);
    * ``global_pair``: flat ``S * g + D`` of every global link.
    """
    a, g, m = topo.a, topo.g, topo.links_per_pair
    own = np.zeros((g, g, a))
    land = np.zeros((g, a, g))
    S, D = np.nonzero(~np.eye(g, dtype=bool))
    for c in range(m):
        np.add.at(own, (S, D, topo.global_owner[S, D, c]), 1.0 / m)
        np.add.at(land, (D, topo.global_owner[D, S, c], S), 1.0 / m)
    i, j = np.nonzero(~np.eye(a, dtype=bool))
    local_idx = i * a + j
    n_local = g * a * (a - 1)
    n_global = topo.n_router_links - n_local
    global_pair = np.zeros(n_global, dtype=np.int64)
    gl = np.asarray(topo.global_link)
    G_, H_, C_ = np.nonzero(gl >= 0)
    global_pair[gl[G_, H_, C_] - n_local] = G_ * g + H_
    # local link order check: group by group, (i, j) row-major
    ll = np.asarray(topo.local_link)
    assert (ll[:, i, j].reshape(-1) == np.arange(n_local)).all()
    return {"own": own, "land": land, "local_idx": local_idx.astype(np.int32),
            "global_pair": global_pair.astype(np.int32)}


def _build_dragonfly(topo: DragonflyTopology, routing: Routing) -> RoutingOperator:
    R, a, g, m = topo.n_routers, topo.a, topo.g, topo.links_per_pair
    L = topo.n_router_links
    is_valiant = routing.kind == "valiant"
    if is_valiant:
        require(g >= 3, "routing.kind", "valiant", "'minimal' on a Dragonfly with fewer than 3 groups",
                f"Valiant needs an intermediate group other than source and destination; g = {g}.")
    tables = _dragonfly_tables(topo)
    off_group = ~np.eye(g, dtype=bool)

    def route_minimal(tables, RG, GR, intra):
        """Loads of minimal routes given aggregated demand.

        ``RG[S, i, D]``: bytes from router ``(S, i)`` towards group ``D != S``
        (to be routed to the landing router); ``GR[S, D, j]``: bytes arriving
        in ``D`` from group ``S`` for router ``(D, j)``; ``intra[G, i, j]``.
        """
        first = jnp.einsum("sid,sdo->sio", RG, tables["own"])  # local hop to the owner
        last = jnp.einsum("dxs,sdj->dxj", tables["land"], GR)  # local hop from the landing router
        local = (first + last + intra).reshape(g, a * a)[:, tables["local_idx"]].reshape(-1)
        GG = RG.sum(1)  # [S, D]
        glob = GG.reshape(-1)[tables["global_pair"]] * (1.0 / m)
        return jnp.concatenate([local, glob])

    def route(tables, RG, GR, intra):
        if not is_valiant:
            return route_minimal(tables, RG, GR, intra)
        mask = jnp.asarray(off_group)
        GG = RG.sum(1)  # [S, D] inter-group demand
        out = RG.sum(2, keepdims=True)  # [S, i, 1]
        leg1 = jnp.where(mask[:, None, :], (out - RG) * (1.0 / (g - 2)), 0.0)  # towards intermediate I
        # at intermediate I: bytes landing on router x of I that continue to group D
        mid = jnp.einsum("ixs,sd->ixd", tables["land"], GG) * (1.0 / (g - 2))
        mid = jnp.where(mask[:, None, :], mid, 0.0)
        col = GR.sum(0, keepdims=True)  # [1, D, j]: everything arriving for router (D, j)
        arrive = jnp.where(mask[:, :, None], (col - GR) * (1.0 / (g - 2)), 0.0)  # [I, D, j]
        return route_minimal(tables, leg1 + mid, arrive, intra)

    def apply(tables, src, dst, weight):
        src = src.astype(jnp.int32)
        dst = dst.astype(jnp.int32)
        Gs, Gd = src // a, dst // a
        j = dst % a
        inter = Gs != Gd
        w_inter = jnp.where(inter, weight, 0.0)
        w_intra = jnp.where(inter, 0.0, weight)
        idx = jnp.concatenate([src * g + Gd, R * g + (Gs * g + Gd) * a + j, 2 * R * g + src * a + j])
        buf = jax.ops.segment_sum(jnp.concatenate([w_inter, w_inter, w_intra]), idx,
                                  num_segments=2 * R * g + R * a)
        RG = buf[: R * g].reshape(g, a, g)
        GR = buf[R * g: 2 * R * g].reshape(g, g, a)
        intra = buf[2 * R * g:].reshape(g, a, a)
        return route(tables, RG, GR, intra)

    def apply_dense(tables, u, v):
        mask = jnp.asarray(off_group)
        U = u.reshape(g, a)
        V = v.reshape(g, a)
        RG = jnp.where(mask[:, None, :], U[:, :, None] * V.sum(1)[None, None, :], 0.0)
        GR = jnp.where(mask[:, :, None], U.sum(1)[:, None, None] * V[None, :, :], 0.0)
        intra = U[:, :, None] * V[:, None, :]
        return route(tables, RG, GR, intra)

    nnz = int(sum(t.size for t in tables.values()))
    return RoutingOperator(routing, topo.name, tables, apply, apply_dense, nnz)


# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def _cached_build(topo_id: int, topo: Topology, routing: Routing) -> RoutingOperator:
    if routing.kind == "dor":
        return _build_dor(topo, routing)  # type: ignore[arg-type]
    return _build_dragonfly(topo, routing)  # type: ignore[arg-type]


def build_routing(topology: Topology, routing: Routing) -> RoutingOperator:
    """Compile ``routing`` for ``topology`` on the host (cached per topology object)."""
    allowed = ROUTING_KINDS[topology.kind]
    if routing.kind not in allowed:
        raise ConfigError("routing.kind", routing.kind, f"one of {list(allowed)} on a {topology.kind}",
                          "Pick a routing group that matches the topology.")
    return _cached_build(id(topology), topology, routing)
