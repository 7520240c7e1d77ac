"""Array shapes, written down in one place (jaxtyping aliases and the axis names).

Axis names (DESIGN.md): ``point`` (design points of a batch), ``task`` (MPI
ranks), ``flow`` (entries of a sparse traffic), ``node`` (endpoints),
``router``, ``link`` (every directed link: router links, then one injection
link per node, then one ejection link per node), ``router_link`` (the router
links only), ``class`` (link classes), ``dim`` (torus dimensions),
``group`` (Dragonfly groups). Host-side arrays are NumPy, device-side JAX.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Array, Bool, Float, Int

__all__ = [
    "AXES",
    "Array",
    "Bool",
    "Float",
    "Int",
    "HostInt",
    "HostFloat",
    "LinkInts",
    "LinkFloats",
    "NodeInts",
    "TaskInts",
    "FlowInts",
    "FlowFloats",
    "TaskFloats",
    "RouterCoords",
    "LinkLoads",
    "RouterLinkLoads",
    "RouterVector",
    "FlowVector",
    "FlowBytes",
    "PointMetrics",
    "PointLinkLoads",
]

AXES = ("point", "task", "flow", "node", "router", "link", "router_link", "class", "dim", "group")

HostInt = Int[np.ndarray, "..."]
HostFloat = Float[np.ndarray, "..."]

# host side (NumPy), topology / traffic / placement descriptions
LinkInts = Int[np.ndarray, "link"]
LinkFloats = Float[np.ndarray, "link"]
NodeInts = Int[np.ndarray, "node"]
TaskInts = Int[np.ndarray, "task"]
TaskFloats = Float[np.ndarray, "task"]
FlowInts = Int[np.ndarray, "flow"]
FlowFloats = Float[np.ndarray, "flow"]
RouterCoords = Int[np.ndarray, "router coord"]

# device side (JAX), one design point
LinkLoads = Float[Array, "link"]
RouterLinkLoads = Float[Array, "router_link"]
RouterVector = Float[Array, "router"]
FlowVector = Int[Array, "flow"]
FlowBytes = Float[Array, "flow"]

# device side, a batch
PointMetrics = Float[Array, "point metric"]
PointLinkLoads = Float[Array, "point link"]
