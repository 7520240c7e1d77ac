"""Which nodes a job may get, and in which order: compute nodes, the ALPS-like order, slot filling.

Shared by the allocation placements (``alps``, ``fragmented``, ``features``,
``subprism``, ``topaware``). A topology built from a catalogue machine with
``layout=real`` (:class:`~evaluator.topology._machine.MachineTorusTopology`)
says which nodes are compute nodes; service and down nodes are never given
to a job. Any other topology has compute nodes only.

The ALPS-like order (Fiedler's slides: ALPS hands the scheduler "2x2x2
gemini blocks in space-filling curve", "favors YZ slabs"): the router grid
is cut into blocks of ``block`` routers (2x2x2; a last block is smaller
where a dimension is odd, e.g. Titan's 25); the blocks are cut into slabs
one block thick across the slab's normal dimension (X for YZ slabs); the
slabs are taken one after another and inside a slab the blocks follow a
generalized Hilbert curve (``curve=hilbert``, any rectangle) or a serpentine
(``curve=serpentine``), run backwards in every other slab so that
consecutive slabs join. Inside a block routers are taken in row-major order,
and a router's nodes one after the other.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from .._types import Int, JobNodes, NodeBools, NodeInts, TaskInts
from ..errors import ConfigError, int_list, require
from ..topology import Topology
from .base import TORUS_3D, check_topology

__all__ = ["compute_mask", "alps_order", "launch_fill_order", "SLABS", "CURVES", "gilbert2d", "check_nodes",
           "fill_slots", "nodes_needed"]

SLABS = ("yz", "xz", "xy")
"""Slab orientations: the two dimensions a slab spans (its normal is the slow axis of the order)."""
CURVES = ("hilbert", "serpentine")


def compute_mask(topology: Topology, node_class: str | None = None) -> NodeBools:
    """Whether each node is a compute node (may be given to a job), shape [node].

    ``node_class`` (e.g. ``"XE"``): only compute nodes of that class of the machine (Blue Waters: XE or XK).
    """
    check_topology(topology)
    f = getattr(topology, "compute_mask", None)
    mask = f() if callable(f) else np.ones(topology.n_nodes, dtype=bool)
    if node_class is None:
        return mask
    names = [n for n in getattr(topology, "node_class_names", ()) if n not in ("service", "down")]
    require(node_class in names, "placement.node_class", node_class,
            ("null or one of " + ", ".join(names)) if names else
            "null (this topology has no node classes; use topology=machine with a machine that has them)")
    return mask & (np.asarray(topology.node_class) == list(topology.node_class_names).index(node_class))  # type: ignore[attr-defined]


def _sgn(v: int) -> int:
    return (v > 0) - (v < 0)


def _gilbert(x: int, y: int, ax: int, ay: int, bx: int, by: int) -> Iterator[tuple[int, int]]:
    """Generalized Hilbert curve over the rectangle spanned by (ax, ay) and (bx, by) from (x, y)."""
    w, h = abs(ax + ay), abs(bx + by)
    dax, day, dbx, dby = _sgn(ax), _sgn(ay), _sgn(bx), _sgn(by)
    if h == 1:
        for _ in range(w):
            yield x, y
            x, y = x + dax, y + day
        return
    if w == 1:
        for _ in range(h):
            yield x, y
            x, y = x + dbx, y + dby
        return
    ax2, ay2, bx2, by2 = ax // 2, ay // 2, bx // 2, by // 2
    w2, h2 = abs(ax2 + ay2), abs(bx2 + by2)
    if 2 * w > 3 * h:
        if w2 % 2 and w > 2:
            ax2, ay2 = ax2 + dax, ay2 + day
        yield from _gilbert(x, y, ax2, ay2, bx, by)
        yield from _gilbert(x + ax2, y + ay2, ax - ax2, ay - ay2, bx, by)
    else:
        if h2 % 2 and h > 2:
            bx2, by2 = bx2 + dbx, by2 + dby
        yield from _gilbert(x, y, bx2, by2, ax2, ay2)
        yield from _gilbert(x + bx2, y + by2, ax, ay, bx - bx2, by - by2)
        yield from _gilbert(x + (ax - dax) + (bx2 - dbx), y + (ay - day) + (by2 - dby), -bx2, -by2,
                            -(ax - ax2), -(ay - ay2))


def gilbert2d(width: int, height: int) -> Int[np.ndarray, "cell 2"]:
    """Cells ``(i, j)`` of a ``width x height`` grid along a generalized Hilbert curve, shape [cell, 2]."""
    if width >= height:
        pts = list(_gilbert(0, 0, width, 0, 0, height))
    else:
        pts = list(_gilbert(0, 0, 0, height, width, 0))
    return np.array(pts, dtype=np.int64).reshape(-1, 2)


def _serpentine(width: int, height: int) -> np.ndarray:
    i, j = np.meshgrid(np.arange(width), np.arange(height), indexing="ij")
    j = np.where(i % 2 == 1, height - 1 - j, j)
    return np.stack([i.ravel(), j.ravel()], axis=1)


def launch_fill_order(topology: Topology, fill: str | None = None) -> tuple[str, NodeInts | None]:
    """``(fill, position)``: the order a launcher fills the nodes of an ``aprun -L`` list in, each node's position
    in it (None: ascending id), for launcher files (:func:`~evaluator.placement.write_launch_files`). ``fill``:
    ``"alps"`` (:func:`alps_order`), ``"id"``, or None: ALPS's own order on a 3-D torus, ascending id elsewhere."""
    if fill is None:
        fill = "alps" if TORUS_3D.test(topology) else "id"
    require(fill in ("alps", "id"), "--fill", fill, "alps or id")
    if fill == "id":
        return "id", None
    seq = alps_order(topology)
    pos = np.empty(topology.n_nodes, dtype=np.int64)
    pos[seq] = np.arange(seq.size)
    return "alps", pos


