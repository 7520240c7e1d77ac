"""A graph-partitioning mapping: recursive bisection of the traffic graph onto the machine's node hierarchy.

The task graph is the traffic's bytes between tasks, symmetrised (``w(i, j)
= bytes(i -> j) + bytes(j -> i)``, summed over the phases of a phased
traffic; bytes a task sends itself are dropped). The machine side is the
node hierarchy of the topology (:meth:`~evaluator.topology.Topology.node_groups`:
router, then group on a Dragonfly; leaf, then pod, ... on a fat tree; the
routers alone on a torus) restricted to the job's available nodes, each node
holding ``tasks_per_node`` slots.

Both are cut together, top down. A part of the machine whose available nodes
lie in several groups of the current level is cut in two halves of those
groups (a torus's routers, and any level whose groups sit at different
coordinates, geometrically: the groups sorted along the longest extent of
their mean router coordinates; equal coordinates, e.g. the nodes of one
router, by id), the halves' slot counts as equal as whole groups allow; a
part inside one group goes down a level, and a single node takes its tasks.
The tasks of the part are bisected with METIS (two parts, target weights the
task counts of the halves) and then balanced exactly: the surplus side gives
up as many tasks as it has too many, one at a time, each time the task whose
move raises the cut least (largest gain; ties: lowest task id). The task
counts of the halves pack: tasks that fit in one half all go to the smaller
half that holds them; otherwise the larger half is filled and the other
takes the rest, so a job smaller than its allocation uses as few groups as
it can. Where the two halves are the same size, the orientation is chosen:
each part of the tasks (or all of them, where they fit in either half) goes
to the half nearer the tasks it exchanges bytes with outside, those taken
at the centre of the part of the machine they are mapped into so far (bytes
times the Manhattan distance between mean router coordinates); this keeps
neighbouring parts of the task graph on neighbouring routers of a torus.

METIS via pymetis (``pymetis==2025.2.2``, METIS 5; its ``seed`` option
makes the result deterministic for a seed). KaHIP is not used here: its
wheel installs a top-level ``bin/`` directory, including a binary named
``evaluator`` like ours, so ``make setup`` installs it apart
(``pip install --no-deps --target .venv/kahip``, never on ``PATH``) and
only the mapping bench runs its ``kaffpa --enable_mapping`` as an outside
reference (:mod:`evaluator.bench.kahip`).
"""

from __future__ import annotations

import heapq

import numpy as np
import scipy.sparse as sp

from .._types import Int, JobNodes, TaskInts
from ..errors import ConfigError, ConfigTypeError, check_memory, check_seed, positive_int, require
from ..placement.base import check_node_ids, check_topology
from ..topology import Topology

__all__ = ["partition_mapping", "check_job", "check_slots", "task_graph", "hierarchy_cut"]

_MAX_WEIGHT = 1_000_000
"""Integer edge weight of the heaviest task pair given to METIS (lighter pairs scale down, at least 1)."""


SLOT_BYTES = 64
"""Host bytes per task slot of the mapping search: the slots' node and task ids, the starts' slot maps and the
move evaluator's copies (int64 each)."""


