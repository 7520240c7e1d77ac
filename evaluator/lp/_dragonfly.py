"""Dragonfly adaptive-routing bound: the best per-group-pair mix of minimal and Valiant paths.

For every ordered pair of groups ``(S, D)`` with traffic, the LP chooses
how much of the pair's bytes take the *minimal* class (local hop to the
owner of an ``S -> D`` global link, the global link, local hop to the
destination router) and how much the *Valiant* class through each
intermediate group ``I`` (minimal to ``I``, landing on the router where the
``S -> I`` link lands, minimal from there to ``D``). Within a class the
bytes spread exactly as the ``minimal`` and ``valiant`` routings spread
them (:mod:`evaluator.routing._dragonfly`): evenly over the ``m``
parallel global links, in proportion to the source routers' and
destination routers' shares of the pair's bytes. Intra-group traffic
stays on its direct local link, injection and ejection are fixed loads.

It is Model 1 (:mod:`._model1`) with group pairs as pairs and these
``1 + (g - 2)`` classes as paths (incidence = the fraction of the class's
bytes on each link): ``Z`` is the rate an ideal UGAL could reach, which
chooses per group pair but not per packet. All-minimal and uniform
Valiant (each intermediate ``1 / (g - 2)``) are feasible mixes, so it is
never below either routing's throughput.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from ..topology import DragonflyTopology, Topology
from ._flow import RouterDemand
from ._model1 import PathBound, solve_path_lp

__all__ = ["adaptive_classes", "dragonfly_adaptive_bound"]


def _own(topo: DragonflyTopology) -> np.ndarray:
    """``own[G, H, r]``: fraction of group ``G``'s traffic to ``H`` that leaves through router ``r`` of ``G``
    (also the fraction of ``H``'s traffic to ``G`` that lands on ``r``)."""
    g, a, m = topo.g, topo.a, topo.links_per_pair
    go = np.asarray(topo.global_owner)
    own = np.zeros((g, g, a))
    G, H = np.nonzero(~np.eye(g, dtype=bool))
    for c in range(m):
        np.add.at(own, (G, H, go[G, H, c]), 1.0 / m)
    return own


def adaptive_classes(topo: DragonflyTopology, demand: RouterDemand):
    """Model 1 data of the adaptive bound: ``(incidence [link, class], pair [class], bytes [pair], fixed [link],
    classes)``; ``classes[k] = (S, D, I)`` with ``I = -1`` for the minimal class."""
    if not isinstance(topo, DragonflyTopology):
        raise ConfigError("topology", topo.name, "a Dragonfly (the adaptive bound mixes minimal and Valiant)")
    g, a, m = topo.g, topo.a, topo.links_per_pair
    if g < 3:
        raise ConfigError("topology", topo.name, "a Dragonfly with at least 3 groups",
                          "Valiant needs an intermediate group other than source and destination.")
    L = topo.n_links
    ll = np.asarray(topo.local_link)
    gl = np.asarray(topo.global_link)
    own = _own(topo)
    fixed = np.array(demand.fixed_load, dtype=np.float64)
    Gs, Gd = demand.src // a, demand.dst // a
    rs, rd = demand.src % a, demand.dst % a
    intra = Gs == Gd
    np.add.at(fixed, ll[Gs[intra], rs[intra], rd[intra]], demand.nbytes[intra])
    inter = ~intra
    out = np.zeros((g, g, a))  # out[S, D, i]: bytes from router i of S to group D
    inn = np.zeros((g, g, a))  # inn[S, D, j]: bytes to router j of D from group S
    np.add.at(out, (Gs[inter], Gd[inter], rs[inter]), demand.nbytes[inter])
    np.add.at(inn, (Gs[inter], Gd[inter], rd[inter]), demand.nbytes[inter])
    GG = out.sum(2)
    off = ~np.eye(a, dtype=bool)

    def local(G, w_from, w_to):
        M = np.outer(w_from, w_to)[off]
        return ll[G][off], M

    def glob(G, H):
        return gl[G, H], np.full(m, 1.0 / m)

    rows, cols, vals, pair, classes = [], [], [], [], []
    S_, D_ = np.nonzero(GG > 0)
    for q, (S, D) in enumerate(zip(S_.tolist(), D_.tolist())):
        ou, iu = out[S, D] / GG[S, D], inn[S, D] / GG[S, D]
        routes = [(-1, [local(S, ou, own[S, D]), glob(S, D), local(D, own[D, S], iu)])]
        for I in range(g):
            if I != S and I != D:
                routes.append((I, [local(S, ou, own[S, I]), glob(S, I), local(I, own[I, S], own[I, D]), glob(I, D),
                                   local(D, own[D, I], iu)]))
        for I, parts in routes:
            k = len(classes)
            classes.append((S, D, I))
            pair.append(q)
            for links, w in parts:
                nz = w > 0
                rows.append(links[nz])
                vals.append(w[nz])
                cols.append(np.full(int(nz.sum()), k))
    K = len(classes)
    if K:
        inc = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(L, K))
    else:
        inc = sp.csr_matrix((L, 0))
    return inc, np.asarray(pair, np.int64), GG[S_, D_], fixed, classes


def dragonfly_adaptive_bound(topology: Topology, demand: RouterDemand, solver: str = "highs") -> PathBound:
    """The adaptive-routing bound (module docstring): Model 1 over minimal/Valiant classes per group pair."""
    inc, pair, gbytes, fixed, _ = adaptive_classes(topology, demand)
    res = solve_path_lp(inc, pair, gbytes, np.asarray(topology.capacity, dtype=np.float64), fixed, solver,
                        method="dragonfly_adaptive")
    if not gbytes.size:  # only fixed loads
        m = fixed > 0
        z = float((topology.capacity[m] / fixed[m]).min()) if m.any() else np.inf
        return PathBound(z, 1.0 / z, res.flow, "dragonfly_adaptive", res.solver, 0.0, z)
    return res
