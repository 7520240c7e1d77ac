"""Rank orders: which MPI rank goes to which slot of a placement, and the files Cray MPICH reads.

A placement puts *slots* on nodes: slot ``s`` of a placement built for
``n`` tasks runs on ``task_node[s]`` (SMP order: consecutive slots fill a
node). A rank order is a permutation ``order`` of the ranks: ``order[s]`` is
the rank that takes slot ``s``, so rank ``order[s]`` runs on the node of slot
``s``. The default, ``smp``, is the identity (consecutive ranks fill a node).
``grid_order`` follows Cray's ``grid_order`` tool (Fiedler's slides):

* ``grid`` (``-g``): the virtual Cartesian grid of ranks;
* ``major`` ``C`` (``-C``): rank = coordinates with the first dimension
  fastest; ``R`` (``-R``, MPI's ``MPI_Cart_create`` order): the last
  dimension fastest;
* ``cell`` (``-c``): a block of the grid kept together; consecutive cells
  (taken in the same major order over the grid of cells) fill the slots, and
  the ranks of one cell are taken in that order too. At 8 tasks per node,
  ``-C -c 4,2 -g 8,8`` puts ranks 0,1,2,3,8,9,10,11 on the first node and
  4,5,6,7,12,13,14,15 on the second.

Ranks beyond the grid (``prod(grid) < n``, as in the slides' SPECFEM3D run,
8 ranks more than its 1020x170 grid) take the last slots in their order.

Files (:func:`write_launch_files`): ``MPICH_RANK_ORDER`` for
``MPICH_RANK_REORDER_METHOD=3`` (comma-separated ranks, one line per node in
the order the launcher fills the nodes, ``#`` comments) and ``node_list``
for ``aprun -L`` (the nodes' ids, ascending, comma-separated, ranges as
``a-b``). The launcher fills the listed nodes in its order (ALPS: its own
allocation order; pass it as ``fill_order``, default ascending id) with
``tasks_per_node`` slots each and puts the file's ranks in those slots in
order; a placement that the launcher cannot
reproduce that way (a node with fewer tasks than another, other than the
last) is refused. Node ids are the model's (``router * nodes_per_router +
port``); a site's nid numbering is a relabelling of these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .._types import JobNodes, NodeInts, TaskInts
from ..errors import ConfigError, positive_int, require
from ..io import write_text
from .base import Placement, check_task_memory, vec

__all__ = ["RANK_ORDER_METHODS", "RankOrderConfig", "grid_order", "rank_order", "apply_rank_order",
           "with_rank_order", "node_ranks", "rank_order_text", "node_list_text", "write_launch_files"]

RANK_ORDER_METHODS = ("smp", "grid_order")
MAJORS = ("C", "R")


@dataclass
class RankOrderConfig:
    """``placement.rank_order``: ``method`` smp | grid_order; for grid_order ``major`` (C: first dimension
    fastest, R: last fastest), ``cell`` (ranks kept together) and ``grid`` (the virtual grid)."""

    method: str = "smp"
    major: str = "R"
    cell: Optional[list[int]] = None
    grid: Optional[list[int]] = None


def _rank_ids(shape: tuple[int, ...], major: str) -> np.ndarray:
    """Rank of every grid point, as an array of ``shape`` (C: first dimension fastest; R: last fastest)."""
    n = math.prod(shape)
    if major == "R":
        return np.arange(n, dtype=np.int64).reshape(shape)
    return np.arange(n, dtype=np.int64).reshape(shape[::-1]).T


def grid_order(grid: Sequence[int], cell: Sequence[int] | None = None, major: str = "R",
               n_tasks: int | None = None, field: str = "placement.rank_order") -> TaskInts:
    """The slot -> rank order of Cray's ``grid_order -<major> -c <cell> -g <grid>``, shape [task].

    Parameters
    ----------
    grid : shape [dim]
        Virtual grid of ranks (``-g``).
    cell : shape [dim]
        Block of ranks kept together (``-c``); each entry divides the grid's. Default: one rank.
    major
        ``"C"`` (first dimension fastest) or ``"R"`` (last fastest, MPI's order).
    n_tasks
        Ranks in the job (default ``prod(grid)``); ranks ``prod(grid) .. n_tasks-1`` take the last slots.
    """
    g = vec(f"{field}.grid", grid)
    c = (1,) * len(g) if cell is None else vec(f"{field}.cell", cell, len(g))
    require(major in MAJORS, f"{field}.major", major, "C (first dimension fastest) or R (last fastest, MPI's order)")
    for k, (gk, ck) in enumerate(zip(g, c)):
        require(gk % ck == 0, f"{field}.cell[{k}]", ck, f"a divisor of grid[{k}] = {gk}",
                "grid_order keeps whole cells together; pick a cell that tiles the grid.")
    n_grid = math.prod(g)
    n = n_grid if n_tasks is None else positive_int("placement.n_tasks", n_tasks)
    require(n_grid <= n, f"{field}.grid", list(g), f"a grid of at most the job's {n} ranks (it has {n_grid})")
    if n > n_grid:
        check_task_memory("placement.n_tasks", n, n, 8 * (len(g) + 4))
    else:  # the rank ids, their blocks and the order
        check_task_memory(f"{field}.grid", list(g), n, 8 * (len(g) + 4))
    ranks = _rank_ids(g, major)
    cells = tuple(gk // ck for gk, ck in zip(g, c))
    nd = len(g)
    # axes (cell index k, offset in cell k): reshape to [cells0, c0, cells1, c1, ...]
    blocks = ranks.reshape(tuple(x for pair in zip(cells, c) for x in pair))
    outer = list(range(0, 2 * nd, 2))
    inner = list(range(1, 2 * nd, 2))
    if major == "R":  # slowest first: cell indices in R order, then offsets in R order
        perm = outer + inner
    else:  # C order: the first dimension fastest -> transpose dimension order
        perm = outer[::-1] + inner[::-1]
    order = blocks.transpose(perm).reshape(-1)
    if n > n_grid:
        order = np.concatenate([order, np.arange(n_grid, n, dtype=np.int64)])
    return order


def _spec(raw: Any) -> dict:
    if raw is None:
        return {"method": "smp"}
    if is_dataclass(raw):
        return asdict(raw)
    if isinstance(raw, Mapping):
        return dict(raw)
    raise ConfigError("placement.rank_order", raw, "a mapping {method: smp|grid_order, major: C|R, cell, grid}")


def rank_order(raw: Any, n_tasks: int, field: str = "placement.rank_order") -> TaskInts | None:
    """The slot -> rank order a ``rank_order`` config asks for, or ``None`` for ``smp`` (the identity)."""
    spec = _spec(raw)
    keys = {f for f in RankOrderConfig.__dataclass_fields__}
    for k in spec:
        require(k in keys, f"{field}.{k}", spec[k], f"a key of rank_order: one of {sorted(keys)}")
    method = spec.get("method", "smp")
    require(method in RANK_ORDER_METHODS, f"{field}.method", method, " | ".join(RANK_ORDER_METHODS),
            "smp: consecutive ranks fill a node; grid_order: Cray's grid_order (major, cell, grid).")
    if method == "smp":
        return None
    require(spec.get("grid") is not None, f"{field}.grid", None, "the virtual grid of ranks (grid_order -g)")
    return grid_order(list(spec["grid"]), None if spec.get("cell") is None else list(spec["cell"]),
                      spec.get("major", "R"), n_tasks, field)


def apply_rank_order(placement: Placement, order: TaskInts | None, name: str | None = None) -> Placement:
    """The placement with rank ``order[s]`` on the node of slot ``s`` (``order`` None: unchanged)."""
    if order is None:
        return placement
    given = np.asarray(order)
    n = placement.n_tasks
    require(given.dtype.kind in "iu" or (given.dtype.kind == "f" and bool(np.all(given == np.round(given)))),
            "placement.rank_order", given.reshape(-1)[:8].tolist(), f"a permutation of the {n} ranks (integers)")
    order = given.astype(np.int64)
    require(order.shape == (n,) and np.array_equal(np.sort(order), np.arange(n)), "placement.rank_order",
            order[:8].tolist(), f"a permutation of the {n} ranks")
    task_node = np.empty(n, dtype=np.int64)
    task_node[order] = placement.task_node
    return Placement(task_node, placement.n_nodes, name or placement.name)


def with_rank_order(placement: Placement, raw: Any, field: str = "placement.rank_order") -> Placement:
    """``placement`` (SMP slot order) with the rank order of a ``rank_order`` config applied."""
    order = rank_order(raw, placement.n_tasks, field)
    if order is None:
        return placement
    spec = _spec(raw)
    label = f"{placement.name} grid_order -{spec.get('major', 'R')}" + (
        "" if spec.get("cell") is None else " -c " + ",".join(map(str, spec["cell"])))
    return apply_rank_order(placement, order, label)


def node_ranks(placement: Placement, tasks_per_node: int | None = None,
               fill_order: NodeInts | None = None) -> tuple[JobNodes, list[TaskInts]]:
    """``(nodes, ranks)``: the used nodes in the order the launcher fills them and the ranks on each.

    ``fill_order`` (shape [node]): each node's position in the launcher's order (ALPS fills the nodes of
    ``aprun -L`` in its own order, :func:`~evaluator.placement.nodes.alps_order`); default ascending id.
    ``tasks_per_node`` (default: the most tasks on a node) must be the count on every node but the last;
    otherwise the launcher (``aprun -N``) could not reproduce the placement and a :class:`ConfigError` says so.
    """
    tn = placement.task_node
    key = tn if fill_order is None else np.asarray(fill_order)[tn]
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    nodes = tn[first]
    tpn = int(counts.max()) if tasks_per_node is None else positive_int("tasks_per_node", tasks_per_node)
    ok = (counts[:-1] == tpn).all() and counts[-1] <= tpn
    require(bool(ok), "placement", placement.name,
            f"the same number of tasks ({tpn}) on every used node but the last (in the launcher's fill order); "
            f"this placement has between {int(counts.min())} and {int(counts.max())}",
            "aprun fills every listed node with -N tasks; such a placement cannot be launched as given.")
    order = np.argsort(key, kind="stable")
    return nodes, np.split(order, np.cumsum(counts)[:-1])


def _ranges(ids: Sequence[int]) -> str:
    """``0,1,2,5,7,8`` -> ``0-2,5,7-8``."""
    ids = list(ids)
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if j == i else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def rank_order_text(placement: Placement, tasks_per_node: int | None = None, header: str = "",
                    fill_order: NodeInts | None = None, fill: str | None = None) -> str:
    """The ``MPICH_RANK_ORDER`` file of a placement (``MPICH_RANK_REORDER_METHOD=3``): one line per node in
    the launcher's fill order (``fill_order``, see :func:`node_ranks`); ``fill`` names that order in a header line
    ``# fill: NAME`` (``alps`` or ``id``), so that a reader (``evaluator map --start``) puts the lines back on
    the right nodes."""
    if fill not in (None, "alps", "id"):  # the only orders a reader puts the lines back in
        raise ConfigError("fill", fill, "alps, id or None (no '# fill:' line: id)")
    nodes, ranks = node_ranks(placement, tasks_per_node, fill_order)
    lines = [f"# {line}" for line in header.splitlines() if line]
    lines.append(f"# {placement.n_tasks} ranks on {nodes.size} nodes, one line per node in the order the "
                 "launcher fills them; use with MPICH_RANK_REORDER_METHOD=3 and aprun -L `cat node_list`")
    if fill is not None:
        lines.append(f"# fill: {fill}")
    lines.extend(",".join(map(str, r.tolist())) for r in ranks)
    return "\n".join(lines) + "\n"


def node_list_text(placement: Placement) -> str:
    """The node list for ``aprun -L``: the used nodes' ids, ascending, comma-separated, runs as ``a-b``."""
    return _ranges(np.unique(placement.task_node).tolist()) + "\n"


def write_launch_files(placement: Placement, directory: str | Path, tasks_per_node: int | None = None,
                       header: str = "", fill_order: NodeInts | None = None,
                       fill: str | None = None) -> tuple[Path, Path]:
    """Write ``MPICH_RANK_ORDER`` (``fill``: its ``# fill:`` line, :func:`rank_order_text`) and ``node_list`` into
    ``directory`` (atomically); return their paths."""
    d = Path(directory)
    text = rank_order_text(placement, tasks_per_node, header, fill_order, fill)  # checked before anything is written
    d.mkdir(parents=True, exist_ok=True)
    return write_text(d / "MPICH_RANK_ORDER", text), write_text(d / "node_list", node_list_text(placement))
