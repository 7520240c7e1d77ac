"""Dragonfly routings: ``minimal`` (local-global-local), ``valiant`` and ``valiant_router``.

* ``minimal``: traffic between two groups is split evenly over their
  parallel global links.
* ``valiant``: Valiant routing [Kim 2008], Prisacari Eq. (3): inter-group
  traffic goes minimally to an intermediate group chosen uniformly among the
  ``g-2`` others (to the router where the global link lands), then minimally
  on to the destination. Intra-group traffic stays minimal. Every load is a
  sum of non-negative terms except two exact-in-expectation differences
  (``out - to_group``), whose rounding is bounded by one ulp of a router's total.
* ``valiant_router``: Valiant with an intermediate *router* ``x`` chosen
  uniformly over all ``R = g a`` routers of the machine, as packet simulators
  such as BookSim2 implement it: when ``x`` falls in the source group (``a /
  R`` of the time) the packet stays minimal; otherwise it goes minimally to
  ``x`` (which may be in the destination group, or be the destination) and
  then minimally to the destination. Intra-group traffic stays minimal, as
  under ``valiant``. Exact expectation from the same aggregates (below).

Both kinds share one operator (Valiant adds its second leg to the minimal
aggregates).

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
``o``, over ``g - 2``: ``land[I] GG land[I]^T`` with ``land[I, x, S]`` the
fraction of ``S``'s traffic to ``I`` that lands on ``x`` (which is also the
fraction of ``I``'s traffic to ``S`` that leaves through ``x``), two dense
products (``g^3 a + g^2 a^2`` multiply-adds per point, in place of ``g^2 a
h`` gathers: 3x faster on DF(4,8,4), on par on DF(8,16,8)); the last hop is
``(own_count * in[d] - C) / (g - 2)``. For dense rank-one traffic ``GG`` is
rank one and the block sum factorises, which keeps the cost near-linear in
the machine size. Minimal builds none of Valiant's tables.

``valiant_router`` is minimal routing of an equivalent demand, built from
the same aggregates: the minimal part scaled by ``a / R``; leg one, router
``s`` sending ``out[s] / R`` to every router outside its group (exits
``out[s] (a/R) own_count``, landings ``(1/R) sum_S out_group[S] land[D, x,
S]``, group pairs ``out_group[S] a / R``); leg two, every router ``x`` of a
group ``I`` sending ``(in[d] - W[I, d]) / R`` to router ``d`` (``W[I, d]``:
bytes from group ``I`` to router ``d``, one more ``[g, R]`` scatter per
point): exits ``(1/R) sum_D (in_group[D] - GG[I, D]) land[I, o, D]``, local
pairs inside the destination group ``in[d] / R``, landings ``(a/R) (in[d]
own_count[D, x] - sum_I W[I, d] land[D, x, I])``. The differences are
clamped at 0 (exact in exact arithmetic).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from .._ops import add_at, add_extra, fused_size, take
from ..errors import check_memory, require
from ..topology import DragonflyTopology
from .base import Routing, RoutingKind, RoutingOperator

__all__ = ["minimal", "valiant", "valiant_router", "MinimalConfig", "ValiantConfig", "ValiantRouterConfig", "MINIMAL",
           "VALIANT", "VALIANT_ROUTER"]


def minimal() -> Routing:
    """Dragonfly minimal (local-global-local) routing."""
    return Routing("minimal")


def valiant() -> Routing:
    """Dragonfly Valiant routing through a uniformly chosen intermediate group."""
    return Routing("valiant")


def valiant_router() -> Routing:
    """Dragonfly Valiant routing through a uniformly chosen intermediate router (minimal when it is in the source
    group)."""
    return Routing("valiant_router")


def operator_bytes(topo: DragonflyTopology, valiant: bool) -> int:
    """Estimated peak bytes of :func:`build_operator` for ``topo``, from its parameters alone.

    With ``g`` groups of ``a`` routers, ``m`` links per group pair and ``k =
    min(h, g-1)`` (an upper bound of the groups one router serves): on the
    host 16 bytes per group pair for the pair list and 80 per parallel link
    of a pair (owner and landing indices, the sorted router/group keys and
    their ranks), 12 per ``[g*a, k]`` peer entry, 17 per local link (the
    local-link check) and 28 per global link; Valiant adds its dense
    ``land[g, a, g]`` (8 bytes per entry). Plus the copy of the tables that
    :func:`evaluator._batch.compiled.batch_kernel` moves to the device. Against the
    host peak (``tracemalloc``) plus the tables this is 1.05-1.3x
    (DF(1,32,32) minimal 0.19 GB estimated vs 0.15 GB measured, Valiant
    0.72 GB vs 0.69 GB; DF(8,16,8) Valiant 7.5 MB vs 6.7 MB).
    """
    a, g, m = int(topo.a), int(topo.g), int(topo.links_per_pair)
    k = max(1, min(int(topo.h), g - 1))
    gg, gak = g * g, g * a * k
    n_local = g * a * (a - 1)
    n_global = gg * m
    host = 16 * gg + 80 * gg * m + 12 * gak + 17 * n_local + 28 * n_global
    device = 4 * gg * m + 12 * gak + 4 * (n_local + n_global)
    if valiant:
        host += 8 * g * a + 8 * gg * a
        device += 8 * g * a + 8 * gg * a
    return host + device


def _dragonfly_tables(topo: DragonflyTopology, valiant: bool) -> dict[str, np.ndarray]:
    """Static tables of a Dragonfly's routes (host side); Valiant's only when ``valiant``.

    * ``hop[S*g + D, c] = (link * a + own) * a + land``: index ``own`` in
      group ``S`` of the router owning copy ``c`` of the global link ``S ->
      D``, index ``land`` in ``D`` of the router where it lands, and that
      link's index ``link`` (0 on the diagonal; int64 when the packed value
      would not fit in int32);
    * ``peer_idx``/``peer_w`` ``[G*a + r, k]``: the groups ``D`` that router ``r``
      of ``G`` reaches through its own global links, with the fraction
      ``own[G, D, r]`` (``1/m`` per parallel link) of ``G``'s traffic to ``D``
      that leaves through it. The same lists give the groups ``S`` whose
      traffic to ``G`` lands on ``r``, with the fraction ``land[G, r, S] =
      own[G, S, r]``: copy ``c`` of ``S -> G`` lands on the router owning copy
      ``c`` of ``G -> S``;
    * ``local_idx``: flat ``i*a + j`` of local link ``i -> j``, in link order per group;
    * ``global_pair``: flat ``S*g + D`` of every global link, in link order;
    * Valiant: ``own_count[G, r] = sum_D own[G, D, r]`` (also ``sum_S land[G, r, S]``)
      and ``land[G, r, S]`` dense (``[g, a, g]``), the operand of the
      phase-two products.
    """
    a, g, m = int(topo.a), int(topo.g), int(topo.links_per_pair)
    go = np.asarray(topo.global_owner)
    S, D = np.nonzero(~np.eye(g, dtype=bool))
    own_idx, land_idx = go[S, D], go[D, S]  # [g(g-1), m]
    glink = np.asarray(topo.global_link)[S, D]  # [g(g-1), m] link index of copy c of S -> D
    itype = np.int32 if int(topo.n_router_links) * a * a < 2**31 else np.int64
    hop = np.zeros((g * g, m), itype)
    hop[S * g + D] = (glink * a + own_idx) * a + land_idx
    # (router G*a + r, group D) per copy, sorted; duplicates are copies through the same router
    key, count = np.unique((np.repeat(S, m) * a + own_idx.reshape(-1)) * g + np.repeat(D, m), return_counts=True)
    row = key // g
    pos = np.arange(key.size) - np.searchsorted(row, row)  # rank within the router's list
    k = max(1, int(pos.max()) + 1) if key.size else 1
    peer_idx = np.zeros((g * a, k), np.int32)
    peer_w = np.zeros((g * a, k))
    peer_idx[row, pos] = key % g
    peer_w[row, pos] = count / m
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
    tables = {"hop": hop, "peer_idx": peer_idx, "peer_w": peer_w,
              "local_idx": local_idx.astype(np.int32), "global_pair": global_pair}
    if valiant:
        tables["own_count"] = np.bincount(row, weights=count / m, minlength=g * a).reshape(g, a)
        land = np.zeros((g * a, g))
        land[row, key % g] = count / m  # land[G*a + r, S] = own[G, S, r]
        tables["land"] = land.reshape(g, a, g)
    return tables


@dataclasses.dataclass(frozen=True)
class _Shape:
    """What the functions of minimal or Valiant routing on one Dragonfly read: its sizes, the routing, and the
    offsets of one point's aggregates in its flat buffer (see ``route``; ``valiant_router`` adds ``W[group,
    router]`` from ``OFF_W``)."""

    R: int
    a: int
    g: int
    m: int
    n_rl: int
    is_valiant: bool
    is_vrouter: bool

    @property
    def offsets(self) -> tuple[int, int, int, int, int, int]:
        """``OFF_A, OFF_B, OFF_C, OFF_G, OFF_W, SIZE``."""
        R, a, g = self.R, self.a, self.g
        off_w = 3 * R * a + g * g
        return 0, R * a, 2 * R * a, 3 * R * a, off_w, off_w + (g * R if self.is_vrouter else 0)


def _phase_two(tables, GG):
    """``mid[I, x, o] = sum_{S, D} land[I, x, S] GG[S, D] own[I, D, o]`` (two dense products).

    With ``own[I, D, o] = land[I, o, D]``: ``Q[I, x, D] = sum_S land[I, x, S]
    GG[S, D]`` is one matrix product (``g^3 a`` multiply-adds), then
    ``mid[I] = Q[I] land[I]^T`` one product per intermediate group (``g^2
    a^2``): sums of non-negative terms, in place of ``g^2 a h`` gathers.
    Both products take their right operand contracted on its first axis
    (``land`` transposed once): XLA:CPU then copies no intermediate into
    another layout (2-3 us per point less on DF(4,8,4)).
    """
    land = tables["land"]
    Q = jnp.einsum("IxS,SD->IxD", land, GG)
    return jnp.einsum("IxD,IDo->Ixo", Q, jnp.swapaxes(land, 1, 2))



def _route_fns(s: _Shape):
    """``(local_and_global, route)``: router-link loads from a point's aggregates (minimal and Valiant)."""
    a, g, m, is_valiant = s.a, s.g, s.m, s.is_valiant
    off_group = ~np.eye(g, dtype=bool)

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
        share = tables["own_count"][:, None, :]
        out = A.sum(2, keepdims=True)  # [S, i, 1] inter-group bytes leaving (S, i)
        inn = C.sum(2, keepdims=True)  # [D, j, 1] inter-group bytes arriving for (D, j)
        # leg one towards every intermediate I != S, D: first local hop and the global link S -> I
        leg1 = jnp.maximum(share * out - A, 0.0) * inv
        row = GG.sum(1, keepdims=True)
        col = GG.sum(0, keepdims=True)
        glob = jnp.where(mask, jnp.maximum(row - GG, 0.0) + jnp.maximum(col - GG, 0.0), 0.0) * inv
        # at I: lands on x from S, leaves via o towards D; then I -> D; then the last local hop in D
        if mid is None:
            mid = _phase_two(tables, GG)
        mid = mid * inv
        last = jnp.maximum(share * inn - C, 0.0) * inv  # [D, j, x]
        return local_and_global(tables, leg1 + mid + B + jnp.swapaxes(last, 1, 2), glob)


    return local_and_global, route


