"""``optiq_heuristic``: Bui et al. Algorithm 2 over Yen's k shortest paths; the ``optiq_lp`` hook.

Algorithm 2 (path selection balancing the number of paths per link). Input:
the communicating router pairs in order (sorted by ``(src, dst)``), each with
its Yen paths in order (:mod:`evaluator.routing._kshortest`), and ``maxload``
(paths allowed per link). Rounds go over the pairs; in each round a pair
with candidates left looks at its next candidate ``p``:

* if every link of ``p`` carries fewer than ``maxload`` selected paths, ``p``
  is selected (each of its links' counts goes up by one);
* otherwise, if the pair has a selected path already, ``p`` is dropped;
* otherwise (the pair would get none) ``maxload`` is raised until ``p`` fits
  and ``p`` is selected ("we increase the maxload by 1 until we can add a
  path to the pair", Sec. IV-A; the raised bound holds for the later pairs).

Rounds continue until no pair has candidates left, so every pair takes at
most one path per round. The demand of each pair is split evenly over its
selected paths. Parallel links of one router hop (Dragonfly copies) count as
one candidate whose bytes split over them.

``optiq_lp`` (Bui et al. Model 1, the LP split over the k paths) is not a
kind yet: :func:`evaluator.routing._paths.path_incidence` gives the LP's
incidence and pair index for a :class:`~evaluator.routing._paths.PathTable`
(:func:`lp_inputs` here for a spec), and
:meth:`~evaluator.routing._paths.PathTable.with_weights` plus
:func:`~evaluator.routing._paths.path_operator` turn a solver's split into
an operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import dataclasses

import numpy as np

from .._types import ConfigOf
from ..errors import ConfigError, is_int
from ..topology import Topology
from ._paths import (PairSet, PathSetRouting, PathTable, bind_by_pair_set, check_hop_limit, check_k, path_incidence,
                     path_operator, path_table)
from .base import Routing, RoutingKind, RoutingOperator

__all__ = ["OptiqHeuristicRouting", "optiq_heuristic", "select_paths", "heuristic_table", "lp_inputs",
           "OptiqHeuristicConfig", "OPTIQ_HEURISTIC"]


@dataclasses.dataclass(frozen=True)
class OptiqHeuristicRouting(PathSetRouting):
    """Algorithm 2's path set: the selection depends on every communicating pair of the point."""

    kind: str = "optiq_heuristic"

    def bind_pairs(self, point_pairs, n_routers: int) -> list[tuple[Routing, list[int]]]:
        """One spec per distinct pair set, bound to it, with the points that have it (the selection depends on
        every pair of the exchange)."""
        return bind_by_pair_set(self, [PairSet(k, n_routers) for k, _ in point_pairs])


def optiq_heuristic(k: int = 8, maxload: int = 1, hop_limit: int | None = None) -> OptiqHeuristicRouting:
    """Bui et al. Algorithm 2 over ``k`` Yen paths per pair, starting from ``maxload`` paths per link."""
    if isinstance(maxload, bool) or not is_int(maxload) or int(maxload) < 1:
        raise ConfigError("routing.maxload", maxload, "an integer >= 1 (selected paths per link)",
                          "It is raised automatically where a pair would get no path.")
    return OptiqHeuristicRouting("optiq_heuristic", check_k(k), check_hop_limit(hop_limit), int(maxload))


