"""The router graph of a topology and Yen's k shortest loopless paths on it (host side, pure Python and SciPy).

* :class:`RouterGraph` / :func:`router_graph`: a topology's router links as
  adjacency lists (parallel links kept), cached per topology, with BFS
  distances to a destination cached per destination (at most 256 MB) and
  the router-pair -> link-id lookup of the path tables (:meth:`RouterGraph.edge_table`);
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
import math
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
    parallel links); ``rev``: the in-neighbours (for BFS towards a destination);
    ``grid``: ``(dims, wrap)`` when the graph is exactly a torus or mesh
    (every router linked to its +-1 neighbour in every dimension, wrapped where
    ``wrap``, and to nothing else), so that hop counts have a closed form.
    """

    n_routers: int
    n_router_links: int
    nbr: tuple[tuple[int, ...], ...]
    rev: tuple[tuple[int, ...], ...]
    links: dict
    _dist: dict = dataclasses.field(default_factory=dict)  # destination -> BFS distances to it
    grid: tuple | None = None
    _edge_table: dict = dataclasses.field(default_factory=dict)  # the arrays of :meth:`edge_table`, made once

    def edge_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(keys, start, count, lids)``: the router pairs joined by links as sorted keys ``r * R + t`` (int64),
        and for each its ``count`` link ids ``lids[start : start + count]`` (ascending, the order of ``links``).

        The lookup from router pairs to link ids of :func:`evaluator.routing._paths.path_table` (a binary search
        over ``keys``; NumPy, no per-hop dictionary look-up). Made once per graph: 40 bytes a router link.
        """
        t = self._edge_table.get("t")
        if t is None:
            R = self.n_routers
            pairs = sorted(self.links)
            keys = np.asarray([x * R + y for x, y in pairs], np.int64).reshape(-1)
            count = np.asarray([len(self.links[e]) for e in pairs], np.int64).reshape(-1)
            start = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64) if count.size else count
            lids = np.asarray([lid for e in pairs for lid in self.links[e]], np.int64).reshape(-1)
            t = self._edge_table["t"] = (keys, start, count, lids)
        return t

    def dist_to(self, t: int) -> RouterInts:
        """Hops from every router to ``t`` (-1: unreachable), int32.

        A torus or mesh (``grid``): the sum over dimensions of the ring (or
        line) distance (the hop count of a product of rings and lines; no
        search, nothing cached per destination: a 32x32x32 torus would hold
        128 kB per destination): one row per dimension of a table made once
        per graph (:func:`_grid_rows`, ``sum(dims) x n_routers`` int32), or
        where that table would pass :data:`GRID_ROWS_BYTES`, a broadcast
        sum of one short table per dimension.
        Otherwise a BFS in C (SciPy), cached per destination (at most
        256 MB of tables): the BFS gives each router's predecessor on a
        shortest path to ``t``; the hop counts follow by pointer jumping
        (each router adds the count of the router it points to, then points
        to that router's target: a few NumPy passes, the log of the
        diameter). SciPy's ``shortest_path`` with ``unweighted=True`` gives
        the same distances by Dijkstra's algorithm, 6x slower on 8,192 routers.
        """
        if self.grid is not None:
            rows = self._dist.get("grid")
            if rows is None:
                rows = self._dist["grid"] = _grid_rows(self.grid)
            if rows:
                return _grid_sum(rows, np.unravel_index(int(t), self.grid[0]))
            return _grid_dist(self.grid, int(t))
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
            hops = (pred >= 0).astype(np.int32)           # one hop to the predecessor (t and the unreached: none)
            jump = np.where(pred >= 0, pred, t)
            while (jump != t).any():
                hops += hops[jump]
                jump = jump[jump]
            d = np.full(self.n_routers, -1, np.int32)
            d[order] = hops[order]
            if len(self._dist) > min(4096, max(64, 256_000_000 // (4 * self.n_routers))):
                self._dist.clear()
                self._dist["rev"] = rev
            self._dist[t] = d
        return d


def _grid_dist(grid: tuple, t: int) -> RouterInts:
    """Hop counts to router ``t`` of a torus or mesh ``grid = (dims, wrap)``: sum of per-dimension distances."""
    dims, wrap = grid
    tc = np.unravel_index(t, dims)
    out = np.zeros((), np.int32)
    for k, (n, w, c) in enumerate(zip(dims, wrap, tc)):
        delta = np.abs(np.arange(n, dtype=np.int32) - int(c))
        if w:
            delta = np.minimum(delta, n - delta)
        shape = [1] * len(dims)
        shape[k] = n
        out = out + delta.reshape(shape)
    return np.ascontiguousarray(np.broadcast_to(out, dims), np.int32).reshape(-1)


GRID_ROWS_BYTES = 64_000_000
"""Most bytes of :func:`_grid_rows`'s table kept per graph (``4 sum(dims) R``: 1.1 MB on the 8x8x8x8x2 BG/Q
partition, 12.6 MB on a 32x32x32 torus); a larger grid sums its short tables per destination."""


def _grid_rows(grid: tuple) -> tuple:
    """Per dimension ``k`` an int32 table ``[n_k, R]``: row ``c`` holds every router's distance along ``k`` to
    coordinate ``c`` (``()`` when the tables would pass :data:`GRID_ROWS_BYTES`)."""
    dims, wrap = grid
    R = math.prod(dims)
    if 4 * sum(dims) * R > GRID_ROWS_BYTES:
        return ()
    coords = np.unravel_index(np.arange(R), dims)
    rows = []
    for n, w, x in zip(dims, wrap, coords):
        delta = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
        if w:
            delta = np.minimum(delta, n - delta)
        rows.append(np.ascontiguousarray(delta.astype(np.int32)[:, x]))
    return tuple(rows)


def _grid_sum(rows: tuple, tc: tuple) -> RouterInts:
    """Hop counts to the router of coordinates ``tc``: the sum of one row per dimension (the same int32 values as
    :func:`_grid_dist`: sums of small non-negative integers, exact in any order)."""
    out = rows[0][int(tc[0])].copy()
    for r, c in zip(rows[1:], tc[1:]):
        out += r[int(c)]
    return out


def _grid_of(topo: Topology, keys: np.ndarray) -> tuple | None:
    """``(dims, wrap)`` when the router links (sorted unique keys ``src * R + dst``) are exactly those of a torus or
    mesh of ``topo.dims`` / ``topo.wrap`` (checked here, so a partition or a graph with links removed gets BFS)."""
    dims, wrap = getattr(topo, "dims", None), getattr(topo, "wrap", None)
    try:
        dims = tuple(int(n) for n in dims)
        wrap = tuple(bool(w) for w in wrap)
    except (TypeError, ValueError):
        return None
    R = int(topo.n_routers)
    if len(dims) != len(wrap) or not dims or min(dims) < 1 or math.prod(dims) != R:
        return None
    coords = np.stack(np.unravel_index(np.arange(R), dims), axis=1)
    want = []
    for k, (n, w) in enumerate(zip(dims, wrap)):
        for step in (1, -1):
            c = coords[:, k] + step
            ok = np.ones(R, bool) if w else (c >= 0) & (c < n)
            nb = coords.copy()
            nb[:, k] = c % n
            d = np.ravel_multi_index(tuple(nb.T), dims)
            ok &= d != np.arange(R)
            want.append(np.arange(R)[ok] * R + d[ok])
    want = np.unique(np.concatenate(want)) if want else np.zeros(0, np.int64)
    return (dims, wrap) if want.size == keys.size and np.array_equal(want, keys) else None


_GRAPHS: "weakref.WeakKeyDictionary[Topology, RouterGraph]" = weakref.WeakKeyDictionary()


def router_graph(topo: Topology) -> RouterGraph:
    """The router graph of ``topo`` (cached per topology object)."""
    g = _GRAPHS.get(topo)
    if g is not None:
        return g
    n = int(topo.n_router_links)
    R = int(topo.n_routers)
    src = np.asarray(topo.link_src[:n], np.int64)
    dst = np.asarray(topo.link_dst[:n], np.int64)
    links: dict[tuple[int, int], list[int]] = {}
    for lid, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        links.setdefault((s, d), []).append(lid)
    nbr = [[] for _ in range(R)]
    rev = [[] for _ in range(R)]
    for s, d in sorted(links):
        nbr[s].append(d)
        rev[d].append(s)
    grid = _grid_of(topo, np.unique(src * R + dst))
    g = RouterGraph(R, n, tuple(map(tuple, nbr)), tuple(map(tuple, rev)),
                    {k: tuple(v) for k, v in links.items()}, grid=grid)
    _GRAPHS[topo] = g
    return g


# --------------------------------------------------------------------------------------
# Yen's k shortest loopless paths
# --------------------------------------------------------------------------------------


_HASH = 2654435761  # Knuth's multiplicative hash constant


def _salt(s: int, t: int) -> int:
    """A per-pair salt of the tie-breaking keys (deterministic, decorrelates the pairs' choices)."""
    return ((s * 1_000_003 + t) * _HASH) & 0xFFFFFFFF


def _spur(graph: RouterGraph, s: int, t: int, h_to_t, banned_nodes: set, banned_edges: set,
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
    return _astar(graph.nbr, s, t, h_to_t, banned_nodes, banned_edges, max_hops, salt)


def _astar(nbr, s: int, t: int, h_to_t, banned_nodes: set, banned_edges: set, max_hops: int,
           salt: int) -> list[int] | None:
    """:func:`_spur`'s A* search itself (``h_to_t[s]`` checked by the caller)."""
    parent = {s: -1}
    g_cost = {s: 0}
    heap = [(h_to_t[s], 0, 0, s)]
    closed = set()
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


def _next_router(nbrs, h_to_t, want: int, banned_nodes: set, salt: int, avoid=()) -> int:
    """The next router of a descent: among ``nbrs`` at ``want`` hops from the target, neither in ``banned_nodes`` nor
    in ``avoid``, the one of the smallest hashed key ``((y ^ salt) * 2654435761) mod 2^32``; -1 where none is."""
    best, best_key = -1, 1 << 33
    for y in nbrs:
        if h_to_t[y] != want or y in banned_nodes or y in avoid:
            continue
        key = ((y ^ salt) * _HASH) & 0xFFFFFFFF
        if key < best_key:
            best, best_key = y, key
    return best


def _descent(nbr, s: int, t: int, h_to_t, banned_nodes: set, banned_edges: set | None, salt: int,
             chains: dict | None = None, first: int = -1) -> list[int] | tuple[int, ...] | None:
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

    ``chains`` (one pair's memo, optional): after the first step the walk
    from a router ``y`` is the same whatever is banned, as long as no router
    of it is banned (banned edges all leave ``s``, which the walk never
    sees again: it only goes down), so the unobstructed walk from ``y`` is
    kept per ``y`` and taken whole when it avoids ``banned_nodes``.

    ``first`` (>= 0): the first step, chosen by the caller by the same rule (:meth:`_Yen._spurs`); then
    ``banned_edges`` (all leaving ``s``) is not read.
    """
    want = h_to_t[s] - 1
    best = first
    if best < 0:
        best = _next_router(nbr[s], h_to_t, want, banned_nodes, salt, {y for r, y in banned_edges if r == s})
        if best < 0:
            return None
    if chains is not None:
        walk = _chain(nbr, best, t, h_to_t, salt, chains)
        if banned_nodes.isdisjoint(walk):
            return (s,) + walk
    path = [s, best]
    x, want = best, want - 1
    while x != t:                                  # below s: no banned edge leaves x (they all leave s)
        best = _next_router(nbr[x], h_to_t, want, banned_nodes, salt)
        if best < 0:
            return None
        path.append(best)
        x, want = best, want - 1
    return path


def _chain(nbr, y: int, t: int, h_to_t, salt: int, chains: dict) -> tuple[int, ...]:
    """The unobstructed descent from ``y`` to ``t`` (smallest key among the neighbours one hop nearer), memoised."""
    walk = chains.get(y)
    if walk is not None:
        return walk
    todo, x = [], y
    while x != t and x not in chains:
        todo.append(x)
        want, best, best_key = h_to_t[x] - 1, -1, 1 << 33
        for z in nbr[x]:
            if h_to_t[z] == want:
                key = ((z ^ salt) * _HASH) & 0xFFFFFFFF
                if key < best_key:
                    best, best_key = z, key
        x = best                                   # exact distances: a router nearer t always exists
    tail = chains[x] if x != t else chains.setdefault(t, (t,))
    for x in reversed(todo):
        tail = chains[x] = (x,) + tail
    return tail


def _edges(path: tuple[int, ...]) -> set:
    return set(zip(path[:-1], path[1:]))


class _Yen:
    """Yen's algorithm for one pair, resumable: :meth:`extend` to ``k`` paths continues where it stopped.

    Three shortcuts, each giving exactly the paths of the plain algorithm (Yen's ``B`` holds the same candidates of
    the least length at every choice, and the choice among them is the same rule):

    * Lawler's: a new path deviating from its parent at spur index ``j`` is spurred at ``i >= j`` only. At ``i <
      j`` its root and the banned next hops equal those its parent (or a later path deviating there) was spurred
      with, and the spur search is a function of them: it would find a candidate seen already;
    * lazy detours: a spur whose first step has no unbanned router one hop nearer ``t`` is at least ``i + h + 1``
      hops long; its A* search is kept (with the banned hops of the moment) and run only once no candidate of
      fewer hops is left (k shortest paths of a torus pair are nearly all of the shortest length: the detours of
      most spurs are never searched);
    * the descent's walk below the spur's first step is memoised per pair (:func:`_descent`'s ``chains``).

    Between calls only the lists of Yen's algorithm are kept (distances and memos are made again per call); their
    bytes are estimated by :meth:`nbytes` (the budget of :mod:`evaluator.routing._paths`'s saved searches).
    """

    def __init__(self, graph: RouterGraph, s: int, t: int, hop_limit: int | None):
        self.graph, self.s, self.t = graph, s, t
        self.limit = (1 << 30) if hop_limit is None else int(hop_limit)
        self.salt = _salt(s, t)
        self.A: list[tuple[int, ...]] = []
        self.dev: list[int] = []                          # spur index each path of A deviates at
        self.B: dict[int, dict] = {}                      # hops -> {candidate: its spur index}
        self.lengths: list[int] = []                      # heap of the keys of B
        self.lazy: list = []                              # heap of (hop bound, seq, spur index, root, banned next)
        self.kids: dict[tuple[int, ...], set] = {}        # root -> next routers of the paths of A with that root
        self.used: set = set()
        self.seen: set = set()
        self.shared: dict = {}                            # candidate of B -> its hops in used
        self.by_edge: dict = {}                           # hop not in used -> the candidates crossing it
        self.done = False
        self._started = False
        self._keys: dict = {}
        self._n = 0                                       # pushes to lazy (its entries' order)

    def nbytes(self) -> int:
        """Estimated host bytes of the lists kept between calls (``O(1)``: counts of its containers times bytes
        per entry measured with a recursive ``sys.getsizeof`` on tori, Dragonflies and fat trees, k = 4 to 64,
        within a factor 1.6): the candidates seen (each in ``seen``, ``B`` and ``shared``, a tuple of ``L``
        routers), the root prefixes of ``kids`` (a tuple and a set each), the deferred detours of ``lazy`` (a
        root and a set of banned hops), the hops of ``by_edge`` and ``used``. A 16x16x16 torus pair with k = 16
        holds about 130 kB."""
        L = len(self.A[-1]) if self.A else 1
        return (600 + len(self.seen) * (300 + 8 * L) + len(self.kids) * (270 + 4 * L)
                + len(self.lazy) * (480 + 4 * L) + len(self.by_edge) * 320 + len(self.used) * 100)

    def _first(self, h) -> None:
        self._started = True
        first = _spur(self.graph, self.s, self.t, h, set(), set(), self.limit, self.salt)
        if first is None:
            self.done = True
        else:
            self._take(tuple(first), 0)

    def _take(self, path: tuple[int, ...], dev: int) -> None:
        self.A.append(path)
        self.dev.append(dev)
        self.seen.add(path)
        self.shared.pop(path, None)
        new = _edges(path) - self.used
        self.used |= new
        shared, by_edge = self.shared, self.by_edge
        for e in new:                                     # the candidates' hops shared with A, kept up to date
            for c in by_edge.pop(e, ()):
                if c in shared:
                    shared[c] += 1
        for j in range(dev, len(path) - 1):
            self.kids.setdefault(path[: j + 1], set()).add(path[j + 1])

    def _add(self, cand: tuple[int, ...], i: int) -> None:
        if cand not in self.seen:
            self.seen.add(cand)
            hops = len(cand) - 1
            bucket = self.B.get(hops)
            if bucket is None:
                bucket = self.B[hops] = {}
                heapq.heappush(self.lengths, hops)
            bucket[cand] = i
            used, by_edge = self.used, self.by_edge
            n = 0
            for e in zip(cand, cand[1:]):
                if e in used:
                    n += 1
                else:
                    by_edge.setdefault(e, []).append(cand)
            self.shared[cand] = n

    def extend(self, k: int) -> list[tuple[int, ...]]:
        if len(self.A) >= k or self.done:
            return self.A[:k]
        h = memoryview(np.ascontiguousarray(self.graph.dist_to(self.t), np.int32))
        if not self._started:
            self._first(h)
        chains: dict = {}
        nbr, t, salt, limit = self.graph.nbr, self.t, self.salt, self.limit
        A, B, lengths, lazy = self.A, self.B, self.lengths, self.lazy
        while len(A) < k and not self.done:
            self._spurs(A[-1], h, chains)
            while lazy and (not lengths or lazy[0][0] <= lengths[0]):
                *_, i, root, banned_edges = heapq.heappop(lazy)
                sp = _astar(nbr, root[-1], t, h, set(root[:-1]), banned_edges, limit - i, salt)
                if sp is not None:
                    self._add(root[:-1] + tuple(sp), i)
            if not lengths:
                self.done = True
                break
            hops = lengths[0]
            bucket = B[hops]
            best = self._most_diverse(list(bucket))
            dev = bucket.pop(best)
            if not bucket:
                del B[hops]
                heapq.heappop(lengths)
            self._take(best, dev)
        self._keys = {}
        return A[:k]

    def _spurs(self, prev: tuple[int, ...], h, chains: dict) -> None:
        """Yen's spur searches of the last path taken, ``prev``, from its deviation index on (Lawler's rule): each
        spur's candidate goes to ``B``, or its A* detour to ``lazy`` when its first step has no unbanned router
        one hop nearer ``t``.

        The first step is chosen here (the smallest hashed key among the unbanned neighbours one hop nearer, as
        :func:`_descent` would), so :func:`_descent` starts from it; ``banned_nodes``, the root without its
        last router, grows by one router per spur index; ``banned_edges`` is made only for an A* search."""
        nbr, t, salt, limit, kids, lazy = self.graph.nbr, self.t, self.salt, self.limit, self.kids, self.lazy
        dev = self.dev[-1]
        banned_nodes = set(prev[:dev])
        for i in range(dev, len(prev) - 1):
            if i > dev:
                banned_nodes.add(prev[i - 1])
            x = prev[i]
            hx = h[x]
            if hx < 0 or hx > limit - i:
                continue
            root = prev[: i + 1]
            kid = kids[root]                                # the banned next routers (Yen's banned edges from x)
            best = _next_router(nbr[x], h, hx - 1, banned_nodes, salt, kid)
            if best < 0:
                if i + hx + 1 <= limit:                      # a detour: searched when its length can be the least
                    self._n += 1
                    heapq.heappush(lazy, (i + hx + 1, self._n, i, root, {(x, y) for y in kid}))
                continue
            sp = _descent(nbr, x, t, h, banned_nodes, None, salt, chains, best)
            if sp is None:
                sp = _astar(nbr, x, t, h, banned_nodes, {(x, y) for y in kid}, limit - i, salt)
            if sp is not None:
                self._add(root[:-1] + tuple(sp), i)

    def _most_diverse(self, tied: list[tuple[int, ...]]) -> tuple[int, ...]:
        """The path of ``tied`` sharing the fewest router hops with the paths taken, then the smallest hashed keys
        (the keys only among the fewest shared: distinct paths of one length have distinct key lists)."""
        shared = [self.shared[p] for p in tied]             # len(used & hops of p), updated as used grows
        least = min(shared)
        fewest = [p for p, n in zip(tied, shared) if n == least]
        if len(fewest) == 1:
            return fewest[0]
        salt, keys = self.salt, self._keys
        out, out_key = None, None
        for p in fewest:
            key = keys.get(p)
            if key is None:
                key = keys[p] = [((y ^ salt) * _HASH) & 0xFFFFFFFF for y in p]
            if out is None or key < out_key:
                out, out_key = p, key
        return out


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
