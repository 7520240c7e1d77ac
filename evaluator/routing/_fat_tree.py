"""Fat-tree routings: ``dmodk`` (deterministic D-mod-k up*/down*) and ``ecmp`` (the expectation of per-flow hashing).

Both route up*/down* on shortest paths: from the source leaf up to the
nearest common ancestor level ``l`` (the lowest level whose subtree holds
both hosts: their host labels agree on ``x_h .. x_{l+1}``), then down the
unique path to the destination. Ids and labels are those of
:mod:`evaluator.topology._fat_tree` (XGFT(h; m; w), tier ``t`` joining
levels ``t`` and ``t + 1``, ``pl_t`` its parallel links, ``U_t = w_{t+1} pl_t``
up ports per level-``t`` switch, port ``u`` leading to parent digit ``u //
pl_t``).

* ``dmodk`` (Zahavi's D-mod-k, the destination-based up-port rule of
  InfiniBand fat-tree routing engines such as OpenSM's ``ftree``): going up
  from a level-``t`` switch a packet for destination *node* ``d`` takes up
  port ``u_t(d) = floor(d / (U_0 U_1 ... U_{t-1})) mod U_t`` (``U_0 = w_1 =
  1``; without parallel links this is ``floor(d / (w_1 ... w_t)) mod
  w_{t+1}``, the parent digit). The up ports
  depend on ``d`` only, so the switch a packet reaches at level ``t`` has the
  digits ``y_t .. y_1`` of ``d``'s ports below it, whatever the source; the
  down path goes through the switches with the same digits, each down link
  being the reverse of the up link that ``d``'s own subtree would take
  (same parallel copy). One path per (source node, destination node); on a
  k-ary n-tree a shift permutation loads no link with more than one flow
  (Zahavi et al. 2010). The operator routes by node
  (:attr:`~evaluator.routing.base.RoutingOperator.endpoints`: every node is
  its own endpoint).
* ``ecmp``: every switch splits a flow evenly over all its up ports on the
  way up, and over the parallel links to the next switch on the way down (the
  expectation of per-flow hashing, at router level). A flow from leaf ``s``
  crossing tier ``t`` then loads each of the ``Y_t U_t`` up links of the
  tier leaving ``s``'s level-``t`` subtree with ``1 / (Y_t U_t)`` of its
  bytes (``Y_t = w_1 ... w_t``), and each of the ``Y_t U_t`` down links of the
  tier entering the destination's subtree with the same share.

How the operators work
----------------------
No router pair is listed. ``ecmp`` sums, per tier ``t``, the bytes leaving
and entering every level-``t`` subtree (flows whose two leaves lie in
different level-``t`` subtrees) and spreads each sum evenly over that
subtree's up (down) links of the tier: two scatters per tier and flow,
then a broadcast. For dense rank-one traffic the sums are ``u_sub (V -
v_sub)`` and ``v_sub (U - u_sub)`` of per-subtree sums of the router weights.
``dmodk`` adds every flow's bytes straight to its up link and its down link
of every tier it crosses (the link ids are the subtree index times ``Y_t U_t``
plus a per-destination code ``yy_t(d) U_t + u_t(d)``, a ``[tier, node]``
table). Dense: per tier, ``v`` summed per (subtree, code) (one scatter over
the nodes) gives the down links at once, ``v_code[X, k] (U - u_sub[X])``, and
the up links are ``u_sub[X] (v_code_total[k] - v_code[X, k])`` (clamped at 0:
exact in exact arithmetic).

:func:`dmodk_paths` and :func:`ecmp_paths` walk one (source node, destination
node) pair hop by hop and return its weighted link-id paths (the per-flow
reference of the bench and the tests).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from .._ops import add_at, segment_add, take
from .._types import Int
from ..topology import FatTreeTopology
from .base import Routing, RoutingKind, RoutingOperator

__all__ = ["dmodk", "ecmp", "dmodk_paths", "ecmp_paths", "DmodkConfig", "EcmpConfig", "DMODK", "ECMP"]


def dmodk() -> Routing:
    """Fat-tree D-mod-k routing: deterministic up*/down*, up port chosen by the destination node."""
    return Routing("dmodk")


def ecmp() -> Routing:
    """Fat-tree ECMP: every switch splits a flow evenly over its up ports (the expectation of per-flow hashing)."""
    return Routing("ecmp")


def _tiers(topo: FatTreeTopology) -> list[dict]:
    """Sizes of every switch tier ``t = 1 .. h-1``: ``Y`` (switches per level-t subtree), ``U`` (up ports per
    switch), ``S`` (nodes per level-t subtree), ``B`` (leaves per level-t subtree), ``nX`` (level-t subtrees),
    ``pl`` (parallel links), ``D`` (the D-mod-k divisor ``U_0 ... U_{t-1}``) and the tier's link offsets."""
    out, D = [], 1
    for t in range(1, int(topo.levels)):
        Y, U = topo.parallel(t), topo.up_ports(t)
        S = topo.subtree_nodes(t)
        out.append(dict(t=t, Y=Y, U=U, S=S, B=S // int(topo.children[0]), nX=topo.n_nodes // S,
                        pl=int(topo.parallel_links[t - 1]), D=D, up=int(topo.up_offset[t - 1]),
                        down=int(topo.down_offset[t - 1])))
        D *= U
    return out


