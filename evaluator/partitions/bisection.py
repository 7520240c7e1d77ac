"""Exact internal bisection of cuboid tori and meshes, and the isoperimetric bound.

:func:`torus_bisection` (and :class:`Bisection`) for any cuboid torus, mesh or
mixed partition, own-torus or routed over a host (:func:`effective_wrap`);
:func:`isoperimetric_bound` (Oltchik & Schwartz, Theorem 3.1);
:func:`bgq_node_dims` (the node torus of a Blue Gene/Q partition).

Conventions
-----------
* Units: bandwidths are bytes/s per direction; a bisection bandwidth is the
  sum, over the links cut, of one link's bandwidth in one direction, i.e. the
  capacity from one half to the other.
* Links are undirected and counted as in Oltchik & Schwartz: a ring of size
  >= 3 cut across contributes two links per cut line (the direct one and the
  wrap-around one), a ring of size 2 is a single link (its two neighbours
  coincide), a mesh (chain) contributes one, a dimension of size 1 nothing.
* Bisection: the minimum, over every split of the routers into halves of
  ``floor(R/2)`` and ``ceil(R/2)``, of the bandwidth of the links between
  them. Nodes go with their router (with ``nodes_per_router > 1`` and an odd
  router count the node halves differ by ``nodes_per_router``). Ties in
  bandwidth are broken by the smaller link count.
* Dimension order and sizes are as given; the sorted (canonical) form of the
  Oltchik tables is used for presentation and for counting rotations once.

How the exact bisection is computed
-----------------------------------
For a cuboid torus/mesh the minimum is attained by a *staircase* of
axis-aligned cuts: cut across some dimension ``k`` of size ``a`` (slab size
``M = R/a``); if ``a`` is even this is a straight cut costing ``c*M`` links
(``c = 2`` for a ring of size >= 3, else 1); if ``a`` is odd the half holds
``(a-1)/2`` full slabs plus half of the middle slab, which costs the same
``c*M`` links of dimension ``k`` plus the bisection of the middle slab
(recursively). :func:`torus_bisection` takes the minimum over every such
staircase. For even sides and equal bandwidths this is the straight cut across
the longest dimension, ``2R/L`` links (the Blue Gene/Q formula ``2 N/L``);
with unequal bandwidths (Gemini Y) the cheapest dimension may be a shorter
one. This is not a theorem we prove here: the test suite checks it against an
exhaustive minimum bisection over all balanced subsets on every small torus,
mesh and mixed shape (sizes 1, 2, odd and even, weighted and unweighted).

Blue Gene/Q versus embedded partitions
--------------------------------------
* ``kind: bgq``: a partition of ``A x B x C x D`` midplanes is the node torus
  ``4A x 4B x 4C x 4D x 2``; wrap links close inside the partition (each
  partition is its own torus), so its bisection does not depend on where it
  sits or on the machine size.
* ``kind: torus`` (Cray Gemini): a job's router prism is routed over the host
  torus (``embedded_in=host_dims``). A dimension that spans the whole host
  ring keeps its wrap links. A dimension of extent ``s < H`` is a chain unless
  minimal routing between its farthest routers leaves the prism through the
  host's wrap-around (``2 (s - 1) > H``); then it counts as a ring whose
  second cut line lies on the host links outside the prism (Fiedler's 23 of 24
  case). Those outside links may be shared with other jobs and are only used
  by the far pairs, so for such dimensions the figure is an upper estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import PartitionError, int_list, invalid, is_int
from ..machines.base import shape_text as _shape

__all__ = [
    "Bisection",
    "torus_bisection",
    "effective_wrap",
    "isoperimetric_bound",
    "bgq_node_dims",
]

_REL_TOL = 1e-12

_DIMS_ALLOWED = "a non-empty list of integers >= 1"


def _partition_error(field: str, value: Any, allowed: str) -> PartitionError:
    """Error factory of the shared validators: ``"<field> = <value!r> is invalid; allowed: <allowed>"``."""
    return invalid(PartitionError, field, value, allowed)


def _flags(field: str, value: Any, ndim: int) -> tuple[bool, ...]:
    """Wrap flags: one bool, or a list of ``ndim`` bools (a string such as ``"false"`` is refused, not read as
    True; nor is a number, whose truth would be a guess)."""
    allowed = f"one boolean (true/false) or a list of {ndim} values (booleans, one per dimension)"
    items = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value] * ndim
    if len(items) != ndim or not all(isinstance(v, (bool, np.bool_)) for v in items):
        raise _partition_error(field, list(value) if isinstance(value, (tuple, np.ndarray)) else value, allowed)
    return tuple(bool(v) for v in items)


def _bandwidths(value: Any, ndim: int) -> tuple[float, ...]:
    """Link bandwidths: one finite number > 0, or a list of ``ndim`` (a string or bool is refused)."""
    allowed = f"finite numbers > 0 (bytes/s per direction): one, or a list of {ndim} (one per dimension)"
    items = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value] * ndim
    ok = len(items) == ndim and all(isinstance(v, (int, float, np.integer, np.floating))
                                    and not isinstance(v, (bool, np.bool_)) for v in items)
    if not ok or not all(math.isfinite(float(v)) and float(v) > 0 for v in items):
        raise _partition_error("bandwidth", list(value) if isinstance(value, (tuple, np.ndarray)) else value,
                               allowed)
    return tuple(float(v) for v in items)


def _dims(field: str, dims: Any) -> tuple[int, ...]:
    """Sizes >= 1, one per dimension; the message shows ``dims`` as given (a tuple stays a tuple)."""
    return int_list(field, dims, error=lambda f, _v, a: _partition_error(f, dims, a), allowed=_DIMS_ALLOWED)


# --------------------------------------------------------------------------------------
# exact bisection of a cuboid torus / mesh
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bisection:
    """Internal bisection of a cuboid partition.

    Attributes
    ----------
    links
        Undirected links crossing the minimum cut (counted as in Oltchik &
        Schwartz: the "normalised bisection bandwidth" of their tables).
    bandwidth
        Capacity of the cut, bytes/s per direction.
    links_per_dim : tuple of int, shape [dim]
        Links of each dimension crossing the cut.
    cut : tuple of int
        Dimensions of the staircase, outermost first; ``(k,)`` is a straight
        cut across dimension ``k``.
    routers, nodes
        Size of the partition.
    """

    links: int
    bandwidth: float
    links_per_dim: tuple[int, ...]
    cut: tuple[int, ...]
    routers: int
    nodes: int

    @property
    def per_node(self) -> float:
        """Bisection bandwidth per node, bytes/s per direction per node."""
        return self.bandwidth / self.nodes

    @property
    def links_per_node(self) -> float:
        """Links in the bisection per node."""
        return self.links / self.nodes


def effective_wrap(dims: Sequence[int], host_dims: Sequence[int],
                   host_wrap: bool | Sequence[bool] = True) -> tuple[bool, ...]:
    """Wrap flags of a prism routed over a host torus (embedded mode).

    Parameters
    ----------
    dims : sequence of int, shape [dim]
        Extent of the prism in routers.
    host_dims : sequence of int, shape [dim]
        Router grid of the host machine.
    host_wrap : bool or sequence of bool, shape [dim]
        Wrap-around links of the host.

    Returns
    -------
    tuple of bool, shape [dim]
        True where the prism's dimension behaves as a ring: it spans the
        whole host ring, or minimal routing between its farthest routers uses
        the host's wrap-around (``2 (s - 1) > H``).
    """
    d = _dims("dims", dims)
    h = _dims("embedded_in", host_dims)
    if len(h) != len(d):
        raise invalid(PartitionError, "embedded_in", list(h),
                      f"a host of {len(d)} dimensions like the partition {_shape(d)}")
    hw = _flags("wrap", host_wrap, len(d))
    for k, (s, H) in enumerate(zip(d, h)):
        if s > H:
            raise PartitionError(f"partition {_shape(d)} does not fit in host {_shape(h)} "
                                 f"(dimension {k}: {s} > {H})")
    return tuple(bool(w and (s == H or 2 * (s - 1) > H)) for s, H, w in zip(d, h, hw))


MAX_ODD_DIMS = 16
"""Most dimensions of odd size >= 3 a bisection is computed for (the staircases examined are 2^k of them)."""


@lru_cache(maxsize=4096)
def _staircase(dims: tuple[int, ...], ring: tuple[bool, ...],
               bw: tuple[float, ...]) -> tuple[float, int, tuple[int, ...], tuple[int, ...]]:
    """Minimum staircase cut: (bandwidth, links, links_per_dim, cut dims)."""
    return _staircase_memo(dims, ring, bw, {})


def _staircase_memo(dims: tuple[int, ...], ring: tuple[bool, ...], bw: tuple[float, ...],
                    memo: dict) -> tuple[float, int, tuple[int, ...], tuple[int, ...]]:
    """:func:`_staircase` with one memo per top-level call: one visit per subset of odd dimensions cut."""
    hit = memo.get(dims)
    if hit is not None:
        return hit
    n = math.prod(dims)
    if n <= 1:
        return 0.0, 0, (0,) * len(dims), ()
    best: tuple[float, int, tuple[int, ...], tuple[int, ...]] | None = None
    for k, a in enumerate(dims):
        if a < 2:
            continue
        m = n // a
        c = 2 if (ring[k] and a >= 3) else 1
        lpd = [0] * len(dims)
        lpd[k] = c * m
        cap = c * m * bw[k]
        cut: tuple[int, ...] = (k,)
        if a % 2 == 1:
            sub = dims[:k] + (1,) + dims[k + 1:]
            scap, _, slpd, scut = _staircase_memo(sub, ring, bw, memo)
            cap += scap
            lpd = [x + y for x, y in zip(lpd, slpd)]
            cut = cut + scut
        links = sum(lpd)
        if best is None or cap < best[0] * (1 - _REL_TOL) or (
                cap <= best[0] * (1 + _REL_TOL) and links < best[1]):
            best = (cap, links, tuple(lpd), cut)
    assert best is not None
    memo[dims] = best
    return best


def torus_bisection(dims: Sequence[int], wrap: bool | Sequence[bool] = True,
                    bandwidth: float | Sequence[float] = 1.0, *,
                    embedded_in: Sequence[int] | None = None,
                    nodes_per_router: int = 1) -> Bisection:
    """Exact internal bisection of a cuboid torus, mesh or mixed partition.

    Parameters
    ----------
    dims : sequence of int, shape [dim]
        Routers along each dimension (any number of dimensions, sizes >= 1).
    wrap : bool or sequence of bool, shape [dim]
        Own-torus mode (``embedded_in=None``): whether each dimension of the
        partition closes on itself (Blue Gene/Q partitions: all True).
        Embedded mode: the wrap flags of the host torus.
    bandwidth : float or sequence of float, shape [dim]
        Bandwidth of one link of each dimension, bytes/s per direction
        (Gemini: Y half of X and Z). The default 1.0 makes ``bandwidth``
        equal to the link count.
    embedded_in : sequence of int, shape [dim], optional
        Router grid of the host torus the partition is routed over (Cray
        Gemini jobs). Dimensions get the ring/chain behaviour of
        :func:`effective_wrap`; the cut may then use host links outside the
        partition.
    nodes_per_router
        Nodes on each router; only changes :attr:`Bisection.nodes` (nodes go
        with their router).

    Returns
    -------
    Bisection
        Minimum-bandwidth bisection (ties: fewest links). See the module
        docstring for the counting rules and why a staircase of axis-aligned
        cuts is exact. The staircases examined are ``2^k`` for ``k`` odd
        sides >= 3; more than :data:`MAX_ODD_DIMS` of them are refused
        (:class:`PartitionError`) rather than run for hours.
    """
    d = _dims("dims", dims)
    if not (is_int(nodes_per_router) and int(nodes_per_router) >= 1):
        raise invalid(PartitionError, "nodes_per_router", nodes_per_router, "an integer >= 1")
    bw = _bandwidths(bandwidth, len(d))
    if embedded_in is None:
        ring = _flags("wrap", wrap, len(d))
    else:
        ring = effective_wrap(d, embedded_in, wrap)
    odd = sum(1 for a in d if a >= 3 and a % 2 == 1)
    if odd > MAX_ODD_DIMS:
        raise invalid(PartitionError, "dims", list(d), f"at most {MAX_ODD_DIMS} dimensions of odd size >= 3",
                      hint=f"{odd} odd dimensions would make the bisection examine 2^{odd} staircase cuts")
    cap, links, lpd, cut = _staircase(d, ring, bw)
    r = math.prod(d)
    return Bisection(links=links, bandwidth=cap, links_per_dim=lpd, cut=cut, routers=r,
                     nodes=r * int(nodes_per_router))


# --------------------------------------------------------------------------------------
# Theorem 3.1 (edge-isoperimetric inequality for arbitrary tori)
# --------------------------------------------------------------------------------------


def isoperimetric_bound(dims: Sequence[int], t: int) -> float:
    """Lower bound on the links leaving a set of ``t`` vertices of a torus.

    Oltchik & Schwartz, Theorem 3.1: with ``a_1 >= ... >= a_D`` the sorted
    sides and ``t <= |V|/2``,
    ``|E(S, S')| >= min_r 2 (D-r) (a_D ... a_{D-r+1})^(1/(D-r)) t^((D-r-1)/(D-r))``
    (the product runs over the ``r`` smallest sides).

    Parameters
    ----------
    dims : sequence of int, shape [dim]
        Sides of the torus (any order; sorted internally).
    t
        Size of the vertex set, ``1 <= t <= prod(dims) // 2``.

    Returns
    -------
    float
        The bound, in links.

    Notes
    -----
    The bound counts links as in a ``2D``-regular torus, where every ring
    crossing is two links; that is the convention of the theorem (for sides of
    2 it is Harper's hypercube bound doubled). With the single-link convention
    of :func:`torus_bisection` for rings of size 2 it can exceed the true cut
    (a hypercube ``2x2x2`` has bisection 4 < 8). It is proved for cuboid
    sets and conjectured for all sets; the tests check both against brute
    force on small tori.
    """
    a = sorted(_dims("dims", dims), reverse=True)
    n = math.prod(a)
    if n < 2:  # one vertex: no set of at most half of it, no cut ("an integer in [1, 0]" said nothing)
        raise invalid(PartitionError, "dims", list(dims), "a torus of at least 2 vertices (a set of t <= |V|/2 "
                      f"vertices needs |V| >= 2; {_shape(a)} has {n})")
    if not is_int(t) or not 1 <= int(t) <= n // 2:
        raise invalid(PartitionError, "t", t, f"an integer in [1, {n // 2}] "
                      f"(at most half of the {n} vertices of {_shape(a)})")
    t = int(t)
    D = len(a)
    vals = []
    for r in range(D):
        k = math.prod(a[D - r:]) if r else 1
        e = D - r
        vals.append(2 * e * k ** (1.0 / e) * t ** ((e - 1) / e))
    return float(min(vals))


# --------------------------------------------------------------------------------------
# Blue Gene/Q partitions
# --------------------------------------------------------------------------------------


def bgq_node_dims(midplanes: Sequence[int]) -> tuple[int, ...]:
    """Node torus ``4A x 4B x 4C x 4D x 2`` of a Blue Gene/Q partition of midplanes."""
    mp = _dims("midplanes", midplanes)
    if len(mp) != 4:
        raise invalid(PartitionError, "midplanes", list(mp), "4 integers >= 1 (A, B, C, D)")
    return tuple(4 * m for m in mp) + (2,)
