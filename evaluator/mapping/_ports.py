"""The port part of the mapping bound (:func:`port_bound`): a route's first and last router links.

A route leaves its source router over one of that router's links. Where the
routing sends a pair's bytes whole over one such link (DOR away from a tie,
minimal Dragonfly routes, D-mod-k), that link carries the flow whole, so a
mapping whose busiest link takes less than ``X`` seconds puts every flow of
at least ``X * c`` bytes (``c`` the fastest such link of the available
routers) either on its own router or on a pair that the routing splits at
the first link (a tie of DOR: half a ring away). Both cost hops: with ``h``
the smallest weighted length of a split route between available nodes,
every such flow not on the router costs at least ``h``. Ball counting with
that floor (the nodes' closest slots, the largest flows first on the slots
at distance 0: an exchange argument shows an optimal mapping does that)
bounds the hop-bytes ``H(X)`` from below, and the busiest link takes at least
``H(X) / sum_l w_l cap_l`` (as for the plain hop-bytes bound). So every
mapping takes at least ``min(X, H(X) / denominator)``, for every ``X``; the
part is the largest over the flows' sizes ``X``, per phase (each phase's
busiest link), summed over phases. The same holds for the last link into
the destination router (the flows a task receives, the pairs split there).

On a torus under DOR with a flow far above the others (a 27-point stencil
with uneven faces) the part is that flow's bytes over one link: splitting
it would put it half a ring away, whose hops cost more than they save.
Certified with the other parts against every mapping of small jobs
(``tests/test_mapping_bound.py``).
"""

from __future__ import annotations

import numpy as np

_WHOLE = 1 - 1e-9
"""A share of a route on one link at least this is the route whole (the unit flows' rounding)."""

_EVERY = 64
"""Flow sizes up to which every one is tried as ``X``; above, a bisection (the part stays a bound either way)."""


def whole_pairs(share: np.ndarray) -> np.ndarray:
    """Whether each pair's route crosses the link of largest share whole (``share`` from the routing's tables)."""
    return np.asarray(share) >= _WHOLE


def _floored(B: np.ndarray, prof: np.ndarray, zeros: np.ndarray, h: float, forced: np.ndarray) -> float:
    """``sum_i min_p`` of task ``i``'s least hop-bytes at a node of profile ``p`` when its ``forced[i]`` largest
    flows are on the node's ``zeros[p]`` slots at distance 0 or cost at least ``h`` each: the ``zeros[p]``
    largest flows at distance 0, the forced ones beyond them at ``h``, the rest on the closest slots left."""
    n, K = B.shape
    k = np.arange(K)[None]
    best = np.full(n, np.inf)
    for p in range(prof.shape[0]):
        z = int(zeros[p])
        shift = np.maximum(forced - z, 0)[:, None]
        dist = prof[p][np.clip(k - shift, 0, K - 1)]
        dist = np.where(k < z, 0.0, np.where(k < z + shift, h, dist))
        best = np.minimum(best, (B * dist).sum(axis=1))  # the floored entries hold flows > 0: no 0 x inf
    return float(best.sum())


def _phase(B: np.ndarray, prof: np.ndarray, h: float, cap: float, denom: float, work: float) -> float:
    """The part for one phase and one side: ``max_X min(X, H(X) / denom)`` over ``X`` the flows' sizes over
    ``cap`` (and ``H`` with nothing forced). Above ``work`` entries per pass over the profiles every node takes
    the smallest profile (no farther than any: still a bound)."""
    prof = prof[:, :B.shape[1]]
    sizes = np.unique(B[B > 0])[::-1]  # descending: X falls, H(X) rises with the flows forced
    passes = min(sizes.size, _EVERY) + 2 * int(np.log2(max(sizes.size, 1))) + 3
    if B.size * prof.shape[0] * passes > work:
        prof = prof.min(axis=0, keepdims=True)
    zeros = (prof <= 0).sum(axis=1)
    none = np.zeros(B.shape[0], np.int64)
    best = _floored(B, prof, zeros, h, none) / denom  # nothing forced: the plain hop-bytes of the phase

    def at(j: int) -> float:
        return min(sizes[j] / cap, _floored(B, prof, zeros, h, (B >= sizes[j]).sum(axis=1)) / denom)

    if sizes.size <= _EVERY:
        return max([best] + [at(j) for j in range(sizes.size)])
    lo, hi = 0, sizes.size - 1  # the first j where H / denom reaches X; the best is there or just before it
    while lo < hi:
        mid = (lo + hi) // 2
        if _floored(B, prof, zeros, h, (B >= sizes[mid]).sum(axis=1)) / denom >= sizes[mid] / cap:
            hi = mid
        else:
            lo = mid + 1
    return max([best] + [at(j) for j in {max(lo - 1, 0), lo}])


def port_bound(phases: list[np.ndarray], prof: np.ndarray, h: float, cap: float, denom: float,
               work: float) -> float:
    """The part (s) on one side: ``phases`` every phase's partner bytes ``[task, K]`` (descending), ``prof`` the
    available nodes' distance profiles (:func:`evaluator.mapping.bound._profiles`, ascending, at least ``K``
    columns; from the side's node), ``h`` the least weighted length of a route the routing splits at the side's
    link (inf: none), ``cap`` the fastest such link, ``denom`` the weighting's ``sum_l w_l cap_l``, ``work``
    the entries a phase's passes may touch before the profiles are merged into their smallest."""
    if not np.isfinite(cap) or cap <= 0 or denom <= 0:
        return 0.0
    return float(sum(_phase(B, prof, h, cap, denom, work) for B in phases if B.size and B.max() > 0))
