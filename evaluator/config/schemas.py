"""Top-level config schemas: what ``evaluator eval`` and ``evaluator sweep`` compose.

The per-kind schemas of the swappable groups (``topology``, ``routing``,
``traffic``, ``placement``) live with their members and are found through the
families' registries (:data:`FAMILIES`); here are the schemas that hold them
and the run settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .. import placement, routing, topology, traffic

__all__ = ["MISSING", "FAMILIES", "GROUPS", "SweepConfig", "RayConfig", "EvalConfig"]

MISSING: Any = "???"  # OmegaConf's marker for a value a config group must supply

FAMILIES = {"topology": topology.KINDS, "routing": routing.KINDS, "traffic": traffic.KINDS,
            "placement": placement.KINDS}
"""Config group -> registry of its kinds (schema and builder per kind)."""

GROUPS = tuple(FAMILIES)


@dataclass
class SweepConfig:
    """A sweep: named axes over config keys (see :mod:`evaluator.sweep`)."""

    name: str = "sweep"
    axes: dict[str, Any] = field(default_factory=dict)
    chunk_size: int = 256
    keep_link_load: bool = False
    format: str = "netcdf"  # netcdf | zarr
    output_dir: str = "results"
    run_id: Optional[str] = None  # null: derived from the resolved config, so a rerun resumes
    max_points: int = 10_000_000


@dataclass
class RayConfig:
    """Where sweeps run: ``address`` null starts Ray on this machine; "auto" or a URL joins a cluster."""

    enabled: bool = True
    address: Optional[str] = None
    num_cpus: Optional[int] = None
    max_retries: int = 3
    max_in_flight: Optional[int] = None  # chunks submitted at once (null: 2 x CPUs)
    connect_timeout_s: float = 15.0  # how long to wait for a cluster named by address


@dataclass
class EvalConfig:
    """Top-level config of ``evaluator eval`` and ``evaluator sweep``.

    ``topology``, ``routing``, ``traffic`` and ``placement`` each hold the
    schema of the kind their config group chose (one schema per kind).
    """

    topology: Any = MISSING
    routing: Any = MISSING
    traffic: Any = MISSING
    placement: Any = MISSING
    output_dir: str = "results/eval"
    save: bool = True
    sweep: SweepConfig = field(default_factory=SweepConfig)
    ray: RayConfig = field(default_factory=RayConfig)