def check_job(topology: Topology, traffic, nodes, tasks_per_node) -> tuple[JobNodes, int]:
    """``(nodes, tasks_per_node)`` checked: an int64 array of distinct node ids of ``topology`` with enough slots
    for the traffic's tasks, and an integer >= 1; a :class:`ConfigError` naming the field otherwise."""
    check_topology(topology)
    n_tasks = getattr(traffic, "n_tasks", None)
    if n_tasks is None:
        raise ConfigTypeError("traffic", traffic, "a traffic (evaluator.traffic: a Traffic, DenseTraffic or "
                              "PhasedTraffic)")
    n = positive_int("traffic.n_tasks", n_tasks)
    tpn = positive_int("mapping.tasks_per_node", tasks_per_node)
    a = check_node_ids(topology, "mapping.nodes", nodes)
    need = -(-n // a.size)
    require(n <= a.size * tpn, "traffic.n_tasks", n,
            f"at most available nodes x tasks_per_node = {a.size} x {tpn} = {a.size * tpn}"
            f" (tasks_per_node = {need} fits {n} tasks)",
            f"Give the job more nodes, {need} or more tasks per node (evaluator map --tasks-per-node {need}), or "
            f"fewer tasks.")
    return a, tpn


def check_slots(nodes: JobNodes, n_tasks: int, tasks_per_node: int) -> None:
    """Refuse (naming ``mapping.tasks_per_node``) a search whose task slots would not fit in memory: it works over
    every slot (``tasks_per_node`` per available node), not over the tasks (8 tasks at 10^10 tasks per node on 64
    nodes asked NumPy for 4.66 TiB)."""
    slots = len(nodes) * int(tasks_per_node)
    need = -(-int(n_tasks) // max(len(nodes), 1))
    check_memory("mapping.tasks_per_node", int(tasks_per_node), float(slots) * SLOT_BYTES,
                 f"the search's {len(nodes):,} nodes x {int(tasks_per_node):,} = {slots:,} task slots (node, task "
                 f"and move arrays of each)", f"Use --tasks-per-node {need} (it fits the {int(n_tasks):,} tasks) or "
                 f"fewer nodes.")


def task_graph(traffic) -> sp.csr_matrix:
    """The symmetrised task graph: bytes between every two tasks (both directions, every phase), CSR [task, task].

    The diagonal (bytes a task sends itself) is dropped; indices are sorted in every row."""
    n = int(traffic.n_tasks)
    flows = traffic.to_flows()
    src, dst, nb = [], [], []
    for ph in flows.phases:
        s, d, b = np.asarray(ph.src, np.int64), np.asarray(ph.dst, np.int64), np.asarray(ph.nbytes, np.float64)
        keep = (s != d) & (b > 0)
        src.append(s[keep])
        dst.append(d[keep])
        nb.append(b[keep])
    s, d, b = (np.concatenate(x) if x else np.zeros(0) for x in (src, dst, nb))
    a = sp.coo_matrix((np.concatenate([b, b]), (np.concatenate([s, d]), np.concatenate([d, s]))),
                      shape=(n, n)).tocsr()
    a.sum_duplicates()
    a.sort_indices()
    return a


def hierarchy_cut(graph: sp.csr_matrix, task_loc: TaskInts) -> float:
    """Bytes of the (symmetrised) task graph between tasks on different locations (``task_loc[task]``), each
    pair counted once."""
    coo = graph.tocoo()
    loc = np.asarray(task_loc)
    off = loc[coo.row] != loc[coo.col]
    return float(coo.data[off].sum()) / 2.0


class _Partitioner:
    """One mapping: the task graph in CSR with integer weights and the available nodes' hierarchy.

    Every task belongs to a *region*, the part of the machine it is mapped into so far (at first the whole
    machine); a region's centre is the mean router coordinates of its nodes. The task side reads them to
    orient a split: of two halves of equal size, each part of the tasks goes to the half nearer the tasks it
    exchanges bytes with outside (bytes times Manhattan distance between centres)."""

    def __init__(self, topology: Topology, graph: sp.csr_matrix, nodes: np.ndarray, tasks_per_node: int,
                 seed: int):
        import pymetis

        n_tasks = graph.shape[0]
        self.tpn = tasks_per_node
        self.options = pymetis.Options(seed=seed)
        self.xadj = graph.indptr.astype(np.int64)
        self.adj = graph.indices.astype(np.int64)
        w = graph.data
        scale = _MAX_WEIGHT / w.max() if w.size else 1.0
        self.w = np.maximum(1, np.rint(w * scale)).astype(np.int64)
        self.xadj_l, self.adj_l, self.w_l = self.xadj.tolist(), self.adj.tolist(), self.w.tolist()
        self.nodes = nodes
        groups = np.asarray(topology.node_groups(), dtype=np.int64)[:, nodes]
        # level -1 (row 0 here): every node its own group (its position in ``nodes``)
        levels = np.concatenate([np.arange(nodes.size, dtype=np.int64)[None, :], groups])
        coords = np.asarray(topology.router_coords, dtype=np.float64)[
            np.asarray(topology.node_router)[nodes]].reshape(nodes.size, -1)
        # per level: compact group ids, and every group's node count and centre (a part is always whole groups
        # of its level, so these hold for every part)
        self.gid, self.gsize, self.cen = [], [], []
        for row in levels:
            _, g = np.unique(row, return_inverse=True)
            g = g.reshape(-1)
            size = np.bincount(g)
            cen = np.zeros((size.size, coords.shape[1]))
            np.add.at(cen, g, coords)
            self.gid.append(g)
            self.gsize.append(size)
            self.cen.append(cen / size[:, None])
        self.n_levels = len(levels)
        cap = 4 * nodes.size + 4  # regions: at most two per visited part
        self.rcen = np.zeros((cap, coords.shape[1]))
        self.rcen_l: list[list[float]] = []
        self.region = np.full(n_tasks, self._region(coords.mean(axis=0)), dtype=np.int64)
        self.loc = np.full(n_tasks, -1, dtype=np.int64)
        self.task_node = np.full(n_tasks, -1, dtype=np.int64)

    def _region(self, centre: np.ndarray) -> int:
        r = len(self.rcen_l)
        self.rcen[r] = centre
        self.rcen_l.append(centre.tolist())
        return r

    # ---- the machine side --------------------------------------------------------------
    def _halves(self, part: np.ndarray, gid: np.ndarray, lo: int, hi: int, level: int):
        """Cut the nodes ``part`` (positions; ``gid``: their groups at ``level``, from ``lo`` to ``hi`` > ``lo``)
        into two halves of whole groups: ``(a, b, centre of a, centre of b)``."""
        cen_l = self.cen[level + 1]
        if part.size == 2:
            b = gid == hi
            return part[~b], part[b], cen_l[lo], cen_l[hi]
        groups = np.unique(gid)
        cen = cen_l[groups]
        if groups.size == 2:
            b = gid == hi
            return part[~b], part[b], cen[0], cen[1]
        size = self.gsize[level + 1][groups]
        ext = cen.max(axis=0) - cen.min(axis=0) if cen.shape[1] else np.zeros(0)
        if ext.size and ext.max() > 0:
            order = np.lexsort((groups, cen[:, int(np.argmax(ext))]))
        else:
            order = np.arange(groups.size)
        cum = np.cumsum(size[order])
        cut = int(np.argmin(np.abs(cum[:-1] - cum[-1] / 2.0))) + 1
        flag = np.zeros(cen_l.shape[0], dtype=bool)
        flag[groups[order[cut:]]] = True
        b = flag[gid]
        sa, sb = order[:cut], order[cut:]
        ca = (cen[sa] * size[sa, None]).sum(axis=0) / size[sa].sum()
        cb = (cen[sb] * size[sb, None]).sum(axis=0) / size[sb].sum()
        return part[~b], part[b], ca, cb

    # ---- the task side -----------------------------------------------------------------
    def _subgraph(self, tasks: np.ndarray):
        """The graph induced by ``tasks`` (local ids, CSR with integer weights) and the edges leaving it
        ``(local task, other task's id, weight)``."""
        self.loc[tasks] = np.arange(tasks.size)
        start = self.xadj[tasks]
        cnt = self.xadj[tasks + 1] - start
        tot = int(cnt.sum())
        idx = np.repeat(start - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt) + np.arange(tot)
        other = self.adj[idx]
        nbr = self.loc[other]
        self.loc[tasks] = -1
        keep = nbr >= 0
        row = np.repeat(np.arange(tasks.size), cnt)
        xadj = np.concatenate([[0], np.cumsum(np.bincount(row[keep], minlength=tasks.size))])
        w = self.w[idx]
        return xadj, nbr[keep], w[keep], (row[~keep], other[~keep], w[~keep])

    def _pulls(self, ext, n: int, cen_a: np.ndarray, cen_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per task of the set (``n``): its bytes to the tasks outside (``ext``) times their regions' distance
        to ``cen_a``, and to ``cen_b``."""
        row, other, w = ext
        c = self.rcen[self.region[other]]
        da = np.abs(c - cen_a).sum(axis=1)
        db = np.abs(c - cen_b).sum(axis=1)
        return np.bincount(row, weights=w * da, minlength=n), np.bincount(row, weights=w * db, minlength=n)

    def _pulls_few(self, tasks: list[int], cen_a, cen_b) -> tuple[list[float], list[float]]:
        """:meth:`_pulls` for one or two tasks, in Python (the bottom of the recursion, where most splits are)."""
        region, rcen = self.region, self.rcen_l
        ca, cb = list(cen_a), list(cen_b)
        to_a, to_b = [], []
        for t in tasks:
            pa = pb = 0.0
            for j in range(self.xadj_l[t], self.xadj_l[t + 1]):
                u = self.adj_l[j]
                if u in tasks:
                    continue
                c = rcen[region[u]]
                w = self.w_l[j]
                pa += w * sum(abs(x - y) for x, y in zip(c, ca))
                pb += w * sum(abs(x - y) for x, y in zip(c, cb))
            to_a.append(pa)
            to_b.append(pb)
        return to_a, to_b

    def _bisect(self, tasks: np.ndarray, n_a: int, cen_a: np.ndarray, cen_b: np.ndarray) -> np.ndarray:
        """Bool [task of ``tasks``]: True for the tasks of the second part (``tasks.size - n_a`` of them).

        With equal sizes the two parts go where their bytes to the tasks outside travel least."""
        import pymetis

        n = tasks.size
        if n == 2:  # one task each side: either split cuts the same; the orientation is the nearer
            to_a, to_b = self._pulls_few(tasks.tolist(), cen_a, cen_b)
            return np.array([False, True]) if to_a[0] + to_b[1] <= to_a[1] + to_b[0] else np.array([True, False])
        xadj, adj, w, ext = self._subgraph(tasks)
        if adj.size == 0:  # no edges inside: any split cuts the same
            side = np.arange(n) >= n_a
        else:
            f = n_a / n
            res = pymetis.part_graph(2, adjacency=pymetis.CSRAdjacency(xadj, adj), eweights=w,
                                     tpwgts=[f, 1.0 - f], recursive=True, options=self.options)
            side = self._balance(np.asarray(res.vertex_part, dtype=np.int64).astype(bool), xadj, adj, w, n - n_a)
        if 2 * n_a == n and ext[0].size:
            to_a, to_b = self._pulls(ext, n, cen_a, cen_b)
            if np.where(side, to_a, to_b).sum() < np.where(side, to_b, to_a).sum():
                side = ~side
        return side

    @staticmethod
    def _balance(side: np.ndarray, xadj: np.ndarray, adj: np.ndarray, w: np.ndarray, n_b: int) -> np.ndarray:
        """``side`` with exactly ``n_b`` True: the fewest moves (the surplus), each the largest-gain task."""
        have = int(side.sum())
        if have == n_b:
            return side
        src = (side if have > n_b else ~side).copy()  # the surplus side gives tasks up
        k = abs(have - n_b)
        row = np.repeat(np.arange(side.size), np.diff(xadj))
        same = side[row] == side[adj]
        gain = np.bincount(row, weights=np.where(same, -w, w), minlength=side.size)
        heap = [(-gain[v], v) for v in np.flatnonzero(src).tolist()]
        heapq.heapify(heap)
        while k:
            g, v = heapq.heappop(heap)
            if not src[v] or -g != gain[v]:
                continue  # moved already, or a stale entry
            src[v] = False
            side[v] = not side[v]
            k -= 1
            for j in range(xadj[v], xadj[v + 1]):
                u = adj[j]
                if src[u]:  # u's neighbour v left u's side: u's gain grows by twice the pair's weight
                    gain[u] += 2 * w[j]
                    heapq.heappush(heap, (-gain[u], int(u)))
        return side

    # ---- both together -----------------------------------------------------------------
    def assign(self, tasks: Int[np.ndarray, "part_task"], part: Int[np.ndarray, "part_node"], level: int) -> None:
        """Map ``tasks`` (ids, at most the slots of ``part``) onto the nodes ``part`` (positions), whose groups
        at every level above ``level`` are one."""
        stack = [(tasks, part, level)]
        while stack:
            tasks, part, level = stack.pop()
            if tasks.size == 0:
                continue
            if part.size == 1:
                self.task_node[tasks] = self.nodes[part[0]]
                continue
            while True:  # one group: go down a level
                gid = self.gid[level + 1][part]
                lo, hi = int(gid.min()), int(gid.max())
                if lo != hi:
                    break
                level -= 1
            a, b, ca, cb = self._halves(part, gid, lo, hi, level)
            sa, sb = a.size * self.tpn, b.size * self.tpn
            n = tasks.size
            if n <= sa or n <= sb:  # fits in a half: the smaller that holds it; equal: the nearer
                if n <= sa and n <= sb and sa == sb:
                    if n <= 2:
                        to_a, to_b = self._pulls_few(tasks.tolist(), ca, cb)
                    else:
                        to_a, to_b = self._pulls(self._subgraph(tasks)[3], n, ca, cb)
                    near_b = sum(to_b) < sum(to_a)
                else:
                    near_b = not (n <= sa and (sa <= sb or n > sb))
                self.region[tasks] = self._region(cb if near_b else ca)
                stack.append((tasks, b if near_b else a, level))
                continue
            n_a = sa if sa >= sb else n - sb  # fill the larger half
            side = self._bisect(tasks, n_a, ca, cb)
            self.region[tasks[side]] = self._region(cb)
            self.region[tasks[~side]] = self._region(ca)
            stack.append((tasks[side], b, level))
            stack.append((tasks[~side], a, level))


def partition_mapping(topology: Topology, traffic, nodes, tasks_per_node: int, *, seed: int = 0) -> TaskInts:
    """Task -> node by recursive bisection of the traffic graph onto the node hierarchy (module docstring).

    Parameters
    ----------
    topology
        The machine.
    traffic
        Any traffic (a flow list, a dense pattern, phases: bytes summed over the phases).
    nodes : int array, shape [node]
        Node ids available to the job (no repeats).
    tasks_per_node
        Slots per node (>= 1).
    seed
        METIS's seed (an integer >= 0): the same arguments give the same mapping.

    Returns
    -------
    int64 ndarray, shape [task]
        The node of every task: a node of ``nodes``, at most ``tasks_per_node`` tasks on each.
    """
    nodes, tpn = check_job(topology, traffic, nodes, tasks_per_node)
    seed = check_seed("mapping.seed", seed)
    graph = task_graph(traffic)
    p = _Partitioner(topology, graph, nodes, tpn, seed)
    n = int(traffic.n_tasks)
    p.assign(np.arange(n, dtype=np.int64), np.arange(nodes.size, dtype=np.int64), p.n_levels - 2)
    if (p.task_node < 0).any() or np.bincount(p.task_node).max() > tpn:  # pragma: no cover - an internal error
        raise ConfigError("mapping.partition", "internal", "a mapping within the slots", "Please report this.")
    return p.task_node
