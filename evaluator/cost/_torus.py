"""Cost model of tori and meshes: :data:`TORUS` (:class:`~evaluator.topology.TorusTopology`: ``torus``, ``bgq``,
``gemini`` and the catalogue's torus machines).

Packaging (docs/cost.md): the router sits on the node board (Blue Gene/Q, Cray Gemini): no node cable; a
router has 2 ports per dimension and one per node. Every link between neighbours is a short copper cable; the
wrap-around link of a ring of 3 or more routers, laid out straight, spans the ring: a long copper cable.
"""

from __future__ import annotations

import math

from ..topology import TorusTopology
from .base import CostKind, Parts

__all__ = ["torus_parts", "TORUS"]


def torus_parts(t: TorusTopology) -> Parts:
    """Per dimension of size ``n`` over ``R`` routers: ``R (n - 1) / n`` cables between neighbours, plus
    ``R / n`` wrap-around cables when it wraps and ``n >= 3`` (``n = 2`` wrapped: one cable per pair, ``R /
    2``); ``R`` routers of radix ``2 ndim + nodes_per_router``; one NIC per node."""
    dims, wrap = [int(d) for d in t.dims], [bool(w) for w in t.wrap]
    R = math.prod(dims)
    npr = int(t.nodes_per_router)
    short = long = 0
    for n, w in zip(dims, wrap):
        if n < 2:
            continue
        short += R // n * (n - 1)
        if w and n >= 3:
            long += R // n
    radix = 2 * len(dims) + npr
    return Parts(n_switches=R, switch_radix=radix, n_switch_ports=R * radix, n_nics=R * npr,
                 n_ports_used=2 * (short + long) + R * npr, n_electrical_cables_short=short,
                 n_electrical_cables_long=long)


TORUS = CostKind("torus", TorusTopology, torus_parts)