def dmodk_codes(topo: FatTreeTopology) -> Int[np.ndarray, "tier node"]:
    """``code[t-1, d] = yy_t(d) * U_t + u_t(d)``, shape [tier, node]: D-mod-k's port ``u_t(d)`` at level ``t``
    for destination node ``d`` and the index ``yy_t(d)`` of the digits ``y_t .. y_1`` of the level-``t`` switch
    its packets pass (module docstring)."""
    tiers = _tiers(topo)
    d = np.arange(topo.n_nodes, dtype=np.int64)
    code = np.zeros((len(tiers), topo.n_nodes), dtype=np.int64)
    yy = np.zeros_like(d)
    for i, T in enumerate(tiers):
        u = (d // T["D"]) % T["U"]
        code[i] = yy * T["U"] + u
        yy = (u // T["pl"]) * T["Y"] + yy  # the parent's digits y_{t+1} .. y_1
    return code


def build_operator(topo: FatTreeTopology, routing: Routing) -> RoutingOperator:
    """Compile ``dmodk`` or ``ecmp`` for one fat tree (host side; tables linear in the nodes)."""
    tiers = _tiers(topo)
    n_rl = int(topo.n_router_links)
    n_nodes = int(topo.n_nodes)
    n_leaves = topo.switches(1)
    if routing.kind == "dmodk":
        code = dmodk_codes(topo)
        itype = np.int32 if max(n_rl, 1) < 2**31 else np.int64
        tables = {"code": code.astype(itype)}

        def apply(tables, src, dst, weight, extra=None):
            """``src``/``dst``: node ids (the kernel's endpoints); each flow's up and down link of every tier it
            crosses, added in link order."""
            src = src.astype(tables["code"].dtype)
            dst = dst.astype(tables["code"].dtype)
            n_extra = 0 if extra is None else extra[1]
            buf = jnp.zeros(n_rl + n_extra, weight.dtype)
            for i, T in enumerate(tiers):
                Xs, Xd = src // T["S"], dst // T["S"]
                w = jnp.where(Xs != Xd, weight, 0.0)
                c = take(tables["code"][i], dst)
                YU = T["Y"] * T["U"]
                buf = add_at(buf, T["up"] + Xs * YU + c, w)
                buf = add_at(buf, T["down"] + Xd * YU + c, w)
            if extra is not None:
                for idx, w in extra[0]:
                    buf = add_at(buf, idx + n_rl, w)
            return buf

        def apply_dense(tables, u, v):
            """``u``, ``v``: per node (the endpoints)."""
            U_all = u.sum()
            parts = []
            for i, T in enumerate(tiers):
                YU, nX = T["Y"] * T["U"], T["nX"]
                X = jnp.arange(n_nodes, dtype=tables["code"].dtype) // T["S"]
                v_code = segment_add(v, X * YU + tables["code"][i], nX * YU).reshape(nX, YU)
                u_sub = u.reshape(nX, T["S"]).sum(1)
                up = u_sub[:, None] * jnp.maximum(v_code.sum(0)[None, :] - v_code, 0.0)
                down = v_code * jnp.maximum(U_all - u_sub, 0.0)[:, None]
                parts += [up.reshape(-1), down.reshape(-1)]
            return jnp.concatenate(parts) if parts else jnp.zeros(0, u.dtype)

        return RoutingOperator(routing, topo.name, tables, apply, apply_dense, int(code.size),
                               endpoints=np.arange(n_nodes, dtype=np.int64), n_endpoints=n_nodes)

    # ecmp: per-subtree sums, spread evenly over the subtree's links of the tier
    offsets = np.concatenate([[0], np.cumsum([2 * T["nX"] for T in tiers])]).astype(int).tolist()
    SIZE = offsets[-1]

    def spread(sums):
        """Router-link loads from the bytes leaving/entering every subtree (``sums``: ``[up_0, down_0, ...]``)."""
        parts = []
        for i, T in enumerate(tiers):
            YU = T["Y"] * T["U"]
            for s in sums[2 * i: 2 * i + 2]:
                parts.append(jnp.broadcast_to((s * (1.0 / YU))[:, None], (T["nX"], YU)).reshape(-1))
        return parts

    def apply(tables, src, dst, weight, extra=None):
        """``src``/``dst``: leaf (router) ids."""
        n_extra = 0 if extra is None else extra[1]
        buf = jnp.zeros(SIZE + n_extra, weight.dtype)
        for i, T in enumerate(tiers):
            Xs, Xd = src // T["B"], dst // T["B"]
            w = jnp.where(Xs != Xd, weight, 0.0)
            buf = add_at(buf, offsets[i] + Xs, w)
            buf = add_at(buf, offsets[i] + T["nX"] + Xd, w)
        if extra is not None:
            for idx, w in extra[0]:
                buf = add_at(buf, idx + SIZE, w)
        sums = []
        for i, T in enumerate(tiers):
            sums += [buf[offsets[i]: offsets[i] + T["nX"]], buf[offsets[i] + T["nX"]: offsets[i + 1]]]
        parts = spread(sums) + ([buf[SIZE:]] if extra is not None else [])
        return jnp.concatenate(parts) if parts else jnp.zeros(0, weight.dtype)

    def apply_dense(tables, u, v):
        """``u``, ``v``: per router (only the leaves, the first routers, carry weight)."""
        ul, vl = u[:n_leaves], v[:n_leaves]
        U_all, V_all = ul.sum(), vl.sum()
        sums = []
        for T in tiers:
            us = ul.reshape(T["nX"], T["B"]).sum(1)
            vs = vl.reshape(T["nX"], T["B"]).sum(1)
            sums += [us * jnp.maximum(V_all - vs, 0.0), vs * jnp.maximum(U_all - us, 0.0)]
        parts = spread(sums)
        return jnp.concatenate(parts) if parts else jnp.zeros(0, u.dtype)

    return RoutingOperator(routing, topo.name, {}, apply, apply_dense, 0)


# --------------------------------------------------------------------------------------
# per-flow walks (the reference of the bench's per-flow baseline)
# --------------------------------------------------------------------------------------


def _nca_tier_count(topo: FatTreeTopology, a: int, d: int) -> int:
    """Tiers a flow from node ``a`` to node ``d`` climbs: the nearest common ancestor level minus 1."""
    for t in range(1, int(topo.levels)):
        if a // topo.subtree_nodes(t) == d // topo.subtree_nodes(t):
            return t - 1
    return int(topo.levels) - 1


def dmodk_paths(topo: FatTreeTopology, src_node: int, dst_node: int) -> list[tuple[float, list[int]]]:
    """D-mod-k's one path from ``src_node`` to ``dst_node``: ``[(1.0, link ids)]`` (router links only; ``[(1.0,
    [])]`` on one leaf, ``[]`` on one node). Walked hop by hop: up port ``floor(d / (U_0 .. U_{t-1})) mod U_t``
    at every level below the nearest common ancestor, then down through the switches with the same digits."""
    a, d = int(src_node), int(dst_node)
    if a == d:
        return []
    top = _nca_tier_count(topo, a, d)
    links, down = [], []
    c_up = a // int(topo.children[0])  # local index of the current switch (level t) on the way up
    c_down = d // int(topo.children[0])  # ... and of the switch above d on the way down
    divisor = 1
    for t in range(1, top + 1):
        Y, U, pl, w = topo.parallel(t), topo.up_ports(t), int(topo.parallel_links[t - 1]), int(topo.parents[t])
        m_next = int(topo.children[t])
        u = (d // divisor) % U
        divisor *= U
        links.append(int(topo.up_offset[t - 1]) + c_up * U + u)
        down.append(int(topo.down_offset[t - 1]) + c_down * U + u)
        y = u // pl  # parent digit y_{t+1}
        c_up = (c_up // Y // m_next) * (w * Y) + y * Y + c_up % Y
        c_down = (c_down // Y // m_next) * (w * Y) + y * Y + c_down % Y
    assert c_up == c_down, "D-mod-k walk: the up and down paths do not meet"
    return [(1.0, links + down[::-1])]


def ecmp_paths(topo: FatTreeTopology, src_node: int, dst_node: int) -> list[tuple[float, list[int]]]:
    """ECMP's paths from ``src_node`` to ``dst_node`` with their probabilities: every up port of every switch
    below the nearest common ancestor (``1 / U_t`` each), then the down path through the reached switch's digits,
    every parallel copy (``1 / pl_t`` each). Router links only."""
    a, d = int(src_node), int(dst_node)
    if a == d:
        return []
    top = _nca_tier_count(topo, a, d)
    paths = [(1.0, [], a // int(topo.children[0]), d // int(topo.children[0]), [])]
    for t in range(1, top + 1):
        Y, U, pl, w = topo.parallel(t), topo.up_ports(t), int(topo.parallel_links[t - 1]), int(topo.parents[t])
        m_next = int(topo.children[t])
        grown = []
        for prob, up, c_up, c_down, down in paths:
            for u in range(U):
                y = u // pl
                up_link = int(topo.up_offset[t - 1]) + c_up * U + u
                # down: from the parent with digit y to c_down, over any of its pl parallel links
                copies = [int(topo.down_offset[t - 1]) + c_down * U + y * pl + c for c in range(pl)]
                nu = (c_up // Y // m_next) * (w * Y) + y * Y + c_up % Y
                nd = (c_down // Y // m_next) * (w * Y) + y * Y + c_down % Y
                for lk in copies:
                    grown.append((prob / (U * pl), up + [up_link], nu, nd, [lk] + down))
        paths = grown
    return [(prob, up + down) for prob, up, _, _, down in paths]


@dataclass
class DmodkConfig:
    """Fat-tree D-mod-k routing (no parameters)."""

    kind: str = "dmodk"


@dataclass
class EcmpConfig:
    """Fat-tree ECMP (expected load of per-flow hashing; no parameters)."""

    kind: str = "ecmp"


DMODK = RoutingKind("dmodk", DmodkConfig, lambda cfg: dmodk(), topologies=("fat_tree",), operator=build_operator)
ECMP = RoutingKind("ecmp", EcmpConfig, lambda cfg: ecmp(), topologies=("fat_tree",), operator=build_operator)
