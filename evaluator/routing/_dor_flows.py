"""DOR's per-flow link listings (:mod:`evaluator.routing._dor`): each flow's router links as a padded list
(``flow_links``) or back to back (``flow_compact``, with ``flow_count`` its entries), what the mapping search's
incremental moves score (:mod:`evaluator.mapping._moves`).

Under DOR the run in dimension ``k`` starts at the router with the destination's coordinates in the dimensions
before ``k``, the source's after. The compact listing reads every run's links from one table (``run_links``): per
(dimension, direction), every ring's links in the order a run takes them, twice round, and for a split tie's two
halves one run of a third table.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Int

__all__ = ["flow_functions"]

_CODE_LIMIT = 2 ** 31
"""The compact listing codes its runs in int32 below this (flows times entries times 2), else int64."""

_TIE_TABLE_MAX = 1 << 20
"""Most entries of one dimension's table of split ties for the compact listing (the rings times their positions
squared: 16,384 and 8,192 on a 16x8x8 torus, 65,536 a dimension on 16x16x16; built with every DOR operator, so
capped at 4 MB a dimension); above it a tie is listed as two runs."""


def _running_sum(x: Int[Array, "entry"]) -> Int[Array, "entry"]:
    """Inclusive prefix sum of a 1-D integer array (exact), as a log-depth associative scan: ``jnp.cumsum`` is a
    reduce window on XLA:CPU (see :func:`evaluator.routing._dor._prefix`); in the mapping search's compact listings
    (a few hundred to a few thousand entries a move) a ``[128, 1024]`` int32 batch took 1.5-2.0 ms by ``jnp.cumsum``
    and 0.4-0.7 ms by this scan (one loaded core)."""
    return lax.associative_scan(jnp.add, x)


def _hops(ring, s, t, split: bool):
    """``(plus, minus, tie)`` of runs from ring position ``s`` to ``t``: the hops the +1 way and the -1 way, and
    whether the run is a split tie (half a wrapped ring; both counts then the half, each with half the bytes)."""
    n = ring.n
    if not ring.wrap:
        return jnp.maximum(t - s, 0), jnp.maximum(s - t, 0), jnp.zeros_like(s, bool)
    fwd = jnp.where(t >= s, t - s, t + n - s)
    bwd = jnp.where(fwd > 0, n - fwd, 0)
    tie = (fwd == bwd) & (fwd > 0) & split
    plus = jnp.where(fwd < bwd, fwd, jnp.where(fwd == bwd, fwd, 0))  # hops the +1 way
    minus = jnp.where(bwd < fwd, bwd, jnp.where(tie, bwd, 0))
    return plus, minus, tie


def flow_functions(topo, g, coords: np.ndarray, tables: dict) -> dict:
    """The per-flow members of DOR's :class:`~evaluator.routing.base.RoutingOperator` on ``topo`` (``g``: its
    ``_Geometry``; ``coords``: every router's coordinates; ``tables``: the operator's)."""
    R, nd = g.n_routers, len(g.dims)
    flow_tables = {"neighbor": np.asarray(topo.neighbor_link, np.int64).reshape(R, 2 * nd).astype(np.int32)}
    if not g.packed_is_id:
        flow_tables["coords"] = tables["coords"]
    runs = [(k, g.rings[k]) for k in g.order if k in g.rings]
    width = sum((1 if r.direct >= 0 else 2 * r.H) for _, r in runs)
    run_meta, tie_base, flow_tables["run_links"] = _run_tables(topo, g, coords, runs)
    flow_runs = _flow_runs_fn(g, runs, run_meta, tie_base)
    return dict(flow_links=_flow_links_fn(g, runs), flow_tables=flow_tables, flow_width=max(width, 1),
                flow_count=_flow_count_fn(runs, flow_runs), flow_compact=_flow_compact_fn(runs, flow_runs))


def _run_tables(topo, g, coords: np.ndarray, runs) -> tuple[list, dict, np.ndarray]:
    """``(run_meta, tie_base, run_links)``: each (dimension, direction)'s offset in ``run_links`` and each
    dimension's tie table's."""
    R, strides, split = g.n_routers, g.strides, g.split
    # the compact listing reads every run's links from one table: per (dimension, direction), every ring's
    # links in the order a run takes them, twice round (a run starting at position s reads entries s .. s + h - 1;
    # the -1 direction's ring reflected: position s at entry n - 1 - s), rings numbered pre-major.
    run_meta, ring_tables, base = [], [], 0
    nbr_all = np.asarray(topo.neighbor_link, np.int64)  # [router, dim, 2]
    for k, ring in runs:
        n = ring.n
        firsts = np.flatnonzero(coords[:, k] == 0)  # each ring's router at position 0 (pre-major order)
        pos = np.arange(2 * n)
        for d in ((0,) if ring.direct >= 0 else (0, 1)):
            at = pos % n if d == 0 else (n - 1 - pos) % n
            ring_tables.append(nbr_all[firsts[:, None] + at[None, :] * strides[k], k, d].ravel())
            run_meta.append((k, d, base))
            base += firsts.size * 2 * n
    # A split tie's two halves read one run of a third table: per ring and start position s, the n / 2 links the +1
    # way from s, then the n / 2 links the -1 way (the order its two runs listed them in), so that every dimension
    # is one run (half the runs to count, code and place; the entries, their order and the scores unchanged). Kept
    # where the table is small (ring positions squared, times the rings); else the tie's two runs.
    tie_base = {}
    for k, ring in runs:
        n = ring.n
        if not (split and ring.wrap and ring.direct < 0 and n % 2 == 0) or (R // n) * n * n > _TIE_TABLE_MAX:
            continue
        firsts = np.flatnonzero(coords[:, k] == 0)
        half = np.arange(n // 2)
        fwd = (np.arange(n)[:, None] + half[None, :]) % n  # [start, hop]: the positions the +1 half leaves from
        bwd = (np.arange(n)[:, None] - half[None, :]) % n
        at = firsts[:, None, None] + np.concatenate([fwd, bwd], axis=1)[None, :, :] * strides[k]
        d = np.concatenate([np.zeros(n // 2, np.int64), np.ones(n // 2, np.int64)])
        ring_tables.append(nbr_all[at, k, d[None, None, :]].ravel())
        tie_base[k] = base
        base += firsts.size * n * n
    run_links = (np.concatenate(ring_tables) if ring_tables else np.zeros(1, np.int64)).astype(np.int32)
    return run_meta, tie_base, run_links


def _flow_links_fn(g, runs):
    """``flow_links`` on ``g``."""
    rings, order, strides, split, coord = g.rings, g.order, g.strides, g.split, g.coord

    def flow_links(ftables, src, dst):
        """Router links of every flow ``src -> dst`` (routers) and the fraction of its bytes on each:
        ``Int[Array, "flow K"]``, ``Float[Array, "flow K"]``, -1 and 0 where a flow has fewer (``K`` = the
        longest DOR path, both halves of a split tie counted)."""
        ps, pd = g.packed(ftables, src), g.packed(ftables, dst)
        nbr = ftables["neighbor"]
        links, fracs = [], []
        for k, ring in runs:
            n = ring.n
            s, t = coord(ps, k).astype(jnp.int32), coord(pd, k).astype(jnp.int32)
            # the dimensions travelled before k (by the routing's order, size-1 dimensions included, which have
            # no run) at the destination's coordinates, the others at the source's
            rest = sum(((coord(pd if j in order[:order.index(k)] else ps, j).astype(jnp.int32) * strides[j])
                        for j in rings if j != k), jnp.zeros_like(s))
            if ring.direct >= 0:  # a two-router ring: one link, "positive"
                links.append(jnp.where(s != t, nbr[rest + s * strides[k], 2 * k], -1)[:, None])
                fracs.append(jnp.where(s != t, 1.0, 0.0)[:, None])
                continue
            plus, minus, tie = _hops(ring, s, t, split)
            frac = jnp.where(tie, 0.5, 1.0)[:, None]
            j = jnp.arange(ring.H, dtype=jnp.int32)[None, :]
            for sign, d, hops in ((1, 0, plus), (-1, 1, minus)):
                c = (s[:, None] + sign * j) % n if ring.wrap else jnp.clip(s[:, None] + sign * j, 0, n - 1)
                on = j < hops[:, None]
                links.append(jnp.where(on, nbr[rest[:, None] + c * strides[k], 2 * k + d], -1))
                fracs.append(jnp.where(on, frac, 0.0))
        if not links:
            return jnp.full((src.shape[0], 1), -1, jnp.int32), jnp.zeros((src.shape[0], 1))
        return jnp.concatenate(links, axis=1), jnp.concatenate(fracs, axis=1)


    return flow_links


def _flow_runs_fn(g, runs, run_meta, tie_base):
    """``flow_runs`` on ``g``: per flow and run its hops, first entry and byte fraction."""
    rings, order, dims, split, coord = g.rings, g.order, g.dims, g.split, g.coord
    nd = len(dims)

    def flow_runs(ftables, src, dst):
        """Per flow and run (``[flow, Q]``; per dimension in the routing's order one run: its +1 hops, its -1 hops,
        or both halves of a split tie read from the tie table; where a dimension has no tie table, the run of +1
        hops, then of -1 hops, one of them empty but at a split tie): its hops, the entry of ``run_links`` its first
        link is at, and the fraction of the flow's bytes on it."""
        ps, pd = g.packed(ftables, src), g.packed(ftables, dst)
        hops, first, frac = [], [], []
        for k, ring in runs:
            n = ring.n
            s, t = coord(ps, k).astype(jnp.int32), coord(pd, k).astype(jnp.int32)
            # the ring's rank among the dimension's rings (pre-major): its other coordinates in the grid without k
            ring_id = sum(((coord(pd if j in order[:order.index(k)] else ps, j).astype(jnp.int32)
                            * int(np.prod([dims[i] for i in range(j + 1, nd) if i != k], dtype=np.int64)))
                           for j in rings if j != k), jnp.zeros_like(s))
            bases = [b for kk, _, b in run_meta if kk == k]
            if ring.direct >= 0:
                hops.append((s != t).astype(jnp.int32))
                first.append(bases[0] + ring_id * (2 * n) + s)
                frac.append(jnp.ones(s.shape))
                continue
            plus, minus, tie = _hops(ring, s, t, split)
            f = jnp.where(tie, 0.5, 1.0)
            p_first, m_first = bases[0] + ring_id * (2 * n) + s, bases[1] + ring_id * (2 * n) + (n - 1 - s)
            if k in tie_base:  # one run: the +1 way, the -1 way, or both halves of a tie from the tie table
                hops.append(plus + minus)
                first.append(jnp.where(tie, tie_base[k] + (ring_id * n + s) * n, jnp.where(plus > 0, p_first, m_first)))
                frac.append(f)
                continue
            hops += [plus, minus]
            first += [p_first, m_first]
            frac += [f, f]
        return tuple(jnp.stack(x, axis=1) for x in (hops, first, frac))


    return flow_runs


