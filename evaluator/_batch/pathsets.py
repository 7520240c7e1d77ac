"""Path sets: the communicating router pairs of a point, and a routing bound to the pairs of a batch.

A routing whose operator depends on the router pairs that communicate (a
path set, :attr:`~evaluator.routing.Routing.needs_pairs`) is bound to the
pairs of the batch's points (:meth:`~evaluator.routing.Routing.bind_pairs`:
one bound spec per group of points that share an operator); every group is
evaluated with its bound spec and the results go back in input order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .._types import Float, Int
from ..errors import check_memory
from ..placement import Placement
from ..routing import Routing
from ..topology import Topology
from ..traffic import AbstractTraffic
from .dispatch import Results
from .phases import put_back

__all__ = ["unique_keys", "router_pairs", "note_pairs", "evaluate_bound"]


def unique_keys(keys: Int[np.ndarray, "entry"]) -> Int[np.ndarray, "pair"]:
    """The sorted distinct values of ``keys`` (``np.unique``'s result, by a sort: NumPy 2's hashed ``np.unique``
    took 3.6 s for 1.6 M pair keys, the sort 0.07 s)."""
    k = np.sort(np.asarray(keys, np.int64))
    if k.size == 0:
        return k
    keep = np.empty(k.size, bool)
    keep[0] = True
    np.not_equal(k[1:], k[:-1], out=keep[1:])
    return k[keep]


def _task_routers(topology: Topology, placement: Placement) -> Int[np.ndarray, "task"]:
    """The router of every task of one point."""
    return np.asarray(topology.node_router)[np.asarray(placement.task_node)]


def _pair_bytes(topology: Topology, traffic: AbstractTraffic, placement: Placement, label: str, check_size=None):
    """``(src router, dst router, bytes)`` entries of one point's exchanges (repeats, any order)."""
    R = int(topology.n_routers)
    tr = _task_routers(topology, placement)

    def check(name: str, n_src: int, n_dst: int, n_pairs: int) -> None:
        if check_size is not None:
            check_size(n_pairs)
        check_memory("routing", label, 48.0 * n_src * n_dst,
                     f"the router pairs of {name} ({n_src:,} x {n_dst:,}) for a path-set routing",
                     "Use a routing without path sets (dor, minimal, valiant) for dense traffic on this many "
                     "routers, or a sparse traffic.")

    return traffic.pair_bytes(tr, R, check)


def router_pairs(topology: Topology, traffic: AbstractTraffic, placement: Placement, label: str = "path set",
                 with_bytes: bool = False, check_size: Callable[[int], None] | None = None
                 ) -> Int[np.ndarray, "pair"] | tuple[Int[np.ndarray, "entry"], Float[np.ndarray, "entry"]]:
    """Sorted keys ``src * R + dst`` of the router pairs ``src != dst`` that one point's exchanges load.

    The router pairs of :meth:`~evaluator.traffic.AbstractTraffic.pair_bytes`
    (flow lists: the pairs of flows with bytes; dense traffic: every pair of
    a router holding a task with source weight and one holding a task with
    destination weight; pairs on one router excluded). ``check_size(n_pairs)``
    (optional, e.g. a path-set routing's :meth:`~evaluator.routing.Routing.check_size`) is
    called with a dense phase's exact pair count before its pairs are listed.
    ``with_bytes``: the keys of every entry instead (repeats, any order) and
    their bytes (dense: ``bytes_per_pair * U[s] * V[d]`` with ``U``, ``V`` the
    weights summed per router), as ``(keys, bytes)``.
    """
    R = int(topology.n_routers)
    s, d, b = _pair_bytes(topology, traffic, placement, label, check_size)
    k = s.astype(np.int64) * R + d
    if not with_bytes:
        return unique_keys(k)
    return k, np.asarray(b, np.float64)


def note_pairs(topology: Topology, traffic: AbstractTraffic, placement: Placement
               ) -> tuple[tuple[Int[np.ndarray, "src"], Int[np.ndarray, "dst"], bool], ...]:
    """The communicating router pairs of one point for :meth:`~evaluator.routing.Routing.notes`, as blocks
    ``(src, dst, product)`` (:meth:`~evaluator.traffic.AbstractTraffic.pair_sets`): a flow list's entries
    (repeats, any order: a note asks whether some pair is of a kind, never how many there are; no sort of every
    flow's pair), a dense pattern's sets of sending and receiving routers (its pairs never listed)."""
    return traffic.pair_sets(_task_routers(topology, placement), int(topology.n_routers))


def evaluate_bound(topology: Topology, routing: Routing, traffics: Sequence[AbstractTraffic],
                   placements: Sequence[Placement],
                   evaluate: Callable[[Routing, list, list, list], Results]) -> Results:
    """A routing that depends on the communicating pairs, bound to the router pairs of the points: one bound spec
    per group of points that share an operator, each group evaluated by ``evaluate(bound spec, traffics,
    placements, the points' pair keys)``, the results put back in input order."""
    R = int(topology.n_routers)
    check = lambda n: routing.check_size(topology, n)  # noqa: E731
    pairs = [router_pairs(topology, t, p, routing.label, with_bytes=True, check_size=check)
             for t, p in zip(traffics, placements)]
    results = []
    for bound, idx in routing.bind_pairs(pairs, R):
        results.append((idx, evaluate(bound, [traffics[i] for i in idx], [placements[i] for i in idx],
                                      [pairs[i][0] for i in idx])))
    return put_back(traffics, results)
