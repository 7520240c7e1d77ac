"""Task placement: which node runs each task.

Every generator returns a :class:`Placement` (``task_node[task] -> node``).
Random choices take an explicit ``seed`` (NumPy ``default_rng``), so the same
arguments give the same placement on every machine.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from .errors import positive_int, require
from .topology import DragonflyTopology, Topology, TorusTopology

__all__ = [
    "Placement",
    "explicit",
    "linear",
    "fully_random",
    "dragonfly_cartesian",
    "dragonfly_random",
    "torus_block",
    "subprism",
    "ORDERS",
]

ORDERS = ("random", "linear")


@dataclasses.dataclass(frozen=True, eq=False)
class Placement:
    """Task-to-node map.

    Attributes
    ----------
    task_node : int ndarray, shape [task]
        Node id of every task.
    n_nodes
        Node count of the topology it was made for.
    name
        Short label.
    """

    task_node: np.ndarray
    n_nodes: int
    name: str = "placement"

    @property
    def n_tasks(self) -> int:
        return int(self.task_node.size)

    def tasks_per_node(self) -> np.ndarray:
        """Number of tasks on every node, shape [node]."""
        return np.bincount(self.task_node, minlength=self.n_nodes)


def explicit(topology: Topology, task_node, name: str = "explicit") -> Placement:
    """A placement given as an array ``task_node[task]`` of node ids."""
    tn = np.asarray(task_node).reshape(-1)
    require(tn.size > 0, "placement.task_node", tn.tolist(), "a non-empty list of node ids")
    require(np.issubdtype(tn.dtype, np.integer), "placement.task_node", tn[:5].tolist(), "integer node ids")
    bad = (tn < 0) | (tn >= topology.n_nodes)
    require(not bad.any(), "placement.task_node", int(tn[bad][0]) if bad.any() else None,
            f"node ids in [0, {topology.n_nodes - 1}] of {topology.name}")
    return Placement(tn.astype(np.int64), topology.n_nodes, name)


def _check_capacity(topology: Topology, n_tasks: int, tasks_per_node: int) -> tuple[int, int]:
    n = positive_int("placement.n_tasks", n_tasks)
    tpn = positive_int("placement.tasks_per_node", tasks_per_node)
    slots = topology.n_nodes * tpn
    require(n <= slots, "placement.n_tasks", n,
            f"at most nodes x tasks_per_node = {topology.n_nodes} x {tpn} = {slots} on {topology.name}",
            "Use fewer tasks, more tasks per node or a larger network.")
    return n, tpn


def linear(topology: Topology, n_tasks: int, tasks_per_node: int = 1, first_node: int = 0) -> Placement:
    """Rank order onto nodes: task ``t`` on node ``first_node + t // tasks_per_node``."""
    n, tpn = _check_capacity(topology, n_tasks, tasks_per_node)
    last = first_node + math.ceil(n / tpn) - 1
    require(0 <= first_node and last < topology.n_nodes, "placement.first_node", first_node,
            f"an integer in [0, {topology.n_nodes - math.ceil(n / tpn)}] so that {n} tasks fit")
    return Placement(first_node + np.arange(n, dtype=np.int64) // tpn, topology.n_nodes, f"linear/{tpn}")


def fully_random(topology: Topology, n_tasks: int, tasks_per_node: int = 1, seed: int = 0) -> Placement:
    """Tasks on uniformly random node slots (at most ``tasks_per_node`` per node), seeded."""
    n, tpn = _check_capacity(topology, n_tasks, tasks_per_node)
    rng = np.random.default_rng(seed)
    slots = rng.choice(topology.n_nodes * tpn, size=n, replace=False)
    return Placement((slots // tpn).astype(np.int64), topology.n_nodes, f"random(seed={seed})")


def _vec(field: str, v, nd: int | None = None) -> tuple[int, ...]:
    require(isinstance(v, (list, tuple, np.ndarray)) and len(v) >= 1, field, v, "a non-empty list of positive integers")
    if nd is not None:
        require(len(v) == nd, field, list(v), f"a list of {nd} positive integers")
    return tuple(positive_int(f"{field}[{k}]", x) for k, x in enumerate(v))


def _require_dragonfly(topology: Topology, what: str) -> DragonflyTopology:
    require(isinstance(topology, DragonflyTopology), "placement.kind", what,
            f"a placement for a {topology.kind}; '{what}' needs a Dragonfly topology")
    return topology  # type: ignore[return-value]


def dragonfly_cartesian(topology: Topology, beta: Sequence[int], gamma: Sequence[int], seed: int = 0,
                        group_order: str = "random", node_order: str = "random") -> Placement:
    """Prisacari's Cartesian placement: a ``gamma`` sub-domain of tasks per group.

    The ``beta`` task grid (row-major task ids) is cut into ``lambda = beta /
    gamma`` blocks of ``gamma`` tasks; every block goes to its own Dragonfly
    group, one task per node. ``group_order`` picks which groups host the
    blocks (``random``: a seeded random choice and order; ``linear``: block
    ``b`` on group ``b``); ``node_order`` picks the nodes inside a group
    (``random`` or ``linear``: the first ``|gamma|`` nodes in id order).
    """
    df = _require_dragonfly(topology, "dragonfly_cartesian")
    be = _vec("placement.beta", beta)
    ga = _vec("placement.gamma", gamma, len(be))
    for k, (b, c) in enumerate(zip(be, ga)):
        require(b % c == 0, f"placement.gamma[{k}]", c, f"a divisor of beta[{k}] = {b}")
    require(group_order in ORDERS, "placement.group_order", group_order, f"one of {list(ORDERS)}")
    require(node_order in ORDERS, "placement.node_order", node_order, f"one of {list(ORDERS)}")
    per_group = df.a * df.p
    ng = math.prod(ga)
    require(ng <= per_group, "placement.gamma", list(ga),
            f"|gamma| <= nodes per group a*p = {per_group}; got |gamma| = {ng}", "Pick a smaller gamma.")
    lam = tuple(b // c for b, c in zip(be, ga))
    nl = math.prod(lam)
    require(nl <= df.g, "placement.gamma", list(ga),
            f"|lambda| = |beta/gamma| <= g = {df.g} groups; got lambda = {list(lam)} ({nl} groups)",
            "Pick a larger gamma.")
    rng = np.random.default_rng(seed)
    n = math.prod(be)
    x = np.stack(np.unravel_index(np.arange(n), be), axis=1)
    block = np.ravel_multi_index(tuple((x // np.array(ga)).T), lam)
    local = np.ravel_multi_index(tuple((x % np.array(ga)).T), ga)
    groups = rng.permutation(df.g)[:nl] if group_order == "random" else np.arange(nl)
    if node_order == "random":
        slots = np.stack([rng.permutation(per_group)[:ng] for _ in range(nl)])
    else:
        slots = np.tile(np.arange(ng), (nl, 1))
    task_node = groups[block] * per_group + slots[block, local]
    label = "cartesian gamma=" + "x".join(map(str, ga))
    return Placement(task_node.astype(np.int64), df.n_nodes, label)


def dragonfly_random(topology: Topology, n_tasks: int, tasks_per_group: int, seed: int = 0) -> Placement:
    """Prisacari's random (sparse) placement: ``tasks_per_group`` tasks on each of
    ``n_tasks / tasks_per_group`` randomly chosen groups, on random nodes, with
    tasks assigned to those slots in random order (seeded)."""
    df = _require_dragonfly(topology, "dragonfly_random")
    n = positive_int("placement.n_tasks", n_tasks)
    k = positive_int("placement.tasks_per_group", tasks_per_group)
    per_group = df.a * df.p
    require(k <= per_group, "placement.tasks_per_group", k, f"at most nodes per group a*p = {per_group}")
    require(n % k == 0, "placement.tasks_per_group", k, f"a divisor of n_tasks = {n}")
    ng = n // k
    require(ng <= df.g, "placement.tasks_per_group", k,
            f"at least n_tasks / g = {math.ceil(n / df.g)} so that {n} tasks fit in {df.g} groups")
    rng = np.random.default_rng(seed)
    groups = rng.permutation(df.g)[:ng]
    slots = np.concatenate([grp * per_group + rng.permutation(per_group)[:k] for grp in groups])
    task_node = slots[rng.permutation(n)]
    return Placement(task_node.astype(np.int64), df.n_nodes, f"random {k}/group (seed={seed})")


def torus_block(topology: Topology, task_grid: Sequence[int]) -> Placement:
    """Cartesian block placement of a task grid onto a torus router grid.

    ``task_grid`` has one entry per torus dimension. Where ``task_grid[k] >=
    dims[k]`` it must be a multiple, and blocks of ``task_grid[k] / dims[k]``
    consecutive tasks share a router coordinate; where it is smaller the
    tasks occupy the first ``task_grid[k]`` routers. Tasks sharing a router
    are dealt to its nodes round-robin in row-major order of their offset in
    the block.
    """
    require(isinstance(topology, TorusTopology), "placement.kind", "torus_block",
            f"a placement for a {topology.kind}; 'torus_block' needs a torus")
    tg = _vec("placement.task_grid", task_grid, topology.ndim)  # type: ignore[union-attr]
    dims = topology.dims  # type: ignore[union-attr]
    blk = []
    for k, (t, d) in enumerate(zip(tg, dims)):
        if t >= d:
            require(t % d == 0, f"placement.task_grid[{k}]", t, f"a multiple of dims[{k}] = {d}, or at most {d}")
            blk.append(t // d)
        else:
            blk.append(1)
    blk_t = tuple(blk)
    n = math.prod(tg)
    x = np.stack(np.unravel_index(np.arange(n), tg), axis=1)
    router = np.ravel_multi_index(tuple((x // np.array(blk_t)).T), dims)
    local = np.ravel_multi_index(tuple((x % np.array(blk_t)).T), blk_t)
    p = topology.nodes_per_router
    node = router * p + local % p
    return Placement(node.astype(np.int64), topology.n_nodes, "block " + "x".join(map(str, tg)))


def subprism(topology: Topology, prism: Sequence[int], offset: Sequence[int] | None = None,
             n_tasks: int | None = None, tasks_per_node: int = 1) -> Placement:
    """Tasks on the nodes of a sub-prism of a host torus (embedded partitions, e.g. Cray Gemini).

    ``prism`` is the job's extent in routers along each host dimension and
    ``offset`` its first router coordinate (default the origin; coordinates
    wrap around the host). Task ``t`` runs on the ``t // tasks_per_node``-th
    node of the prism, nodes taken in row-major order of prism coordinates and
    then by port. Traffic is routed over the host torus, so routes may leave
    the prism.
    """
    require(isinstance(topology, TorusTopology), "placement.kind", "subprism",
            f"a placement for a {topology.kind}; 'subprism' needs a torus")
    dims = topology.dims  # type: ignore[union-attr]
    pr = _vec("placement.task_grid", prism, len(dims))
    for k, (a, d) in enumerate(zip(pr, dims)):
        require(a <= d, f"placement.task_grid[{k}]", a, f"at most the host size dims[{k}] = {d}")
    off = (0,) * len(dims) if offset is None else tuple(int(o) for o in offset)
    require(len(off) == len(dims), "placement.offset", list(off), f"{len(dims)} router coordinates")
    p = topology.nodes_per_router
    n_slots = math.prod(pr) * p * int(tasks_per_node)
    n = n_slots // int(tasks_per_node) * int(tasks_per_node) if n_tasks is None else int(n_tasks)
    require(0 < n <= n_slots, "placement.n_tasks", n,
            f"at most prism routers x nodes/router x tasks/node = {n_slots}")
    c = np.stack(np.unravel_index(np.arange(math.prod(pr)), pr), axis=1)
    routers = np.ravel_multi_index(tuple(((c + np.array(off)) % np.array(dims)).T), dims)
    nodes = (routers[:, None] * p + np.arange(p)[None, :]).ravel()
    task_node = nodes[np.arange(n) // int(tasks_per_node)]
    return Placement(task_node.astype(np.int64), topology.n_nodes, "subprism " + "x".join(map(str, pr)))
