"""Grid-embedding starts of a mapping search: the traffic's task grid tiled and folded into a torus's routers.

The task grid ``g`` (row-major task ids, :func:`~evaluator.traffic.grid.task_grid`) is embedded into a box of
the torus's router grid with ``s`` slots per router (``s`` = ``tasks_per_node`` x nodes per router, the most
that divides the task count in whole nodes, and ``s`` = ``tasks_per_node``, one node per router; a job smaller
than the machine gets a box of ``n / s`` routers, the most compact ones, anchored at the lowest coordinates of
its available routers). Each task-grid dimension is
written as mixed-radix digits, each digit going to one machine dimension: a torus dimension or the router's
slots (the ``router cell``: every router holds a sub-box of the task grid). Every assignment where the sizes
divide is tried: task dimensions to torus dimensions in every order (``torus dims (2,0,1)``: task dimension
``i`` along torus dimension ``p[i]``), a task dimension split over two or more torus dimensions where it is
longer than one (``0(8)+1(2)``: 8 along torus dimension 0, the minor digit, and 2 along dimension 1), two task
dimensions sharing a torus dimension where they are shorter.

* **block** embeddings read the digits plainly (mixed radix): each router holds a sub-box, a split dimension
  is tiled row by row;
* **folded** embeddings read them as a reflected mixed-radix (boustrophedon, snake) code: a task-grid
  dimension longer than its torus dimension turns back into the next torus dimension (the folding of a ring
  into a torus of Yu, Chung & Moreira, "Topology mapping for Blue Gene/L supercomputer", SC 2006), so that
  neighbours along it stay on neighbouring routers (a ring of ``a b`` tasks folded ``b`` times into an
  ``a x b`` torus is a cycle of one-hop steps when ``b`` is even); where two task dimensions share a torus
  dimension, the minor one snakes too (``dim 1: 0 over 2 snaked``).

An embedding is kept where every task lands on an available node, at most ``tasks_per_node`` to a node (a
router's slot ``j`` is slot ``j % tasks_per_node`` of its node ``j // tasks_per_node``). The distinct ones
(not repeating ``exclude``) are ranked by a cheap estimate, the traffic graph's bytes times the links each
pair's bytes cross (torus hops, plus injection and ejection between distinct nodes), and the best ``limit``
are returned: first the best of every class that the estimate's signature does not tell apart (the bytes at
each hop count along each torus dimension, dimensions of equal size, wrap and bandwidth in any order: a torus
symmetry maps one member onto another), then the second best of every class, ...; within that, the best of
every shape (slots per router, box) first. The enumeration is capped (:data:`MAX_CANDIDATES`, fewer on large
traffics) so the search's start-up stays short.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .._types import JobNodes, TaskInts
from ..topology import Topology, TorusTopology
from ._partition import task_graph

__all__ = ["grid_embeddings", "is_embedding", "MAX_EMBEDDINGS", "MAX_CANDIDATES"]

MAX_EMBEDDINGS = 16
"""Embeddings returned as starts at most (the best by the hop-bytes estimate)."""

MAX_CANDIDATES = 2000
"""Embeddings built and estimated at most (fewer where the traffic is large: about 2e7 task and flow entries)."""

_MAX_BOXES = 3
"""Router boxes tried where the job needs fewer routers than the torus has (the most compact first)."""

_MAX_ASSIGNMENTS = 400
"""Digit assignments enumerated per box at most."""

_SLOT = -1
"""The machine dimension of a router's slots."""


def is_embedding(start_name: str) -> bool:
    """Whether a start's name is a grid embedding's (block or folded)."""
    return start_name.startswith(("grid embedding ", "folded grid embedding "))


def _divisors(x: int) -> list[int]:
    return [d for d in range(1, x + 1) if x % d == 0]


