"""``ft_adaptive``: adaptive up-port choice on a fat tree as a flow-level fixed point (the model and its decision
rules: :mod:`evaluator.routing._adaptive`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import no_type_check

import jax.numpy as jnp
import numpy as np
from jax import lax

from .._ops import take
from ..errors import ResourceError
from ..topology import FatTreeTopology
from . import _fat_tree
from ._adaptive import (DEFAULT_ITERATIONS, DEFAULT_POWER, AdaptiveOperator, AdaptiveRouting, Family, check_common,
                        kind_check, list_functions, make_operator)
from .base import RoutingKind

__all__ = ["FtAdaptiveRouting", "ft_adaptive", "ft_candidate_paths", "FtAdaptiveConfig", "FT_ADAPTIVE",
           "MAX_FT_CANDIDATES"]

MAX_FT_CANDIDATES = 4096
"""Most up paths (product of the up ports of every tier) ``ft_adaptive`` considers per flow."""


@dataclasses.dataclass(frozen=True)
class FtAdaptiveRouting(AdaptiveRouting):
    """Adaptive up-port choice on a fat tree: ``variant`` local (each switch by its own up-port queues, the
    default) or global (whole-path costs)."""

    kind: str = "ft_adaptive"
    variant: str = "local"


@no_type_check  # takes raw configuration and refuses bad values itself (ConfigError naming the field)
def ft_adaptive(variant: str = "local", iterations: int = DEFAULT_ITERATIONS,
                power: float = DEFAULT_POWER) -> FtAdaptiveRouting:
    """Adaptive up-port choice on a fat tree as a flow-level fixed point (module docstring)."""
    variant, iterations, power = check_common(variant, iterations, power)
    return FtAdaptiveRouting(variant=variant, iterations=iterations, power=power)


def _ft_hops(xp, topo: FatTreeTopology, tiers, a, d, p):
    """Per tier ``(crosses, up link, down link, switch, U)`` of flows from node ``a`` to node ``d`` on up path
    ``p`` (mixed radix of the tiers' up ports, tier 1 fastest); ``switch``: the global offset of the up links of
    the level-``t`` switch the path leaves (its ``U`` up links follow it)."""
    m1 = int(topo.children[0])
    c_up, c_down = a // m1, d // m1
    rest = p
    out = []
    for T in tiers:
        U, pl, Y, t = T["U"], T["pl"], T["Y"], T["t"]
        w, m_next = U // pl, int(topo.children[t])
        u = rest % U
        rest = rest // U
        y, k = u // pl, u % pl
        base = T["up"] + c_up * U
        out.append(((a // T["S"]) != (d // T["S"]), base + u, T["down"] + c_down * U + y * pl + k, base, U))
        c_up = (c_up // Y // m_next) * (w * Y) + y * Y + c_up % Y
        c_down = (c_down // Y // m_next) * (w * Y) + y * Y + c_down % Y
    return out


def ft_candidate_paths(topo: FatTreeTopology, src_leaf: int, dst_leaf: int) -> list[list[int]]:
    """``ft_adaptive``'s candidate paths from leaf ``src_leaf`` to leaf ``dst_leaf``, in candidate order: each
    the list of its router links (up, then down), walked on the host."""
    tiers = _fat_tree._tiers(topo)
    m1 = int(topo.children[0])
    P = int(np.prod([T["U"] for T in tiers], dtype=np.int64)) if tiers else 1
    out = []
    for p in range(P):
        hops = _ft_hops(np, topo, tiers, src_leaf * m1, dst_leaf * m1, p)
        up = [int(h[1]) for h in hops if h[0]]
        down = [int(h[2]) for h in hops if h[0]]
        out.append(up + down[::-1])
    return out


def _ft_operator(topo: FatTreeTopology, routing: FtAdaptiveRouting) -> AdaptiveOperator:
    tiers = _fat_tree._tiers(topo)
    P = int(np.prod([T["U"] for T in tiers], dtype=np.int64)) if tiers else 1
    if P > MAX_FT_CANDIDATES:
        raise ResourceError("routing.kind", routing.kind,
                            f"fat trees with at most {MAX_FT_CANDIDATES} up paths per flow (product of the up ports "
                            "of every tier)", f"{topo.name} has {P:,}. Use ecmp_spray (the even split) or dmodk.")
    n_rl = int(topo.n_router_links)
    m1 = int(topo.children[0])
    local = routing.variant == "local"

    def prepare(tables, src, dst, weight):
        shape = (src.shape[0], P)
        a = jnp.broadcast_to((src * m1)[:, None], shape)
        d = jnp.broadcast_to((dst * m1)[:, None], shape)
        p = jnp.broadcast_to(jnp.arange(P, dtype=jnp.int32)[None, :], shape)
        hops = _ft_hops(jnp, topo, tiers, a, d, p)
        cols, fr = [], []
        for crosses, up, down, _, _ in hops:
            on = jnp.broadcast_to(crosses, up.shape)
            cols += [jnp.where(on, up, -1), jnp.where(on, down, -1)]
            fr += [on.astype(weight.dtype)] * 2
        if not cols:
            cols, fr = [jnp.full((src.shape[0], P), -1, jnp.int32)], [jnp.zeros((src.shape[0], P), weight.dtype)]
        links = jnp.stack(cols, axis=2)
        frac = jnp.stack(fr, axis=2)

        def regret(gl):
            r = jnp.zeros(links.shape[:2], gl.dtype)
            for crosses, up, _, base, U in hops:
                # the least busy of the U up ports that start at each link (a switch's ports are consecutive): a
                # running minimum over the links, read at every flow's switch (not U reads per flow and path)
                least = lax.reduce_window(gl, jnp.inf, lax.min, (U,), (1,), "VALID")
                r = r + jnp.where(crosses, take(gl, up) - take(least, base), 0.0)
            return r

        return list_functions(tables, links, frac, src, n_rl, local, regret if local else None)

    fam = Family(P, {}, prepare, (0.0,) * P)
    names = tuple(f"up{p}" for p in range(P))
    return make_operator(topo, routing, fam, names, topo.switches(1))


def build_operator(topo, routing: FtAdaptiveRouting) -> AdaptiveOperator:
    """Compile ``ft_adaptive`` for one fat tree (host side)."""
    kind_check(topo, "ft_adaptive", FatTreeTopology)
    return _ft_operator(topo, routing)


@dataclass
class FtAdaptiveConfig:
    """Adaptive up-port choice on a fat tree: ``variant`` local | global, ``iterations``."""

    kind: str = "ft_adaptive"
    variant: str = "local"
    iterations: int = DEFAULT_ITERATIONS
    power: float = DEFAULT_POWER


FT_ADAPTIVE = RoutingKind("ft_adaptive", FtAdaptiveConfig,
                          lambda cfg: ft_adaptive(cfg.variant, cfg.iterations, cfg.power),
                          topologies=("fat_tree",), operator=build_operator)
