"""Outside mappers, the mapping bench's references (issue 37): one record, one contract, one registry.

A mapper (Scotch's ``scotch_gmap``, :mod:`.scotch`; KaHIP's ``kaffpa --enable_mapping``, :mod:`.kahip`) maps one
job's tasks onto a machine's nodes and returns an :class:`OutsideMapping`; the bench evaluates it with the project's
own model (the evaluation the search's starts get) and states it beside the search's result. A new mapper is a
module that builds a :class:`Mapper` plus one line in :data:`evaluator.bench.mapping.OUTSIDE_MAPPERS`.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable

import numpy as np

from .._types import Int

__all__ = ["OutsideMapping", "Mapper", "run_tool", "traffic_graph", "adjacency", "repair"]


@dataclasses.dataclass
class OutsideMapping:
    """An outside mapper's mapping of a job.

    ``task_node``: node of every task (at most ``tasks_per_node`` each, only available nodes); ``target``: the
    machine as given to the mapper (its module's docstring); ``repaired``: tasks moved to meet the capacity (0: the
    mapping as it came); ``seconds``: wall time of the mapper's program (s); ``unit``: bytes per edge-weight unit
    of the graph written for it; ``binary``: the program run; ``padded``: dummy vertices added (slots the job
    leaves empty, where the mapper needs one vertex per slot)."""

    task_node: Int[np.ndarray, "task"]
    target: str
    repaired: int
    seconds: float
    unit: float
    binary: str
    padded: int = 0


# --- what every mapper is given and how its answer is made to fit --------------------------------------------

def traffic_graph(traffic) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """``(n_tasks, u, v, bytes)``: the undirected task graph of ``traffic`` (any kind): one entry per task pair
    ``u < v`` that exchanges bytes, ``bytes`` the sum over both directions and every phase (bytes per step);
    pairs sorted by ``(u, v)``, traffic of a task to itself left out."""
    n = int(traffic.n_tasks)
    us, vs, bs = [], [], []
    for ph in traffic.to_flows().phases:
        s, d, b = np.asarray(ph.src, np.int64), np.asarray(ph.dst, np.int64), np.asarray(ph.nbytes, np.float64)
        keep = (s != d) & (b > 0)
        s, d, b = s[keep], d[keep], b[keep]
        us.append(np.minimum(s, d))
        vs.append(np.maximum(s, d))
        bs.append(b)
    if not us:
        return n, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    u, v, b = np.concatenate(us), np.concatenate(vs), np.concatenate(bs)
    key, inv = np.unique(u * n + v, return_inverse=True)
    w = np.bincount(inv.reshape(-1), weights=b, minlength=key.size)
    return n, key // n, key % n, w


def adjacency(n: int, u: np.ndarray, v: np.ndarray, w: np.ndarray):
    """CSR of the symmetric graph: ``(start, neighbour, weight)``, each vertex's neighbours ascending."""
    a = np.concatenate([u, v])
    b = np.concatenate([v, u])
    x = np.concatenate([w, w])
    order = np.lexsort((b, a))
    a, b, x = a[order], b[order], x[order]
    start = np.concatenate([[0], np.cumsum(np.bincount(a, minlength=n))])
    return start, b, x


