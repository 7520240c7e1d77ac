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
A leading ``_`` (``_phase``) names an axis without binding it across the call: the items of a list that each have
their own size. ``tests/test_shapes_checked.py`` runs part of the suite with every annotation checked at run time.
"""

from __future__ import annotations

from typing import TypeVar, Union

import numpy as np
from jaxtyping import Array, Bool, Float, Int, Integer, Shaped, UInt

__all__ = [
    "AXES",
    "AXIS_MEANINGS",
    "AnyArray",
    "Array",
    "Bool",
    "ConfigOf",
    "Float",
    "Int",
    "Integer",
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

AXIS_MEANINGS: dict[str, str] = {
    # the model's axes (one design point's arrays and their batches)
    "point": "design points of a batch", "task": "tasks (MPI ranks) of a job", "flow": "flows (one message set "
    "between two tasks or routers)", "node": "compute nodes", "router": "routers (switches)", "link": "links, node "
    "links included", "router_link": "router-to-router links", "class": "link classes", "dim": "torus dimensions",
    "group": "Dragonfly groups", "level": "levels of a hierarchy (fat-tree levels, Dragonfly link levels)",
    "tier": "fat-tree switch tiers", "pair": "communicating (router) pairs", "path": "paths of a pair",
    "phase": "phases of an exchange", "slot": "task slots of the mapping search (tasks_per_node per node)",
    "metric": "metrics of a point", "job_node": "nodes of one job", "job": "jobs", "run": "runs of a schedule",
    "idle": "idle nodes or groups a policy chooses from",
    "taker": "the groups a job takes nodes from (ascending, a subset of a policy's groups)",
    "host_router": "routers of a host topology",
    "port": "optical circuit switch ports", "coord": "a router's coordinates", "shape": "one shape's entries",
    "entry": "entries of a sparse table or a pair list", "hop": "hops of a path", "move": "moves of the mapping "
    "search", "row": "rows of a matrix or a block", "segment": "segments of a segmented reduction", "cell": "cells "
    "of a placement grid", "part_node": "nodes of a partition part", "part_task": "tasks of a partition part",
    "block": "blocks of points", "rest": "the remaining items of a block", "loc": "locations of a traffic's tasks",
    "pos": "positions along a ring", "pre": "the leading axes of a ring prefix sum", "col": "columns of a ring "
    "prefix sum", "size": "bins of a fused buffer", "record": "records of one collective of a trace (one a member "
    "rank)", "send": "point-to-point sends of a trace", "var": "variables of a linear program", "eq_row": "equality "
    "constraints (rows of A_eq) of a linear program", "ub_row": "inequality constraints (rows of A_ub) of a linear "
    "program", "instance": "linear programs of a batch", "commodity": "commodities of the edge LP (a source router's "
    "pairs of one magnitude class)", "src": "the sending side of a block of location pairs (a product block's "
    "sending locations)", "dst": "the receiving side of a block of location pairs",
    # symbolic sizes (jaxtyping binds them per call: equal names, equal sizes)
    "K": "the listed links of one flow", "W": "the flows a move touches", "k": "a small fixed count (the k of "
    "k-shortest paths, candidates)", "n": "a length given by the caller", "m": "parallel global links of a group "
    "pair", "a": "routers of a Dragonfly group", "NX": "nodes along X", "NY": "nodes along Y", "NZ": "nodes along Z",
}
"""Every axis name the package's shape annotations use (``Float[Array, "point link"]``), with its meaning:
``tests/test_axes_declared.py`` fails on a name used but not declared here."""

AXES = tuple(AXIS_MEANINGS)

AnyArray = Array | np.ndarray
"""An array a function takes from either side, host (NumPy) or device (JAX): ``Integer[AnyArray, "..."]``.
(jaxtyping's ``Int`` is the signed integers only, ``Integer`` signed and unsigned.)"""

_Schema = TypeVar("_Schema")
ConfigOf = Union[_Schema, "omegaconf.DictConfig"]
"""``ConfigOf[TorusConfig]``: a configuration node of that schema, the dataclass itself or (as Hydra and OmegaConf
hand it over) a ``DictConfig`` built from it. ``omegaconf`` is named, not imported: a run-time checker imports it
when it checks."""

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
