"""The most bytes any ``k`` tasks can exchange among themselves (:func:`max_cluster_bytes`): what one node's tasks
keep off the network at most, for the mapping bound's cluster part (:mod:`evaluator.mapping.bound`).

Exact for ``k <= 4`` where the enumeration fits (:data:`WORK`): a set's bytes are those of its connected parts,
and a connected set of 3 or 4 tasks has a spanning path or star, so every connected triple is a pair of one task's
partners, and every connected 4-set is a path ``a-b-c-d`` or a task with three partners. Above that, or where the
enumeration would take too long (hubs of hundreds of partners), an upper bound: ``W(k) <= W(k-1) + max_v top(v,
k-1)`` (any task of a ``k``-set exchanges at most its ``k - 1`` largest partner bytes with the rest), and ``W(k) <=
1/2`` the sum of the ``k`` largest ``top(v, k-1)``.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["max_cluster_bytes", "max_internal_bytes", "WORK"]

WORK = 2e7
"""Most candidate sets the exact enumeration of 3- and 4-sets looks at; above, the upper bound."""


DENSE_BYTES = 64e6
"""Largest matrix of the bytes between every two tasks kept for the enumeration's look-ups (2,828 tasks)."""


class _Pairs:
    """The traffic graph: bytes between two tasks, both ways summed (``w(i, j)``), as sorted keys for look-ups and
    as each task's partners (CSR)."""

    def __init__(self, src, dst, b, n: int):
        lo, hi = np.minimum(src, dst), np.maximum(src, dst)
        keep = lo != hi
        key = lo[keep] * n + hi[keep]
        self.keys, inv = np.unique(key, return_inverse=True)
        self.vals = np.bincount(inv, weights=b[keep], minlength=self.keys.size)
        self.n = n
        i, j = self.keys // n, self.keys % n
        s = np.concatenate([i, j])
        order = np.argsort(s, kind="stable")
        self.nbr = np.concatenate([j, i])[order]
        self.wn = np.concatenate([self.vals, self.vals])[order]
        self.start = np.concatenate([[0], np.cumsum(np.bincount(s, minlength=n))])
        self.deg = np.diff(self.start)
        self.dense = None
        if 8.0 * n * n <= DENSE_BYTES:  # look-ups in a matrix (several times faster than the sorted keys)
            self.dense = np.zeros((n, n))
            self.dense[i, j] = self.vals
            self.dense[j, i] = self.vals

    def w(self, a, b) -> np.ndarray:
        """``w(a, b)`` elementwise (0 where the two exchange nothing or are the same task)."""
        if self.dense is not None:
            return self.dense[a, b]
        key = np.minimum(a, b) * self.n + np.maximum(a, b)
        at = np.minimum(np.searchsorted(self.keys, key), max(self.keys.size - 1, 0))
        hit = (self.keys.size > 0) & (self.keys[at] == key) & (a != b)
        return np.where(hit, self.vals[at] if self.keys.size else 0.0, 0.0)

    def top(self, m: int) -> np.ndarray:
        """Every task's ``m`` largest partner bytes, summed."""
        if m <= 0 or self.keys.size == 0:
            return np.zeros(self.n)
        last = self.start[:-1] + np.minimum(m, self.deg) - 1
        return np.where(self.deg > 0, self._cum[np.maximum(last, 0)], 0.0)

    @functools.cached_property
    def _cum(self) -> np.ndarray:
        """Each task's partner bytes in descending order, summed cumulatively within the task (CSR order)."""
        owner = np.repeat(np.arange(self.n), self.deg)
        ws = self.wn[np.lexsort((-self.wn, owner))]
        cum = np.concatenate([[0.0], np.cumsum(ws)])
        return cum[1:] - np.repeat(cum[self.start[:-1]], self.deg)  # less the tasks' before it

    def pairs_of(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        return self.nbr[self.start[t]:self.start[t + 1]], self.wn[self.start[t]:self.start[t + 1]]


def _exact3(g: _Pairs) -> float:
    """The most bytes of a connected triple: a task and two of its partners."""
    best = 0.0
    for j in np.flatnonzero(g.deg >= 2):
        nb, wn = g.pairs_of(j)
        a, c = np.triu_indices(nb.size, 1)
        best = max(best, float((wn[a] + wn[c] + g.w(nb[a], nb[c])).max()))
    return best


def _exact4(g: _Pairs) -> float:
    """The most bytes of a connected 4-set: a task and three of its partners (stars), or a path ``a-b-c-d``."""
    best = 0.0
    for j in np.flatnonzero(g.deg >= 3):  # stars: j and partners x < y < z, one x at a time
        nb, wn = g.pairs_of(j)
        m = nb.size
        P = g.w(nb[:, None], nb[None, :])  # [m, m] bytes between two of j's partners
        if m <= 64:  # every triple x < y < z at once
            x, y, z = np.meshgrid(np.arange(m), np.arange(m), np.arange(m), indexing="ij", sparse=True)
            tot = wn[x] + wn[y] + wn[z] + P[x, y] + P[x, z] + P[y, z]
            best = max(best, float(np.where((x < y) & (y < z), tot, -np.inf).max()))
            continue
        for x in range(m - 2):
            u = wn + P[x]  # y's bytes with j and with x
            tot = u[x + 1:, None] + u[None, x + 1:] + P[x + 1:, x + 1:]
            tot = np.where(np.triu(np.ones(tot.shape, bool), 1), tot, -np.inf)
            best = max(best, wn[x] + float(tot.max()))
    for b_ in np.flatnonzero(g.deg >= 1):  # paths a-b-c-d: b, its partners c, theirs d, and b's partners a
        nc, wc = g.pairs_of(int(b_))
        lens = g.deg[nc]
        idx = np.concatenate([np.arange(g.start[c], g.start[c + 1]) for c in nc])
        d, wcd = g.nbr[idx], g.wn[idx]
        c, wbc = np.repeat(nc, lens), np.repeat(wc, lens)
        ok_cd = d != b_
        d, wcd, c, wbc = d[ok_cd], wcd[ok_cd], c[ok_cd], wbc[ok_cd]
        if not d.size:
            continue
        base = wbc + wcd + g.w(np.full_like(d, b_), d)
        step = max(1, int(1e6 // d.size))
        for lo in range(0, nc.size, step):  # b's partners a, a few at a time
            a, wa = nc[lo:lo + step, None], wc[lo:lo + step, None]
            tot = base[None, :] + wa + g.w(a, c[None, :]) + g.w(a, d[None, :])
            tot = np.where((a != c[None, :]) & (a != d[None, :]), tot, -np.inf)
            best = max(best, float(tot.max()))
    return best


def _two_pairs(g: _Pairs) -> float:
    """The most bytes of two pairs of tasks with no task in common (a 4-set in two parts): each pair with the
    heaviest pair disjoint from it, which is among the ``deg(i) + deg(j) + 1`` heaviest of all."""
    order = np.argsort(g.vals)[::-1]
    i, j, v = g.keys[order] // g.n, g.keys[order] % g.n, g.vals[order]
    K = min(v.size, 2 * int(g.deg.max()) + 2)
    best = 0.0
    for lo in range(0, v.size, max(1, int(1e6 // K))):
        a, b_ = i[lo:lo + int(1e6 // K) or 1, None], j[lo:lo + int(1e6 // K) or 1, None]
        apart = (a != i[None, :K]) & (a != j[None, :K]) & (b_ != i[None, :K]) & (b_ != j[None, :K])
        other = np.where(apart, v[None, :K], -np.inf).max(axis=1)
        best = max(best, float((v[lo:lo + a.shape[0]] + other).max()))
    return best


def max_cluster_bytes(src, dst, b, n: int, k: int, work: float = WORK) -> float:
    """An upper bound on the bytes of the flows ``src -> dst`` (``b`` bytes; tasks ``0 .. n-1``) between any ``k``
    tasks (both ways; a flow of a task to itself left out): exact for ``k <= 4`` where the enumeration takes at
    most ``work`` candidate sets (see the module's docstring)."""
    return _cluster_bytes(src, dst, b, n, k, work)[min(max(int(k), 1), int(n))]


def max_internal_bytes(src, dst, b, n: int, k: int, nodes: int, work: float = WORK) -> float:
    """An upper bound on the bytes of the flows ``src -> dst`` that stay on a node in any mapping of the ``n`` tasks
    onto ``nodes`` nodes with at most ``k`` tasks a node: the nodes holding ``c_u`` tasks keep at most ``sum_u
    W(c_u)`` (:func:`max_cluster_bytes`), which is at most ``n`` times the densest ``W(c) / c`` and at most the
    nodes that hold two tasks or more (``min(nodes, n // 2)``) times the largest ``W(c)``."""
    W = _cluster_bytes(src, dst, b, n, k, work)
    if max(W) < 2:  # one task a node: none stays
        return 0.0
    dense = max(W[c] / c for c in W if c > 1)
    return min(n * dense, min(int(nodes), int(n) // 2) * max(W.values()))


def _cluster_bytes(src, dst, b, n: int, k: int, work: float) -> dict[int, float]:
    """``{c: W(c)}`` for ``c = 1 .. min(k, n)``: upper bounds on the bytes between any ``c`` tasks."""
    src, dst, b = (np.asarray(x) for x in (src, dst, b))
    k = min(int(k), int(n))
    if k <= 1 or src.size == 0:
        return {c: 0.0 for c in range(1, max(k, 1) + 1)}
    g = _Pairs(src.astype(np.int64), dst.astype(np.int64), b.astype(float), int(n))
    if g.keys.size == 0:
        return {c: 0.0 for c in range(1, k + 1)}
    total = float(g.vals.sum())
    tops = [np.zeros(n)] + [g.top(m) for m in range(1, k)]  # tops[m][v]: v's m largest partner bytes

    def half_sum(m: int) -> float:  # 1/2 the sum of the m largest top(v, m - 1)
        return 0.5 * float(np.sort(tops[m - 1])[::-1][:m].sum())

    W = {1: 0.0, 2: float(g.vals.max())}
    deg = g.deg.astype(float)
    for m in range(3, k + 1):
        bound = min(W[m - 1] + float(tops[m - 1].max()), half_sum(m), total)
        if m == 3 and float((deg * (deg - 1) / 2).sum()) <= work:
            bound = min(bound, max(_exact3(g), W[2]))
        elif m == 4:
            stars = float((deg * (deg - 1) * (deg - 2) / 6).sum())
            paths = 2.0 * float((deg[g.keys // n] * deg[g.keys % n]).sum())  # each middle edge both ways
            if stars + paths <= work:
                bound = min(bound, max(_exact4(g), _two_pairs(g), W[3]))  # in parts: two pairs, or a triple
        W[m] = bound
    return W
