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
import itertools

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
    flat, cut, bounds = [], [0], [0]
    for cand in candidates:
        for c in cand:
            flat.extend(np.asarray(c, np.int64).reshape(-1).tolist())
            cut.append(len(flat))
        bounds.append(len(cut) - 1)
    return _select(flat, cut, bounds, maxload, n_links, trace)


def _select(flat: list[int], cut: list[int], bounds: list[int], maxload: int, n_links: int,
            trace: list | None = None) -> tuple[list[list[int]], int]:
    """:func:`select_paths` on flat lists: pair ``i``'s candidates are ``c`` in ``bounds[i] .. bounds[i + 1] - 1``,
    candidate ``c``'s links ``flat[cut[c] : cut[c + 1]]`` (Python ints: a candidate's few links cost no NumPy
    call, and no list per candidate is made)."""
    load = [0] * (n_links + 1)
    n_pairs = len(bounds) - 1
    nxt = bounds[:-1]                                      # the next candidate of every pair
    chosen: list[list[int]] = [[] for _ in range(n_pairs)]
    active = [i for i in range(n_pairs) if bounds[i] < bounds[i + 1]]
    rnd = 0
    while active:
        for i in active:
            c = nxt[i]
            lo, hi = cut[c], cut[c + 1]
            top = max([load[flat[q]] for q in range(lo, hi)], default=0)
            if top + 1 <= maxload:
                action = "take"
            elif not chosen[i]:
                maxload = top + 1
                action = "raise"
            else:
                action = "drop"
            if action != "drop":
                chosen[i].append(c - bounds[i])
                for q in range(lo, hi):
                    load[flat[q]] += 1
            nxt[i] = c + 1
            if trace is not None:
                trace.append((rnd, i, c - bounds[i], action, maxload))
        active = [i for i in active if nxt[i] < bounds[i + 1]]
        rnd += 1
    return chosen, maxload


def heuristic_table(topo: Topology, routing: PathSetRouting) -> PathTable:
    """The k-shortest table of the routing's pairs reduced to Algorithm 2's selection (even split).

    A Yen path is one candidate: its parallel-link copies (consecutive rows of a pair with the same routers) stay
    together, the candidate being the sorted link ids of all of them. Grouped with NumPy (no per-row call)."""
    full = path_table(topo, routing, routing.pairs)
    n, n_rl = full.n_paths, int(full.n_router_links)
    pp = np.asarray(full.path_pair, np.int64)
    if n == 0:
        return full
    ext_src = np.append(np.asarray(topo.link_src[:n_rl], np.int64), -1)
    ext_dst = np.append(np.asarray(topo.link_dst[:n_rl], np.int64), -1)
    links = np.asarray(full.path_links, np.int64)
    a, b = ext_src[links], ext_dst[links]                 # the routers of every hop, -1 past the path's end
    new = np.ones(n, bool)
    new[1:] = ((pp[1:] != pp[:-1]) | (full.path_hops[1:] != full.path_hops[:-1]) | (a[1:] != a[:-1]).any(1)
               | (b[1:] != b[:-1]).any(1))
    group = np.cumsum(new) - 1                            # the candidate of every row
    starts = np.nonzero(new)[0]
    G = starts.size
    gpair = pp[starts]
    # every candidate's distinct link ids, ascending: (candidate, link) keys sorted and made unique
    on = links < n_rl
    key = np.unique(np.repeat(group, links.shape[1])[on.reshape(-1)] * (n_rl + 1) + links[on])
    cut = np.searchsorted(key // (n_rl + 1), np.arange(G + 1)).tolist()
    bounds = np.searchsorted(gpair, np.arange(full.n_pairs + 1))
    chosen, _ = _select((key % (n_rl + 1)).tolist(), cut, bounds.tolist(), int(routing.maxload), n_rl)
    n_chosen = np.fromiter(map(len, chosen), np.int64, count=len(chosen))
    picked = np.zeros(G, bool)
    picked[np.repeat(bounds[:-1], n_chosen) + np.fromiter(itertools.chain.from_iterable(chosen), np.int64,
                                                          count=int(n_chosen.sum()))] = True
    pw = np.asarray(full.path_weight, np.float64)
    size = np.diff(np.append(starts, n))
    gsum = pw[starts].copy()                              # a copy's weights summed as NumPy sums its slice
    for g in np.nonzero(size > 1)[0].tolist():
        gsum[g] = pw[starts[g]: starts[g] + size[g]].sum()
    keep = picked[group]
    weight = np.where(keep, pw / gsum[group] / np.maximum(n_chosen[pp], 1), 0.0)
    sel = full.select(keep)
    return sel.with_weights(weight[keep])


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
