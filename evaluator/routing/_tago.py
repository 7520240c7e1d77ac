"""TAGO routing on a reconfigurable Dragonfly (Feng et al. Sec. 2.2, after ref. [57]).

Inter-group traffic from group ``S`` to group ``D`` is balanced over every
direct link between them (``1 / pair_links[S, D]`` of the bytes on each):
local hop to the router owning the link's port in ``S`` (none if it is the
source router), the global link, local hop from the landing router in ``D`` to
the destination router. No indirect paths: bytes between two groups the
configuration does not connect are not carried (the ``jobs`` and ``traffic``
configurations connect every pair of a job's groups; :func:`unconnected_bytes`
measures what a traffic would lose). Intra-group traffic takes the direct
local link (the groups are full meshes). With ``intra="valiant"`` every local
segment (intra-group traffic and the local hops of inter-group traffic) goes
instead through a uniformly chosen third router of the group (the paper runs
adaptive routing inside groups; ``minimal`` and ``valiant`` bound it from the
two sides, as on the traditional Dragonfly).

Aggregates, never per router pair: each flow adds its bytes to
``R2G[router, dst group]``, ``G2R[src group, router]``, ``GG[group, group]``
(inter-group) and ``B[router, router in group]`` (intra-group); with
``own[S, D, o]`` the fraction of the ``S -> D`` links whose port in ``S``
belongs to router ``o`` (the same table gives the landing fractions: the
``S -> D`` link through port pair ``(S, j)-(D, j')`` lands on the router that
owns ``j'``, through which ``D -> S`` leaves), the first local hops are
``A[S, i, o] = sum_D R2G[S, i, D] own[S, D, o]`` and the last ones
``C[D, j, x] = sum_S G2R[S, D, j] own[D, S, x]``: two products of ``g^2 a^2``
multiply-adds per point.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from .._ops import add_at, take
from .._types import FlowFloats, FlowInts
from ..errors import check_memory, require
from ..topology import RdnTopology
from .base import Routing, RoutingKind, RoutingOperator

__all__ = ["tago", "TagoRouting", "TagoConfig", "TAGO", "unconnected_bytes", "INTRA_MODES"]

INTRA_MODES = ("minimal", "valiant")
"""Routing inside a group: the direct local link, or through a uniformly chosen third router."""


@dataclasses.dataclass(frozen=True)
class TagoRouting(Routing):
    """TAGO with its routing inside groups, ``intra`` (:data:`INTRA_MODES`)."""

    intra: str = "minimal"

    @property
    def label(self) -> str:
        return "tago" if self.intra == "minimal" else f"tago-{self.intra}"


def tago(intra: str = "minimal") -> TagoRouting:
    """TAGO routing: inter-group traffic balanced over all direct links, no indirect paths; ``intra`` inside groups."""
    require(intra in INTRA_MODES, "routing.intra", intra, " | ".join(INTRA_MODES))
    return TagoRouting("tago", intra)


def operator_bytes(topo: RdnTopology) -> int:
    """Estimated bytes of the TAGO tables (host and device copy) and of one point's aggregates: ``own[g, g, a]``
    (8 bytes per entry, twice), 12 per global link, 4 per local link, and the aggregate buffer
    (``2 g^2 a + g^2 + g a^2`` floats, 8 bytes each, three copies while the products run)."""
    g, a = int(topo.g), int(topo.a)
    n_local = g * a * (a - 1)
    n_global = topo.n_router_links - n_local
    return 16 * g * g * a + 12 * n_global + 4 * n_local + 24 * (2 * g * g * a + g * g + g * a * a)


def _tables(topo: RdnTopology) -> dict[str, np.ndarray]:
    """``own[S, D, o]`` (fraction of S->D links owned by router o of S), ``local_idx``, ``global_pair``
    (flat ``S*g + D`` per global link) and ``global_share`` (``1 / pair_links[S, D]`` per global link)."""
    g, a, h = int(topo.g), int(topo.a), int(topo.h)
    peer = np.asarray(topo.port_peer_group)
    pl = np.asarray(topo.pair_links)
    S, J = np.nonzero(peer >= 0)
    D = peer[S, J]
    own = np.zeros((g, g, a))
    np.add.at(own, (S, D, J // h), 1.0)
    own /= np.where(pl > 0, pl, 1)[:, :, None]
    i, j = np.nonzero(~np.eye(a, dtype=bool))
    n_local = g * a * (a - 1)
    ll = np.asarray(topo.local_link)
    assert (ll[:, i, j].reshape(-1) == np.arange(n_local)).all(), "local links not in (group, i, j) order"
    link = np.asarray(topo.port_link)[S, J] - n_local
    n_global = topo.n_router_links - n_local
    global_pair = np.zeros(n_global, np.int32)
    global_share = np.zeros(n_global)
    global_pair[link] = S * g + D
    global_share[link] = 1.0 / pl[S, D]
    return {"own": own, "local_idx": (i * a + j).astype(np.int32), "global_pair": global_pair,
            "global_share": global_share, "unconnected": ((pl == 0) & ~np.eye(g, dtype=bool)).astype(np.float64)}


def unconnected_bytes(topo: RdnTopology, src_router: FlowInts, dst_router: FlowInts, weight: FlowFloats) -> float:
    """Bytes of router-level flows between groups that the configuration leaves unconnected (TAGO drops them)."""
    a = topo.a
    gs, gd = np.asarray(src_router) // a, np.asarray(dst_router) // a
    pl = np.asarray(topo.pair_links)
    bad = (gs != gd) & (pl[gs, gd] == 0)
    return float(np.asarray(weight, dtype=np.float64)[bad].sum())


def _apply_fn(g: int, a: int, route):
    """TAGO's ``apply`` on ``g`` groups of ``a`` routers: the flows' bytes summed into one flat buffer (router to
    group, group to router, group pair, inside a group), then ``route`` (:func:`build_operator`)."""
    R = g * a
    OFF_R2G, OFF_G2R, OFF_G, OFF_B = 0, R * g, 2 * R * g, 2 * R * g + g * g
    SIZE = OFF_B + R * a

    def apply(tables, src, dst, weight, extra=None):
        # int32 buffer indices while the buffer holds under 2^31 entries (2 g^2 a + ...: every RDN that fits in
        # ~100 GB); past it int64 (in int32, Gs * R + dst wrapped negative and the bytes went elsewhere)
        it = jnp.int32 if SIZE + (0 if extra is None else extra[1]) < 2**31 else jnp.int64
        src = src.astype(it)
        dst = dst.astype(it)
        Gs, Gd = src // a, dst // a
        inter = Gs != Gd
        w_in = jnp.where(inter, weight, 0.0)
        w_loc = jnp.where(inter, 0.0, weight)
        idx = [OFF_R2G + src * g + Gd, OFF_G2R + Gs * R + dst, OFF_G + Gs * g + Gd, OFF_B + src * a + (dst - Gd * a)]
        w = [w_in, w_in, w_in, w_loc]
        buf = jnp.zeros(SIZE + (0 if extra is None else extra[1]), weight.dtype)
        for e_idx, e_w in zip(idx, w):  # added in place, one list after the other (never concatenated)
            buf = add_at(buf, e_idx, e_w)
        for e_idx, e_w in (() if extra is None else extra[0]):
            buf = add_at(buf, e_idx.astype(it) + SIZE, e_w)
        own = tables["own"]
        A = jnp.einsum("SiD,SDo->Sio", buf[OFF_R2G:OFF_G2R].reshape(g, a, g), own)
        C = jnp.einsum("SDj,DSx->Djx", buf[OFF_G2R:OFF_G].reshape(g, g, a), own)
        B = buf[OFF_B:SIZE].reshape(g, a, a)
        loads = route(tables, A, B, C, buf[OFF_G:OFF_B].reshape(g, g))
        return loads if extra is None else jnp.concatenate([loads, buf[SIZE:]])

    return apply


def build_operator(topo: RdnTopology, routing: Routing) -> RoutingOperator:
    """Compile TAGO for one RDN configuration (host side); ResourceError if the tables would not fit."""
    g, a = int(topo.g), int(topo.a)
    check_memory("routing", routing.kind, operator_bytes(topo),
                 f"its tables on {topo.name} (own[g, g, a] = [{g}, {g}, {a}])", "Use an RDN with fewer groups.")
    intra = getattr(routing, "intra", "minimal")
    valiant = intra == "valiant"
    if valiant:
        require(a >= 3, "routing.intra", intra, "'minimal' on groups of fewer than 3 routers",
                f"Valiant inside a group needs a third router; a = {a}.")
    tables = _tables(topo)
    off_group = ~np.eye(g, dtype=bool)
    off_router = ~np.eye(a, dtype=bool)

    def route(tables, A, B, C, GG):
        local = A + B + jnp.swapaxes(C, 1, 2)
        if valiant:
            # bytes on i -> j go i -> r -> j for each of the a-2 other routers r:
            # link (m, k) carries (row_m - L[m, k] + col_k - L[m, k]) / (a - 2)
            local = jnp.where(jnp.asarray(off_router), local, 0.0)
            row = local.sum(2, keepdims=True)
            col = local.sum(1, keepdims=True)
            local = (row + col - 2.0 * local) * (1.0 / (a - 2))
        loc = take(local.reshape(g, a * a), tables["local_idx"], axis=1).reshape(-1)
        glob = take(GG.reshape(-1), tables["global_pair"]) * tables["global_share"]
        lost = (GG * tables["unconnected"]).sum()
        glob = glob + jnp.where(lost > 0, jnp.inf, 0.0)
        return jnp.concatenate([loc, glob])

    apply = _apply_fn(g, a, route)

    def apply_dense(tables, u, v):
        mask = jnp.asarray(off_group)
        U, V = u.reshape(g, a), v.reshape(g, a)
        Ug, Vg = U.sum(1), V.sum(1)
        GG = jnp.where(mask, Ug[:, None] * Vg[None, :], 0.0)
        own = tables["own"]                                  # zero on the diagonal
        exit_via = jnp.einsum("D,SDo->So", Vg, own)          # sum_D Vg[D] own[S, D, o]
        land_on = jnp.einsum("S,DSx->Dx", Ug, own)           # sum_S Ug[S] own[D, S, x]
        A = U[:, :, None] * exit_via[:, None, :]
        C = V[:, :, None] * land_on[:, None, :]
        B = U[:, :, None] * V[:, None, :]
        return route(tables, A, B, C, GG)

    nnz = int(sum(t.size for t in tables.values()))
    return RoutingOperator(routing, topo.name, tables, apply, apply_dense, nnz)


@dataclass
class TagoConfig:
    """TAGO routing on a reconfigurable Dragonfly; ``intra``: minimal | valiant inside groups."""

    kind: str = "tago"
    intra: str = "minimal"


TAGO = RoutingKind("tago", TagoConfig, lambda cfg: tago(cfg.intra), topologies=("rdn",), operator=build_operator)
