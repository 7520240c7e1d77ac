"""Array shapes, written down in one place (jaxtyping aliases and the axis names).

Axis names (DESIGN.md): ``point`` (design points of a batch), ``task`` (MPI
ranks), ``flow`` (entries of a sparse traffic), ``node`` (endpoints),
``router``, ``link`` (every directed link: router links, then one injection
link per node, then one ejection link per node), ``router_link`` (the router
links only), ``class`` (link classes), ``dim`` (torus dimensions),
``group`` (Dragonfly groups), ``level`` (levels of the node hierarchy),
``pair`` (communicating pairs), ``path`` (paths of the pairs), ``phase``
(phases of a phased traffic), ``slot`` (task slots of a mapping),
``metric`` (packed metrics), ``job_node`` (the node ids given to one job, a
subset of ``node`` in any order). Host-side arrays are NumPy, device-side JAX.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Array, Bool, Float, Int, Shaped, UInt

__all__ = [
    "AXES",
    "Array",
    "Bool",
    "Float",
    "Int",
    "Shaped",
    "UInt",
    "HostInt",
    "HostFloat",
    "LinkInts",
    "LinkFloats",
    "NodeInts",
    "NodeBools",
    "JobNodes",
    "RouterInts",
    "TaskInts",
    "FlowInts",
    "FlowFloats",
    "TaskFloats",
    "TaskBools",
    "PointInts",
    "RouterCoords",
    "LinkLoads",
    "RouterLinkLoads",
    "RouterVector",
    "FlowVector",
    "FlowBytes",
    "PointMetrics",
    "PointLinkLoads",
]

AXES = ("point", "task", "flow", "node", "router", "link", "router_link", "class", "dim", "group", "level", "pair",
        "path", "phase", "slot", "metric", "job_node")

HostInt = Int[np.ndarray, "..."]
HostFloat = Float[np.ndarray, "..."]

# host side (NumPy), topology / traffic / placement descriptions
LinkInts = Int[np.ndarray, "link"]
LinkFloats = Float[np.ndarray, "link"]
NodeInts = Int[np.ndarray, "node"]
NodeBools = Bool[np.ndarray, "node"]
JobNodes = Int[np.ndarray, "job_node"]
RouterInts = Int[np.ndarray, "router"]
TaskInts = Int[np.ndarray, "task"]
TaskFloats = Float[np.ndarray, "task"]
TaskBools = Bool[np.ndarray, "task"]
PointInts = Int[np.ndarray, "point"]
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
