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
from ..cost import CostConfig

__all__ = ["MISSING", "FAMILIES", "GROUPS", "SweepConfig", "RayConfig", "BackgroundConfig", "EvalConfig", "JOB_KEYS"]

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
    chunk_size: Optional[int] = None  # null: evaluator.sweep.plan.default_chunk_size
    keep_link_load: bool = False
    format: str = "netcdf"  # netcdf | zarr
    output_dir: str = "results"
    run_id: Optional[str] = None  # null: derived from the resolved config, so a rerun resumes
    max_points: int = 10_000_000


@dataclass
class RayConfig:
    """Where sweeps run: ``address`` null starts Ray on this machine (``RAY_ADDRESS`` and Ray's current-cluster
    file are not read); "auto" joins the cluster they name, a ``HOST:PORT`` that one, probed within
    ``connect_timeout_s``."""

    enabled: bool = True
    address: Optional[str] = None
    num_cpus: Optional[int] = None
    max_retries: int = 3
    max_in_flight: Optional[int] = None  # chunks submitted at once (null: 2 x CPUs)
    connect_timeout_s: float = 15.0  # how long to wait for a cluster named by address
    driver_chunks: bool = True  # while a local Ray starts, the driver evaluates chunks itself (false: Ray's alone)
    stall_timeout_s: Optional[float] = 3600.0  # no chunk finished this long: cancel, keep, stop (null: no limit)


@dataclass
class BackgroundConfig:
    """Background load (:class:`evaluator.jobs.Background`): the nodes outside every job inject ``fraction`` of
    their injection bandwidth as ``pattern`` traffic (``uniform`` or ``random_permutation`` with ``seed``),
    routed by ``routing`` (a routing config; null: the evaluation's routing). ``fraction`` 0: no background."""

    fraction: float = 0.0
    pattern: str = "uniform"
    seed: int = 0
    routing: Optional[Any] = None


JOB_KEYS = ("name", "traffic", "placement", "routing")
"""Keys of one entry of ``jobs``: each group missing from the entry is the top-level one; an entry without a
``kind`` overrides keys of the top-level group's config (``{placement: {offset: [8, 0, 0]}}``)."""


@dataclass
class EvalConfig:
    """Top-level config of ``evaluator eval`` and ``evaluator sweep``.

    ``topology``, ``routing``, ``traffic`` and ``placement`` each hold the
    schema of the kind their config group chose (one schema per kind).
    ``jobs`` (a list of ``{name, traffic, placement, routing}``, see
    :data:`JOB_KEYS`) and ``background`` turn the evaluation into several
    jobs sharing the machine (:func:`evaluator.jobs.evaluate_jobs`).
    """

    topology: Any = MISSING
    routing: Any = MISSING
    traffic: Any = MISSING
    placement: Any = MISSING
    jobs: Optional[list[Any]] = None  # several jobs at once (JOB_KEYS per entry); null: one job, the groups above
    background: BackgroundConfig = field(default_factory=BackgroundConfig)  # fraction 0: none
    exclusive_nodes: bool = True  # jobs may not share a node
    interference: bool = True  # compute the job x job interference matrix
    bounds: Any = False  # true or a method: eval and sweeps add optimal_completion_time (docs/bounds.md)
    bound_solver: str = "highs"  # LP solver of the bounds: highs (exact), pdhg (batched JAX; sweeps batch per chunk)
    sharing: str = "bound"  # bound | max_min: also time_max_min, flow-level max-min sharing (docs/latency.md)
    fairness: str = "flow"  # max_min weights: flow | job | rtt (1 / latency, as TCP and SimGrid's CM02)
    progression: str = "phase"  # max_min phases: phase (global steps) | rank (each rank goes on by itself, as MPI)
    output_dir: str = "results/eval"
    save: bool = True
    sweep: SweepConfig = field(default_factory=SweepConfig)
    cost: CostConfig = field(default_factory=CostConfig)  # the price table (conf/cost/; docs/cost.md)
    ray: RayConfig = field(default_factory=RayConfig)
