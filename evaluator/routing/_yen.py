"""The router graph of a topology and Yen's k shortest loopless paths on it (host side, pure Python and SciPy).

* :class:`RouterGraph` / :func:`router_graph`: a topology's router links as
  adjacency lists (parallel links kept), cached per topology, with BFS
  distances to a destination cached per destination;
* :func:`yen_paths`: Yen's k shortest loopless paths with a hop limit, each
  spur path found by an A* search guided by the BFS distance to the
  destination (admissible, so every spur path is a shortest one), its
  straight descents taken without a heap (:func:`_descent`); ties broken
  towards diversity, deterministically.

:mod:`evaluator.routing._paths` builds its path tables from these (and
re-exports the public names).
"""

from __future__ import annotations

import dataclasses
import heapq
import weakref

import numpy as np

from .._types import RouterInts
from ..topology import Topology

__all__ = ["RouterGraph", "router_graph", "yen_paths"]

# --------------------------------------------------------------------------------------
# the router graph
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class RouterGraph:
    """The directed router graph of a topology (host side).

    ``nbr[r]``: the distinct neighbour routers of ``r`` in ascending order;
    ``links[(r, t)]``: the router-link ids from ``r`` to ``t`` (several for
    parallel links); ``rev``: the in-neighbours (for BFS towards a destination).
    """

    n_routers: int
    n_router_links: int
    nbr: tuple[tuple[int, ...], ...]
    rev: tuple[tuple[int, ...], ...]
    links: dict
    _dist: dict = dataclasses.field(default_factory=dict)  # destination -> BFS distances to it

    def dist_to(self, t: int) -> RouterInts:
        """Hops from every router to ``t`` (-1: unreachable); a BFS in C (SciPy), cached per destination.

        The BFS gives each router's predecessor on a shortest path to ``t``;
        the hop counts follow by pointer jumping (each router adds the count
        of the router it points to, then points to that router's target: a
        few NumPy passes, the log of the diameter). SciPy's ``shortest_path``
        with ``unweighted=True`` gives the same distances by Dijkstra's
        algorithm, 6x slower on 8,192 routers.
        """
        d = self._dist.get(t)
        if d is None:
            from scipy.sparse.csgraph import breadth_first_order

            rev = self._dist.get("rev")
            if rev is None:
                import scipy.sparse as sp

                rows = [y for y in range(self.n_routers) for _ in self.rev[y]]
                cols = [x for y in range(self.n_routers) for x in self.rev[y]]
                rev = self._dist["rev"] = sp.csr_matrix((np.ones(len(rows)), (rows, cols)),
                                                       shape=(self.n_routers, self.n_routers))
            t = int(t)
            order, pred = breadth_first_order(rev, t, directed=True, return_predecessors=True)
            hops = (pred >= 0).astype(np.int64)           # one hop to the predecessor (t and the unreached: none)
            jump = np.where(pred >= 0, pred, t)
            while (jump != t).any():
                hops += hops[jump]
                jump = jump[jump]
            d = np.full(self.n_routers, -1, np.int64)
            d[order] = hops[order]
            if len(self._dist) > 4096:
                self._dist.clear()
                self._dist["rev"] = rev
            self._dist[t] = d
        return d


_GRAPHS: "weakref.WeakKeyDictionary[Topology, RouterGraph]" = weakref.WeakKeyDictionary()


def router_graph(topo: Topology) -> RouterGraph:
    """The router graph of ``topo`` (cached per topology object)."""
    g = _GRAPHS.get(topo)
    if g is not None:
        return g
    n = int(topo.n_router_links)
    src = np.asarray(topo.link_src[:n], np.int64)
    dst = np.asarray(topo.link_dst[:n], np.int64)
    links: dict[tuple[int, int], list[int]] = {}
    for lid, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        links.setdefault((s, d), []).append(lid)
    R = int(topo.n_routers)
    nbr = [[] for _ in range(R)]
    rev = [[] for _ in range(R)]
    for s, d in sorted(links):
        nbr[s].append(d)
        rev[d].append(s)
    g = RouterGraph(R, n, tuple(map(tuple, nbr)), tuple(map(tuple, rev)),
                    {k: tuple(v) for k, v in links.items()})
    _GRAPHS[topo] = g
    return g


# --------------------------------------------------------------------------------------
# Yen's k shortest loopless paths
# --------------------------------------------------------------------------------------


_HASH = 2654435761  # Knuth's multiplicative hash constant


def _salt(s: int, t: int) -> int:
    """A per-pair salt of the tie-breaking keys (deterministic, decorrelates the pairs' choices)."""
    return ((s * 1_000_003 + t) * _HASH) & 0xFFFFFFFF


def _spur(graph: RouterGraph, s: int, t: int, h_to_t: list, banned_nodes: set, banned_edges: set,
          max_hops: int, salt: int) -> list[int] | None:
    """A shortest ``s -> t`` path avoiding ``banned_nodes`` and ``banned_edges`` within ``max_hops``, or None.

    A* search on hop counts with the unrestricted BFS distance to ``t``
    (``h_to_t``, -1: unreachable) as heuristic: consistent (it never
    overestimates and drops by at most one per hop), so the first time
    ``t`` is popped its path is a shortest one. Among equal estimates the
    deeper node goes first (few expansions on tori, where many routes tie),
    then the smaller hashed key ``((y ^ salt) * 2654435761) mod 2^32``: a
    deterministic choice among equal shortest paths that differs from pair
    to pair, so the pairs' first paths do not all crowd the same links (as
    a smallest-id rule would).
    """
    hs = h_to_t[s]
    if hs < 0 or hs > max_hops:
        return None
    path = _descent(graph.nbr, s, t, h_to_t, banned_nodes, banned_edges, salt)
    if path is not None:
        return path
    parent = {s: -1}
    g_cost = {s: 0}
    heap = [(hs, 0, 0, s)]
    closed = set()
    nbr = graph.nbr
    while heap:
        _, neg_g, _, x = heapq.heappop(heap)
        if x in closed:
            continue
        if x == t:
            path = [t]
            while parent[path[-1]] >= 0:
                path.append(parent[path[-1]])
            return path[::-1]
        closed.add(x)
        ng = 1 - neg_g
        for y in nbr[x]:
            if y in closed or y in banned_nodes or (x, y) in banned_edges:
                continue
            hy = h_to_t[y]
            if hy < 0 or ng + hy > max_hops:
                continue
            if ng < g_cost.get(y, 1 << 60):
                g_cost[y] = ng
                parent[y] = x
                heapq.heappush(heap, (ng + hy, -ng, ((y ^ salt) * _HASH) & 0xFFFFFFFF, y))
    return None