def _hops_from(topology, routers: np.ndarray) -> np.ndarray:
    """Router hop distances from each of ``routers`` to every router, shape [len(routers), router]."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    nr = int(topology.n_router_links)
    A = csr_matrix((np.ones(nr), (topology.link_src[:nr], topology.link_dst[:nr])),
                   shape=(topology.n_routers, topology.n_routers))
    return shortest_path(A, unweighted=True, directed=True, indices=routers)


def repair(topology, task_node: np.ndarray, nodes: np.ndarray, tasks_per_node: int) -> tuple[np.ndarray, int]:
    """``(task_node, moved)``: ``task_node`` with no node over ``tasks_per_node`` tasks and only ``nodes`` used.

    Deterministic: the tasks on a node outside ``nodes``, then every overfull node's highest-numbered excess
    tasks (nodes by ascending id), each go to the free slot nearest their node in router hops (ties: lowest
    node id)."""
    tn = np.asarray(task_node, np.int64).copy()
    nodes = np.asarray(nodes, np.int64)
    cap = np.zeros(topology.n_nodes, np.int64)
    cap[nodes] = tasks_per_node
    if tn.size > int(cap.sum()):
        raise ValueError(f"{tn.size} tasks do not fit {nodes.size} nodes x {tasks_per_node} slots")
    count = np.bincount(tn, minlength=topology.n_nodes)
    excess = []
    for node in np.flatnonzero(count > cap):
        tasks = np.flatnonzero(tn == node)
        excess.extend(tasks[int(cap[node]):].tolist() if cap[node] else tasks.tolist())
    if not excess:
        return tn, 0
    for t in excess:
        count[tn[t]] -= 1
    node_router = np.asarray(topology.node_router, np.int64)
    for t in excess:
        free = np.flatnonzero(count < cap)
        d = _hops_from(topology, np.array([node_router[tn[t]]]))[0][node_router[free]]
        best = free[np.lexsort((free, d))[0]]
        tn[t] = best
        count[best] += 1
    return tn, len(excess)


def run_tool(cmd: list[str], tool: str, error: type[Exception], timeout: float = 900.0) -> str:
    """Run an outside mapper's program ``cmd`` (``tool``: whose, as in "Scotch's"); its output (stdout then
    stderr). A timeout, a program that cannot start or a non-zero exit raises ``error`` naming the program."""
    from ._common import run_in_group

    name = os.path.basename(cmd[0])
    try:
        rc, stdout, stderr = run_in_group(cmd, timeout)  # past the timeout, its children are stopped too
    except OSError as e:
        raise error(f"{tool} {name} ({cmd[0]}) could not be run: {e}") from e
    if rc is None:
        raise error(f"{tool} {name} ({' '.join(cmd)}) ran past {timeout:g} s and was stopped; the mapper hung or "
                    f"the job is too large for it (the timeout is the mapping function's timeout argument)")
    if rc != 0:
        tail = (stderr + stdout).strip()[-2000:]
        raise error(f"{tool} {name} ({' '.join(cmd)}) failed (exit {rc}): {tail}")
    return stdout + stderr


@dataclasses.dataclass(frozen=True)
class Mapper:
    """One outside mapper as the bench uses it.

    ``key``: the record's field names (``key``, ``key_target``, ``key_repaired``, ``key_s``, ``key_absent``);
    ``name``: as printed ("Scotch"); ``program``: the command as printed ("scotch_gmap");
    ``available()``: whether it is installed; ``absent``: why not, when it is not; ``map(topology, traffic,
    nodes=, tasks_per_node=)``: its :class:`OutsideMapping`; ``error``: what ``map`` raises when it fails;
    ``unsupported``: what it raises when the machine is outside what the mapper can be told (a skip, not a
    failure; a subclass of ``error``), or ``None``."""

    key: str
    name: str
    program: str
    available: Callable[[], bool]
    absent: str
    map: Callable[..., OutsideMapping]
    error: type[Exception]
    unsupported: type[Exception] | None = None

    def row(self, topology, routing, traffic, nodes=None, tasks_per_node: int = 1) -> dict:
        """The mapper's mapping of the case, its completion time by the project's model and how it was made, as
        fields of a bench record; ``{key_absent: reason}`` where it is absent, does not apply or fails."""
        from ..evaluation import evaluate_batch
        from ..placement import explicit

        k = self.key
        if not self.available():
            return {f"{k}_absent": self.absent}
        try:
            m = self.map(topology, traffic, nodes=nodes, tasks_per_node=tasks_per_node)
        except self.error as e:
            skipped = self.unsupported is not None and isinstance(e, self.unsupported)
            return {f"{k}_absent": f"{self.name} {'skipped' if skipped else 'failed'}: {e}"}
        res = evaluate_batch(topology, routing, traffic, explicit(topology, m.task_node, k))
        return {k: float(res.metrics["completion_time"][0]), f"{k}_target": m.target,
                f"{k}_repaired": m.repaired, f"{k}_s": m.seconds}

    def texts(self, q: dict, older: str | None = None) -> tuple[str, str]:
        """(check, note) fragments of the mapper's result in a bench record ``q``: the search's time against it,
        and its time, program and target; where it did not run, its reason (``older``: the reason for records
        written before the mapper was in the bench, ``None``: say nothing)."""
        k = self.key
        if k in q:
            gain = 1 - q["time"] / q[k]
            rep = f", {q[f'{k}_repaired']} task(s) moved to fit" if q.get(f"{k}_repaired") else ""
            return (f", {-gain * 100:+.1f}% vs {self.name}",
                    f"{self.name} ({self.program} onto {q[f'{k}_target']}{rep}) {q[k] * 1e6:.4g} us; ")
        why = q.get(f"{k}_absent", older)
        if why is None:
            return "", ""
        verdict = why.startswith((f"{self.name} failed", f"{self.name} skipped"))
        return f", {why.split(':')[0] if verdict else why.split(' (')[0]}", f"{why}; "

    def short(self, q: dict, older: str) -> str:
        """The mapper's time in a record, or why there is none (``older`` for records from before it)."""
        return f"{self.name} {q[self.key] * 1e6:.4g} us" if self.key in q else q.get(f"{self.key}_absent", older)

