"""Routing: maps router-to-router demand to the expected bytes on every link.

A routing is described by a small :class:`Routing` spec (what the user
chooses) and compiled on the host, once per topology, into a
:class:`RoutingOperator`: padded NumPy tables plus a pure function that
applies them to a dense router-pair demand matrix inside ``jit``.

Randomised choices (tie splitting, Valiant intermediates, several parallel
global links) contribute their expectation, not a sample.

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

    ``tables`` are NumPy arrays (moved to the device once by the caller) and
    ``apply(tables, demand)`` maps a router-pair demand matrix
    ``demand: Float[Array, "router router"]`` (bytes) to the router-link loads
    ``Float[Array, "router_link"]`` (bytes). ``apply`` is pure and
    jit-compatible; its static sizes are bound in a closure.
    """

    routing: Routing
    topology_name: str
    tables: dict[str, np.ndarray]
    apply: Callable
    nnz: int


def _coalesce(pair: np.ndarray, link: np.ndarray, weight: np.ndarray, n_links: int):
    """Sum duplicate (pair, link) entries; return sorted by link."""
    key = link.astype(np.int64) * (int(pair.max(initial=0)) + 1) + pair.astype(np.int64)
    uniq, inv = np.unique(key, return_inverse=True)
    w = np.zeros(uniq.size, dtype=np.float64)
    np.add.at(w, inv, weight)
    npair = int(pair.max(initial=0)) + 1
    return (uniq % npair).astype(np.int32), (uniq // npair).astype(np.int32), w


def _sparse_apply(pair, link, weight, vec, n_links):
    return jax.ops.segment_sum(weight * vec[pair], link, num_segments=n_links, indices_are_sorted=True)


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


def _dor_entries(topo: TorusTopology, routing: Routing, src: np.ndarray, dst: np.ndarray):
    """(pair-position, link, weight) entries of DOR routes from ``src`` to ``dst`` routers."""
    dims = topo.dims
    coords = topo.router_coords
    cur = coords[src].copy()
    tgt = coords[dst]
    idx = np.arange(src.size)
    out_p, out_l, out_w = [], [], []
    strides = np.array([int(np.prod(dims[k + 1:])) for k in range(len(dims))], dtype=np.int64)
    for k in dor_order(topo, routing.order):
        n = dims[k]
        if n == 1:
            continue
        delta = tgt[:, k] - cur[:, k]
        if topo.wrap[k]:
            fwd = delta % n
            bwd = (n - fwd) % n
            tie = (fwd == bwd) & (fwd > 0)
            go_pos = (fwd < bwd) | (tie & True)
            hops = np.where(go_pos, fwd, bwd)
        else:
            tie = np.zeros(src.size, dtype=bool)
            go_pos = delta > 0
            hops = np.abs(delta)
        split = tie if routing.tie == "split" else np.zeros_like(tie)
        w_main = np.where(split, 0.5, 1.0)
        # main branch (positive on ties), plus negative branch for split ties
        branches = [(go_pos, w_main, hops > 0), (np.zeros_like(go_pos), np.full(src.size, 0.5), split)]
        for positive, w, active in branches:
            sel = np.nonzero(active)[0]
            if sel.size == 0:
                continue
            c = cur[sel].copy()
            h = hops[sel]
            pos = positive[sel]
            step = np.where(pos, 1, -1)
            diridx = np.where(pos, 0, 1)
            rid = (c * strides).sum(1)
            for s in range(int(h.max())):
                act = s < h
                a_sel = np.nonzero(act)[0]
                lk = topo.neighbor_link[rid[a_sel], k, diridx[a_sel]]
                out_p.append(idx[sel[a_sel]])
                out_l.append(lk)
                out_w.append(w[sel[a_sel]])
                newc = (c[a_sel, k] + step[a_sel]) % n
                rid[a_sel] += (newc - c[a_sel, k]) * strides[k]
                c[a_sel, k] = newc
        cur[:, k] = tgt[:, k]
    if not out_p:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return np.concatenate(out_p), np.concatenate(out_l), np.concatenate(out_w)


MAX_DENSE_ROUTERS = 4096


def _build_dor(topo: TorusTopology, routing: Routing) -> RoutingOperator:
    R = topo.n_routers
    require(R <= MAX_DENSE_ROUTERS, "topology.dims", list(topo.dims),
            f"at most {MAX_DENSE_ROUTERS} routers for the router-pair DOR operator",
            "Use a smaller partition.")
    dor_order(topo, routing.order)
    s, d = np.divmod(np.arange(R * R, dtype=np.int64), R)
    keep = s != d
    s, d = s[keep], d[keep]
    pos, link, w = _dor_entries(topo, routing, s, d)
    pair = s[pos] * R + d[pos]
    pair, link, w = _coalesce(pair, link, w, topo.n_router_links)
    L = topo.n_router_links

    def apply(tables, demand):
        return _sparse_apply(tables["pair"], tables["link"], tables["weight"], demand.reshape(-1), L)

    return RoutingOperator(routing, topo.name, {"pair": pair, "link": link, "weight": w}, apply, int(w.size))


# --------------------------------------------------------------------------------------
# Dragonfly
# --------------------------------------------------------------------------------------


def _df_minimal_entries(topo: DragonflyTopology, s: np.ndarray, d: np.ndarray):
    """Entries of minimal routes between router arrays ``s`` -> ``d`` (s != d)."""
    a, m = topo.a, topo.links_per_pair
    S, si = np.divmod(s, a)
    D, di = np.divmod(d, a)
    idx = np.arange(s.size)
    ps, ls, ws = [], [], []
    same = S == D
    ps.append(idx[same])
    ls.append(topo.local_link[S[same], si[same], di[same]])
    ws.append(np.ones(int(same.sum())))
    inter = np.nonzero(~same)[0]
    Si, Di = S[inter], D[inter]
    for c in range(m):
        own = topo.global_owner[Si, Di, c]
        land = topo.global_owner[Di, Si, c]
        w = np.full(inter.size, 1.0 / m)
        first = si[inter] != own
        ps.append(inter[first])
        ls.append(topo.local_link[Si[first], si[inter][first], own[first]])
        ws.append(w[first])
        ps.append(inter)
        ls.append(topo.global_link[Si, Di, c])
        ws.append(w)
        last = land != di[inter]
        ps.append(inter[last])
        ls.append(topo.local_link[Di[last], land[last], di[inter][last]])
        ws.append(w[last])
    return np.concatenate(ps), np.concatenate(ls), np.concatenate(ws)


def _df_to_group_entries(topo: DragonflyTopology):
    """Entries routing router ``r`` to group ``I`` (stopping where the global link lands).

    Pair index is ``r * g + I``.
    """
    a, g, m = topo.a, topo.g, topo.links_per_pair
    r, I = np.divmod(np.arange(topo.n_routers * g, dtype=np.int64), g)
    S, si = np.divmod(r, a)
    keep = S != I
    r, I, S, si = r[keep], I[keep], S[keep], si[keep]
    pair = r * g + I
    ps, ls, ws = [], [], []
    for c in range(m):
        own = topo.global_owner[S, I, c]
        w = np.full(r.size, 1.0 / m)
        first = si != own
        ps.append(pair[first])
        ls.append(topo.local_link[S[first], si[first], own[first]])
        ws.append(w[first])
        ps.append(pair)
        ls.append(topo.global_link[S, I, c])
        ws.append(w)
    return np.concatenate(ps), np.concatenate(ls), np.concatenate(ws)


def _landing_matrix(topo: DragonflyTopology) -> np.ndarray:
    """``B[x, S]``: fraction of group ``S``'s traffic to group(x) that lands on router ``x``."""
    a, g, m = topo.a, topo.g, topo.links_per_pair
    B = np.zeros((topo.n_routers, g))
    for c in range(m):
        S, I = np.nonzero(~np.eye(g, dtype=bool))
        x = I * a + topo.global_owner[I, S, c]
        np.add.at(B, (x, S), 1.0 / m)
    return B


def _build_dragonfly(topo: DragonflyTopology, routing: Routing) -> RoutingOperator:
    R, a, g = topo.n_routers, topo.a, topo.g
    L = topo.n_router_links
    require(R <= MAX_DENSE_ROUTERS, "topology", topo.name,
            f"at most {MAX_DENSE_ROUTERS} routers for the router-pair operator")
    s, d = np.divmod(np.arange(R * R, dtype=np.int64), R)
    keep = s != d
    s, d = s[keep], d[keep]
    pos, link, w = _df_minimal_entries(topo, s, d)
    pair, link, w = _coalesce(s[pos] * R + d[pos], link, w, L)
    tables = {"pair": pair, "link": link, "weight": w}
    nnz = int(w.size)
    if routing.kind == "minimal":

        def apply(tables, demand):
            return _sparse_apply(tables["pair"], tables["link"], tables["weight"], demand.reshape(-1), L)

        return RoutingOperator(routing, topo.name, tables, apply, nnz)

    require(g >= 3, "routing.kind", "valiant", "'minimal' on a Dragonfly with fewer than 3 groups",
            f"Valiant needs an intermediate group other than source and destination; g = {g}.")
    gp, gl, gw = _df_to_group_entries(topo)
    gp, gl, gw = _coalesce(gp, gl, gw, L)
    tables.update(g_pair=gp, g_link=gl, g_weight=gw, landing=_landing_matrix(topo))
    router_group = np.arange(R) // a
    tables["router_group"] = router_group.astype(np.int32)

    def apply(tables, demand):
        grp = tables["router_group"]
        same = grp[:, None] == grp[None, :]
        intra = jnp.where(same, demand, 0.0)
        inter = demand - intra
        rg = inter.reshape(R, g, a).sum(-1)  # [router, group]: bytes from router to group
        out = rg.sum(1)
        leg1 = (out[:, None] - rg) / (g - 2)
        leg1 = jnp.where(grp[:, None] == jnp.arange(g)[None, :], 0.0, leg1)
        gr = inter.reshape(g, a, R).sum(1)  # [group, router]: bytes from group to router
        leg2 = (tables["landing"] @ gr) / (g - 2)
        leg2 = jnp.where(same, 0.0, leg2)
        loads = _sparse_apply(tables["pair"], tables["link"], tables["weight"], (intra + leg2).reshape(-1), L)
        loads = loads + _sparse_apply(tables["g_pair"], tables["g_link"], tables["g_weight"], leg1.reshape(-1), L)
        return loads

    return RoutingOperator(routing, topo.name, tables, apply, nnz + int(gw.size))


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
