"""Block placement: a job's tasks in contiguous blocks aligned to the topology's node hierarchy.

The topology answers its hierarchy (:meth:`~evaluator.topology.Topology.node_groups`:
the router of every node, then coarser groups: a fat tree's leaf, pod, ...;
a torus's routers alone), so the placement is the same code on every
topology. Tasks are cut into blocks of ``size`` consecutive ranks (the last
one may be smaller); a block of ``b`` tasks needs ``ceil(b /
tasks_per_node)`` nodes and goes, block by block in rank order, into the
*smallest* group of the hierarchy (router, then the next level, ...) that
still has that many free nodes, on that group's first free nodes in
hierarchy order (so a block of two leaves' worth takes two whole leaves of
one pod); a block no group can hold takes the first free nodes of the
machine. Which group of that level:

* ``fill="packed"``: the first one in hierarchy order (blocks side by side,
  the job in as few pods as it fits);
* ``fill="spread"``: the one under the coarsest group with the most free
  nodes, then the next coarsest, ... (consecutive blocks in different pods or
  top-level subtrees, spreading the job over the machine's upper links).

Within a block, task ``j`` runs on the block's node ``j // tasks_per_node``.
Deterministic: no seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import ConfigError, positive_int, require
from ..topology import Topology
from .base import Placement, PlacementKind, check_capacity, check_topology, fits_per_node

__all__ = ["block", "BLOCK_FILLS", "BlockConfig", "BLOCK"]

BLOCK_FILLS = ("packed", "spread")


def block(topology: Topology, n_tasks: int, size: int | None = None, tasks_per_node: int = 1,
          fill: str = "packed") -> Placement:
    """Blocks of ``size`` consecutive tasks, each in the smallest group of the node hierarchy that holds it
    (module docstring). ``size`` None: one router's nodes' worth (``tasks_per_node`` times the nodes of the
    largest router)."""
    check_topology(topology)
    n, tpn = check_capacity(topology, n_tasks, tasks_per_node)
    if fill not in BLOCK_FILLS:
        raise ConfigError("placement.fill", fill, f"one of {list(BLOCK_FILLS)}")
    groups = np.asarray(topology.node_groups(), dtype=np.int64)
    N = topology.n_nodes
    require(groups.ndim == 2 and groups.shape[1] == N, "topology.node_groups", groups.shape,
            f"an int array of shape [level, {N}]")
    if size is None:
        size = int(topology.router_nodes[1].max()) * tpn
    size = positive_int("placement.size", size)
    per_block = math.ceil(size / tpn)  # nodes a whole block takes (a block never shares a node with the next)
    full, rest = divmod(n, size)
    if full * per_block + math.ceil(rest / tpn) > N:  # (the slots suffice; the blocks' rounding may not)
        most = (N // per_block) * size + (N % per_block) * tpn
        raise ConfigError("placement.n_tasks", n,
                          f"at most {most} tasks in blocks of placement.size={size} at placement.tasks_per_node="
                          f"{tpn} on {topology.name} ({N} nodes; a block takes {per_block} nodes of its own)",
                          "Make placement.size a multiple of placement.tasks_per_node, or use fewer tasks.")
    order = np.lexsort((np.arange(N),) + tuple(groups))  # coarsest level first, then node id
    rank = np.empty(N, np.int64)
    rank[order] = np.arange(N)
    levels = []  # per level: group id (compacted) of every node, group count, first rank of every group
    for row in groups:
        _, gid = np.unique(row, return_inverse=True)
        gid = gid.reshape(-1)
        n_g = int(gid.max()) + 1
        levels.append((gid, n_g))
    free = np.ones(N, bool)
    free_count = [np.bincount(gid, minlength=n_g) for gid, n_g in levels]
    members = []  # per level: nodes of every group in hierarchy order (a CSR by group)
    for gid, n_g in levels:
        by = order[np.argsort(gid[order], kind="stable")]
        start = np.concatenate([[0], np.cumsum(np.bincount(gid, minlength=n_g))])
        members.append((by, start))
    first_rank = [np.full(n_g, N, np.int64) for _, n_g in levels]
    for (gid, _), fr in zip(levels, first_rank):
        np.minimum.at(fr, gid, rank)
    # ancestor of every group at every coarser level (groups nest: any node of the group gives it)
    anc = []
    for k, (gid, n_g) in enumerate(levels):
        rep = np.zeros(n_g, np.int64)
        rep[gid] = np.arange(N)  # one node of every group
        anc.append([levels[j][0][rep] for j in range(len(levels))])

    # packed: per level the groups in hierarchy order and a cursor before which no group holds a full block
    # (free counts only fall, so a group once too full stays so); the machine's first free node likewise
    gorder = [np.argsort(fr, kind="stable") for fr in first_rank]
    cursor = [0] * len(levels)
    full_need = math.ceil(size / tpn)
    first_free = 0
    task_node = np.empty(n, np.int64)
    for b0 in range(0, n, size):
        nb = min(size, n - b0)
        need = math.ceil(nb / tpn)
        nodes = None
        for k, (gid, n_g) in enumerate(levels):
            if fill == "packed":
                if need == full_need:
                    while cursor[k] < n_g and free_count[k][gorder[k][cursor[k]]] < need:
                        cursor[k] += 1
                    if cursor[k] == n_g:
                        continue
                    g = int(gorder[k][cursor[k]])
                else:  # the last, smaller block: the first group in hierarchy order with room
                    fits = np.flatnonzero(free_count[k][gorder[k]] >= need)
                    if fits.size == 0:
                        continue
                    g = int(gorder[k][fits[0]])
            else:  # the most free nodes at the coarsest level first, then finer; ties: hierarchy order
                cand = np.flatnonzero(free_count[k] >= need)
                if cand.size == 0:
                    continue
                keys = [first_rank[k][cand]] + [-free_count[j][anc[k][j][cand]] for j in range(k, len(levels))]
                g = int(cand[np.lexsort(tuple(keys))[0]])
            by, start = members[k]
            inside = by[start[g]:start[g + 1]]
            nodes = inside[free[inside]][:need]
            break
        if nodes is None:  # no group holds the block: the first free nodes of the machine, in hierarchy order
            while not free[order[first_free]]:
                first_free += 1
            picked, pos = [], first_free
            while len(picked) < need:
                if free[order[pos]]:
                    picked.append(order[pos])
                pos += 1
            nodes = np.asarray(picked, np.int64)
        free[nodes] = False
        for k, (gid, _) in enumerate(levels):
            np.subtract.at(free_count[k], gid[nodes], 1)
        task_node[b0:b0 + nb] = nodes[np.arange(nb) // tpn]
    return Placement(task_node, N, f"block/{size}/{fill}" + (f"/{tpn}" if tpn != 1 else ""))


@dataclass
class BlockConfig:
    """Blocks of ``size`` consecutive tasks (null: one router's nodes times ``tasks_per_node``), each in the
    smallest group of the topology's node hierarchy that holds it (a fat tree: leaf, pod, ...); ``fill``:
    packed | spread."""

    kind: str = "block"
    size: Optional[int] = None
    tasks_per_node: int = 1
    fill: str = "packed"


BLOCK = PlacementKind("block", BlockConfig,
                      lambda cfg, ctx: block(ctx.topology, ctx.n_tasks, cfg.size, cfg.tasks_per_node, cfg.fill),
                      fits=fits_per_node)
