"""Topaware (Fiedler's slides): pick usable routers of a Gemini prism and map a virtual grid's tiles onto them.

Given a 2-, 3- or 4-D virtual grid of tasks, ``tasks_per_node`` and a prism
of routers (``prism`` at ``offset``) that may hold service and down nodes:

1. **Tiles.** Each node holds a ``node_tile`` of the grid (``tasks_per_node``
   tasks); the ``nodes_per_router`` nodes of a router (a Gemini's node pair)
   hold a router tile, the node tile repeated along ``pair_dim``. The grid
   divided by the router tile is the *tile grid*. A 4-D grid must hold its
   whole fourth dimension in a router tile ("entire 4th dimension on each
   node pair", MILC in the slides); its first three dimensions are mapped
   like a 3-D grid.
2. **Layout.** The tile grid becomes a layout of ``NX x NY x NZ`` routers:
   3-D (and 4-D) grids directly (grid dimension k on torus dimension
   ``axes[k]``); a 2-D grid is folded like a sheet of paper along one
   dimension (``fold_dim``) into ``supertiles`` pieces, each an XZ plane of
   the layout, stacked along Y, every other one reversed along the folded
   dimension so that each fold edge joins the next plane at the same
   (x, z). The fold edges alternate between the two Z ends of the planes, so
   no two fold edges share a link (the slides' "staggered so they share no
   links").
3. **Routers** (the slides' node selection): the layout goes onto the prism
   plane by plane along Y. In an XZ plane a row (fixed z) is usable when it
   holds at least ``NX`` routers whose nodes are compute nodes; the layout's
   column ``i`` of that row is its ``i``-th such router (so routers keep the
   row and plane they would have without service nodes, shifted along X by
   the service routers before them). A plane is usable when it has ``NZ``
   usable rows (the first ``NZ`` are taken); Y is scanned for the first
   ``NY`` usable planes. Service and down routers are never selected; the
   prism's other routers stay idle.

Neighbouring tiles then sit on neighbouring routers, except where a service
router or a skipped row or plane lies between them ("extra hops for
North/South exchange": one more hop per skipped router, row or plane).
Ranks are numbered in ``major`` order of the grid (R: last dimension
fastest, MPI_Cart_create's order; C: first fastest).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._types import ConfigOf, Int
from ..errors import ConfigError, is_int, positive_int, require
from ..topology import Topology
from .base import (TORUS_3D, Placement, PlacementContext, PlacementKind, check_task_memory, check_topology,
                   config_list, vec)
from .nodes import alps_order, compute_mask, fill_slots
from .rank_order import RankOrderConfig, with_rank_order

__all__ = ["topaware", "select_routers", "TopawareConfig", "TOPAWARE", "MAPPINGS"]

MAPPINGS = ("tiles", "launcher")
"""``tiles``: Topaware's own task placement; ``launcher``: Topaware's nodes, filled as the launcher fills a node
list without Topaware's rank order (ALPS order, SMP or a ``rank_order``), the slides' "same set of nodes"
comparison."""


def _prism(topology: Topology, prism, offset) -> tuple[tuple[int, ...], tuple[int, ...]]:
    TORUS_3D.require(topology, "topaware")
    dims = topology.dims  # type: ignore[union-attr]
    pr = dims if prism is None else vec("placement.prism", prism, 3)
    for k, (a, d) in enumerate(zip(pr, dims)):
        require(a <= d, f"placement.prism[{k}]", a, f"at most the host size dims[{k}] = {d}")
    off = (0, 0, 0) if offset is None else offset
    require(isinstance(off, (list, tuple)) and len(off) == 3 and all(is_int(o) for o in off), "placement.offset",
            off, "3 integer router coordinates (they wrap around the host torus)")
    return tuple(pr), tuple(int(o) for o in off)


def select_routers(topology: Topology, layout: Sequence[int], prism: Sequence[int] | None = None,
                   offset: Sequence[int] | None = None, node_class: str | None = None) -> Int[np.ndarray, "NX NY NZ"]:
    """Routers for an ``NX x NY x NZ`` layout in a prism, as the slides select them, shape [NX, NY, NZ].

    See the module docstring (step 3). A :class:`ConfigError` names the shortfall when the prism has too
    few usable routers, rows or planes.
    """
    check_topology(topology)
    pr, off = _prism(topology, prism, offset)
    nx, ny, nz = (int(v) for v in layout)
    for k, (n, p) in enumerate(zip((nx, ny, nz), pr)):
        require(n <= p, "placement.prism", list(pr), f"a prism at least as large as the layout "
                f"{nx}x{ny}x{nz} routers (dimension {k}: {n} > {p})")
    dims = np.array(topology.dims)  # type: ignore[union-attr]
    c = np.stack(np.meshgrid(*[np.arange(p) for p in pr], indexing="ij"), axis=-1) + np.array(off)
    routers = np.ravel_multi_index(tuple(np.moveaxis(c % dims, -1, 0)), tuple(dims))  # [PX, PY, PZ]
    p = topology.nodes_per_router
    ok = compute_mask(topology, node_class).reshape(-1, p).all(axis=1)[routers]  # router usable: all its nodes compute
    out = np.empty((nx, ny, nz), dtype=np.int64)
    planes, best = 0, 0
    for y in range(pr[1]):
        if planes == ny:
            break
        rows = [z for z in range(pr[2]) if ok[:, y, z].sum() >= nx][:nz]
        best = max(best, len(rows))
        if len(rows) < nz:
            continue
        for k, z in enumerate(rows):
            out[:, planes, k] = routers[np.flatnonzero(ok[:, y, z])[:nx], y, z]
        planes += 1
    if planes < ny:
        raise ConfigError("placement.prism", list(pr),
                          f"a prism (at offset {list(off)}) with {ny} XZ planes that each have {nz} rows of "
                          f"{nx} usable routers; it has {planes} such planes (best plane: {best} rows)",
                          "Service and down routers are never used: enlarge the prism, move it, or use fewer "
                          "tasks.")
    return out


def _tile_layout(grid: tuple[int, ...], rt: tuple[int, ...], axes: tuple[int, ...], fold_dim: int,
                 supertiles: int | None, coords: np.ndarray) -> tuple[tuple[int, int, int], np.ndarray]:
    """Layout shape and every task's layout coordinate (shape [task, 3]) from its grid coordinate."""
    tiles = tuple(g // r for g, r in zip(grid, rt))
    t = coords // np.array(rt)
    nd = len(grid)
    if nd >= 3:
        shape = [1, 1, 1]
        lay = np.zeros((coords.shape[0], 3), dtype=np.int64)
        for k in range(3):
            shape[axes[k]] = tiles[k]
            lay[:, axes[k]] = t[:, k]
        return (shape[0], shape[1], shape[2]), lay
    # 2-D: fold along fold_dim into supertiles stacked along Y (torus dim 1)
    other = 1 - fold_dim
    s_count = int(supertiles)  # type: ignore[arg-type]
    piece = tiles[fold_dim] // s_count
    f = t[:, fold_dim]
    s = f // piece
    local = f - s * piece
    local = np.where(s % 2 == 1, piece - 1 - local, local)
    lay = np.stack([t[:, other], s, local], axis=1)
    return (tiles[other], s_count, piece), lay


def _grid_coords(grid: tuple[int, ...], major: str) -> np.ndarray:
    """Grid coordinate of every rank, shape [task, dim] (R: last dimension fastest; C: first fastest)."""
    n = math.prod(grid)
    if major == "R":
        return np.stack(np.unravel_index(np.arange(n), grid), axis=1)
    return np.stack(np.unravel_index(np.arange(n), grid[::-1]), axis=1)[:, ::-1]


def _candidates(grid, tpn, npr, pair_dim, node_tile):
    """(node_tile, pair_dim) pairs to try, best first (smallest router-tile surface, then node-tile surface)."""
    nd = len(grid)
    if node_tile is not None:
        tiles = [tuple(node_tile)]
    else:
        tiles = [t for t in itertools.product(*[[d for d in range(1, g + 1) if g % d == 0] for g in grid])
                 if math.prod(t) == tpn]
    pairs = [pair_dim] if pair_dim is not None else list(range(nd))
    out = []
    for t in tiles:
        for pdim in pairs:
            rt = list(t)
            rt[pdim] *= npr
            if any(g % r for g, r in zip(grid, rt)):
                continue
            if nd == 4 and rt[3] != grid[3]:
                continue
            surf = sum(math.prod(rt) // rt[k] for k in range(min(nd, 3)) if rt[k] != grid[k])
            nsurf = sum(math.prod(t) // t[k] for k in range(nd))
            out.append((surf, nsurf, tuple(t), pdim, tuple(rt)))
    return sorted(out)


def topaware(topology: Topology, grid: Sequence[int], tasks_per_node: int, prism: Sequence[int] | None = None,
             offset: Sequence[int] | None = None, node_tile: Sequence[int] | None = None,
             pair_dim: int | None = None, axes: Sequence[int] | None = None, fold_dim: int = 1,
             supertiles: int | None = None, major: str = "R", n_tasks: int | None = None,
             node_class: str | None = None, mapping: str = "tiles", rank_order=None) -> Placement:
    """Topaware's node selection and task placement (module docstring); ``task_node[rank]``.

    ``node_tile`` / ``pair_dim`` null: the smallest-surface choice whose layout fits the prism's usable
    routers. ``supertiles`` null (2-D): the fewest that fit. ``n_tasks`` must be ``prod(grid)``.
    ``mapping`` ``launcher``: the same nodes, filled in ALPS order with ``rank_order`` (default SMP) instead
    of Topaware's tile mapping (:data:`MAPPINGS`).
    """
    check_topology(topology)
    require(mapping in MAPPINGS, "placement.mapping", mapping, " | ".join(MAPPINGS))
    method = (rank_order.get("method", "smp") if isinstance(rank_order, Mapping)
              else getattr(rank_order, "method", "smp"))
    if mapping == "tiles":
        require(method == "smp", "placement.rank_order.method", method,
                "smp with mapping=tiles (Topaware places every rank itself); a rank order needs mapping=launcher")
    g = vec("placement.grid", grid)
    require(2 <= len(g) <= 4, "placement.grid", list(g), "a virtual grid of 2, 3 or 4 dimensions")
    nd = len(g)
    n = math.prod(g)
    check_task_memory("placement.grid", list(g), n, 8 * (3 * len(g) + 5))  # the grid coordinates, the nodes
    if n_tasks is not None:
        require(int(n_tasks) == n, "placement.grid", list(g), f"a grid of the job's {n_tasks} tasks (it has {n})")
    tpn = positive_int("placement.tasks_per_node", tasks_per_node)
    require(major in ("R", "C"), "placement.major", major, "R (last dimension fastest, MPI's order) or C")
    nt = None if node_tile is None else vec("placement.node_tile", node_tile, nd)
    if nt is not None:
        require(math.prod(nt) == tpn, "placement.node_tile", list(nt), f"a tile of tasks_per_node = {tpn} tasks")
        for k, (a, b) in enumerate(zip(g, nt)):
            require(a % b == 0, f"placement.node_tile[{k}]", b, f"a divisor of grid[{k}] = {a}")
    if pair_dim is not None:
        require(is_int(pair_dim) and 0 <= int(pair_dim) < nd, "placement.pair_dim", pair_dim,
                f"a grid dimension in [0, {nd - 1}] (doubled across a router's nodes)")
        pair_dim = int(pair_dim)
    ax = (0, 1, 2) if axes is None else tuple(axes)
    require(sorted(ax) == [0, 1, 2], "placement.axes", list(ax),
            "a permutation of [0, 1, 2]: the torus dimension of each of the grid's first three dimensions")
    require(fold_dim in (0, 1), "placement.fold_dim", fold_dim, "0 or 1 (the 2-D grid dimension folded)")
    pr, off = _prism(topology, prism, offset)
    npr = topology.nodes_per_router
    n_usable = int(compute_mask(topology, node_class).sum())
    require(math.ceil(n / tpn) <= n_usable, "placement.n_tasks", n,
            f"at most usable nodes x tasks_per_node = {n_usable} x {tpn}")
    coords = _grid_coords(g, major)
    cands = _candidates(g, tpn, npr, pair_dim, nt)
    whole4 = " and holds its whole 4th dimension" if nd == 4 else ""
    if nt is None:  # (chosen: name the grid the user gave, not the unset node_tile)
        require(bool(cands), "placement.grid", list(g), f"a grid that a tile of {tpn} tasks per node, repeated over a "
                f"router's {npr} nodes, divides{whole4} (placement.node_tile: null, chosen)")
    require(bool(cands), "placement.node_tile", None if nt is None else list(nt),
            f"a tile of {tpn} tasks per node that, repeated over a router's {npr} nodes, divides the grid "
            f"{list(g)}{whole4}")
    last: ConfigError | None = None
    for _, _, t, pdim, rt in cands:
        tiles = [a // b for a, b in zip(g, rt)]
        if nd == 2:
            piece_total = tiles[fold_dim]
            counts = ([int(supertiles)] if supertiles is not None else
                      [s for s in range(1, piece_total + 1) if piece_total % s == 0])
            if supertiles is not None:
                require(is_int(supertiles) and supertiles >= 1 and piece_total % int(supertiles) == 0,
                        "placement.supertiles", supertiles, f"a divisor of the folded tile count {piece_total}")
        else:
            counts = [None]
        for sc in counts:
            shape, lay = _tile_layout(g, rt, ax, fold_dim, sc, coords)
            if any(a > b for a, b in zip(shape, pr)):
                last = ConfigError("placement.prism", list(pr), f"a prism at least as large as the layout "
                                   f"{'x'.join(map(str, shape))} routers (node tile {list(t)})")
                continue
            try:
                routers = select_routers(topology, shape, pr, off, node_class)
            except ConfigError as exc:
                last = exc
                continue
            port = (coords[:, pdim] % rt[pdim]) // t[pdim]
            task_node = routers[lay[:, 0], lay[:, 1], lay[:, 2]] * npr + port
            label = f"topaware {'x'.join(map(str, g))} tile {'x'.join(map(str, t))}"
            pl = Placement(task_node.astype(np.int64), topology.n_nodes, label)
            if mapping == "tiles":
                return pl
            seq = alps_order(topology)
            pos = np.empty(topology.n_nodes, dtype=np.int64)
            pos[seq] = np.arange(seq.size)
            nodes = np.unique(task_node)
            nodes = nodes[np.argsort(pos[nodes], kind="stable")]
            return with_rank_order(Placement(fill_slots(nodes, n, tpn), topology.n_nodes, label + " nodes, "
                                             "launcher order"), rank_order)
    assert last is not None
    raise last


@dataclass
class TopawareConfig:
    """Topaware: ``grid`` (2-4 D virtual grid, null: the stencil's beta), ``tasks_per_node``, the Gemini
    ``prism`` at ``offset`` (null: the whole torus), ``node_tile`` / ``pair_dim`` (null: chosen), ``axes``
    (torus dimension of grid dims 0-2), ``fold_dim`` and ``supertiles`` (2-D grids), ``major`` (rank order
    of the grid: R or C), ``node_class`` (null: any compute router; e.g. XE), ``mapping`` (tiles: Topaware's;
    launcher: the same nodes in ALPS order with ``rank_order``, to compare on one node set)."""

    kind: str = "topaware"
    grid: Optional[list[int]] = None
    tasks_per_node: int = 1
    prism: Optional[list[int]] = None
    offset: Optional[list[int]] = None
    node_tile: Optional[list[int]] = None
    pair_dim: Optional[int] = None
    axes: Optional[list[int]] = None
    fold_dim: int = 1
    supertiles: Optional[int] = None
    major: str = "R"
    node_class: Optional[str] = None
    mapping: str = "tiles"
    rank_order: RankOrderConfig = field(default_factory=RankOrderConfig)


def _from_config(cfg: ConfigOf[TopawareConfig], ctx: PlacementContext) -> Placement:
    grid = config_list(cfg.grid) if cfg.grid is not None else ctx.beta
    require(grid is not None, "placement.grid", None, "the virtual grid of tasks (or a stencil traffic with beta)")
    return topaware(ctx.topology, grid, cfg.tasks_per_node, config_list(cfg.prism), config_list(cfg.offset),
                    config_list(cfg.node_tile), cfg.pair_dim, config_list(cfg.axes), cfg.fold_dim, cfg.supertiles,
                    cfg.major, ctx.n_tasks, cfg.node_class, cfg.mapping, cfg.rank_order)


TOPAWARE = PlacementKind("topaware", TopawareConfig, _from_config, needs=TORUS_3D,
                         grid_dims=lambda cfg, t: (2, 4) if cfg.grid is None else None)