def alps_order(topology: Topology, slab: str = "yz", curve: str = "hilbert",
               block: Sequence[int] = (2, 2, 2)) -> NodeInts:
    """Every node of a 3-D torus in the ALPS-like order (see the module docstring), shape [node]."""
    check_topology(topology)
    TORUS_3D.require(topology, "alps")
    require(slab in SLABS, "placement.slab", slab, " | ".join(SLABS))
    require(curve in CURVES, "placement.curve", curve, " | ".join(CURVES))
    dims = topology.dims  # type: ignore[union-attr]
    blk = int_list("placement.block", block, 3)   # (a 0 raised ZeroDivisionError)
    bgrid = tuple(math.ceil(d / b) for d, b in zip(dims, blk))
    normal = "xyz".index(next(c for c in "xyz" if c not in slab))
    a, b = [k for k in range(3) if k != normal]
    plane = gilbert2d(bgrid[a], bgrid[b]) if curve == "hilbert" else _serpentine(bgrid[a], bgrid[b])
    seq = []
    for s in range(bgrid[normal]):
        pts = plane if s % 2 == 0 else plane[::-1]
        bc = np.zeros((len(pts), 3), dtype=np.int64)
        bc[:, normal], bc[:, a], bc[:, b] = s, pts[:, 0], pts[:, 1]
        seq.append(bc)
    blocks = np.concatenate(seq)  # [block, 3] block coordinates in order
    inner = np.stack(np.unravel_index(np.arange(math.prod(blk)), blk), axis=1)
    c = (blocks[:, None, :] * np.array(blk) + inner[None, :, :]).reshape(-1, 3)
    c = c[(c < np.array(dims)).all(axis=1)]
    routers = np.ravel_multi_index(tuple(c.T), dims)
    return topology.nodes_of(routers)


def nodes_needed(n_tasks: int, tasks_per_node: int) -> int:
    """Nodes a job of ``n_tasks`` needs at ``tasks_per_node``."""
    return -(-int(n_tasks) // int(tasks_per_node))


def fill_slots(nodes: JobNodes, n_tasks: int, tasks_per_node: int) -> TaskInts:
    """SMP slots: task ``t`` on ``nodes[t // tasks_per_node]``, shape [task] (refused before allocating where
    the tasks' arrays would not fit in memory: :func:`~evaluator.placement.base.check_task_memory`)."""
    from .base import check_task_memory

    check_task_memory("placement.n_tasks", int(n_tasks), int(n_tasks))
    return np.asarray(nodes, dtype=np.int64)[np.arange(n_tasks) // tasks_per_node]


def check_nodes(topology: Topology, nodes: JobNodes, what: str) -> None:
    """Refuse a node set that repeats a node or holds a node that is not a compute node."""
    nodes = np.asarray(nodes)
    if np.unique(nodes).size != nodes.size:
        raise ConfigError("placement", what, "a node set without repeats")
    bad = ~compute_mask(topology)[nodes]
    if bad.any():
        raise ConfigError("placement", what, f"compute nodes only; node {int(nodes[bad][0])} is a "
                          "service or down node")
