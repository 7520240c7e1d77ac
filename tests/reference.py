"""Independent per-flow reference of the link-load model (DESIGN.md, "The model").

A deliberately plain implementation: every flow is walked along its route(s)
hop by hop with Python loops, and the bytes are accumulated in a dictionary
keyed by link id. Nothing here imports the evaluator's routing, kernel or
evaluate code. From a topology it reads only the public link description:

* ``router_edges()`` -> ``(src_router, dst_router, link_id)`` to turn a hop
  between two routers into a link id;
* ``n_routers``, ``nodes_per_router``, ``n_nodes``, ``n_router_links``,
  ``router_coords`` and ``kind``;
* tori: ``dims`` and ``wrap``;
* Dragonflies: ``p, a, h, g, links_per_pair, arrangement``; which router owns
  which global link is re-derived here from the rule stated in the
  ``evaluator.topology.dragonfly`` docstring.

Link layout (documented in ``evaluator/topology.py``): router links first,
then the injection link of node ``n`` at ``n_router_links + n`` and its
ejection link at ``n_router_links + n_nodes + n``.

Routing is given as a plain dict:

* ``{"kind": "dor", "order": "as_given" | "longest_first" | (k0, k1, ...),
  "tie": "split" | "positive"}`` (torus dimension-order routing);
* ``{"kind": "minimal"}``, ``{"kind": "valiant"}`` or ``{"kind": "valiant_router"}`` (Dragonfly).

Loads are bytes per exchange; a randomised route (tie split, parallel global
links, Valiant intermediate group) contributes its expectation.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from functools import lru_cache

import numpy as np

__all__ = ["reference_link_loads", "reference_link_loads_exact", "reference_hops", "reference_paths",
           "dragonfly_global_table"]

Path = tuple[float, list[int]]  # (probability, [router link ids in travel order])


# --------------------------------------------------------------------------------------
# Public link description -> lookup tables
# --------------------------------------------------------------------------------------


@lru_cache(maxsize=32)
def _edge_table(topology) -> dict[tuple[int, int], list[int]]:
    """(src_router, dst_router) -> link ids of the router links between them (sorted)."""
    table: dict[tuple[int, int], list[int]] = defaultdict(list)
    for s, d, link in topology.router_edges():
        table[(int(s), int(d))].append(int(link))
    for ids in table.values():
        ids.sort()
    return dict(table)


def _single_link(edges, src_router: int, dst_router: int) -> int:
    ids = edges.get((src_router, dst_router), [])
    if len(ids) != 1:
        raise AssertionError(f"expected exactly one link {src_router}->{dst_router}, found {ids}")
    return ids[0]


# --------------------------------------------------------------------------------------
# Torus: dimension-order routing
# --------------------------------------------------------------------------------------


def _dim_order(dims, order) -> list[int]:
    if not isinstance(order, str):  # an explicit permutation of the dimensions
        perm = [int(k) for k in order]
        if sorted(perm) != list(range(len(dims))):
            raise ValueError(f"DOR order {order!r} is not a permutation of {len(dims)} dimensions")
        return perm
    if order == "as_given":
        return list(range(len(dims)))
    if order == "longest_first":
        # Python's sort is stable: equal sizes keep the given order.
        return sorted(range(len(dims)), key=lambda k: -dims[k])
    raise ValueError(f"unknown DOR order {order!r}")


def _ravel(coord, dims) -> int:
    rid = 0
    for c, n in zip(coord, dims):
        rid = rid * n + c
    return rid


def _torus_paths(topology, routing, src_router: int, dst_router: int) -> list[Path]:
    dims = [int(n) for n in topology.dims]
    wrap = [bool(w) for w in topology.wrap]
    tie = routing.get("tie", "split")
    if tie not in ("split", "positive"):
        raise ValueError(f"unknown tie rule {tie!r}")
    edges = _edge_table(topology)
    src = [int(x) for x in topology.router_coords[src_router]]
    dst = [int(x) for x in topology.router_coords[dst_router]]

    # Partial paths: (probability, current coordinate, links so far).
    partial = [(1.0, list(src), [])]
    for k in _dim_order(dims, routing.get("order", "as_given")):
        n = dims[k]
        grown = []
        for prob, coord, links in partial:
            s, t = coord[k], dst[k]
            if s == t:
                grown.append((prob, coord, links))
                continue
            # (direction, number of steps, probability factor) alternatives.
            if wrap[k]:
                forward = (t - s) % n
                backward = n - forward
                if forward < backward:
                    moves = [(+1, forward, 1.0)]
                elif backward < forward:
                    moves = [(-1, backward, 1.0)]
                elif tie == "split":
                    moves = [(+1, forward, 0.5), (-1, backward, 0.5)]
                else:
                    moves = [(+1, forward, 1.0)]
            else:
                moves = [(+1 if t > s else -1, abs(t - s), 1.0)]
            for step, count, factor in moves:
                cur = list(coord)
                new_links = list(links)
                for _ in range(count):
                    nxt = list(cur)
                    nxt[k] = (cur[k] + step) % n if wrap[k] else cur[k] + step
                    new_links.append(_single_link(edges, _ravel(cur, dims), _ravel(nxt, dims)))
                    cur = nxt
                assert cur[k] == t
                grown.append((prob * factor, cur, new_links))
        partial = grown
    out = []
    for prob, coord, links in partial:
        assert coord == dst, (coord, dst)
        out.append((prob, links))
    return out


# --------------------------------------------------------------------------------------
# Dragonfly: minimal and Valiant
# --------------------------------------------------------------------------------------


@lru_cache(maxsize=32)
def dragonfly_global_table(topology):
    """Re-derive the global links of a Dragonfly from the documented rule.

    Returns ``(owner, landing, link)``: dicts keyed by ``(G, H, c)`` giving the
    router id in ``G`` owning copy ``c`` of the global link ``G -> H``, the
    router id in ``H`` where it lands, and its link id.

    Rule (``evaluator.topology.dragonfly`` docstring): ``m = (a*h) // (g-1)``;
    global port ``j`` (``0 .. m*(g-1)-1``) of group ``G`` belongs to router
    ``j // h``, serves slot ``t = j % (g-1)`` as copy ``c = j // (g-1)``; slot
    ``t`` leads to group ``t if t < G else t+1`` (consecutive) or
    ``(G+t+1) % g`` (relative). Copy ``c`` of ``G -> H`` lands on the router
    owning copy ``c`` of ``H -> G``.
    """
    a, h, g = int(topology.a), int(topology.h), int(topology.g)
    m = (a * h) // (g - 1)
    assert m == int(topology.links_per_pair), (m, topology.links_per_pair)
    arrangement = {"absolute": "consecutive"}.get(topology.arrangement, topology.arrangement)
    owner_index = {}
    for G in range(g):
        for j in range(m * (g - 1)):
            t = j % (g - 1)
            c = j // (g - 1)
            if arrangement == "consecutive":
                H = t if t < G else t + 1
            elif arrangement == "relative":
                H = (G + t + 1) % g
            else:
                raise ValueError(f"unknown arrangement {arrangement!r}")
            assert (G, H, c) not in owner_index
            owner_index[(G, H, c)] = j // h
    owner = {key: key[0] * a + idx for key, idx in owner_index.items()}
    landing = {(G, H, c): H * a + owner_index[(H, G, c)] for (G, H, c) in owner_index}

    # Link ids: global links are the router links joining different groups.
    global_edges: dict[tuple[int, int], list[int]] = defaultdict(list)
    for s, d, lid in topology.router_edges():
        if topology.router_coords[s][0] != topology.router_coords[d][0]:
            global_edges[(int(s), int(d))].append(int(lid))
    # Copies with the same (owner, landing) routers are interchangeable: every
    # route gives them the same probability. Pair them up in order.
    copies_by_pair: dict[tuple[int, int], list[tuple[int, int, int]]] = defaultdict(list)
    for key in sorted(owner_index):
        copies_by_pair[(owner[key], landing[key])].append(key)
    link = {}
    for pair, keys in copies_by_pair.items():
        ids = sorted(global_edges.get(pair, []))
        assert len(ids) == len(keys), f"router pair {pair}: {len(keys)} copies but links {ids}"
        for key, lid in zip(keys, ids):
            link[key] = lid
    assert sum(len(v) for v in global_edges.values()) == len(link), "unexplained global links"
    return owner, landing, link


def _group(topology, router: int) -> int:
    return int(topology.router_coords[router][0])


def _dragonfly_minimal(topology, tables, src_router: int, dst_router: int) -> list[Path]:
    owner, landing, glink = tables
    edges = _edge_table(topology)
    S, D = _group(topology, src_router), _group(topology, dst_router)
    if src_router == dst_router:
        return [(1.0, [])]
    if S == D:
        return [(1.0, [_single_link(edges, src_router, dst_router)])]
    m = int(topology.links_per_pair)
    paths = []
    for c in range(m):
        links = []
        o = owner[(S, D, c)]
        if o != src_router:
            links.append(_single_link(edges, src_router, o))
        links.append(glink[(S, D, c)])
        x = landing[(S, D, c)]
        if x != dst_router:
            links.append(_single_link(edges, x, dst_router))
        paths.append((1.0 / m, links))
    return paths


def _dragonfly_valiant(topology, tables, src_router: int, dst_router: int) -> list[Path]:
    owner, landing, glink = tables
    edges = _edge_table(topology)
    g = int(topology.g)
    m = int(topology.links_per_pair)
    S, D = _group(topology, src_router), _group(topology, dst_router)
    if S == D:
        return _dragonfly_minimal(topology, tables, src_router, dst_router)
    if g < 3:
        raise ValueError("Valiant routing needs at least 3 groups")
    paths = []
    for I in range(g):
        if I in (S, D):
            continue
        for c in range(m):
            first = []
            o = owner[(S, I, c)]
            if o != src_router:
                first.append(_single_link(edges, src_router, o))
            first.append(glink[(S, I, c)])
            x = landing[(S, I, c)]
            for prob, second in _dragonfly_minimal(topology, tables, x, dst_router):
                paths.append((prob / ((g - 2) * m), first + second))
    return paths


def _dragonfly_valiant_router(topology, tables, src_router: int, dst_router: int) -> list[Path]:
    """Valiant through an intermediate router ``x`` drawn uniformly over all routers (BookSim2 style).

    ``x`` in the source group: the minimal route; otherwise the minimal route
    to ``x`` then the minimal route on to the destination (``x`` may be in
    the destination group or be the destination). Intra-group pairs: minimal.
    """
    S, D = _group(topology, src_router), _group(topology, dst_router)
    if S == D:
        return _dragonfly_minimal(topology, tables, src_router, dst_router)
    R = int(topology.n_routers)
    paths = []
    for x in range(R):
        if _group(topology, x) == S:
            paths.extend((p / R, links) for p, links in _dragonfly_minimal(topology, tables, src_router, dst_router))
            continue
        for p1, l1 in _dragonfly_minimal(topology, tables, src_router, x):
            for p2, l2 in _dragonfly_minimal(topology, tables, x, dst_router):
                paths.append((p1 * p2 / R, l1 + l2))
    return paths


# --------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------


def reference_paths(topology, src_router: int, dst_router: int, routing: dict) -> list[Path]:
    """Every route from ``src_router`` to ``dst_router`` with its probability.

    Returns a list of ``(probability, [router link ids in travel order])``;
    probabilities sum to 1. Same router: one empty path.
    """
    kind = routing["kind"]
    if topology.kind == "torus":
        if kind != "dor":
            raise ValueError(f"torus reference implements only DOR, got {kind!r}")
        return _torus_paths(topology, routing, int(src_router), int(dst_router))
    if topology.kind == "dragonfly":
        tables = dragonfly_global_table(topology)
        if kind == "minimal":
            return _dragonfly_minimal(topology, tables, int(src_router), int(dst_router))
        if kind == "valiant":
            return _dragonfly_valiant(topology, tables, int(src_router), int(dst_router))
        if kind == "valiant_router":
            return _dragonfly_valiant_router(topology, tables, int(src_router), int(dst_router))
        raise ValueError(f"dragonfly reference implements minimal, valiant and valiant_router, got {kind!r}")
    raise ValueError(f"unknown topology kind {topology.kind!r}")


def reference_hops(topology, src_router: int, dst_router: int, routing: dict) -> float:
    """Expected number of router-to-router hops from ``src_router`` to ``dst_router``."""
    return float(sum(prob * len(links) for prob, links in reference_paths(topology, src_router, dst_router, routing)))


def reference_link_loads(topology, flows, task_node, routing: dict) -> np.ndarray:
    """Expected bytes on every link for one exchange, by walking each flow.

    Parameters
    ----------
    topology
        An ``evaluator.topology`` torus or Dragonfly.
    flows
        Iterable of ``(src_task, dst_task, bytes)``.
    task_node
        Node id of every task.
    routing
        Routing dict (see module docstring).

    Returns
    -------
    float64 ndarray, shape [link]
        Bytes per exchange on every link (router links, injection, ejection).
    """
    n_rl = int(topology.n_router_links)
    n_nodes = int(topology.n_nodes)
    npr = int(topology.nodes_per_router)
    load: dict[int, float] = defaultdict(float)
    route_cache: dict[tuple[int, int], list[Path]] = {}
    for src_task, dst_task, nbytes in flows:
        nbytes = float(nbytes)
        src_node = int(task_node[int(src_task)])
        dst_node = int(task_node[int(dst_task)])
        if src_node == dst_node:
            continue
        load[n_rl + src_node] += nbytes
        load[n_rl + n_nodes + dst_node] += nbytes
        src_router, dst_router = src_node // npr, dst_node // npr
        if src_router == dst_router:
            continue
        key = (src_router, dst_router)
        if key not in route_cache:
            route_cache[key] = reference_paths(topology, src_router, dst_router, routing)
        for prob, links in route_cache[key]:
            for link in links:
                load[link] += nbytes * prob
    out = np.zeros(n_rl + 2 * n_nodes, dtype=np.float64)
    for link, value in load.items():
        out[link] += value
    return out


def reference_link_loads_exact(topology, flows, task_node, routing: dict) -> tuple[list[Fraction], list[int]]:
    """:func:`reference_link_loads` in exact rational arithmetic, and the routes through each link.

    Every byte count and route probability is converted to a
    :class:`fractions.Fraction` exactly (the probability of a DOR route is 1
    or 1/2, a float without rounding), and the loads are exact sums.

    Returns
    -------
    loads
        ``Fraction`` bytes per exchange on every link (router links, injection, ejection).
    routes
        Per link, the number of (flow, route) pairs that cross it: a split
        tie counts once for each of its two routes.
    """
    n_rl = int(topology.n_router_links)
    n_nodes = int(topology.n_nodes)
    npr = int(topology.nodes_per_router)
    loads = [Fraction(0)] * (n_rl + 2 * n_nodes)
    routes = [0] * (n_rl + 2 * n_nodes)
    route_cache: dict[tuple[int, int], list[Path]] = {}
    for src_task, dst_task, nbytes in flows:
        b = Fraction(float(nbytes))
        src_node = int(task_node[int(src_task)])
        dst_node = int(task_node[int(dst_task)])
        if src_node == dst_node:
            continue
        for link in (n_rl + src_node, n_rl + n_nodes + dst_node):
            loads[link] += b
            routes[link] += 1
        src_router, dst_router = src_node // npr, dst_node // npr
        if src_router == dst_router:
            continue
        key = (src_router, dst_router)
        if key not in route_cache:
            route_cache[key] = reference_paths(topology, src_router, dst_router, routing)
        for prob, links in route_cache[key]:
            p = Fraction(prob)
            for link in links:
                loads[link] += b * p
                routes[link] += 1
    return loads, routes


def dense_symmetric(traffic):
    """Bytes between every task pair, both directions and every phase summed, by a dense matrix (upper
    triangle): the edge weights an outside mapper's graph of ``traffic`` must carry (Scotch, KaHIP)."""
    import numpy as np

    n = traffic.n_tasks
    M = np.zeros((n, n))
    for ph in traffic.to_flows().phases:
        np.add.at(M, (np.asarray(ph.src), np.asarray(ph.dst)), np.asarray(ph.nbytes, float))
    np.fill_diagonal(M, 0.0)
    return np.triu(M + M.T, 1)
