"""The bench's per-flow baseline (:mod:`evaluator.bench.baseline`).

:class:`PerFlowBaseline` (the straightforward per-flow evaluator).

This is how NetworkX-style tools compute link loads: for every flow, walk
its route(s) hop by hop and add the bytes to a dictionary keyed by link.
Routes are enumerated with their probabilities (tie split, parallel global
links, every Valiant intermediate group), so the loads are the same
expectations the JAX kernels compute. Routes are cached per router pair
within one evaluation (as a careful implementation would), and the lookup
tables are built once per topology, outside any timing.

It shares no code with the routing operators or :mod:`evaluator.kernel` (it reads only the routing
registry's list of which topology kinds a routing serves);
the test suite checks it against the independent reference
``tests/reference.py``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from .._types import LinkFloats
from ..errors import ConfigError
from ..placement import Placement
from ..routing import KINDS, Routing
from ..topology import DragonflyTopology, Topology, TorusTopology
from ..traffic import Traffic

__all__ = ["PerFlowBaseline"]

_WALKS = {"dor": ("_init_torus", "_torus_paths"), "minimal": ("_init_dragonfly", "_df_minimal"),
          "valiant": ("_init_dragonfly", "_df_valiant"), "dmodk": ("_init_fat_tree", "_ft_dmodk"),
          "ecmp_spray": ("_init_fat_tree", "_ft_ecmp")}
"""Routing kind -> (table builder, path enumerator) of the walk; a routing not listed has no baseline."""

_BY_NODE = frozenset({"dmodk"})
"""Walks whose paths depend on the source and destination node, not only their routers (D-mod-k routes by
destination node): their enumerator takes nodes and the walk caches paths per node pair."""


def _check_routing(topology: Topology, routing: Routing, what: str) -> None:
    """Refuse a routing the baselines do not implement, or one that does not serve ``topology``."""
    if routing.kind not in _WALKS:
        raise ConfigError("routing.kind", routing.kind, f"one of {sorted(_WALKS)} (the routings the {what} "
                                                        "implements)")
    if not KINDS[routing.kind].serves(topology.kind):
        raise ConfigError("routing.kind", routing.kind, f"a routing of a {topology.kind}",
                          f"'{routing.kind}' serves {KINDS[routing.kind].served()}.")


def _dor_order(dims: list[int], order) -> list[int]:
    """DOR dimension order: ``"as_given"``, ``"longest_first"`` (stable) or an explicit permutation."""
    if order == "as_given":
        return list(range(len(dims)))
    if order == "longest_first":
        return sorted(range(len(dims)), key=lambda k: -dims[k])
    return [int(k) for k in order]


class PerFlowBaseline:
    """Per-flow path walk with dictionary accumulation for one (topology, routing)."""

    def __init__(self, topology: Topology, routing: Routing):
        self.topology = topology
        self.routing = routing
        self.n_router_links = int(topology.n_router_links)
        self.n_nodes = int(topology.n_nodes)
        self.node_router = np.asarray(topology.node_router, dtype=np.int64)
        _check_routing(topology, routing, "per-flow baseline")
        init, paths = _WALKS[routing.kind]
        getattr(self, init)(topology, routing)
        self._paths = getattr(self, paths)
        self.by_node = routing.kind in _BY_NODE

    # ---------------------------------------------------------------- torus

    def _init_torus(self, t: TorusTopology, routing: Routing) -> None:
        self.dims = [int(n) for n in t.dims]
        self.wrap = [bool(w) for w in t.wrap]
        self.order = _dor_order(self.dims, routing.order)
        self.split = routing.tie == "split"
        self.coords = [tuple(int(x) for x in c) for c in np.asarray(t.router_coords)]
        self.edge = {(s, d): lid for s, d, lid in t.router_edges()}

    def _rid(self, coord) -> int:
        rid = 0
        for c, n in zip(coord, self.dims):
            rid = rid * n + c
        return rid

    def _torus_paths(self, sr: int, dr: int) -> list[Path]:
        target = self.coords[dr]
        partial = [(1.0, list(self.coords[sr]), [])]
        for k in self.order:
            n, t = self.dims[k], target[k]
            grown = []
            for prob, cur, links in partial:
                s = cur[k]
                if s == t:
                    grown.append((prob, cur, links))
                    continue
                if self.wrap[k]:
                    fwd = (t - s) % n
                    bwd = n - fwd
                    if fwd < bwd or (fwd == bwd and (n == 2 or not self.split)):
                        moves = [(1, fwd, 1.0)]
                    elif bwd < fwd:
                        moves = [(-1, bwd, 1.0)]
                    else:
                        moves = [(1, fwd, 0.5), (-1, bwd, 0.5)]
                else:
                    moves = [(1 if t > s else -1, abs(t - s), 1.0)]
                for step, count, factor in moves:
                    c = list(cur)
                    walk = list(links)
                    here = self._rid(c)
                    for _ in range(count):
                        c[k] = (c[k] + step) % n
                        there = self._rid(c)
                        walk.append(self.edge[(here, there)])
                        here = there
                    grown.append((prob * factor, c, walk))
            partial = grown
        return [(prob, links) for prob, _, links in partial]

    # ------------------------------------------------------------ dragonfly

    def _init_fat_tree(self, t, routing: Routing) -> None:
        from ..routing import dmodk_paths, ecmp_paths

        self.fat_tree = t
        self.walk = dmodk_paths if routing.kind == "dmodk" else ecmp_paths

    def _ft_dmodk(self, sn: int, dn: int) -> list[Path]:
        """D-mod-k's path of one node pair (the fat tree routing module's scalar walk, hop by hop)."""
        return self.walk(self.fat_tree, sn, dn)

    def _ft_ecmp(self, sr: int, dr: int) -> list[Path]:
        """ECMP's paths of one leaf pair (every up port at every level, enumerated), walked from the leaves'
        first nodes (ECMP's paths depend on the leaves only)."""
        start = self.fat_tree.router_nodes[0]
        return self.walk(self.fat_tree, int(start[sr]), int(start[dr]))

    def _init_dragonfly(self, t: DragonflyTopology, routing: Routing) -> None:
        self.a, self.g, self.m = int(t.a), int(t.g), int(t.links_per_pair)
        go = np.asarray(t.global_owner).tolist()
        gl = np.asarray(t.global_link).tolist()
        ll = np.asarray(t.local_link).tolist()
        a = self.a
        self.owner = {}
        self.landing = {}
        self.glink = {}
        for S in range(self.g):
            for D in range(self.g):
                if S != D:
                    for c in range(self.m):
                        self.owner[(S, D, c)] = S * a + go[S][D][c]
                        self.landing[(S, D, c)] = D * a + go[D][S][c]
                        self.glink[(S, D, c)] = gl[S][D][c]
        self.local = {}
        for G in range(self.g):
            for i in range(a):
                for j in range(a):
                    if i != j:
                        self.local[(G * a + i, G * a + j)] = ll[G][i][j]

    def _df_minimal(self, sr: int, dr: int) -> list[Path]:
        a = self.a
        S, D = sr // a, dr // a
        if sr == dr:
            return [(1.0, [])]
        if S == D:
            return [(1.0, [self.local[(sr, dr)]])]
        out = []
        for c in range(self.m):
            links = []
            o = self.owner[(S, D, c)]
            if o != sr:
                links.append(self.local[(sr, o)])
            links.append(self.glink[(S, D, c)])
            x = self.landing[(S, D, c)]
            if x != dr:
                links.append(self.local[(x, dr)])
            out.append((1.0 / self.m, links))
        return out

    def _df_valiant(self, sr: int, dr: int) -> list[Path]:
        a = self.a
        S, D = sr // a, dr // a
        if S == D:
            return self._df_minimal(sr, dr)
        out = []
        share = 1.0 / ((self.g - 2) * self.m)
        for I in range(self.g):
            if I == S or I == D:
                continue
            for c in range(self.m):
                first = []
                o = self.owner[(S, I, c)]
                if o != sr:
                    first.append(self.local[(sr, o)])
                first.append(self.glink[(S, I, c)])
                for prob, second in self._df_minimal(self.landing[(S, I, c)], dr):
                    out.append((prob * share, first + second))
        return out

    # --------------------------------------------------------------- public

    def link_loads(self, traffic: Traffic, placement: Placement) -> LinkFloats:
        """Expected bytes on every link (router links, injection, ejection), shape [link]."""
        return self.flow_loads(zip(traffic.src.tolist(), traffic.dst.tolist(), traffic.nbytes.tolist()),
                               placement.task_node.tolist())

    def flow_loads(self, flows, task_node) -> LinkFloats:
        """:meth:`link_loads` for an iterable of ``(src_task, dst_task, bytes)`` and a ``task_node`` list."""
        n_rl, n_nodes, nr = self.n_router_links, self.n_nodes, self.node_router.tolist()
        load: dict[int, float] = defaultdict(float)
        cache: dict[tuple[int, int], list[Path]] = {}
        for s, d, nbytes in flows:
            sn = task_node[s]
            dn = task_node[d]
            if sn == dn:
                continue
            load[n_rl + sn] += nbytes
            load[n_rl + n_nodes + dn] += nbytes
            sr, dr = nr[sn], nr[dn]
            if sr == dr:
                continue
            key = (sn, dn) if self.by_node else (sr, dr)
            paths = cache.get(key)
            if paths is None:
                paths = cache[key] = self._paths(*key)
            for prob, links in paths:
                part = nbytes * prob
                for link in links:
                    load[link] += part
        out = np.zeros(n_rl + 2 * n_nodes)
        for link, value in load.items():
            out[link] = value
        return out
