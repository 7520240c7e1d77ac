"""Config -> build: the library objects of one design point, through the families' registries."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..placement import KINDS as PLACEMENTS
from ..placement import Placement, PlacementContext
from ..routing import KINDS as ROUTINGS
from ..routing import Routing
from ..topology import KINDS as TOPOLOGIES
from ..topology import Topology
from ..traffic import KINDS as TRAFFICS
from ..traffic import DenseTraffic, Traffic

__all__ = ["build_topology", "build_routing_spec", "build_traffic", "build_placement", "DesignPoint", "build",
           "as_dict"]


def build_topology(cfg) -> Topology:
    """Topology from a topology schema."""
    return TOPOLOGIES[cfg.kind].build(cfg)


def build_routing_spec(cfg) -> Routing:
    """Routing spec from a routing schema."""
    return ROUTINGS[cfg.kind].build(cfg)


def build_traffic(cfg, topology: Topology) -> Traffic | DenseTraffic:
    """Traffic from a traffic schema (``n_tasks`` null means one task per node)."""
    return TRAFFICS[cfg.kind].build(cfg, topology)


def build_placement(cfg, topology: Topology, traffic_cfg, n_tasks: int, topology_cfg=None) -> Placement:
    """Placement from a placement schema, for ``n_tasks`` tasks."""
    return PLACEMENTS[cfg.kind].build(cfg, PlacementContext(topology, n_tasks, traffic_cfg, topology_cfg))


@dataclass(frozen=True)
class DesignPoint:
    """Everything one evaluation needs, built from a config."""

    topology: Topology
    routing: Routing
    traffic: Traffic | DenseTraffic
    placement: Placement


def build(cfg) -> DesignPoint:
    """Build a design point from an :class:`~evaluator.config.EvalConfig`-shaped object (config -> build)."""
    topo = build_topology(cfg.topology)
    rt = build_routing_spec(cfg.routing)
    tr = build_traffic(cfg.traffic, topo)
    pl = build_placement(cfg.placement, topo, cfg.traffic, tr.n_tasks, cfg.topology)
    return DesignPoint(topo, rt, tr, pl)


def as_dict(obj) -> dict:
    """A schema dataclass as a plain dict (for provenance)."""
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else dict(obj)
