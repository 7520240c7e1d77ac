"""Predefined node sets ("features", Moab ``-l nodeset=ONEOF:FEATURE:...``) of a catalogue machine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._types import ConfigOf
from ..errors import ConfigError, positive_int, require
from ..topology import Topology
from .base import FEATURED_MACHINE, Placement, PlacementContext, PlacementKind, config_list, check_topology
from ._subprism import prism_nodes
from .nodes import SLABS, alps_order, compute_mask, fill_slots, nodes_needed
from .rank_order import RankOrderConfig, with_rank_order

__all__ = ["features", "FeaturesConfig", "FEATURES", "FEATURE_ORDERS"]

FEATURE_ORDERS = ("alps", "prism")


def features(topology: Topology, n_tasks: int, oneof: list[str] | None = None, tasks_per_node: int = 1,
             order: str = "alps", slab: str = "yz", rank_order=None, node_class: str | None = None) -> Placement:
    """A job on one of the machine's predefined node sets: the first of ``oneof`` (default: every feature
    of the machine, in its file's order) with enough compute nodes.

    The job takes the set's first compute nodes in ``order``: ``alps`` (the ALPS-like order, as the
    launcher hands them out) or ``prism`` (row-major in the set's prism). Service nodes are skipped; a
    set holding a down node is passed over.
    """
    check_topology(topology)
    feats = getattr(topology, "features", ())
    FEATURED_MACHINE.require(topology, "features")
    require(order in FEATURE_ORDERS, "placement.order", order, " | ".join(FEATURE_ORDERS))
    n = positive_int("placement.n_tasks", n_tasks)
    tpn = positive_int("placement.tasks_per_node", tasks_per_node)
    by_key = {f.name.lower(): f for f in feats}
    names = [f.name for f in feats] if oneof is None else list(oneof)
    require(len(names) > 0, "placement.oneof", names, "a non-empty list of feature names (null: all)")
    for nm in names:
        require(isinstance(nm, str) and nm.lower() in by_key, "placement.oneof", nm,
                "one of the machine's features: " + ", ".join(f.name for f in feats))
    need = nodes_needed(n, tpn)
    mask = compute_mask(topology, node_class)
    sizes = []
    for nm in names:
        f = by_key[nm.lower()]
        try:
            nodes = prism_nodes(topology, list(f.shape), list(f.offset), f"features.{f.name}")
        except ConfigError:
            sizes.append(f"{f.name}: has down nodes")
            continue
        nodes = nodes[mask[nodes]]
        sizes.append(f"{f.name}: {nodes.size}")
        if nodes.size < need:
            continue
        if order == "alps":
            pos = np.full(topology.n_nodes, -1, dtype=np.int64)
            seq = alps_order(topology, slab)
            pos[seq] = np.arange(seq.size)
            nodes = nodes[np.argsort(pos[nodes], kind="stable")]
        pl = Placement(fill_slots(nodes[:need], n, tpn), topology.n_nodes, f"feature {f.name}/{tpn}")
        return with_rank_order(pl, rank_order)
    raise ConfigError("placement.n_tasks", n, f"at most a feature's compute nodes x tasks_per_node "
                      f"({', '.join(sizes)}; x {tpn})", "Use fewer tasks or other features.")


@dataclass
class FeaturesConfig:
    """One of the machine's predefined node sets: ``oneof`` (feature names, null: all), ``order`` (alps |
    prism: how the set's nodes are handed out), ``slab`` (of the ALPS order), ``tasks_per_node``,
    ``rank_order``, ``node_class`` (null: any compute node)."""

    kind: str = "features"
    oneof: Optional[list[str]] = None
    tasks_per_node: int = 1
    order: str = "alps"
    slab: str = "yz"
    rank_order: RankOrderConfig = field(default_factory=RankOrderConfig)
    node_class: Optional[str] = None


def _from_config(cfg: ConfigOf[FeaturesConfig], ctx: PlacementContext) -> Placement:
    require(cfg.slab in SLABS, "placement.slab", cfg.slab, " | ".join(SLABS))
    return features(ctx.topology, ctx.n_tasks, config_list(cfg.oneof), cfg.tasks_per_node, cfg.order, cfg.slab,
                    cfg.rank_order, cfg.node_class)


FEATURES = PlacementKind("features", FeaturesConfig, _from_config, needs=FEATURED_MACHINE)