def _boxes(dims: tuple[int, ...], wrap: tuple[bool, ...], m: int) -> list[tuple[int, ...]]:
    """Boxes of ``m`` routers inside ``dims``, the most compact first (whole wrapped dimensions, then least
    surface, then the most cubic, then lexicographically)."""
    out = []
    for b in itertools.product(*[[d for d in _divisors(m) if d <= t] for t in dims]):
        if math.prod(b) != m:
            continue
        partial = sum(1 for bk, t, w in zip(b, dims, wrap) if bk < t and bk > 1 and w)
        surf = sum(m // bk for bk, t in zip(b, dims) if bk < t)
        out.append((partial, surf, max(b) - min(b), b))
    return [x[-1] for x in sorted(out)][:_MAX_BOXES]


def _assignments(grid: list[int], caps: dict[int, int]):
    """Every way to write each task dimension as digits (minor first) on distinct machine dimensions, filling
    every machine dimension exactly: yields ``[[(machine_dim, size), ...] per task dim]``. Whole dimensions and
    digits that fill a machine dimension come first."""
    caps = dict(caps)
    digits: list[list[tuple[int, int]]] = [[] for _ in grid]

    def rec(i: int, rest: int):
        if i == len(grid):
            if all(c == 1 for c in caps.values()):
                yield [list(d) for d in digits]
            return
        if rest == 1:
            yield from rec(i + 1, grid[i + 1] if i + 1 < len(grid) else 1)
            return
        used = {k for k, _ in digits[i]}
        opts = []
        for k, cap in caps.items():
            if k in used or cap == 1:
                continue
            for f in _divisors(math.gcd(rest, cap))[1:]:
                opts.append((0 if f == rest else 1 if f == cap else 2, -f, k, f))
        for *_, k, f in sorted(opts):
            caps[k] //= f
            digits[i].append((k, f))
            yield from rec(i, rest // f)
            digits[i].pop()
            caps[k] *= f

    yield from rec(0, grid[0] if grid else 1)


def _to_digits(x: np.ndarray, sizes: list[int], snake: bool) -> list[np.ndarray]:
    """Digits (minor first) of ``x`` in mixed radix ``sizes`` (minor first); ``snake``: the reflected code
    (an odd major digit reverses the minor ones)."""
    if not snake:
        out, r = [], 1
        for f in sizes:
            out.append((x // r) % f)
            r *= f
        return out
    out = [None] * len(sizes)
    v = x.copy()
    r = math.prod(sizes)
    for j in range(len(sizes) - 1, -1, -1):
        r //= sizes[j]
        a = v // r
        v = v % r
        v = np.where(a % 2 == 1, r - 1 - v, v)
        out[j] = a
    return out


def _from_digits(digits: list[np.ndarray], sizes: list[int], snake: bool) -> np.ndarray:
    """The coordinate of ``digits`` (major first) of ``sizes`` (major first): mixed radix, or ``snake``: the
    reflected code (the inverse of :func:`_to_digits`)."""
    p = digits[-1].copy()
    r = sizes[-1]
    for a, f in zip(digits[-2::-1], sizes[-2::-1]):
        p = a * r + (np.where(a % 2 == 1, r - 1 - p, p) if snake else p)
        r *= f
    return p


class _Job:
    """What every candidate of one job shares: the torus, the slots, the task coordinates and the task graph."""

    def __init__(self, topology: TorusTopology, traffic, grid: list[int], nodes: JobNodes, tpn: int):
        self.dims, self.wrap = tuple(int(d) for d in topology.dims), tuple(bool(w) for w in topology.wrap)
        self.tpn = tpn
        self.start, self.count = (np.asarray(a, np.int64) for a in topology.router_nodes)
        self.avail = np.zeros(topology.n_nodes, dtype=bool)
        self.avail[nodes] = True
        self.grid = grid
        self.n = math.prod(grid)
        self.x = np.stack(np.unravel_index(np.arange(self.n), grid), axis=1).astype(np.int64) if grid else None
        g = task_graph(traffic).tocoo()
        up = g.row < g.col
        self.i, self.j, self.w = g.row[up], g.col[up], g.data[up]
        self.router = np.asarray(topology.node_router, np.int64)
        self.coords = np.asarray(topology.router_coords, np.int64)
        self.bandwidth = tuple(float(x) for x in topology.link_bandwidth)
        self.lo = self.coords[self.router[nodes]].min(axis=0)

    def build(self, box: tuple[int, ...], digits, fold: list[bool], order: dict, snake: dict) -> TaskInts | None:
        """``task_node`` of one candidate, or None where a task lands off the available nodes."""
        vals: dict[tuple[int, int], np.ndarray] = {}
        for i, dl in enumerate(digits):
            if dl:
                for j, a in enumerate(_to_digits(self.x[:, i], [f for _, f in dl], fold[i])):
                    vals[(i, j)] = a
        coords = []
        for k in [_SLOT, *range(len(self.dims))]:
            keys = order.get(k, [])
            if not keys:
                coords.append(np.zeros(self.n, np.int64))
                continue
            c = _from_digits([vals[key] for key in keys], [digits[i][j][1] for i, j in keys], snake.get(k, False))
            if k != _SLOT:
                c = c + self.lo[k]
                if c.max() >= self.dims[k]:
                    if not self.wrap[k]:
                        return None
                    c = c % self.dims[k]
            coords.append(c)
        router = np.ravel_multi_index(tuple(coords[1:]), self.dims).astype(np.int64)
        local = coords[0] // self.tpn
        if (local >= self.count[router]).any():
            return None
        tn = self.start[router] + local
        if not self.avail[tn].all():
            return None
        return tn

    def cost(self, task_node: TaskInts) -> tuple[float, tuple]:
        """Bytes times links crossed (torus hops, plus injection and ejection between distinct nodes), and a
        signature that torus symmetries keep: per torus dimension (its size, wrap and bandwidth) the bytes at
        each hop count along it, sorted, and the bytes between distinct nodes."""
        a, b = task_node[self.i], task_node[self.j]
        d = np.abs(self.coords[self.router[a]] - self.coords[self.router[b]])
        t = np.asarray(self.dims)
        hops = np.where(np.asarray(self.wrap), np.minimum(d, t - d), d)
        off = float(np.dot(self.w, a != b))
        sig = sorted((self.dims[k], self.wrap[k], self.bandwidth[k],
                      tuple(np.round(np.bincount(hops[:, k], weights=self.w, minlength=self.dims[k]), 6)))
                     for k in range(len(self.dims)))
        return float(np.dot(self.w, hops.sum(axis=1))) + 2.0 * off, (tuple(sig), round(off, 6))


def _variants(digits):
    """``(fold, order, snake)`` choices of one assignment: per task dimension of several digits plain or
    folded; per machine dimension of several digits their order (major first) and, on a torus dimension, plain
    or snaked. All plain first, then all folded, then the rest."""
    shared: dict[int, list[tuple[int, int]]] = {}
    for i, dl in enumerate(digits):
        for j, (k, _) in enumerate(dl):
            shared.setdefault(k, []).append((i, j))
    multi = [i for i, dl in enumerate(digits) if len(dl) > 1]
    mdims = sorted(k for k, keys in shared.items() if len(keys) > 1)
    order_choices = [list(itertools.permutations(shared[k])) for k in mdims]
    snake_choices = [[False, True] if k != _SLOT else [False] for k in mdims]
    seen = set()
    firsts = [(False,) * len(multi), (True,) * len(multi)]
    for folds in itertools.chain(firsts, itertools.product([False, True], repeat=len(multi))):
        for orders in itertools.product(*order_choices):
            for snakes in itertools.product(*snake_choices):
                key = (folds, orders, snakes)
                if key in seen:
                    continue
                seen.add(key)
                fold = [False] * len(digits)
                for i, f in zip(multi, folds):
                    fold[i] = f
                order = {k: list(keys) for k, keys in shared.items()}
                snake = {}
                for k, o, s in zip(mdims, orders, snakes):
                    order[k] = list(o)
                    snake[k] = s
                yield fold, order, snake, mdims


def _name(grid, dims, box, digits, fold, order, snake, mdims) -> str:
    parts = []
    for dl in digits:
        torus = [(k, f) for k, f in dl if k != _SLOT]
        if not torus:
            parts.append("-")
        elif len(torus) == 1:
            parts.append(str(torus[0][0]))
        else:
            parts.append("+".join(f"{k}({f})" for k, f in torus))
    folded = any(fold) or any(snake.get(k, False) for k in mdims)
    name = (f"{'folded ' if folded else ''}grid embedding {'x'.join(map(str, grid))} -> torus dims "
            f"({','.join(parts)})")
    cell = [math.prod(f for k, f in dl if k == _SLOT) for dl in digits]
    if math.prod(cell) > 1:
        name += f", {'x'.join(map(str, cell))} per router"
    if tuple(box) != tuple(dims):
        name += f", on a {'x'.join(map(str, box))} box"
    for k in mdims:
        what = "router cell" if k == _SLOT else f"dim {k}"
        name += f"; {what}: {' over '.join(str(i) for i, _ in order[k])}{' snaked' if snake.get(k) else ''}"
    return name


def _built(job, grid, dims, shapes, exclude, budget: int) -> list:
    """Every embedding built within ``budget``, round robin over the assignments of grid digits to each shape's
    box (each assignment's plain, then folded, then other variants), without repeats or mappings in ``exclude``:
    ``(cost..., signature, shape, name, task_node)`` rows."""
    streams = []
    for s, box in shapes:
        caps = {_SLOT: s, **{k: b for k, b in enumerate(box)}}
        for digits in itertools.islice(_assignments(list(grid), caps), _MAX_ASSIGNMENTS):
            streams.append((s, box, digits, _variants(digits)))
    seen = {np.asarray(t, np.int64).tobytes() for t in exclude}
    found: list[tuple[float, tuple, tuple, str, np.ndarray]] = []
    built = 0
    while streams and built < budget:  # round robin: each assignment's plain, then folded, then other variants
        alive = []
        for s, box, digits, gen in streams:
            if built >= budget:
                break
            v = next(gen, None)
            if v is None:
                continue
            alive.append((s, box, digits, gen))
            built += 1
            fold, order, snake, mdims = v
            tn = job.build(box, digits, fold, order, snake)
            if tn is None:
                continue
            key = tn.tobytes()
            if key in seen:
                continue
            seen.add(key)
            found.append((*job.cost(tn), (s, box), _name(grid, dims, box, digits, fold, order, snake, mdims), tn))
        streams = alive
    return found


def _ranked(found: list, limit: int) -> list[tuple[str, TaskInts]]:
    """The embeddings ranked by estimate (:func:`grid_embeddings`), at most ``limit``, with distinct names."""
    # ranked by estimate, mappings that a torus symmetry maps onto a better one (the same signature) after every
    # other, and among those the best of every shape (slots per router, box) first, then the second best, ...
    dup: dict = {}
    ranked = []
    for i, (c, sig, shape, name, tn) in enumerate(sorted(found, key=lambda f: f[0])):  # stable: ties in build order
        ranked.append((dup.get(sig, 0), dup.get(shape, 0), c, i, name, tn))
        dup[sig] = dup.get(sig, 0) + 1
        dup[shape] = dup.get(shape, 0) + 1
    out, names = [], set()
    for *_, name, tn in sorted(ranked, key=lambda r: r[:4])[:max(0, int(limit))]:
        base, k = name, 2
        while name in names:
            name, k = f"{base} (#{k})", k + 1
        names.add(name)
        tn.setflags(write=False)
        out.append((name, tn))
    return out


def grid_embeddings(topology: Topology, traffic, grid: list[int] | None, nodes: JobNodes, tasks_per_node: int,
                    *, exclude=(), limit: int = MAX_EMBEDDINGS) -> tuple[list[tuple[str, TaskInts]], str | None]:
    """Block and folded embeddings of the task grid into the torus (module docstring).

    Parameters
    ----------
    topology
        The machine (a torus; any other family has none).
    traffic
        The job's traffic (its task graph ranks the embeddings).
    grid
        The traffic's task grid (row-major task ids; its product is the task count), or None.
    nodes : int array, shape [job_node]
        The job's available nodes (checked, :func:`~evaluator.mapping._partition.check_job`).
    tasks_per_node
        Slots per node.
    exclude
        Mappings (``task_node`` arrays) not to repeat (the starts built before).
    limit
        Embeddings returned at most.

    Returns
    -------
    (embeddings, reason)
        ``embeddings``: ``(name, task_node)`` pairs, int64 ``task_node`` of shape [task] on available nodes with
        at most ``tasks_per_node`` tasks per node, distinct, best estimate first; ``reason``: why there is none
        (None where there is one).
    """
    if not isinstance(topology, TorusTopology):
        return [], f"{topology.name} is not a torus"
    if grid is None:
        return [], "the traffic has no task grid"
    n = int(traffic.n_tasks)
    if math.prod(grid) != n:
        return [], f"the task grid {grid} does not hold the traffic's {n} tasks"
    tpn = int(tasks_per_node)
    dims, wrap = tuple(int(d) for d in topology.dims), tuple(bool(w) for w in topology.wrap)
    per_router = int(np.asarray(topology.router_nodes[1]).max()) * tpn
    cells = [s for s in range(per_router, 0, -1) if s % tpn == 0 and n % s == 0]
    if not cells:
        return [], f"{n} tasks do not fill whole nodes of {tpn} tasks"
    shapes = [(s, box) for s in dict.fromkeys([cells[0], tpn]) if s in cells for box in _boxes(dims, wrap, n // s)]
    if not shapes:
        return [], (f"no box of {n // cells[0]} routers ({cells[0]} tasks each) fits the torus "
                    f"{'x'.join(map(str, dims))}")
    job = _Job(topology, traffic, list(grid), np.asarray(nodes, np.int64), tpn)
    budget = int(min(MAX_CANDIDATES, max(64, 2e7 // (job.n * (len(dims) + 1) + job.w.size + 1))))
    found = _built(job, grid, dims, shapes, exclude, budget)
    if not found:
        return [], (f"no embedding of the task grid {'x'.join(map(str, grid))} lands on the available nodes "
                    f"with at most {tpn} task(s) per node and differs from the other starts")
    return _ranked(found, limit), None