def _descent(nbr, s: int, t: int, h_to_t: list, banned_nodes: set, banned_edges: set, salt: int) -> list[int] | None:
    """:func:`_spur`'s path when its A* search never backtracks, else None (then the search runs in full).

    The A* search pops, among the entries of the least estimate (the
    shortest length, ``h_to_t[s]``), the deepest, then the smallest hashed
    key. While every step finds a neighbour one hop nearer ``t`` (not
    banned), the deepest entries of that estimate are the last node's such
    neighbours, and no earlier node pushed them (an earlier node is further
    from ``t``, so its neighbours are too): the search walks down, taking
    the smallest key at each step. That walk, without a heap, is this
    function; a step with no such neighbour would make the search go back,
    so the walk gives up.
    """
    path = [s]
    x, want = s, h_to_t[s] - 1
    while x != t:
        best, best_key = -1, 1 << 33
        for y in nbr[x]:
            if h_to_t[y] != want or y in banned_nodes or (x, y) in banned_edges:
                continue
            key = ((y ^ salt) * _HASH) & 0xFFFFFFFF
            if key < best_key:
                best, best_key = y, key
        if best < 0:
            return None
        path.append(best)
        x, want = best, want - 1
    return path


def _edges(path: tuple[int, ...]) -> set:
    return set(zip(path[:-1], path[1:]))


class _Yen:
    """Yen's algorithm for one pair, resumable: :meth:`extend` to ``k`` paths continues where it stopped."""

    def __init__(self, graph: RouterGraph, s: int, t: int, hop_limit: int | None):
        self.graph, self.t = graph, t
        self.h = graph.dist_to(t).tolist()
        self.limit = (1 << 30) if hop_limit is None else int(hop_limit)
        self.salt = _salt(s, t)
        first = _spur(graph, s, t, self.h, set(), set(), self.limit, self.salt)
        self.A = [] if first is None else [tuple(first)]
        self.used = _edges(self.A[0]) if self.A else set()
        self.seen = set(self.A)
        self.B: list[tuple[int, tuple[int, ...]]] = []
        self.done = not self.A

    def extend(self, k: int) -> list[tuple[int, ...]]:
        A, B, t = self.A, self.B, self.t
        while len(A) < k and not self.done:
            prev = A[-1]
            for i in range(len(prev) - 1):
                root = prev[: i + 1]
                banned_edges = {(p[i], p[i + 1]) for p in A if len(p) > i + 1 and p[: i + 1] == root}
                sp = _spur(self.graph, prev[i], t, self.h, set(root[:-1]), banned_edges, self.limit - i, self.salt)
                if sp is None:
                    continue
                cand = root[:-1] + tuple(sp)
                if cand not in self.seen:
                    self.seen.add(cand)
                    heapq.heappush(B, (len(cand) - 1, cand))
            if not B:
                self.done = True
                break
            hops = B[0][0]
            tied = []
            while B and B[0][0] == hops:
                tied.append(heapq.heappop(B)[1])
            best = self._most_diverse(tied)
            for p in tied:
                if p is not best:
                    heapq.heappush(B, (hops, p))
            A.append(best)
            self.used |= _edges(best)
        return A[:k]


    def _most_diverse(self, tied: list[tuple[int, ...]]) -> tuple[int, ...]:
        """The path of ``tied`` sharing the fewest router hops with the paths taken, then the smallest hashed keys
        (the keys only among the fewest shared: distinct paths of one length have distinct key lists)."""
        used = self.used
        shared = [len(used.intersection(zip(p, p[1:]))) for p in tied]  # loopless: its hops are distinct
        least = min(shared)
        fewest = [p for p, n in zip(tied, shared) if n == least]
        if len(fewest) == 1:
            return fewest[0]
        salt = self.salt
        return min(fewest, key=lambda p: [((y ^ salt) * _HASH) & 0xFFFFFFFF for y in p])


def yen_paths(graph: RouterGraph, s: int, t: int, k: int, hop_limit: int | None = None) -> list[tuple[int, ...]]:
    """Yen's k shortest loopless paths from router ``s`` to ``t`` as router sequences (hops ascending).

    Paths longer than ``hop_limit`` hops are not searched; fewer than ``k``
    come back when the graph (or the limit) has fewer. Ties (many paths of
    one length, as on tori) are broken towards diversity and
    deterministically: the next path is, among the shortest candidates, the
    one sharing the fewest router hops with the paths already taken, then
    the smallest hashed key (see :func:`_spur`); any choice among equal
    lengths keeps Yen's guarantee (the ``i``-th path is an ``i``-th
    shortest), so the lengths equal NetworkX's ``shortest_simple_paths``,
    not necessarily the paths of a tied length. The first ``k`` paths do
    not depend on ``k``.
    """
    return _Yen(graph, s, t, hop_limit).extend(k)