def _route_vrouter_fn(s: _Shape, local_and_global):
    """``route_vrouter``: ``valiant_router``'s loads from the aggregates."""
    R, a, g = s.R, s.a, s.g
    off_group = ~np.eye(g, dtype=bool)

    def route_vrouter(tables, A, B, C, GG, W):
        """``valiant_router`` loads from the minimal aggregates and ``W[I, d]`` (module docstring)."""
        f = a / R
        mask = jnp.asarray(off_group)
        own_count, land = tables["own_count"], tables["land"]  # [g, a], [D, x, S]
        out = A.sum(2)  # [S, i] inter-group bytes leaving (S, i)
        row, col = GG.sum(1), GG.sum(0)  # per source group, per destination group
        M2 = jnp.where(mask, jnp.maximum(col[None, :] - GG, 0.0), 0.0)  # [I, D] leg-two group bytes x R / a
        A2 = jnp.einsum("ID,IoD->Io", M2, land) * (1.0 / R)
        A_t = f * A + (f * out)[:, :, None] * own_count[:, None, :] + A2[:, None, :]
        inn = W.sum(0).reshape(g, a)  # [D, j] inter-group bytes arriving for (D, j)
        B_t = B + inn[:, None, :] * (1.0 / R)
        C1 = jnp.einsum("DxS,S->Dx", land, row) * (1.0 / R)
        C2 = jnp.maximum(inn[:, :, None] * own_count[:, None, :]
                         - jnp.einsum("IDj,DxI->Djx", W.reshape(g, g, a), land), 0.0) * f
        C_t = f * C + C1[:, None, :] + C2
        # (summed, then multiplied once: as ``f * GG + row * f + f * M2`` XLA:CPU contracted a product and the
        # following sum into one fused multiply-add where it fused them, which changed with the points a step
        # vmaps: a global link's load one unit in the last place apart between blocks of 1 and of 3;
        # tests/test_audit_execution_shapes_all.py)
        GG_t = (GG + jnp.where(mask, row[:, None], 0.0) + M2) * f
        return local_and_global(tables, A_t + B_t + jnp.swapaxes(C_t, 1, 2), GG_t)


    return route_vrouter


