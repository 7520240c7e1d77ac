"""Torus dimension-order routing (``dor``).

Dimensions are travelled in ``order`` ("as_given", "longest_first" — the
Blue Gene/Q rule, a stable sort by size, largest first — or an explicit
permutation). Wrapped dimensions go the shortest way round; a tie at exactly
half a ring is split evenly between both directions (``tie="split"``, the
expectation of a random choice) or sent in the positive direction
(``tie="positive"``). Mesh dimensions go straight.

How the torus operator works
----------------------------
Under DOR a route travels dimension ``k`` along one ring (the coordinates of
the dimensions before ``k`` in the order are the destination's, the others
the source's) as one *run*: a start router, a direction and a length. The
kernel histograms the runs by ``(start router, length)`` per (dimension,
direction) — one scatter entry per flow and dimension, two for a split
tie — then a suffix sum over the length and ``H`` shifted adds along the
ring (``H`` = longest run) turn the histogram into link loads: cost
``O(flows x dims + links x H)``, independent of the route lengths, and every
step adds non-negative numbers only (no prefix-sum cancellation).

Dense rank-one demand factorises per dimension: the load on a dimension-``k``
link is ``sum_{s_k, t_k} M[x_k, s_k, t_k] U_k[.., s_k] V_k[.., t_k]`` where
``U_k`` sums ``u`` over the dimensions travelled before ``k``, ``V_k`` sums
``v`` over those after, and ``M`` is the 1-D ring crossing tensor: cost
``O(routers x n_k)`` per dimension, near-linear in N.

"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

from .._ops import segment_add
from ..errors import ConfigError, is_int, require
from ..topology import TorusTopology
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


@dataclasses.dataclass(frozen=True)
class _Segment:
    """Links of one (dimension, direction): one per router (the link leaving it), -1 where none."""

    dim: int
    direction: int  # 0: +1, 1: -1
    max_run: int  # longest run (hops) a route makes in this dimension and direction


def _torus_segments(topo: TorusTopology) -> list[_Segment]:
    segs = []
    for k, n in enumerate(topo.dims):
        if n == 1:
            continue
        if topo.wrap[k]:
            if n == 2:  # one link each way between the two routers: always "positive"
                segs.append(_Segment(k, 0, 1))
            else:
                segs += [_Segment(k, 0, n // 2), _Segment(k, 1, n // 2)]
        else:
            segs += [_Segment(k, 0, n - 1), _Segment(k, 1, n - 1)]
    return segs


def _crossing_tensor(n: int, wrap: bool, direction: int, tie: str) -> np.ndarray:
    """``M[x, s, t]``: probability that the 1-D route ``s -> t`` uses the link leaving ``x`` in ``direction``.

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