def select_paths(candidates: list[list[list[int]]], maxload: int, n_links: int,
                 trace: list | None = None) -> tuple[list[list[int]], int]:
    """Algorithm 2 (module docstring) on candidate paths given as link-id lists per pair.

    ``candidates[i]``: pair ``i``'s candidate paths in order, each a list of
    link ids (a candidate may be a list of alternatives: see
    :func:`heuristic_table`). Returns the indices of the selected candidates
    per pair and the final ``maxload``. ``trace``, when a list, receives
    ``(round, pair, candidate, action, maxload)`` for every step (``action``
    in ``"take"``, ``"drop"``, ``"raise"``).
    """
    load = np.zeros(n_links + 1, np.int64)
    nxt = [0] * len(candidates)
    chosen: list[list[int]] = [[] for _ in candidates]
    rnd = 0
    while any(nxt[i] < len(c) for i, c in enumerate(candidates)):
        for i, cand in enumerate(candidates):
            if nxt[i] >= len(cand):
                continue
            j = nxt[i]
            links = np.asarray(cand[j], np.int64)
            top = int(load[links].max()) if links.size else 0
            if top + 1 <= maxload:
                action = "take"
            elif not chosen[i]:
                maxload = top + 1
                action = "raise"
            else:
                action = "drop"
            if action != "drop":
                chosen[i].append(j)
                np.add.at(load, links, 1)
            nxt[i] += 1
            if trace is not None:
                trace.append((rnd, i, j, action, maxload))
        rnd += 1
    return chosen, maxload


def heuristic_table(topo: Topology, routing: PathSetRouting) -> PathTable:
    """The k-shortest table of the routing's pairs reduced to Algorithm 2's selection (even split)."""
    full = path_table(topo, routing, routing.pairs)
    # A Yen path is one candidate; its parallel-link copies (rows with the same pair and weight run) stay together.
    rows_of: list[list[list[int]]] = [[] for _ in range(full.n_pairs)]
    start = 0
    groups = []
    pp = full.path_pair
    n = full.n_paths
    while start < n:
        i = int(pp[start])
        end = start + 1
        # copies of one router path: consecutive rows of a pair whose router sequence is equal
        while end < n and pp[end] == i and _same_nodes(topo, full, start, end):
            end += 1
        groups.append((i, start, end))
        rows_of[i].append(sorted({int(x) for r in range(start, end) for x in full.path_links[r, : full.path_hops[r]]}))
        start = end
    chosen, _ = select_paths(rows_of, int(routing.maxload), full.n_router_links)
    keep = np.zeros(n, bool)
    per_pair = [0] * full.n_pairs
    weight = np.zeros(n)
    for i, s, e in groups:
        j = per_pair[i]
        per_pair[i] += 1
        if j in chosen[i]:
            keep[s:e] = True
            weight[s:e] = full.path_weight[s:e] / full.path_weight[s:e].sum() / len(chosen[i])
    sel = full.select(keep)
    return sel.with_weights(weight[keep])


def _same_nodes(topo: Topology, t: PathTable, r0: int, r1: int) -> bool:
    if t.path_hops[r0] != t.path_hops[r1]:
        return False
    h = t.path_hops[r0]
    a, b = t.path_links[r0, :h], t.path_links[r1, :h]
    return bool((topo.link_src[a] == topo.link_src[b]).all() and (topo.link_dst[a] == topo.link_dst[b]).all())


def build_operator(topo: Topology, routing: PathSetRouting) -> RoutingOperator:
    """Compile ``optiq_heuristic`` for ``topo`` and the pairs it is bound to (host side)."""
    return path_operator(topo, routing, heuristic_table(topo, routing))


def lp_inputs(topo: Topology, routing: PathSetRouting):
    """``(table, incidence, path_pair)`` of Model 1 over the routing's k paths per pair (see module docstring)."""
    table = path_table(topo, routing, routing.pairs)
    inc, path_pair = path_incidence(table)
    return table, inc, path_pair


@dataclass
class OptiqHeuristicConfig:
    """Bui et al. Algorithm 2: ``k`` Yen candidates per pair, initial ``maxload`` (paths per link), ``hop_limit``."""

    kind: str = "optiq_heuristic"
    k: int = 8
    maxload: int = 1
    hop_limit: Optional[Any] = None


def _from_config(cfg: ConfigOf[OptiqHeuristicConfig]) -> OptiqHeuristicRouting:
    return optiq_heuristic(cfg.k, cfg.maxload, cfg.hop_limit)


OPTIQ_HEURISTIC = RoutingKind("optiq_heuristic", OptiqHeuristicConfig, _from_config, topologies=None,  # any router graph
                              operator=build_operator)
