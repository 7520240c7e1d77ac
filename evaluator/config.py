"""Typed config schemas and the builders that turn them into library objects.

One dataclass per choice of each config group (``topology``, ``routing``,
``traffic``, ``placement``). The Hydra layer (:mod:`evaluator.cli`)
registers them as structured-config schemas, so a misspelt key fails at
composition with the key's name. The builders here take the plain
dataclasses; they do not touch OmegaConf.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

MISSING: Any = "???"  # OmegaConf's marker for a value a config group must supply


from . import placement as P
from . import routing as R
from . import structured as S
from . import topology as T
from . import traffic as TR
from .errors import ConfigError, require

# --------------------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------------------


@dataclass
class TorusConfig:
    """A torus or mesh. ``wrap`` and ``link_bandwidth`` take a scalar or one value per dimension."""

    kind: str = "torus"
    dims: list[int] = field(default_factory=lambda: [4, 4, 4])
    wrap: Any = True
    link_bandwidth: Any = 2.0e9
    nodes_per_router: int = 1
    injection_bandwidth: Optional[float] = None


@dataclass
class BGQConfig:
    """Blue Gene/Q partition of A x B x C x D midplanes (4A x 4B x 4C x 4D x 2 nodes)."""

    kind: str = "bgq"
    midplanes: list[int] = field(default_factory=lambda: [1, 1, 1, 1])
    link_bandwidth: float = 2.0e9
    injection_bandwidth: Optional[float] = None


@dataclass
class GeminiConfig:
    """Cray XE Gemini 3D torus: 2 nodes/router, Y links at half the X/Z bandwidth."""

    kind: str = "gemini"
    dims: list[int] = field(default_factory=lambda: [8, 4, 8])
    wrap: Any = True
    xz_bandwidth: float = T.GEMINI_XZ_BANDWIDTH
    injection_bandwidth: float = 6.4e9


@dataclass
class DragonflyConfig:
    """Dragonfly(p, a, h, g); ``g`` null means a*h+1. Bandwidths in bytes/s per direction."""

    kind: str = "dragonfly"
    p: int = 4
    a: int = 8
    h: int = 4
    g: Optional[int] = None
    bandwidth_p: float = 10.0e9
    bandwidth_l: float = 10.0e9
    bandwidth_r: float = 10.0e9
    arrangement: str = "consecutive"


@dataclass
class MachineTopologyConfig:
    """A machine of the catalogue (``conf/machine/``), whole or one partition.

    ``partition``: midplanes (BG/Q) or routers (torus machines), null for the
    whole machine. ``mode``: ``own`` (the partition is its own torus, as on
    Blue Gene/Q), ``embedded`` (the host torus; place tasks with
    ``placement=subprism``, as on Cray Gemini) or ``auto`` (own for BG/Q,
    embedded for torus machines).
    """

    kind: str = "machine"
    name: str = "Mira"
    partition: Optional[list[int]] = None
    mode: str = "auto"


@dataclass
class RoutingConfig:
    """``kind``: dor | minimal | valiant. DOR: ``order`` as_given | longest_first | [perm], ``tie`` split | positive."""

    kind: str = "minimal"
    order: Any = "as_given"
    tie: str = "split"


@dataclass
class TrafficConfig:
    """Traffic pattern. Which fields matter depends on ``kind``:

    * ``stencil``: alpha, beta, bytes_per_element, periodic
    * ``all_to_all``: n_tasks (null: one per node), bytes (per pair)
    * ``bisection_pairing``: bytes (per pair; one task per node)
    * ``random_permutation``: n_tasks, bytes (per task), seed
    * ``shift``: n_tasks or grid, offset, bytes (per task)
    * ``tornado``: grid, bytes (per task)
    * ``many_to_many``: n_sources, n_destinations, mode, overlap, bytes (per pair), n_tasks
    * ``file``: path (.npz or .csv), n_tasks (optional check)
    """

    kind: str = "stencil"
    alpha: Optional[list[int]] = None
    beta: Optional[list[int]] = None
    bytes_per_element: float = 1024.0
    periodic: Any = True
    n_tasks: Optional[int] = None
    bytes: float = 1.0e6
    seed: int = 0
    offset: Any = 1
    grid: Optional[list[int]] = None
    n_sources: int = 16
    n_destinations: int = 16
    mode: str = "disjoint"
    overlap: Optional[int] = None
    path: Optional[str] = None


@dataclass
class PlacementConfig:
    """Task placement. Which fields matter depends on ``kind``:

    * ``linear``: tasks_per_node, first_node
    * ``random``: tasks_per_node, seed
    * ``dragonfly_cartesian``: gamma (beta from the stencil traffic unless given), seed,
      group_order, node_order
    * ``dragonfly_random``: tasks_per_group, seed
    * ``torus_block``: task_grid (null: the stencil's beta)
    * ``subprism``: task_grid = the job's prism in routers on a host torus (null: the
      machine topology's partition), offset, tasks_per_node
    """

    kind: str = "linear"
    tasks_per_node: int = 1
    first_node: int = 0
    seed: int = 0
    beta: Optional[list[int]] = None
    gamma: Optional[list[int]] = None
    group_order: str = "random"
    node_order: str = "random"
    tasks_per_group: Optional[int] = None
    task_grid: Optional[list[int]] = None
    offset: Optional[list[int]] = None


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


@dataclass
class EvalConfig:
    """Top-level config of ``evaluator eval`` and ``evaluator sweep``."""

    topology: Any = MISSING  # one of the topology schemas, chosen by the config group
    routing: RoutingConfig = field(default_factory=RoutingConfig)
    traffic: TrafficConfig = field(default_factory=TrafficConfig)
    placement: PlacementConfig = field(default_factory=PlacementConfig)
    output_dir: str = "results/eval"
    save: bool = True
    sweep: SweepConfig = field(default_factory=SweepConfig)
    ray: RayConfig = field(default_factory=RayConfig)


TOPOLOGY_SCHEMAS = {"torus": TorusConfig, "bgq": BGQConfig, "gemini": GeminiConfig, "dragonfly": DragonflyConfig,
                    "machine": MachineTopologyConfig}
TRAFFIC_KINDS = ("stencil", "all_to_all", "bisection_pairing", "random_permutation", "shift", "tornado",
                 "many_to_many", "file")
PLACEMENT_KINDS = ("linear", "random", "dragonfly_cartesian", "dragonfly_random", "torus_block", "subprism")

# --------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------


def _list(v):
    return None if v is None else list(v)


def build_topology(cfg) -> T.Topology:
    """Topology from a topology config."""
    kind = cfg.kind
    if kind == "torus":
        wrap = cfg.wrap if isinstance(cfg.wrap, bool) else _list(cfg.wrap)
        bw = cfg.link_bandwidth if isinstance(cfg.link_bandwidth, (int, float)) else _list(cfg.link_bandwidth)
        return T.torus(_list(cfg.dims), wrap=wrap, link_bandwidth=bw, nodes_per_router=cfg.nodes_per_router,
                       injection_bandwidth=cfg.injection_bandwidth)
    if kind == "bgq":
        return T.bgq_partition(_list(cfg.midplanes), link_bandwidth=cfg.link_bandwidth,
                               injection_bandwidth=cfg.injection_bandwidth)
    if kind == "gemini":
        wrap = cfg.wrap if isinstance(cfg.wrap, bool) else _list(cfg.wrap)
        return T.gemini(_list(cfg.dims), wrap=wrap, xz_bandwidth=cfg.xz_bandwidth,
                        injection_bandwidth=cfg.injection_bandwidth)
    if kind == "dragonfly":
        return T.dragonfly(cfg.p, cfg.a, cfg.h, cfg.g, bandwidth_p=cfg.bandwidth_p, bandwidth_l=cfg.bandwidth_l,
                           bandwidth_r=cfg.bandwidth_r, arrangement=cfg.arrangement)
    if kind == "machine":
        return machine_topology(cfg.name, _list(cfg.partition), cfg.mode)
    raise ConfigError("topology.kind", kind, f"one of {list(TOPOLOGY_SCHEMAS)}")


MACHINE_MODES = ("auto", "own", "embedded")


def machine_topology(name: str, partition: list[int] | None = None, mode: str = "auto") -> T.TorusTopology:
    """Topology of a catalogue machine, or of one of its partitions.

    ``own``: the partition is a torus of its own (Blue Gene/Q: ``4A x 4B x 4C x
    4D x 2`` nodes, wrap links closing inside the partition). ``embedded``:
    the whole host torus; the job's sub-prism is chosen by the placement
    (``subprism``) and its traffic routes over the host.
    """
    from .machines import MachineError, UnknownMachineError, load_machine
    from .partitions import PartitionError, check_partition

    require(mode in MACHINE_MODES, "topology.mode", mode, f"one of {list(MACHINE_MODES)}")
    try:
        m = load_machine(name)
    except UnknownMachineError as exc:
        raise ConfigError("topology.name", name, str(exc)) from None
    try:
        shape = None if partition is None else check_partition(m, partition)
    except (MachineError, PartitionError) as exc:
        raise ConfigError("topology.partition", partition, str(exc)) from None
    if mode == "auto":
        mode = "own" if m.kind == "bgq" else "embedded"
    bw = list(m.link_bandwidth)
    if m.kind == "bgq":
        mp = shape if (mode == "own" and shape is not None) else m.midplanes
        return T.bgq_partition(list(mp), link_bandwidth=bw[0], injection_bandwidth=m.injection_bandwidth,
                               name=f"{m.name} " + ("x".join(map(str, mp)) + " midplanes"))
    dims = list(shape) if (mode == "own" and shape is not None) else list(m.dims)
    wrap = True if (mode == "own" and shape is not None) else list(m.wrap)
    return T.torus(dims, wrap=wrap, link_bandwidth=bw, nodes_per_router=m.nodes_per_router,
                   injection_bandwidth=m.injection_bandwidth, name=f"{m.name} " + "x".join(map(str, dims)))


def build_routing_spec(cfg) -> R.Routing:
    """Routing spec from a routing config."""
    if cfg.kind == "dor":
        order = cfg.order if isinstance(cfg.order, str) else _list(cfg.order)
        return R.dor(order=order, tie=cfg.tie)
    if cfg.kind == "minimal":
        return R.minimal()
    if cfg.kind == "valiant":
        return R.valiant()
    raise ConfigError("routing.kind", cfg.kind, "one of ['dor', 'minimal', 'valiant']")


def build_traffic(cfg, topology: T.Topology) -> TR.Traffic | S.DenseTraffic:
    """Traffic from a traffic config (``n_tasks`` null means one task per node)."""
    k = cfg.kind
    n = cfg.n_tasks if cfg.n_tasks is not None else topology.n_nodes
    if k == "stencil":
        require(cfg.alpha is not None and cfg.beta is not None, "traffic.alpha/beta", (cfg.alpha, cfg.beta),
                "both alpha and beta set for a stencil")
        per = cfg.periodic if isinstance(cfg.periodic, bool) else _list(cfg.periodic)
        return TR.stencil(_list(cfg.alpha), _list(cfg.beta), cfg.bytes_per_element, per)
    if k == "all_to_all":
        return S.all_to_all(n, cfg.bytes)  # dense: never materialises n^2 flows
    if k == "bisection_pairing":
        return TR.bisection_pairing(topology, cfg.bytes)
    if k == "random_permutation":
        return TR.random_permutation(n, cfg.bytes, cfg.seed)
    if k == "shift":
        off = cfg.offset if isinstance(cfg.offset, int) else _list(cfg.offset)
        return TR.shift(n, off, cfg.bytes, _list(cfg.grid))
    if k == "tornado":
        require(cfg.grid is not None, "traffic.grid", None, "a task grid for tornado, e.g. [8, 8]")
        return TR.tornado(_list(cfg.grid), cfg.bytes)
    if k == "many_to_many":
        return S.many_to_many(cfg.n_sources, cfg.n_destinations, cfg.bytes, cfg.mode, cfg.overlap, cfg.n_tasks)
    if k == "file":
        require(cfg.path is not None, "traffic.path", None, "a path to a .npz or .csv traffic file")
        return TR.from_file(cfg.path, cfg.n_tasks)
    raise ConfigError("traffic.kind", k, f"one of {list(TRAFFIC_KINDS)}")


def build_placement(cfg, topology: T.Topology, traffic_cfg, n_tasks: int, topology_cfg=None) -> P.Placement:
    """Placement from a placement config, for ``n_tasks`` tasks."""
    k = cfg.kind
    beta = _list(cfg.beta) if cfg.beta is not None else _list(getattr(traffic_cfg, "beta", None))
    if k == "linear":
        return P.linear(topology, n_tasks, cfg.tasks_per_node, cfg.first_node)
    if k == "random":
        return P.fully_random(topology, n_tasks, cfg.tasks_per_node, cfg.seed)
    if k == "dragonfly_cartesian":
        require(beta is not None, "placement.beta", None, "a task grid beta (or a stencil traffic with beta)")
        require(cfg.gamma is not None, "placement.gamma", None, "a list of tasks per group along each dimension")
        return P.dragonfly_cartesian(topology, beta, _list(cfg.gamma), cfg.seed, cfg.group_order, cfg.node_order)
    if k == "dragonfly_random":
        require(cfg.tasks_per_group is not None, "placement.tasks_per_group", None, "a positive integer")
        return P.dragonfly_random(topology, n_tasks, cfg.tasks_per_group, cfg.seed)
    if k == "subprism":
        grid = _list(cfg.task_grid) if cfg.task_grid is not None else _list(getattr(topology_cfg, "partition", None))
        require(grid is not None, "placement.task_grid", None,
                "the job's prism in routers (or a machine topology with a partition)")
        return P.subprism(topology, grid, _list(cfg.offset) if cfg.offset is not None else None,
                          n_tasks=n_tasks, tasks_per_node=cfg.tasks_per_node)
    if k == "torus_block":
        grid = _list(cfg.task_grid) if cfg.task_grid is not None else beta
        require(grid is not None, "placement.task_grid", None, "a task grid (or a stencil traffic with beta)")
        return P.torus_block(topology, grid)
    raise ConfigError("placement.kind", k, f"one of {list(PLACEMENT_KINDS)}")


@dataclass(frozen=True)
class DesignPoint:
    """Everything one evaluation needs, built from a config."""

    topology: T.Topology
    routing: R.Routing
    traffic: TR.Traffic | S.DenseTraffic
    placement: P.Placement


def build(cfg) -> DesignPoint:
    """Build a design point from an :class:`EvalConfig`-shaped object (config -> build)."""
    topo = build_topology(cfg.topology)
    rt = build_routing_spec(cfg.routing)
    tr = build_traffic(cfg.traffic, topo)
    pl = build_placement(cfg.placement, topo, cfg.traffic, tr.n_tasks, cfg.topology)
    return DesignPoint(topo, rt, tr, pl)


def as_dict(obj) -> dict:
    """A schema dataclass as a plain dict (for provenance)."""
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else dict(obj)
