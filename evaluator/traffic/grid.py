"""The task grid a traffic config carries (row-major task ids), known without building the traffic.

One rule for every reader: the grid-aware starts of the mapping search (:mod:`evaluator.mapping._starts`) and the
placements that take a task grid from the traffic (:attr:`evaluator.placement.PlacementContext.beta`:
``torus_block``, ``topaware``, ``dragonfly_cartesian``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

__all__ = ["task_grid", "config_value"]


def config_value(cfg, key):
    """``cfg[key]`` of a mapping, ``cfg.key`` of a config object (None where absent)."""
    if isinstance(cfg, Mapping):
        return cfg.get(key)
    return getattr(cfg, key, None)


def task_grid(traffic_cfg, n_tasks: int) -> list[int] | None:
    """The traffic's task grid (row-major task ids) of ``n_tasks`` tasks, or ``None``: a stencil's ``beta``, a
    ``grid`` list (shift, tornado, a traffic file's ``traffic.grid``), the grid the traffic's kind reads without
    building it (:meth:`~evaluator.traffic.TrafficKind.grid_declared`: a traffic file's ``# grid:`` header), the
    first such inside ``phases``."""
    if traffic_cfg is None:
        return None
    from . import KINDS

    kind = config_value(traffic_cfg, "kind")
    declared = KINDS[kind].grid_declared(traffic_cfg) if isinstance(kind, str) and kind in KINDS \
        else None
    for g in (config_value(traffic_cfg, "beta"), config_value(traffic_cfg, "grid"), declared):
        if isinstance(g, (list, tuple, np.ndarray)) or type(g).__name__ == "ListConfig":
            g = list(g)
            if g and all(isinstance(x, (int, np.integer)) and x >= 1 for x in g) and math.prod(g) == n_tasks:
                return [int(x) for x in g]
    phases = config_value(traffic_cfg, "phases")
    if isinstance(phases, (list, tuple)) or type(phases).__name__ == "ListConfig":
        for ph in phases:
            g = task_grid(ph, n_tasks)
            if g is not None:
                return g
    return None


