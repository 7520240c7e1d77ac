"""Starting points of a mapping search: the named placements that apply to a job, and a partitioning mapping.

A job is a topology, a traffic, the node ids available to it (``nodes``, in
the launcher's fill order, e.g. an ALPS free list) and ``tasks_per_node``
slots on each. :func:`starting_points` returns every start that respects
them (each task on an available node, at most ``tasks_per_node`` tasks per
node), in this order:

* ``linear``: the available nodes in fill order, ``tasks_per_node`` tasks
  each (SMP slots, as the launcher fills them);
* ``grid_order -R -c <cell>``: when the traffic has a task grid (a stencil's
  ``beta``, a traffic's ``grid`` of the job's task count, a traffic file's
  ``traffic.grid`` or ``# grid:`` header, also inside phases), Cray's ``grid_order`` rank orders
  (:func:`~evaluator.placement.rank_order.grid_order`, R major: the traffic's
  row-major task ids) over the same slots, with cells of a node's, a router's
  and a top-level group's slots (the dividing cell of least surface for each);
* every kind of :data:`evaluator.placement.KINDS` that is not random (:data:`NOT_STARTS`) or stood for by a
  start above (:data:`COVERED`: ``linear``), built
  from its schema's defaults (``tasks_per_node`` set to the job's; where a
  kind has ``gamma`` or ``group_order``/``node_order`` left to choose: the
  grid cell of least surface that fits a top-level group, ``linear``
  orders) through a :class:`~evaluator.placement.PlacementContext`; it
  applies when it builds without error and its nodes are available and hold
  at most ``tasks_per_node`` tasks each;
* ``alps (available nodes)``: a 3-D torus's ALPS-like order restricted to the
  available nodes;
* grid embeddings (``grid embedding 16x8x4 -> torus dims (0(8)+1(2),2,1)``, ``folded grid embedding ...``):
  on a torus, when the traffic has a task grid, block and folded embeddings of the task grid into the
  torus's routers in every dimension order, the best :data:`~evaluator.mapping._embeddings.MAX_EMBEDDINGS`
  distinct ones by a hop-bytes estimate (:func:`~evaluator.mapping._embeddings.grid_embeddings`);
* tile layouts (``tile layout: rows on 16-router tiles translated by <(0,0,2),(1,3,0)>``): on a torus wholly
  used, one task a node, when the traffic is a product of group all-to-alls (a pencil FFT's two transposes), the
  rows on the translates of a compact tile and the columns on the cosets of the translations, the best
  :data:`~evaluator.mapping._tiles.MAX_TILINGS` (:func:`~evaluator.mapping._tiles.tile_layouts`; listed as
  skipped, with the reason, only for such a product);
* ``partition``: recursive bisection of the traffic graph onto the node
  hierarchy (:func:`~evaluator.mapping._partition.partition_mapping`);
* ``random(seed=<seed>)``: one seeded random mapping onto the available slots.

A start equal to an earlier one is left out. What does not apply is in the
second value returned, a dict from the start's name to the reason.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from .._types import Int
from ..errors import ConfigError, check_seed
from ..placement import KINDS, PlacementContext, alps, grid_order
from ..placement.nodes import fill_slots
from ..topology import Topology
from ..traffic.grid import config_value as _get, task_grid  # one rule for the starts and the placements
from ._embeddings import grid_embeddings
from ._partition import check_job, partition_mapping
from ._tiles import tile_layouts

__all__ = ["Start", "starting_points", "check_job", "task_grid", "NOT_STARTS", "COVERED"]

COVERED = ("linear",)
"""Registered placement kinds that a start of the same name stands for (the kind ``linear`` starts at node 0 of
the whole machine; the start ``linear`` fills the available nodes)."""

NOT_STARTS = {
    "random": "a random placement, not a starting point (one seeded random mapping is 'random(seed=...)')",
    "dragonfly_random": "a random placement, not a starting point",
    "fragmented": "the free nodes of a random machine history, not the job's available nodes",
}
"""Registered placement kinds that are never starting points, and why."""


@dataclasses.dataclass(frozen=True)
class Start:
    """A starting point: ``task_node[task]`` (int64, shape [task]) and a short name."""

    name: str
    task_node: Int[np.ndarray, "task"]


def _row_major(cell: tuple[int, ...], grid: list[int]) -> bool:
    """Whether cells of ``cell`` hold consecutive row-major task ids (``(1, .., 1, c, g, .., g)``): grid_order
    with it is the identity."""
    k = next((i for i, c in enumerate(cell) if c > 1), len(cell))
    return all(c == g for c, g in zip(cell[k + 1:], grid[k + 1:]))


def _cells(grid: list[int], size: int, exact: bool = True) -> tuple[int, ...] | None:
    """The cell dividing ``grid`` with ``size`` tasks (``exact`` False: the most tasks <= ``size``), not a run of
    consecutive task ids (:func:`_row_major`), of least surface (tasks on its faces towards other cells);
    ties: the most cubic, then the lexicographically first. ``None`` when there is none."""
    divs = [[d for d in range(1, g + 1) if g % d == 0] for g in grid]
    best = None
    for c in itertools.product(*divs):
        p = math.prod(c)
        if p > size or (exact and p != size) or _row_major(c, grid):
            continue
        surf = sum(p // ck for ck, gk in zip(c, grid) if ck < gk)
        key = (-p, surf, max(c) - min(c), c)
        if best is None or key < best:
            best = key
    return None if best is None else best[-1]


@dataclasses.dataclass(frozen=True)
class _GridCfg:
    """A traffic config that only says its task grid (for kinds that read ``ctx.beta``)."""

    beta: list


class _Collector:
    def __init__(self, topology: Topology, nodes: np.ndarray, n: int, tpn: int):
        self.n, self.tpn, self.n_nodes = n, tpn, topology.n_nodes
        self.avail = np.zeros(topology.n_nodes, dtype=bool)
        self.avail[nodes] = True
        self.starts: list[Start] = []
        self.skipped: dict[str, str] = {}

    def add(self, name: str, task_node) -> None:
        tn = np.asarray(task_node).reshape(-1).astype(np.int64)
        if tn.size != self.n:
            self.skipped[name] = f"places {tn.size} tasks; the traffic has {self.n}"
            return
        inside = (tn >= 0) & (tn < self.n_nodes)
        inside[inside] = self.avail[tn[inside]]
        if not inside.all():
            out = np.unique(tn[~inside])
            self.skipped[name] = (f"uses {out.size} node(s) that are not available to the job, e.g. "
                                  f"{out[:5].tolist()}")
            return
        most = int(np.bincount(tn).max())
        if most > self.tpn:
            self.skipped[name] = f"puts up to {most} tasks on a node; tasks_per_node = {self.tpn}"
            return
        for s in self.starts:
            if np.array_equal(s.task_node, tn):
                self.skipped[name] = f"the same mapping as {s.name!r}"
                return
        tn.setflags(write=False)
        self.starts.append(Start(name, tn))


def _kind_config(kind, tpn: int, grid: list[int] | None, group_nodes: int):
    """The kind's schema with its defaults, the job's ``tasks_per_node``, and the choices a kind leaves open."""
    fields = {f.name: f for f in dataclasses.fields(kind.schema)}
    cfg = kind.schema()
    over = {}
    if "tasks_per_node" in fields:
        over["tasks_per_node"] = tpn
    for f in ("group_order", "node_order"):
        if f in fields:
            over[f] = "linear"
    if "gamma" in fields and getattr(cfg, "gamma") is None and grid is not None:
        cell = _cells(grid, group_nodes, exact=False)
        if cell is not None:
            over["gamma"] = list(cell)
    return dataclasses.replace(cfg, **over)


def _add_grid_orders(out, grid, slots, router, groups, nodes, n: int, tpn: int) -> None:
    """Cray ``grid_order -R`` rank orders of the task grid, cells of a node's, a router's and a group's tasks (the
    cells that are not runs of consecutive tasks), onto the launcher's slots."""
    if grid is None:
        out.skipped["grid_order"] = ("the traffic has no task grid (a stencil's beta, a traffic's grid, a traffic "
                                      "file's traffic.grid or '# grid:' header)")
    else:
        sizes = sorted({tpn, tpn * int(np.bincount(router[nodes]).max()),
                        tpn * int(np.bincount(groups[-1][nodes]).max())})
        for size in (s for s in sizes if 1 < s <= n):
            cell = _cells(grid, size)
            if cell is None:
                out.skipped[f"grid_order cells of {size} tasks"] = (
                    f"no cell of {size} tasks divides the grid {grid} other than runs of consecutive tasks "
                    "(the same as 'linear')")
                continue
            order = grid_order(grid, cell, "R", n)
            tn = np.empty(n, dtype=np.int64)
            tn[order] = slots
            out.add(f"grid_order -R -c {','.join(map(str, cell))}", tn)



