"""A move's scores: the norm that breaks ties between equal times, a phase's time and norm from its router and
node links' parts, and the router links of a move scored sparsely (:class:`SparseMoves`, the part of
:class:`~evaluator.mapping._moves.MoveEvaluator` that scores a compact listing move after move, touching only the
links it lists)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["COMPILER_OPTIONS", "LANES", "Q_NORM", "TOP_PREFIX", "SparseMoves", "first_untouched", "lane_sum",
           "move_jit", "phase_scores"]

COMPILER_OPTIONS: dict[str, object] = {}
"""XLA options the move scorers (:func:`move_jit`) are compiled with: none, XLA's defaults, unless a caller sets
some before building a :class:`~evaluator.mapping._moves.MoveEvaluator` (the test suite: one mapping module's
searches at LLVM's ``-O1`` where the rest of the suite compiles at ``-O0``, tests/conftest.py)."""


def move_jit(f):
    """``jax.jit(f)`` with :data:`COMPILER_OPTIONS` as they are when it is called."""
    return jax.jit(f, compiler_options=dict(COMPILER_OPTIONS) or None)

Q_NORM = 16
"""Exponent of the secondary score (the ``q``-norm of the link times of every phase)."""

TOP_PREFIX = 32
"""Links of the batch's top list a sparsely scored move reads first for its largest untouched time
(:func:`first_untouched`); the whole list only where the move touches all of them."""


LANES = 64
"""Partial sums :func:`lane_sum` keeps side by side."""


def lane_sum(x):
    """The sum of a vector ``x`` by elementwise adds only: its elements as rows of ``LANES``, the rows added
    pairwise half onto half (a row left over by an odd count added to the first), the last ``n % LANES`` elements
    (zeros after them) added to that row, then its lanes halved the same way. XLA:CPU vectorises elementwise adds,
    where its reduce adds one element after another, each waiting for the last; and no reduce is left whose order
    XLA may choose by the shape of the batch around it, so a move's sum does not depend on its place in a batch or
    on the batch's size (the order of the additions depends on the length alone; fewer than ``LANES`` elements:
    zeros after them)."""
    n = x.shape[0]
    rows = n // LANES
    v = jnp.zeros(LANES, x.dtype)
    if rows:
        y = x[:rows * LANES].reshape(rows, LANES)
        while y.shape[0] > 1:
            h = y.shape[0] // 2
            z = y[:h] + y[h:2 * h]
            if y.shape[0] % 2:
                z = jnp.concatenate([z[:1] + y[2 * h:], z[1:]])
            y = z
        v = y[0]
    if n > rows * LANES:
        v = v + jnp.pad(x[rows * LANES:], (0, LANES - (n - rows * LANES)))
    while v.shape[0] > 1:
        h = v.shape[0] // 2
        v = v[:h] + v[h:]
    return v[0]


def first_untouched(delta_at, top_v, top_i):
    """The largest time among links of no change (``delta_at(links)`` 0) from the descending top list ``top_v``
    (its links ``top_i``; longer than the move's listing, so one is untouched): the first untouched of its first
    :data:`TOP_PREFIX` entries, else of the whole list."""
    def among(n):
        return jnp.where(delta_at(top_i[:n]) == 0.0, top_v[:n], -jnp.inf).max()

    n = min(TOP_PREFIX, top_i.shape[0])
    head = among(n)
    if n == top_i.shape[0]:
        return head
    return jax.lax.cond(head > -jnp.inf, lambda: head, lambda: among(top_i.shape[0]))


def phase_scores(t_r, q_r, t_n, q_n, ref):
    """One phase's ``(time, norm)`` from its router links' and node links' largest times and norm terms."""
    return jnp.maximum(t_r, t_n), ref * (q_r + q_n) ** (1.0 / Q_NORM)


class SparseMoves:
    """The part of :class:`~evaluator.mapping._moves.MoveEvaluator` that scores a call's moves sparsely (where its
    ``_sparse(size)`` says so; its ``table``, ``topology`` and ``_state`` are the evaluator's): the listings and
    node-link parts of a step's moves vectorised, then each move's router links on a buffer the size of the router
    links that every move leaves as it found it, so that a move costs its listing's entries."""

    def _sparse_batch(self, dev, bs, loads, a, b, step: int, one):
        """A call's moves scored sparsely: per step of ``step`` moves, their listings and node-link parts
        (``one``, vmapped), then the router links move after move (:meth:`_sparse_finish`, a scan carrying the
        buffer each move leaves as it found it)."""
        n_rl, P = int(self.topology.n_router_links), self.table.n_phases
        buf = jnp.zeros((n_rl, P), loads.dtype)

        def chunk(buf, ab):
            part = jax.vmap(one)(*ab)
            return jax.lax.scan(lambda bf, pt: self._sparse_finish(dev, bs, loads, bf, pt), buf, part)

        n, k = a.shape
        m = n // step * step
        outs = []
        if m:
            buf, out = jax.lax.scan(chunk, buf, (a[:m].reshape(-1, step, k), b[:m].reshape(-1, step, k)))
            outs.append(tuple(x.reshape(m) for x in out))
        if m < n:
            outs.append(chunk(buf, (a[m:], b[m:]))[1])
        return tuple(jnp.concatenate(x) for x in zip(*outs)) if len(outs) > 1 else outs[0]

    def _sparse_finish(self, dev, bs, loads, buf, part):
        """The scores of ONE move listed compactly and scored sparsely (:meth:`_sparse`), from its node links' part
        (:meth:`_move_fn`): its entries are added to ``buf`` (per router link and phase; zero where no move is being
        scored), read back at its links and at the batch's top list, and set to zero again, so that a move costs its
        entries, not the router links (three scatters and gathers of its entries: 2026-12-01, one loaded core, the
        power law's moves of 256 entries 17.5 -> 14.8 us against five, which also marked each link's last entry
        to count its norm term once). The zero it is set back to is computed from the move's reads of it: with a
        constant, nothing ordered the reset after the reads, and XLA copied the buffer (every router link) twice
        per move to keep them apart; in place, the power law's moves on the 16x8x8 torus (6,144 router links) at
        level 8 take 4.8-5.4 us instead of 7.5-8.1 us, the batch of 16,384 moves 62,000-70,000 moves/s instead of
        54,000-62,000 on one thread (interleaved in one process, 2026-12-01). Returns ``(buf, (time, norm,
        entries needed))``."""
        P = self.table.n_phases
        n_rl = int(self.topology.n_router_links)
        ref, r_sum, r_top_v, r_top_i = bs[0], *bs[4:]
        t_n, q_n, c_links, c_vals, need = part
        c_at = jnp.minimum(c_links, n_rl - 1)
        c_on = c_links < n_rl
        # one scatter of the entries' bytes (in the entries' order: the dense pass's sums), one gather back: every
        # entry of a link reads the link's change
        buf = buf.at[c_links].add(c_vals, mode="drop")
        got = buf[c_at]
        # a link whose load the move leaves as it was (change 0) keeps its time: the top list's first such link is
        # the largest untouched time (the list holds more links than the move touches)
        untouched = [first_untouched(lambda i, p=p: buf[i, p], r_top_v[p], r_top_i[p]) for p in range(P)]
        # set back to a zero computed from the reads of the buffer (the smaller of 0 and a sum of absolute values,
        # finite or +inf: exactly 0), so that XLA sees the reads done before it and updates the buffer in place
        zero = jnp.minimum(jnp.abs(got[0, 0]) + sum(jnp.abs(u) for u in untouched), 0.0)
        buf = buf.at[c_links].set(zero, mode="drop")
        c_inv = dev["inv_cap"][c_at]
        t_out, q_out = [], []
        for p in range(P):
            inv_ref = 1.0 / ref[p]
            old = loads[p, c_at]
            d = got[:, p]
            u_old, u_new = old * c_inv, (old + d) * c_inv  # as the dense pass rounds them
            t_r = jnp.maximum(jnp.where(c_on, u_new, -jnp.inf).max(), untouched[p])
            # each link's norm term shared among its entries by their bytes (they sum to its change), so that
            # the link counts once; a link of no change adds nothing
            share = jnp.where(c_on & (d != 0.0), c_vals[:, p] / jnp.where(d != 0.0, d, 1.0), 0.0)
            q_r = r_sum[p] + (share * ((u_new * inv_ref) ** Q_NORM - (u_old * inv_ref) ** Q_NORM)).sum()
            t, q = phase_scores(t_r, jnp.maximum(q_r, 0.0), t_n[p], q_n[p], ref[p])
            t_out.append(t)
            q_out.append(q)
        t, q = (t_out[0], q_out[0]) if P == 1 else (jnp.stack(t_out).sum(), jnp.stack(q_out).sum())
        return buf, (t, q, need)