def _apply_fn(s: _Shape, route, route_vrouter):
    """``apply``: router-link loads of router-level flows (one design point)."""
    R, a, g, m, n_rl = s.R, s.a, s.g, s.m, s.n_rl
    is_valiant, is_vrouter = s.is_valiant, s.is_vrouter
    OFF_A, OFF_B, OFF_C, OFF_G, OFF_W, SIZE = s.offsets

    def local_link(G, i, j):
        """Index of local link ``i -> j`` (``i != j``) of group ``G``: links are in (group, i, j) order."""
        return (G * a + i) * (a - 1) + j - (j > i).astype(j.dtype)


    def apply_minimal(tables, src, dst, weight, extra):
        """Minimal routing's loads, each flow's hops added straight into the link-ordered result.

        Per flow and copy ``c`` of its group pair: the first local hop (none
        when the source router owns the global link), the global link, the
        last local hop (none when it lands on the destination router), each
        ``1/m`` of the bytes; a flow inside a group takes its one local link.
        Hops that do not exist go to a dump slot past the end.
        """
        Gs, Gd = src // a, dst // a
        i, j = src - Gs * a, dst - Gd * a
        inter = Gs != Gd
        w_inter = jnp.where(inter, weight, 0.0) * (1.0 / m)
        pair = Gs * g + Gd
        dump = n_rl + fused_size(extra)
        buf = jnp.zeros(dump + 1, weight.dtype)
        for c in range(m):
            hop = take(tables["hop"][:, c], pair)  # int32, or int64 on a very large machine
            link, own, land = (x.astype(src.dtype) for x in (hop // (a * a), (hop // a) % a, hop % a))
            first = jnp.where(inter, jnp.where(own == i, dump, local_link(Gs, i, own)), local_link(Gs, i, j))
            buf = add_at(buf, first, jnp.where(inter, w_inter, weight if c == 0 else 0.0))
            buf = add_at(buf, link, w_inter)
            buf = add_at(buf, jnp.where(land == j, dump, local_link(Gd, land, j)), w_inter)
        buf = add_extra(buf, extra, n_rl, index=lambda i: i.astype(src.dtype))
        return buf[:dump]


    def apply(tables, src, dst, weight, extra=None):
        # int32 buffer indices while the buffer holds under 2^31 entries; past it (valiant_router's W[g, R] on
        # g^2 a >= 2^31, e.g. DF(a=32, g=8192): ~35 GB, in reach of a large host) int64: in int32 the indices
        # src * a + own, Gs * R + dst wrapped negative and the bytes were added elsewhere or lost
        it = jnp.int32 if max(SIZE, n_rl) + fused_size(extra) < 2**31 else jnp.int64
        src = src.astype(it)
        dst = dst.astype(it)
        if not (is_valiant or is_vrouter):
            return apply_minimal(tables, src, dst, weight, extra)
        Gs, Gd = src // a, dst // a
        j = dst - Gd * a
        inter = Gs != Gd
        w_inter = jnp.where(inter, weight, 0.0)
        pair = Gs * g + Gd
        buf = jnp.zeros(SIZE + fused_size(extra), weight.dtype)
        for c in range(m):
            exit_land = (take(tables["hop"][:, c], pair) % (a * a)).astype(src.dtype)
            own, land = exit_land // a, exit_land % a
            buf = add_at(buf, jnp.where(inter, OFF_A + src * a + own, OFF_B + src * a + j),
                         jnp.where(inter, weight * (1.0 / m), weight if c == 0 else 0.0))
            buf = add_at(buf, OFF_C + dst * a + land, w_inter * (1.0 / m))
        buf = add_at(buf, OFF_G + pair, w_inter)
        if is_vrouter:
            buf = add_at(buf, OFF_W + Gs * R + dst, w_inter)
        buf = add_extra(buf, extra, SIZE, index=lambda i: i.astype(src.dtype))
        A = buf[OFF_A:OFF_B].reshape(g, a, a)
        B = buf[OFF_B:OFF_C].reshape(g, a, a)
        C = buf[OFF_C:OFF_G].reshape(g, a, a)
        GG = buf[OFF_G:OFF_W].reshape(g, g)
        if is_vrouter:
            loads = route_vrouter(tables, A, B, C, GG, buf[OFF_W:SIZE].reshape(g, R))
        else:
            loads = route(tables, A, B, C, GG)
        return loads if extra is None else jnp.concatenate([loads, buf[SIZE:]])


    return apply


def _apply_dense_fn(s: _Shape, route, route_vrouter):
    """``apply_dense``: router-link loads of the demand ``u[s] v[d]`` (one design point)."""
    R, a, g, is_valiant, is_vrouter = s.R, s.a, s.g, s.is_valiant, s.is_vrouter
    off_group = ~np.eye(g, dtype=bool)

    def apply_dense(tables, u, v):
        mask = jnp.asarray(off_group)
        U = u.reshape(g, a)
        V = v.reshape(g, a)
        Ug, Vg = U.sum(1), V.sum(1)
        GG = jnp.where(mask, Ug[:, None] * Vg[None, :], 0.0)
        exit_via = (take(Vg, tables["peer_idx"]) * tables["peer_w"]).sum(1).reshape(g, a)  # [S, o]
        land_on = (take(Ug, tables["peer_idx"]) * tables["peer_w"]).sum(1).reshape(g, a)  # [D, x]
        A = U[:, :, None] * exit_via[:, None, :]
        B = U[:, :, None] * V[:, None, :]
        C = V[:, :, None] * land_on[:, None, :]
        if is_vrouter:
            W = jnp.where(np.arange(g)[:, None] != np.arange(R)[None, :] // a, Ug[:, None] * v[None, :], 0.0)
            return route_vrouter(tables, A, B, C, GG, W)
        mid = None
        if is_valiant:
            # GG = Ug Vg^T off the diagonal: the phase-two sum factorises, minus the S == D terms.
            land = tables["land"]
            diag = jnp.einsum("IxS,S,IoS->Ixo", land, Ug * Vg, land)
            mid = jnp.maximum(land_on[:, :, None] * exit_via[:, None, :] - diag, 0.0)
        return route(tables, A, B, C, GG, mid)


    return apply_dense


def build_operator(topo: DragonflyTopology, routing: Routing) -> RoutingOperator:
    """Compile minimal or Valiant routing for one Dragonfly (host side).

    Refused before any table is built, with a
    :class:`~evaluator.errors.ResourceError` naming ``routing``, when the
    tables would not fit in memory (:func:`operator_bytes`).
    """
    R, a, g, m = topo.n_routers, topo.a, topo.g, topo.links_per_pair
    is_valiant = routing.kind == "valiant"
    is_vrouter = routing.kind == "valiant_router"
    if is_valiant:
        require(g >= 3, "routing.kind", "valiant", "'minimal' on a Dragonfly with fewer than 3 groups",
                f"Valiant needs an intermediate group other than source and destination; g = {g}.")
    check_memory("routing", routing.kind, operator_bytes(topo, is_valiant or is_vrouter) + (8 * g * R if is_vrouter
                                                                                           else 0),
                 f"its tables on {topo.name} ([g, g, m] = [{g}, {g}, {m}] global-link entries"
                 + (f", land[g, a, g] = [{g}, {a}, {g}])" if is_valiant or is_vrouter else ")"),
                 "Use a Dragonfly with fewer groups or routers per group.")
    tables = _dragonfly_tables(topo, is_valiant or is_vrouter)
    s = _Shape(int(R), int(a), int(g), int(m), int(topo.n_router_links), is_valiant, is_vrouter)
    local_and_global, route = _route_fns(s)
    route_vrouter = _route_vrouter_fn(s, local_and_global)
    nnz = int(sum(t.size for t in tables.values()))
    return RoutingOperator(routing, topo.name, tables, _apply_fn(s, route, route_vrouter),
                           _apply_dense_fn(s, route, route_vrouter), nnz)


@dataclass
class MinimalConfig:
    """Dragonfly minimal routing (no parameters)."""

    kind: str = "minimal"


@dataclass
class ValiantConfig:
    """Dragonfly Valiant routing (no parameters)."""

    kind: str = "valiant"


@dataclass
class ValiantRouterConfig:
    """Dragonfly Valiant routing through a uniformly chosen intermediate router (no parameters)."""

    kind: str = "valiant_router"


MINIMAL = RoutingKind("minimal", MinimalConfig, lambda cfg: minimal(), topologies=("dragonfly",),
                      operator=build_operator)
VALIANT = RoutingKind("valiant", ValiantConfig, lambda cfg: valiant(), topologies=("dragonfly",),
                      operator=build_operator)
VALIANT_ROUTER = RoutingKind("valiant_router", ValiantRouterConfig, lambda cfg: valiant_router(),
                             topologies=("dragonfly",), operator=build_operator)