def _add_named(out, topology, n: int, tpn: int, grid, group_nodes: int, traffic_cfg, topology_cfg) -> None:
    """Every named placement that applies here (those that do not: skipped, with the reason)."""
    ctx_traffic = traffic_cfg if (grid is None or _get(traffic_cfg, "beta") is not None) else _GridCfg(grid)
    ctx = PlacementContext(topology, n, ctx_traffic, topology_cfg)
    for name, kind in KINDS.items():
        if name in COVERED:
            continue
        if name in NOT_STARTS:
            out.skipped[name] = NOT_STARTS[name]
            continue
        if not kind.serves(topology):
            out.skipped[name] = f"'{name}' needs {kind.needs.text}"
            continue
        try:
            pl = kind.build(_kind_config(kind, tpn, grid, group_nodes), ctx)
        except ConfigError as exc:
            out.skipped[name] = str(exc)
            continue
        out.add(name, pl.task_node)


def starting_points(topology: Topology, traffic, nodes, tasks_per_node: int, *, seed: int = 0,
                    traffic_cfg=None, topology_cfg=None) -> tuple[list[Start], dict[str, str]]:
    """The starting points of a mapping search for one job (module docstring).

    Parameters
    ----------
    topology
        The machine.
    traffic
        The job's traffic (its ``n_tasks`` tasks are mapped).
    nodes : int array, shape [node]
        Node ids available to the job, in the launcher's fill order (no repeats).
    tasks_per_node
        Slots per node (>= 1).
    seed
        Seed of the partitioning (METIS) and of the one random start (an integer >= 0).
    traffic_cfg, topology_cfg
        The traffic's and the topology's configs where known (a stencil's ``beta`` gives the task grid; a
        machine topology's ``partition`` the ``subprism``).

    Returns
    -------
    (starts, skipped)
        ``starts``: :class:`Start` s, each ``task_node`` int64 of shape [task] on available nodes with at most
        ``tasks_per_node`` tasks per node; ``skipped``: the name of every start that does not apply here (or
        repeats an earlier one), with the reason.
    """
    nodes, tpn = check_job(topology, traffic, nodes, tasks_per_node)
    seed = check_seed("mapping.seed", seed)
    n = int(traffic.n_tasks)
    out = _Collector(topology, nodes, n, tpn)
    slots = fill_slots(nodes, n, tpn)
    out.add("linear", slots)

    grid = task_grid(traffic_cfg, n)
    groups = np.asarray(topology.node_groups(), dtype=np.int64)
    router = np.asarray(topology.node_router)
    group_nodes = int(np.bincount(groups[-1]).max())
    _add_grid_orders(out, grid, slots, router, groups, nodes, n, tpn)
    _add_named(out, topology, n, tpn, grid, group_nodes, traffic_cfg, topology_cfg)
    free = np.zeros(topology.n_nodes, dtype=bool)
    free[nodes] = True
    try:
        out.add("alps (available nodes)", alps(topology, n, tpn, free=free).task_node)
    except ConfigError as exc:
        out.skipped["alps (available nodes)"] = str(exc)

    embeddings, why = grid_embeddings(topology, traffic, grid, nodes, tpn, exclude=[s.task_node for s in out.starts])
    for name, tn in embeddings:
        out.add(name, tn)
    if why is not None:
        out.skipped["grid embeddings"] = why
    tiles, why = tile_layouts(topology, traffic, nodes, tpn)
    for name, tn in tiles:
        out.add(name, tn)
    if why is not None:
        out.skipped["tile layouts"] = why
    out.add("partition", partition_mapping(topology, traffic, nodes, tpn, seed=seed))
    rng = np.random.default_rng(seed)
    out.add(f"random(seed={seed})", rng.permutation(np.repeat(nodes, tpn))[:n])
    return out.starts, out.skipped
