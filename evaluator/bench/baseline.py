"""A straightforward per-flow Python evaluator: the benchmark's baseline.

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
``tests/reference.py``. Used by :mod:`evaluator.bench` only.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..errors import ConfigError
from ..placement import Placement
from ..routing import KINDS, Routing
from ..topology import DragonflyTopology, Topology, TorusTopology
from ..traffic import Traffic

__all__ = ["PerFlowBaseline"]

Path = tuple[float, list[int]]

_WALKS = {"dor": ("_init_torus", "_torus_paths"), "minimal": ("_init_dragonfly", "_df_minimal"),
          "valiant": ("_init_dragonfly", "_df_valiant")}
"""Routing kind -> (table builder, path enumerator) of the walk; a routing not listed has no baseline."""


class PerFlowBaseline:
    """Per-flow path walk with dictionary accumulation for one (topology, routing)."""

    def __init__(self, topology: Topology, routing: Routing):
        self.topology = topology
        self.routing = routing
        self.n_router_links = int(topology.n_router_links)
        self.n_nodes = int(topology.n_nodes)
        self.npr = int(topology.nodes_per_router)
        walk = _WALKS.get(routing.kind)
        if walk is None:
            raise ConfigError("routing.kind", routing.kind, f"one of {sorted(_WALKS)} (the routings the per-flow "
                                                            "baseline walks)")
        allowed = KINDS[routing.kind].topologies
        if topology.kind not in allowed:
            raise ConfigError("routing.kind", routing.kind, f"a routing of a {topology.kind}",
                              f"'{routing.kind}' serves {list(allowed)}.")
        init, paths = walk
        getattr(self, init)(topology, routing)
        self._paths = getattr(self, paths)

    # ---------------------------------------------------------------- torus

    def _init_torus(self, t: TorusTopology, routing: Routing) -> None:
        self.dims = [int(n) for n in t.dims]
        self.wrap = [bool(w) for w in t.wrap]
        nd = len(self.dims)
        if routing.order == "as_given":
            self.order = list(range(nd))
        elif routing.order == "longest_first":
            self.order = sorted(range(nd), key=lambda k: -self.dims[k])
        else:
            self.order = [int(k) for k in routing.order]
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

    def link_loads(self, traffic: Traffic, placement: Placement) -> np.ndarray:
        """Expected bytes on every link (router links, injection, ejection), shape [link]."""
        return self.flow_loads(zip(traffic.src.tolist(), traffic.dst.tolist(), traffic.nbytes.tolist()),
                               placement.task_node.tolist())

    def flow_loads(self, flows, task_node) -> np.ndarray:
        """:meth:`link_loads` for an iterable of ``(src_task, dst_task, bytes)`` and a ``task_node`` list."""
        n_rl, n_nodes, npr = self.n_router_links, self.n_nodes, self.npr
        load: dict[int, float] = defaultdict(float)
        cache: dict[tuple[int, int], list[Path]] = {}
        for s, d, nbytes in flows:
            sn = task_node[s]
            dn = task_node[d]
            if sn == dn:
                continue
            load[n_rl + sn] += nbytes
            load[n_rl + n_nodes + dn] += nbytes
            sr, dr = sn // npr, dn // npr
            if sr == dr:
                continue
            paths = cache.get((sr, dr))
            if paths is None:
                paths = cache[(sr, dr)] = self._paths(sr, dr)
            for prob, links in paths:
                part = nbytes * prob
                for link in links:
                    load[link] += part
        out = np.zeros(n_rl + 2 * n_nodes)
        for link, value in load.items():
            out[link] = value
        return out