def build_operator(topo: TorusTopology, routing: DorRouting) -> RoutingOperator:
    """Compile DOR for one torus (host side).

    Refused before any table is built, with a
    :class:`~evaluator.errors.ResourceError` naming ``routing``, when the
    estimate does not fit in memory: the crossing tensors (``n^3`` float64
    per direction of a ring of ``n`` routers) and the link-slot table, on the
    host and again on the device, plus one point's working set, the smaller
    of the run histogram (``R x max_run`` per direction, three float64
    copies: histogram, suffix sums, rolled loads) and the dense path (``2 x R
    x n`` float64 for the largest ring). Measured: Mira 16x16x12x8x2 24 MB
    estimated, 8 MB to build the tables (``tracemalloc``) plus 26 MB to
    evaluate one dense all-to-all point (RSS); 100^3 torus 1.84 GB vs 0.2 +
    1.87 GB.
    """
    from ..errors import check_memory  # size check (issue "every bad input a clear error")

    _R, _nrl = int(topo.n_routers), int(topo.n_router_links)
    _runs, _cross, _ring = 0, 0, 0
    for _n, _w in zip(topo.dims, topo.wrap):
        _n = int(_n)
        if _n >= 2:
            _nseg = 1 if (_w and _n == 2) else 2
            _runs += _nseg * ((_n // 2 if _n > 2 else 1) if _w else _n - 1)
            _cross += _nseg * 8 * _n ** 3
            _ring = max(_ring, _n)
    _point = min(3 * 8 * _R * _runs, 2 * 8 * _R * _ring) + 8 * _R * 2 * len(topo.dims)
    check_memory("routing", routing.label, 2 * (_cross + 4 * _nrl) + 8 * _nrl + _point,
                 f"its tables on {topo.name} (crossing tensors n^3 per ring direction, a run histogram of "
                 f"{_R:,} routers x {_runs:,} run lengths per point)",
                 "Use a torus with fewer routers or shorter rings.")
    order = dor_order(topo, routing.order)
    dims = tuple(int(n) for n in topo.dims)
    wrap = tuple(bool(w) for w in topo.wrap)
    R = topo.n_routers
    nd = len(dims)
    split = routing.tie == "split"
    strides = tuple(int(np.prod(dims[k + 1:], dtype=np.int64)) for k in range(nd))
    segs = _torus_segments(topo)
    seg_index = {(s.dim, s.direction): i for i, s in enumerate(segs)}
    hist_off, off = [], 0
    for s in segs:
        hist_off.append(off)
        off += R * s.max_run
    hist_size = max(off, 1)

    # Router link l leaves router r in (dim, direction): its load is slot seg * R + r.
    slot = -np.ones(topo.n_router_links, dtype=np.int64)
    nb = np.asarray(topo.neighbor_link)
    for i, s in enumerate(segs):
        lk = nb[:, s.dim, s.direction]
        r = np.nonzero(lk >= 0)[0]
        slot[lk[r]] = i * R + r
    assert (slot >= 0).all(), "torus link not covered by a (dimension, direction) segment"
    tables: dict[str, np.ndarray] = {"slot": slot.astype(np.int32)}
    for i, s in enumerate(segs):
        tables[f"cross{i}"] = _crossing_tensor(dims[s.dim], wrap[s.dim], s.direction, routing.tie)

    def coord(r, k):
        return (r // strides[k]) % dims[k]

    def loads_from_segments(tables, per_seg):
        if not segs:
            return jnp.zeros(topo.n_router_links)
        return jnp.concatenate(per_seg)[tables["slot"]]

    def apply(tables, src, dst, weight, extra=None):
        """Router-link loads of router-level flows (one design point); see :class:`RoutingOperator`."""
        if not segs:
            loads = jnp.zeros(topo.n_router_links)
            return loads if extra is None else (loads, segment_add(extra[1], extra[0], extra[2]))
        src = src.astype(jnp.int32)
        dst = dst.astype(jnp.int32)
        idx_parts, w_parts = [], []
        done = jnp.zeros_like(src)  # sum over dims already travelled of dst_k * stride_k
        rest = src  # router id with the travelled dims still at the source's coordinates
        for k in order:
            n = dims[k]
            s = coord(src, k)
            t = coord(dst, k)
            base = rest - s * strides[k] + done  # router id of the ring position 0
            start = base + s * strides[k]  # = the current router when dim k starts
            if n == 1:
                continue
            if wrap[k] and n == 2:
                i = seg_index[(k, 0)]
                idx_parts.append(hist_off[i] + start)  # max_run 1: length index 0
                w_parts.append(jnp.where(s != t, weight, 0.0))
            elif wrap[k]:
                fwd = (t - s) % n
                bwd = (n - fwd) % n
                go_pos = fwd <= bwd
                hops = jnp.where(go_pos, fwd, bwd)
                tie = (fwd == bwd) & (fwd > 0)
                H = n // 2
                ip, ineg = seg_index[(k, 0)], seg_index[(k, 1)]
                seg_off = jnp.where(go_pos, hist_off[ip], hist_off[ineg])
                w_main = jnp.where(tie, weight * 0.5, weight) if split else weight
                idx_parts.append(seg_off + start * H + jnp.maximum(hops - 1, 0))
                w_parts.append(jnp.where(hops > 0, w_main, 0.0))
                if split and n % 2 == 0:
                    idx_parts.append(hist_off[ineg] + start * H + (H - 1))
                    w_parts.append(jnp.where(tie, weight * 0.5, 0.0))
            else:
                go_pos = t > s
                hops = jnp.abs(t - s)
                H = n - 1
                ip, ineg = seg_index[(k, 0)], seg_index[(k, 1)]
                seg_off = jnp.where(go_pos, hist_off[ip], hist_off[ineg])
                idx_parts.append(seg_off + start * H + jnp.maximum(hops - 1, 0))
                w_parts.append(jnp.where(hops > 0, weight, 0.0))
            done = done + t * strides[k]
            rest = rest - s * strides[k]
        if extra is not None:
            idx_parts.append(extra[0] + hist_size)
            w_parts.append(extra[1])
        buf = segment_add(jnp.concatenate(w_parts), jnp.concatenate(idx_parts),
                          hist_size + (0 if extra is None else extra[2]))
        hist = buf[:hist_size]
        per_seg = []
        for i, sg in enumerate(segs):
            H = sg.max_run
            h = hist[hist_off[i]: hist_off[i] + R * H].reshape(R, H)
            # covers[r, j]: bytes of runs starting at r that are longer than j hops.
            covers = jnp.flip(jnp.cumsum(jnp.flip(h, axis=1), axis=1), axis=1)
            step = 1 if sg.direction == 0 else -1
            load = jnp.zeros(dims)
            for j in range(H):
                # the link leaving x is hop j of a run that started j positions back
                load = load + jnp.roll(covers[:, j].reshape(dims), step * j, axis=sg.dim)
            per_seg.append(load.reshape(R))
        loads = loads_from_segments(tables, per_seg)
        return loads if extra is None else (loads, buf[hist_size:])

    def apply_dense(tables, u, v):
        """Router-link loads of the demand ``u[s] v[d]`` over ordered router pairs (one design point)."""
        if not segs:
            return jnp.zeros(topo.n_router_links)
        U = u.reshape(dims)
        V = v.reshape(dims)
        per_seg = []
        for i, sg in enumerate(segs):
            k = sg.dim
            pos = order.index(k)
            before, after = order[:pos], order[pos + 1:]
            Uk = U.sum(axis=tuple(before), keepdims=True) if before else U
            Vk = V.sum(axis=tuple(after), keepdims=True) if after else V
            Uk = jnp.moveaxis(Uk, k, -1)
            Vk = jnp.moveaxis(Vk, k, -1)
            M = tables[f"cross{i}"]
            W = jnp.einsum("...t,xst->...xs", Vk, M)  # [.. after dims 1 .., x, s]
            load = (W * Uk[..., None, :]).sum(-1)  # broadcast over the before/after dims
            per_seg.append(jnp.moveaxis(load, -1, k).reshape(R))
        return loads_from_segments(tables, per_seg)

    nnz = int(sum(t.size for t in tables.values()))
    return RoutingOperator(routing, topo.name, tables, apply, apply_dense, nnz)


@dataclass
class DorConfig:
    """Torus dimension-order routing: ``order`` as_given | longest_first | [permutation], ``tie`` split | positive."""

    kind: str = "dor"
    order: Any = "as_given"
    tie: str = "split"


def _from_config(cfg: DorConfig) -> DorRouting:
    order = cfg.order if isinstance(cfg.order, (str, int, float, bool)) or cfg.order is None else list(cfg.order)
    return dor(order=order, tie=cfg.tie)


DOR = RoutingKind("dor", DorConfig, _from_config, topologies=("torus",), operator=build_operator)
