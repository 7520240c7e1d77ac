"""Torus dimension-order routing (``dor``).

Dimensions are travelled in ``order`` ("as_given", "longest_first" — the
Blue Gene/Q rule, a stable sort by size, largest first — or an explicit
permutation). Wrapped dimensions go the shortest way round; a tie at exactly
half a ring is split evenly between both directions (``tie="split"``, the
expectation of a random choice) or sent in the positive direction
(``tie="positive"``). Mesh dimensions go straight. A split tie is an
expectation over two paths, and can be faster than either: a shift by
``n / 2`` on a ring of 8 takes 1 ms split and 2 ms on either direction alone
(each link carries half the bytes); an evaluation says so in its summary when
some pair meets a tie (:meth:`DorRouting.notes`).

How the torus operator works
----------------------------
Under DOR a route travels dimension ``k`` along one ring (the coordinates of
the dimensions before ``k`` in the order are the destination's, the others
the source's) as one *run*: a start position, a direction and a length
(hops). A run adds its bytes to a contiguous stretch of the ring's links in
that direction, so each (dimension, direction) keeps a *difference line*
per ring: ``+bytes`` at the run's first link, ``-bytes`` just past its last,
and a prefix sum along the line gives every link's load. The ``-1``
direction is stored reflected (line position ``q`` is ring position ``n - 1
- q``) so that runs go up the line both ways; a wrapped ring's line has ``n
+ H`` positions (``H = n // 2``, the longest run), a run that passes
position ``n - 1`` goes on into the copy, and the copy is folded back onto
positions ``0 .. H - 1`` (the wrap correction). A split tie (``n`` even, a
run of exactly ``H`` hops) puts its start entry whole into a histogram by
start position (its end entry stays on the ``+1`` line), from which both
halves are completed by two shifted adds. Cost per
point: two scatter entries per flow and dimension, and a few passes over
the ``(n + H) / n`` line entries per link: ``O(flows x dims + links)``,
independent of ring and route lengths. A flow's coordinates come from one
gather per end of the routers' packed coordinates (shifts and masks, no
divisions); each dimension's entries are added in place into its own
buffer (no concatenated entry lists: on XLA:CPU a concatenation fusion is
not vectorised and computes every entry's expression per element).

Exactness. The difference lines are summed in int64, so the cancellation
in the prefix sums is exact. With ``S`` the point's router-to-router bytes
and ``2^(e-1) <= S < 2^e``, each flow's bytes become an even number ``q``
of units ``u = 2^(e-62)`` (the bytes rounded to a multiple of
``2^(e-61)``; ``q / 2`` for each half of a split tie); a load, ``sum(q) *
u`` over the runs through the link, is below ``2^63`` units (int64
additions that overflow in between wrap around and still end exact), and
is converted to float64 once.

* When every flow's bytes are a multiple of ``2^(e-61)`` — integers while
  ``S < 2^61`` (2.3e18 bytes), multiples of 1/2 while ``S < 2^60``, of
  ``2^-j`` while ``S < 2^(61-j)`` — each load is the exact sum of the
  bytes (halves for split ties) of the runs through the link, rounded once
  to float64: exactly that sum when it is a float64 (integers below
  ``2^53``), i.e. what the per-flow walk gives when its own sums are exact.
* Otherwise a flow's bytes move by at most ``u <= 2^-61 S`` when they are
  rounded to units, so a load is off by at most half an ulp plus ``2^-61
  S`` per run through the link (4.3e-19 of the point's bytes per run),
  whatever the ring length: no rounding error builds up along a line. (A
  float64 difference line would be off by about ``2^-53`` of the bytes on
  the line per addition.)

Dense rank-one demand factorises per dimension: on a dimension-``k`` ring
the sources are weighted by ``U_k`` (``u`` summed over the dimensions
travelled before ``k``) and the destinations by ``V_k`` (``v`` summed over
those after). The difference line of the rank-one demand on a ring is
``+U[s] A[s]`` at each source (``A[s]``: the destination weight within
reach of ``s`` in the direction, a window sum of ``V``) and ``-V[y] B[y]``
at each end position (``B[y]``: the source weight that reaches ``y``, a
window sum of ``U``); the window sums are differences of prefix sums.
Cost ``O(routers)`` per dimension and direction. These sums are float64
with cancellation: exact when ``u`` and ``v`` are integers and every sum
stays below ``2^52`` (split ties make halves; uniform all-to-all with
integer bytes is exact); otherwise
a load is off by at most about ``3 (n + H) 2^-53`` times the bytes the
ring's sources send to its destinations, and negative rounding residues
are clamped to 0.

"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Float, Int, Shaped

from .._types import ConfigOf
from .._ops import add_at as _add_at
from .._ops import sub_at as _sub_at
from .._ops import add_extra, fused_size, take
from ..errors import ConfigError, is_int, require
from ..topology import TorusTopology
from . import _dor_flows
from .base import Routing, RoutingKind, RoutingOperator

__all__ = ["DorRouting", "dor", "dor_order", "DOR_ORDERS", "TIE_RULES", "DorConfig", "DOR"]

DOR_ORDERS = ("as_given", "longest_first")
TIE_RULES = ("split", "positive")


@dataclasses.dataclass(frozen=True)
class DorRouting(Routing):
    """Torus dimension-order routing.

    Attributes
    ----------
    order
        ``"as_given"``, ``"longest_first"`` or a permutation of the dimensions.
    tie
        ``"split"`` (half each way) or ``"positive"``.
    """

    kind: str = "dor"
    order: str | tuple[int, ...] = "as_given"
    tie: str = "split"

    @property
    def label(self) -> str:
        order = self.order if isinstance(self.order, str) else "".join(map(str, self.order))
        return f"dor-{order}-{self.tie}"

    def paths_per_pair(self, n_points: int, op=None, point_keys=None) -> Float[np.ndarray, "point"]:
        """1 for every point: each message of a router pair takes one router path (a split tie is the
        expectation of a random choice per message)."""
        return np.ones(n_points)

    def notes(self, topology, pairs) -> tuple[str, ...]:
        """With ``tie="split"``, pairs exactly half a ring apart send half their bytes each way: an
        expectation over the two directions, which can finish sooner than either single path (a shift by
        ``n / 2`` on a ring of 8: 1 ms split, 2 ms on either way alone). Said when some pair meets a tie (a
        product block of pairs: when some source coordinate plus ``n / 2`` is a destination coordinate)."""
        if self.tie != "split" or not hasattr(topology, "wrap"):
            return ()
        c = np.asarray(topology.router_coords)
        pairs = [(np.asarray(s, np.int64), np.asarray(d, np.int64), product) for s, d, product in pairs]
        hit = []
        for k, (n, w) in enumerate(zip(topology.dims, topology.wrap)):
            if not (w and n > 2 and n % 2 == 0):
                continue
            col = np.ascontiguousarray(c[:, k], dtype=np.int32)  # a contiguous column: gathers at memory speed
            for s, d, product in pairs:
                if product:
                    seen = np.zeros(n, bool)
                    seen[col.take(d)] = True
                    tie = seen[(col.take(s) + n // 2) % n].any()
                else:  # coordinates in [0, n): a difference is n/2 modulo n exactly when it is +-n/2
                    tie = np.any(np.abs(col.take(d) - col.take(s)) == n // 2)
                if tie:
                    hit.append(k)
                    break
        if not hit:
            return ()
        return (f"tie=split: some pairs are exactly half a ring apart in dimension(s) {hit}; their bytes are "
                f"split evenly between both directions (an expectation, which can finish sooner than any single "
                f"path: routing.tie=positive sends them one way)",)


_ORDER_ALLOWED = (f"one of {list(DOR_ORDERS)} or a list of dimension indices, a permutation of 0..ndim-1 "
                  f"(e.g. [2, 0, 1])")


def _check_order(order) -> str | tuple[int, ...]:
    """An order spec: a name of :data:`DOR_ORDERS` or a permutation (integers >= 0, no repeats)."""
    if isinstance(order, str):
        require(order in DOR_ORDERS, "routing.order", order, _ORDER_ALLOWED)
        return order
    if not isinstance(order, (list, tuple, np.ndarray)):
        raise ConfigError("routing.order", order, _ORDER_ALLOWED)
    vals = list(order.tolist() if isinstance(order, np.ndarray) else order)
    if not vals:
        raise ConfigError("routing.order", vals, _ORDER_ALLOWED, "The list is empty.")
    names = [v for v in vals if isinstance(v, str)]
    if names:
        raise ConfigError("routing.order", vals, _ORDER_ALLOWED,
                          "Dimensions are numbered from 0 in the order of topology.dims (0, 1, 2, ...), "
                          f"not named: write e.g. {list(range(len(vals)))}.")
    if not all(is_int(v) for v in vals):
        raise ConfigError("routing.order", vals, _ORDER_ALLOWED, "Every entry must be an integer.")
    vals = [int(v) for v in vals]
    neg = [v for v in vals if v < 0]
    if neg:
        raise ConfigError("routing.order", vals, _ORDER_ALLOWED, f"Dimension {neg[0]} is negative.")
    rep = sorted({v for v in vals if vals.count(v) > 1})
    if rep:
        raise ConfigError("routing.order", vals, _ORDER_ALLOWED,
                          f"Dimension {rep[0]} is listed more than once; each dimension is travelled once.")
    return tuple(vals)


def dor(order: str | Sequence[int] = "as_given", tie: str = "split") -> DorRouting:
    """Torus dimension-order routing (see module docstring)."""
    order = _check_order(order)
    require(isinstance(tie, str) and tie in TIE_RULES, "routing.tie", tie, f"one of {list(TIE_RULES)}")
    return DorRouting("dor", order, tie)


def dor_order(topo: TorusTopology, order) -> tuple[int, ...]:
    """Resolve a DOR order spec to a permutation of the dimensions."""
    require(isinstance(topo, TorusTopology), "topology", getattr(topo, "name", type(topo).__name__),
            "a torus (dimension order routing orders a torus's dimensions)")
    nd = topo.ndim
    if order == "as_given":
        return tuple(range(nd))
    if order == "longest_first":
        return tuple(sorted(range(nd), key=lambda k: -topo.dims[k]))
    perm = _check_order(order)
    require(isinstance(perm, tuple) and sorted(perm) == list(range(nd)), "routing.order", list(perm),
            f"'as_given', 'longest_first' or a permutation of 0..{nd - 1} (the {nd} dimensions of {topo.name})",
            f"It lists {len(perm)} dimension{'s' if len(perm) != 1 else ''}; list each of the {nd} exactly once."
            if len(perm) != nd else f"Each of 0..{nd - 1} must appear exactly once.")
    return perm


_NARROW_BITS = 32
"""Packed router coordinates of at most this many bits, and buffers below ``2^31`` entries: uint32 indices, else
uint64."""

_SHORT = 32
"""Float prefix sums over at most this many positions: no loop (a triangular product)."""


def _cumsum0(x: Shaped[Array, "pos ..."]) -> Shaped[Array, "pos ..."]:
    """Inclusive prefix sum along axis 0: a ``lax.scan`` adding slice after slice (exact for int64)."""

    def step(carry, row):
        carry = carry + row
        return carry, carry

    return lax.scan(step, jnp.zeros_like(x[0]), x)[1]


def _prefix(x: Shaped[Array, "pre pos col"]) -> Shaped[Array, "pre pos col"]:
    """Inclusive prefix sum along axis 1 (float64, or int64: exact in any order).

    Floats on short lines, with nothing to compile as a loop: one product
    with the upper-triangular matrix of ones (``pos`` multiply-adds per
    entry). Integers (no integer matrix products on accelerators) and long
    lines: a ``lax.scan`` adding position after position (1-3 ns per entry
    on CPU). ``jnp.cumsum`` is not used: XLA:CPU evaluates it as a reduce
    window, ``pos`` additions per entry (5-40 ns; on Mira's 24-position
    lines it was a fifth of the point's time).
    """
    n_pos = x.shape[1]
    if n_pos <= _SHORT and jnp.issubdtype(x.dtype, jnp.floating):
        tri = jnp.asarray(np.triu(np.ones((n_pos, n_pos), dtype=x.dtype)))
        return jnp.einsum("apb,pq->aqb", x, tri)
    return jnp.moveaxis(_cumsum0(jnp.moveaxis(x, 1, 0)), 0, 1)


def _prefix_along(x, axis: int):
    """:func:`_prefix` of an N-D array along ``axis``."""
    shape = x.shape
    pre = int(np.prod(shape[:axis], dtype=np.int64))
    post = int(np.prod(shape[axis + 1:], dtype=np.int64))
    return _prefix(x.reshape(pre, shape[axis], post)).reshape(shape)


def _units(weight: Float[Array, "flow"]) -> tuple[Int[Array, "flow"], Float[Array, ""]]:
    """Bytes as even integers ``q`` of a unit ``2^(e - 62)``: ``q * unit`` is ``weight`` to within ``unit``.

    ``e`` is the exponent with ``S < 2^e`` for ``S = sum(weight)`` (at least
    ``-900``, so that the scale factors stay normal numbers): ``sum(q) < 2^62
    + flows``, so every load fits in an int64 (module docstring).
    """
    # ``frexp``'s exponent read from the float64's bits (``jnp.frexp`` and ``jnp.ldexp`` handle subnormal numbers
    # in about 190 operations, 28 % of a small torus's kernel: as many to trace, lower and compile). The same
    # ``e`` for normal sums; 0 for a sum of 0, inf or nan (as ``frexp``) and for a subnormal one (``frexp``: below
    # -1022), whose bytes round to ``q = 0`` either way.
    field = (lax.bitcast_convert_type(jnp.sum(jnp.abs(weight)).astype(jnp.float64), jnp.int64) >> 52) & 0x7FF
    e = jnp.maximum(jnp.where((field == 0) | (field == 0x7FF), 0, field - 1022), -900)
    q = 2 * jnp.round(weight * _pow2(61 - e, weight.dtype)).astype(jnp.int64)
    return q, _pow2(e - 62, weight.dtype)


def _pow2(k: Int[Array, ""], dtype) -> Float[Array, ""]:
    """``2.0 ** k`` for an integer ``k`` of the normal float64 exponents (-1022 to 1023), built from its bits."""
    return lax.bitcast_convert_type((k.astype(jnp.int64) + 1023) << 52, jnp.float64).astype(dtype)




def _crossing_tensor(n: int, wrap: bool, direction: int, tie: str) -> np.ndarray:
    """``M[x, s, t]``: probability that the 1-D route ``s -> t`` uses the link leaving ``x`` in ``direction``.

    The definition the ring operators implement, materialised (``n^3``
    entries): not used by the operator, kept as a reference (checked against
    a hop-by-hop walk in ``tests/test_torus.py``, the dense path against it
    in ``tests/test_routing_fast.py``).

    A route goes ``hops`` links in one direction from ``s``; in the ``+1``
    direction it uses the links leaving ``s, s+1, ..., s+hops-1`` (mod ``n``),
    i.e. those with ``(x - s) mod n < hops``, and in the ``-1`` direction those
    with ``(s - x) mod n < hops``. Built by broadcasting (``n^3`` entries).
    """
    s = np.arange(n)[:, None]
    t = np.arange(n)[None, :]
    if wrap:
        fwd = (t - s) % n
        bwd = (n - fwd) % n
        if n == 2:
            pos_p, pos_h = (fwd > 0).astype(float), fwd
            neg_p, neg_h = np.zeros((n, n)), np.zeros((n, n), int)
        else:
            tie_mask = (fwd == bwd) & (fwd > 0)
            split = 0.5 if tie == "split" else 0.0
            pos_p = np.where(tie_mask, 1.0 - split, ((fwd < bwd) & (fwd > 0)).astype(float))
            neg_p = np.where(tie_mask, split, ((bwd < fwd) & (bwd > 0)).astype(float))
            pos_h, neg_h = fwd, bwd
    else:
        pos_p, neg_p = (t > s).astype(float), (t < s).astype(float)
        pos_h, neg_h = np.maximum(t - s, 0), np.maximum(s - t, 0)
    x = np.arange(n)[:, None, None]
    if direction == 0:
        return np.where((x - s[None]) % n < pos_h[None], pos_p[None], 0.0)
    return np.where((s[None] - x) % n < neg_h[None], neg_p[None], 0.0)


@dataclasses.dataclass(frozen=True)
class _Ring:
    """Static layout of one dimension's rings in a point's buffers.

    The routers of dimension ``dim`` form ``pre x post`` rings of ``n``
    positions (``pre``/``post``: the routers before/after the dimension in
    row-major order). The dimension has its own int64 buffer of ``size``
    entries: the difference lines of both directions and every ring,
    position-major, ``[L, 2, pre, post]`` (line position, direction, ring),
    the ``-1`` line reflected (line position ``q`` is ring position ``n - 1
    - q``) so that runs go up the line in both directions; from ``tie_off``
    (or -1) the split ties by start position ``[n, pre, post]``. Position
    first, the prefix sums along the lines are a loop over whole slices of
    ``2 x pre x post`` entries, with no transpose. ``direct`` (or -1), for a
    wrapped ring of two routers, is the offset of its float64 loads (one link
    per router) in the float buffer.
    """

    dim: int
    n: int
    wrap: bool
    H: int  # longest run in hops: n // 2 wrapped, n - 1 mesh
    L: int  # line positions: n + H wrapped (a run past position n - 1 goes on in a second copy), n mesh
    pre: int
    post: int
    tie_off: int = -1
    direct: int = -1

    @property
    def section(self) -> int:
        """Rings of the dimension: ``pre x post``."""
        return self.pre * self.post

    @property
    def size(self) -> int:
        return (2 * self.L + (self.n if self.tie_off >= 0 else 0)) * self.section


def _layout(dims: tuple[int, ...], wrap: tuple[bool, ...], split: bool) -> tuple[dict[int, _Ring], int, int]:
    """The rings of every dimension with more than one router, and the integer and float buffer sizes."""
    rings, isize, foff = {}, 0, 0
    for k, (n, w) in enumerate(zip(dims, wrap)):
        if n == 1:
            continue
        pre = int(np.prod(dims[:k], dtype=np.int64))
        post = int(np.prod(dims[k + 1:], dtype=np.int64))
        if w and n == 2:  # one link each way between the two routers: always "positive"
            rings[k] = _Ring(k, n, w, 1, n, pre, post, direct=foff)
            foff += pre * n * post
            continue
        H = n // 2 if w else n - 1
        r = _Ring(k, n, w, H, n + H if w else n, pre, post)
        tie = 2 * r.L * r.section if w and split and n % 2 == 0 else -1
        rings[k] = dataclasses.replace(r, tie_off=tie)
        isize += rings[k].size
    return rings, isize, foff


@dataclasses.dataclass(frozen=True)
class _Geometry:
    """What every DOR function of one (torus, routing) reads: the dimensions, the order they are travelled in,
    whether ties split, each dimension's rings (:class:`_Ring`), the float buffer's size, the row-major strides,
    and every router's coordinates packed in one unsigned integer (``bits[k]`` bits from ``shift[k]``: a flow's
    coordinates are one gather and shifts and masks, no divisions; unsigned indices, 64-bit where ``wide``; the
    router id itself where ``packed_is_id``, every size a power of two)."""

    dims: tuple[int, ...]
    order: tuple[int, ...]
    split: bool
    rings: dict
    fsize: int
    strides: tuple[int, ...]
    bits: tuple[int, ...]
    shift: tuple[int, ...]
    wide: bool
    packed_is_id: bool
    n_routers: int
    n_router_links: int

    @property
    def itype(self):
        return jnp.uint64 if self.wide else jnp.uint32

    def packed(self, tables, routers):
        """Packed coordinates of ``routers`` (their ids where every size is a power of two, else a gather)."""
        r = routers.astype(self.itype)
        return r if self.packed_is_id else take(tables["coords"], r)

    def coord(self, p, k: int):
        """Coordinate ``k`` from packed coordinates ``p``."""
        return (p >> self.shift[k]) & ((1 << self.bits[k]) - 1)


def _geometry(topo: TorusTopology, routing: DorRouting) -> tuple[_Geometry, np.ndarray, np.ndarray]:
    """The :class:`_Geometry` of DOR on ``topo``, every router's coordinates ``[router, dim]`` and their packed
    form."""
    dims = tuple(int(n) for n in topo.dims)
    wrap = tuple(bool(w) for w in topo.wrap)
    R, nd = int(topo.n_routers), len(dims)
    split = routing.tie == "split"
    rings, _, fsize = _layout(dims, wrap, split)
    bits = tuple(int(n - 1).bit_length() for n in dims)
    shift = tuple(int(sum(bits[k + 1:])) for k in range(nd))
    wide = sum(bits) > _NARROW_BITS or max([fsize + 2 * int(topo.n_nodes)] + [r.size for r in rings.values()]) >= 2**31
    coords = np.stack(np.unravel_index(np.arange(R), dims), axis=1).astype(np.uint64)
    packed = (coords << np.asarray(shift, np.uint64)).sum(axis=1, dtype=np.uint64)
    g = _Geometry(dims, dor_order(topo, routing.order), split, rings, fsize,
                  tuple(int(np.prod(dims[k + 1:], dtype=np.int64)) for k in range(nd)), bits, shift, wide,
                  bool((packed == np.arange(R, dtype=np.uint64)).all()), R, int(topo.n_router_links))
    return g, coords, packed


def _slot_table(topo: TorusTopology, g: _Geometry, coords: np.ndarray) -> np.ndarray:
    """``slot[l]``: where router link ``l`` reads its load. Per-router loads, dimension after dimension: a
    two-router ring's R in router order, a ring dimension's 2R as its folded lines ``[n, 2, pre, post]`` (ring
    position, reflected for -1; direction; ring); router link l leaving router r in (dim, direction)."""
    R = g.n_routers
    slot = -np.ones(g.n_router_links, dtype=np.int64)
    nb = np.asarray(topo.neighbor_link)
    base = 0
    for k in sorted(g.rings):
        ring = g.rings[k]
        x = coords[:, k].astype(np.int64)
        sec = np.arange(R, dtype=np.int64) // (ring.n * ring.post) * ring.post + np.arange(R) % ring.post
        for d in ((0,) if ring.direct >= 0 else (0, 1)):
            lk = nb[:, k, d]
            r = np.nonzero(lk >= 0)[0]
            if ring.direct >= 0:
                slot[lk[r]] = base + r
            else:
                pos = x[r] if d == 0 else ring.n - 1 - x[r]
                slot[lk[r]] = base + (pos * 2 + d) * ring.section + sec[r]
        base += R * (1 if ring.direct >= 0 else 2)
    assert (slot >= 0).all(), "torus link not covered by a (dimension, direction) segment"
    return slot.astype(np.int32)


def _gather(tables, per_seg):
    """Router-link loads from the per-segment loads (:func:`_slot_table`'s layout)."""
    return jnp.concatenate(per_seg)[tables["slot"]]


def _run_entries(ring: _Ring, s, t, pre_i, post_i):
    """The two integer-buffer entries of each flow's run in ``ring.dim``: its start (``+q``) and past its
    end (``-q``); ``pre_i``/``post_i``: the run's ring (all unsigned).

    A split tie (it goes the ``+1`` way here) puts its start entry in the tie histogram instead; its
    ``-q`` past the end on the ``+1`` line is undone in :func:`_line_loads`.
    """
    n, post = ring.n, ring.post
    if ring.wrap:
        fwd = jnp.where(t >= s, t - s, t + n - s)  # (t - s) mod n
        bwd = jnp.where(fwd > 0, n - fwd, 0)
        go_pos = fwd <= bwd
        hops = jnp.minimum(fwd, bwd)
    else:
        go_pos = t > s
        hops = jnp.where(go_pos, t - s, s - t)
    q0 = jnp.where(go_pos, s, n - 1 - s)  # line position of the run's first link
    ring_i = pre_i * post + post_i
    step = 2 * ring.section  # one line position
    first = q0 * step + (~go_pos).astype(s.dtype) * ring.section + ring_i
    past = first + hops * step  # a run of 0 hops: +q and -q at one entry
    if ring.tie_off >= 0:
        tie = (hops == n // 2) & (hops > 0)
        first = jnp.where(tie, ring.tie_off + s * ring.section + ring_i, first)
    return first, past



def _line_loads(ring: _Ring, ibuf, unit):
    """Loads (bytes) of both directions from the dimension's buffer: ``[n, 2, pre, post]`` (ring position,
    reflected for the ``-1`` direction; direction; ring), the layout the slot table reads."""
    n, H, sec = ring.n, ring.H, ring.section
    X = ibuf[: 2 * ring.L * sec].reshape(ring.L, 2, sec)
    if ring.tie_off >= 0:
        # half of a split tie from ring position s each way: line position s (+1) or n - 1 - s (-1), H hops;
        # the +1 line holds -T at s + H already (the runs' entries past their end)
        T = ibuf[ring.tie_off: ring.tie_off + n * sec].reshape(n, sec) >> 1
        T = jnp.stack([T, jnp.flip(T, axis=0)], axis=1)
        sign = jnp.asarray([1, -1], T.dtype).reshape(1, 2, 1)
        X = X + jnp.pad(T, ((0, H), (0, 0), (0, 0))) + sign * jnp.pad(T, ((H, 0), (0, 0), (0, 0)))
    C = _cumsum0(X)
    if ring.wrap:  # the second copy holds the part of the runs that passed position n - 1
        C = C[:n] + jnp.pad(C[n:], ((0, n - H), (0, 0), (0, 0)))
    return C.astype(unit.dtype) * unit



def _dense_ring(ring: _Ring, p_last, U, V):
    """Loads of both directions of dimension ``k`` from ``U`` (source) and ``V`` (destination) weights.

    ``U``/``V``: ``[2, *dims]`` up to broadcasting, the ``+1`` direction
    and the reflected ``-1`` direction, ring positions along axis ``k + 1``;
    a route of ``d`` hops in a direction carries weight 1, ``p_last[direction]``
    at ``d = H``. The difference line holds ``+U[s] A[s]`` at each source
    position (``A[s]``: the weighted destinations ``s + 1 .. s + H``) and
    ``-V[y] B[y]`` at each end position ``y`` (``B[y]``: the weighted
    sources ``y - H .. y - 1``).
    """
    ax, n, H = ring.dim + 1, ring.n, ring.H

    def sl(x, lo, hi):
        return lax.slice_in_dim(x, lo, hi, axis=ax)

    def pad(x, before, after):
        widths = [(0, 0)] * x.ndim
        widths[ax] = (before, after)
        return jnp.pad(x, widths)

    if ring.wrap:
        q = 1.0 - p_last
        V2 = jnp.concatenate([V, sl(V, 0, H)], axis=ax)  # destinations at line positions 0 .. n + H - 1
        Pv = _prefix_along(V2, ax)
        A = sl(Pv, H, H + n) - sl(Pv, 0, n) - q * sl(V2, H, H + n)
        U2 = pad(U, 0, H)
        Pu = _prefix_along(U2, ax)
        B = sl(pad(Pu, 1, 0), 0, n + H) - sl(pad(Pu, H + 1, 0), 0, n + H) - q * sl(pad(U2, H, 0), 0, n + H)
        diff = U2 * pad(A, 0, H) - V2 * B
    else:  # every destination further up the line, every source further down
        A = pad(sl(jnp.flip(_prefix_along(jnp.flip(V, axis=ax), ax), axis=ax), 1, n), 0, 1)
        B = pad(sl(_prefix_along(U, ax), 0, n - 1), 1, 0)
        diff = U * A - V * B
    C = _prefix_along(diff, ax)
    if ring.wrap:
        C = sl(C, 0, n) + pad(sl(C, n, n + H), 0, n - H)
    return jnp.maximum(C, 0.0)



def _apply_fn(g: _Geometry):
    """DOR's ``apply`` (router-level flows of one point) on ``g``."""
    rings, order, dims, strides, R, n_rl, FSIZE = g.rings, g.order, g.dims, g.strides, g.n_routers, \
        g.n_router_links, g.fsize
    itype, wide, coord = g.itype, g.wide, g.coord

    def apply(tables, src, dst, weight, extra=None):
        """Router-link loads of router-level flows (one design point); see :class:`RoutingOperator`."""
        # packed coordinates of the source and destination routers (their ids when every size is a power of two)
        ps, pd = g.packed(tables, src), g.packed(tables, dst)
        q, unit = _units(weight)
        fbuf = jnp.zeros(FSIZE + fused_size(extra), weight.dtype)
        ibufs = {}
        for pos, k in enumerate(order):
            if k not in rings:
                continue
            ring = rings[k]
            s, t = coord(ps, k), coord(pd, k)
            # the run's ring: the dimensions travelled before k at the destination's coordinates
            c = {j: coord(pd if j in order[:pos] else ps, j) for j in rings if j != k}
            pre_i = sum((c[j] * int(np.prod(dims[j + 1:k], dtype=np.int64)) for j in c if j < k), jnp.zeros_like(s))
            post_i = sum((c[j] * strides[j] for j in c if j > k), jnp.zeros_like(s))
            if ring.direct >= 0:
                idx = ring.direct + pre_i * (ring.n * ring.post) + s * ring.post + post_i
                fbuf = _add_at(fbuf, idx, jnp.where(s != t, weight, 0.0))
            else:  # one buffer per dimension (independent work), entries added in place
                first, past = _run_entries(ring, s, t, pre_i, post_i)
                ibufs[k] = _sub_at(_add_at(jnp.zeros(ring.size, jnp.int64), first, q), past, q)
        fbuf = add_extra(fbuf, extra, FSIZE, add=_add_at,
                         index=lambda i: i.astype(itype) if wide or i.dtype != jnp.int32 else i)
        per_seg = []
        for k in sorted(rings):
            ring = rings[k]
            if ring.direct >= 0:
                per_seg.append(fbuf[ring.direct: ring.direct + R])
            else:
                per_seg.append(_line_loads(ring, ibufs[k], unit).reshape(2 * R))
        loads = _gather(tables, per_seg) if rings else jnp.zeros(n_rl)
        return loads if extra is None else jnp.concatenate([loads, fbuf[FSIZE:]])


    return apply


def _apply_dense_fn(g: _Geometry):
    """DOR's ``apply_dense`` (the rank-one demand ``u[s] v[d]`` of one point) on ``g``."""
    rings, order, dims, split, R, n_rl = g.rings, g.order, g.dims, g.split, g.n_routers, g.n_router_links
    nd = len(dims)

    def apply_dense(tables, u, v):
        """Router-link loads of the demand ``u[s] v[d]`` over ordered router pairs (one design point)."""
        if not rings:
            return jnp.zeros(n_rl, u.dtype)
        U = u.reshape(dims)
        V = v.reshape(dims)
        per_seg = []
        for k in sorted(rings):
            ring = rings[k]
            pos = order.index(k)
            before, after = order[:pos], order[pos + 1:]
            Uk = U.sum(axis=tuple(before), keepdims=True) if before else U
            Vk = V.sum(axis=tuple(after), keepdims=True) if after else V
            if ring.direct >= 0:
                per_seg.append(jnp.broadcast_to(Uk * jnp.flip(Vk, axis=k), dims).reshape(R))
                continue
            if not ring.wrap or ring.n % 2:
                p_last = (1.0, 1.0)
            else:  # the tie at half a ring: split, or all in the +1 direction
                p_last = (0.5, 0.5) if split else (1.0, 0.0)
            p_last = jnp.asarray(p_last, u.dtype).reshape((2,) + (1,) * nd)
            load = _dense_ring(ring, p_last, jnp.stack([Uk, jnp.flip(Uk, axis=k)]),
                              jnp.stack([Vk, jnp.flip(Vk, axis=k)]))  # the -1 direction reflected
            load = jnp.broadcast_to(load, (2,) + dims).reshape(2, ring.pre, ring.n, ring.post)
            per_seg.append(jnp.transpose(load, (2, 0, 1, 3)).reshape(2 * R))  # the slot table's layout
        return _gather(tables, per_seg)


    return apply_dense


def build_operator(topo: TorusTopology, routing: DorRouting) -> RoutingOperator:
    """Compile DOR for one torus (host side).

    Refused before any table is built, with a
    :class:`~evaluator.errors.ResourceError` naming ``routing``, when the
    estimate does not fit in memory: the link-slot table (4 bytes per router
    link, on the host and again on the device; the packed router coordinates,
    4-8 bytes per router, are within the margin) plus one point's working set,
    about four 8-byte copies of its buffers (difference lines of ``(n + H) /
    n`` entries per router, direction and dimension, split ties one more per
    router; the lines, their prefix sums, the folded loads). The flows' part
    of a point is sized when it is evaluated (:mod:`evaluator.evaluate`).
    256x256x4: 0.13 GB estimated; XLA's buffers for a point of its 3-D
    stencil (1.57M flows) 0.21 GB, flows included.
    """
    from ..errors import check_memory  # size check (issue "every bad input a clear error")

    dims = tuple(int(n) for n in topo.dims)
    wrap = tuple(bool(w) for w in topo.wrap)
    R, n_rl = int(topo.n_routers), int(topo.n_router_links)
    _, isize, fsize = _layout(dims, wrap, True)
    check_memory("routing", routing.label, 8 * n_rl + 4 * 8 * (isize + fsize) + 8 * R * 2 * len(dims),
                 f"its buffers on {topo.name} ({isize + fsize:,} difference-line entries per point)",
                 "Use a torus with fewer routers.")
    g, coords, packed = _geometry(topo, routing)
    tables: dict[str, np.ndarray] = {"slot": _slot_table(topo, g, coords)}
    if not g.packed_is_id:
        tables["coords"] = packed.astype(np.uint64 if g.wide else np.uint32)
    flows = _dor_flows.flow_functions(topo, g, coords, tables)
    nnz = int(sum(t.size for t in tables.values()))
    return RoutingOperator(routing, topo.name, tables, _apply_fn(g), _apply_dense_fn(g), nnz, **flows)


@dataclass
class DorConfig:
    """Torus dimension-order routing: ``order`` as_given | longest_first | [permutation], ``tie`` split | positive."""

    kind: str = "dor"
    order: Any = "as_given"
    tie: str = "split"


def _from_config(cfg: ConfigOf[DorConfig]) -> DorRouting:
    order = cfg.order if isinstance(cfg.order, (str, int, float, bool)) or cfg.order is None else list(cfg.order)
    return dor(order=order, tie=cfg.tie)


DOR = RoutingKind("dor", DorConfig, _from_config, topologies=("torus",), operator=build_operator)