def _flow_count_fn(runs, flow_runs):
    """``flow_count``."""

    def flow_count(ftables, src, dst):
        """The number of router links each flow ``src -> dst`` crosses (both halves of a split tie counted):
        its entries in :func:`flow_compact`'s listing."""
        if not runs:
            return jnp.zeros(src.shape, jnp.int32)
        return flow_runs(ftables, src, dst)[0].sum(axis=1)


    return flow_count


def _flow_compact_fn(runs, flow_runs):
    """``flow_compact``."""

    def flow_compact(ftables, src, dst, weight, size: int):
        """The router links of the flows ``src -> dst``, back to back in flow order (each flow's in
        :func:`flow_links`' order), and the bytes on each of ``weight`` (``[flow, ...]``):
        ``(links [size], bytes [size, ...], needed)``; entries past ``needed`` (the flows' total,
        :func:`flow_count`) are link -1, bytes 0; when ``needed > size`` the listing is cut short (the caller
        must not use it)."""
        F = src.shape[0]
        if not runs or F == 0:
            return (jnp.full(size, -1, jnp.int32), jnp.zeros((size,) + weight.shape[1:], weight.dtype),
                    jnp.zeros((), jnp.int32))
        hops, first, frac = flow_runs(ftables, src, dst)  # [F, Q]
        Q = hops.shape[1]
        n_links = int(ftables["run_links"].shape[0])
        # Every run's entries read run_links[c + j] (c: its first link's place less its first entry) for the bytes
        # of its flow (halved at a split tie). Its (flow, c, tie) coded in one integer; the code's differences
        # from run to run added at each run's first entry, so that a cumulative sum over the entries gives every
        # entry its run's code (an empty run's difference cancels at the next run's first entry).
        h = hops.ravel()
        end = _running_sum(h)
        needed = end[-1]
        off = end - h
        bits = int(size + n_links - 1).bit_length()  # c + size in [0, 2^bits): a field of the code, read by shifts
        # and masks (XLA:CPU divides integers by a constant with a division instruction: the listing's last steps on
        # 1,024 entries took 6.9 us a move with // and %, 4.0 us with these; one loaded core)
        ctype = jnp.int64 if F << (bits + 1) >= _CODE_LIMIT else jnp.int32
        flow_of = jnp.repeat(jnp.arange(F, dtype=ctype), Q)
        tie = (frac.ravel() < 1.0).astype(ctype)
        code = (((flow_of << bits) + (first.ravel() - off + size).astype(ctype)) << 1) + tie
        diff = code - jnp.concatenate([jnp.zeros(1, ctype), code[:-1]])
        at = _running_sum(jnp.zeros(size, ctype).at[off].add(diff, mode="drop"))
        j = jnp.arange(size, dtype=ctype)
        valid = j < jnp.minimum(needed.astype(ctype), size)
        rest = at >> 1
        flow = jnp.clip(rest >> bits, 0, F - 1).astype(jnp.int32)
        link_at = jnp.clip((rest & ((1 << bits) - 1)) - size + j, 0, n_links - 1).astype(jnp.int32)
        w = weight[flow] * jnp.where(at & 1, 0.5, 1.0).reshape((size,) + (1,) * (weight.ndim - 1)).astype(weight.dtype)
        valid_w = valid.reshape((size,) + (1,) * (weight.ndim - 1))
        return jnp.where(valid, ftables["run_links"][link_at], -1), jnp.where(valid_w, w, 0.0), needed


    return flow_compact
