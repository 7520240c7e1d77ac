"""A lower bound on every mapping of issue 37's held-out pencil FFT row with four tasks a node on the 16x4x4 prism
of the 16x8x8 torus: a certificate for that one row, which ``evaluator bench --only mapping`` computes beside the
search's own bound (:data:`evaluator.bench.mapping.HELDOUT_CERTIFICATES`, :func:`certified_seconds`) and counts in
the row's verdict; docs/mapping.md states what it prints and tests/test_claims_prism_pencil_bound.py reruns it.

Usage (from the repository root)::

    python -m evaluator.bench.prism_pencil_bound

The row: 32 x 32 ranks (the bench's pencil FFT, ``evaluator.bench.mapping._heldout_traffic``), 8,192 B between
every two ranks of a row in the first transpose and of a column in the second, on the 256 nodes x in 0..15 (the
whole ring), y, z in 0..3 (lines: DOR's shortest paths between them stay inside), four tasks a node, DOR, 2 GB/s
links. A flow of 8,192 B on one link takes 4.096 us; the time is the rows' phase plus the columns' phase, each its
busiest link. The argument, every step a count of flows over a cut of links that they must cross:

* **x halves.** For each of the 8 halves ``x in [s, s + 8)`` (512 tasks), the rows' flows leaving it, ``c_r(s) =
  sum over rows of r (32 - r)`` (``r``: the row's tasks inside), leave over 32 links (16 rings, two boundaries, each
  flow once: its shortest path does not come back), so the rows' phase takes at least ``c_r(s) / 32`` flows; the
  same for the columns.
* **Gale-Ryser.** The half is a 32 x 32 0/1 matrix of 512 ones (rows by columns); its column sums are majorized by
  the conjugate of its row sums, so ``c_c(s) >= f(c_r(s))``: the least column crossing of any row profile with that
  row crossing (a dynamic programme over sorted row profiles, checked against every matrix on 4 x 4).
* **Cases** on ``m_r = max_s c_r(s)`` and ``m_c`` likewise. With ``m_r`` in ``[K1, K2]``, at that half the time is at
  least ``(m_r + f(m_r)) / 32``; with both above ``K2``, ``2 K2 / 32``; with ``m_r`` below ``K1`` (the rows almost
  never cross a half) the columns' phase takes at least ``F(m_r) / 32`` (``F``: the least ``f`` up to ``m_r``) and
  the rows' phase at least its y and z lines' load: each of the 6 cuts of the y and z lines is crossed over 64 links,
  and the rows' crossings summed over the 6 cuts are the rows' y-z distances, at least what every row's plane pieces
  allow (the largest piece alone, the pieces' yz positions holding at most four tasks of a piece each, and pairs of
  two pieces apart unless on one node) with their x distances (each piece sees at most two others at each ring
  distance) within the ``8 m_r`` that the halves allow. The columns likewise, by symmetry.

It prints the bound of each case and their least: no mapping of the row is faster.
"""

from __future__ import annotations

import itertools
import sys
from functools import lru_cache

import numpy as np

N = 32  # ranks per row and per column
HALF = 512  # tasks in an x half
FLOW_US = 8192 / 2e9 * 1e6  # one flow of 8,192 B on a 2 GB/s link (us)
X_LINKS, YZ_LINKS, YZ_CUTS = 32, 64, 6
K1, K2 = 1023, 4400  # the cases' thresholds on the largest row (or column) crossing of an x half


def gale_ryser(c_max: int = K2, n: int = N, ones: int = HALF) -> np.ndarray:
    """``G[c]``: the largest sum of squared column sums (the conjugate's, ``sum (2i - 1) r_i`` of the row sums sorted
    descending) over the row profiles of ``ones`` ones in ``n`` rows of ``n`` whose row crossing ``sum r (n - r)`` is
    ``c`` (-1: none), ``c <= c_max``; then ``f(c) = n * ones - G[c]`` is the least column crossing."""
    N, HALF = n, ones  # noqa: N806 (the module's sizes by default)
    if n * ones > np.iinfo(np.int16).max:
        raise ValueError(f"gale_ryser: n * ones = {n * ones} exceeds the int16 sums (at most 32,767)")
    size = c_max + 1
    cur = np.full((N + 1, HALF + 1, size), -1, np.int16)  # [last row sum, ones so far, crossing so far]; sums of
    # squared column sums are at most n * ones (16,384 here): int16 holds them
    cur[N, 0, 0] = 0
    for i in range(1, N + 1):
        best = np.maximum.accumulate(cur[::-1], axis=0)[::-1]  # rows are sorted: this row's sum <= the last one
        new = np.full_like(cur, -1)
        for r in range(N + 1):
            cr = r * (N - r)
            if cr >= size:
                continue
            src = best[r, :HALF + 1 - r, :size - cr]
            new[r, r:, cr:] = np.where(src >= 0, src + np.int16((2 * i - 1) * r), np.int16(-1))  # this row sums r
        cur = new
    return cur[:, HALF, :].max(axis=0)


def _margins(p: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """The possible margins (4 sums, each at most ``4 cap``) of ``p`` tasks on one line of the 4 x 4 yz positions,
    sorted by their distance sum, and those sums."""
    v = np.array([m for m in itertools.product(range(min(p, 4 * cap) + 1), repeat=4) if sum(m) == p], np.int64)
    w = sum(v[:, a] * v[:, b] * (b - a) for a in range(4) for b in range(a + 1, 4))
    order = np.argsort(w, kind="stable")
    return v[order], w[order]


@lru_cache(None)
def yz_wiener(p: int, cap: int) -> int:
    """The least y-z distance sum (over task pairs) of ``p`` tasks on the 4 x 4 yz positions, at most ``cap`` a
    position: the y margins' distance sum plus the z margins'. A 4 x 4 matrix of entries in ``[0, cap]`` with row
    sums ``r`` and column sums ``c`` exists iff every ``k`` rows fit (max-flow min-cut): the ``k`` largest of ``r``
    add up to at most ``sum_j min(c_j, cap k)``, for ``k = 1..4``."""
    v, w = _margins(p, cap)
    top = np.cumsum(-np.sort(-v, axis=1), axis=1)  # [margin, k - 1]: its k largest entries' sum
    room = np.stack([np.minimum(v, cap * k).sum(axis=1) for k in range(1, 5)], axis=1)
    best = None
    for i in range(len(v)):  # y margins by distance sum; for each the z margin of least sum that fits
        if best is not None and w[i] >= best:
            break
        ok = np.flatnonzero((top[i] <= room).all(axis=1))
        if ok.size and (best is None or w[i] + w[ok[0]] < best):
            best = int(w[i] + w[ok[0]])
    return best


def _partitions(n: int, largest: int):
    if n == 0:
        yield ()
        return
    for k in range(min(n, largest), 0, -1):
        for rest in _partitions(n - k, k):
            yield (k,) + rest


@lru_cache(None)
def _piece_wiener() -> tuple[int, ...]:
    """:func:`yz_wiener` of every piece size of a row (0..32 tasks), four a position (one plane's node)."""
    return tuple(yz_wiener(p, 4) for p in range(N + 1))


def piece_bounds(part: tuple[int, ...]) -> tuple[int, int]:
    """``(x, w)``: lower bounds on the x distance sum and the y-z distance sum (over task pairs) of a row whose plane
    pieces hold ``part`` tasks (descending, one piece a plane): each piece sees at most two others at each ring
    distance; the y-z sum is at least the largest piece's, at least that of 32 tasks on positions holding at most
    four of each piece, and at least the pieces' own sums plus one for every pair of two pieces but the at most four
    a task has on its own node's position."""
    w4 = _piece_wiener()
    x = sum(ni * sum(nj * (k // 2 + 1) for k, nj in enumerate(sorted(part[:i] + part[i + 1:], reverse=True)))
            for i, ni in enumerate(part)) // 2
    cap = min(N, sum(min(4, n) for n in part))
    cross = sum(part[i] * part[j] - 4 * min(part[i], part[j])
                for i in range(len(part)) for j in range(i + 1, len(part)))
    return x, max(w4[part[0]], yz_wiener(N, max(cap, 4)), sum(w4[n] for n in part) + cross)


def row_options() -> list[tuple[int, int]]:
    """The Pareto front of :func:`piece_bounds` over every way of splitting a row into plane pieces."""
    opts: dict[int, int] = {}
    for part in _partitions(N, N):
        if len(part) > 16:
            continue
        x, w = piece_bounds(part)
        opts[x] = min(opts.get(x, w), w)
    front, least = [], None
    for x in sorted(opts):
        if least is None or opts[x] < least:
            front.append((x, opts[x]))
            least = opts[x]
    return front


def least_yz(front, budget: int) -> np.ndarray:
    """``L[b]``: the least total y-z distance sum of 32 rows whose x distance sums add up to at most ``b``."""
    big = 1 << 40
    best = np.full(budget + 1, big, np.int64)
    best[0] = 0
    for _ in range(N):
        new = np.full(budget + 1, big, np.int64)
        for x, w in front:
            if x <= budget:
                new[x:] = np.minimum(new[x:], best[:budget + 1 - x] + w)
        best = new
    return np.minimum.accumulate(best)


@lru_cache(None)
def bound() -> dict:
    """The three cases' bounds (us) and their least (computed once a process; do not change the dict)."""
    g = gale_ryser()
    c = np.arange(g.size)
    f = np.where(g >= 0, N * HALF - g.astype(np.int64), 1 << 40)
    h = c + f
    case_a = float(h[K1:].min()) / X_LINKS * FLOW_US
    case_c = 2 * K2 / X_LINKS * FLOW_US
    lows = least_yz(row_options(), 8 * K1)
    F = np.minimum.accumulate(f)
    case_b = min(max(m / X_LINKS, lows[8 * m] / (YZ_CUTS * YZ_LINKS)) + F[m] / X_LINKS for m in range(K1)) * FLOW_US
    return {"a": case_a, "b": float(case_b), "c": case_c, "bound": min(case_a, float(case_b), case_c)}


DIMS, BOX, TASKS_PER_NODE = (16, 8, 8), (16, 4, 4), 4  # the row: the torus, the job's box at its origin, tasks a node


def _groups(phase) -> np.ndarray | None:
    """Each task's group (0..31) in ``phase`` when its flows are every ordered pair of :data:`N` disjoint groups of
    :data:`N` tasks, 8,192 B a flow; else None."""
    f = phase.to_flows()
    src, dst, nb = np.asarray(f.src), np.asarray(f.dst), np.asarray(f.nbytes, dtype=np.float64)
    n = int(phase.n_tasks)
    if n != N * N or src.size != n * (N - 1) or not np.all(nb == 8192.0) or np.any(src == dst):
        return None
    if np.unique(src.astype(np.int64) * n + dst).size != src.size:  # a pair twice
        return None
    if not np.array_equal(np.bincount(src, minlength=n), np.full(n, N - 1)):
        return None
    partners = dst[np.argsort(src, kind="stable")].reshape(n, N - 1)
    least = np.minimum(partners.min(axis=1), np.arange(n))  # the group's least task
    _, label, size = np.unique(least, return_inverse=True, return_counts=True)
    if size.size != N or not np.all(size == N) or not np.all(label[src] == label[dst]):
        return None
    return label


def applies(topology, traffic, nodes, tasks_per_node: int, routing: str) -> str:
    """Why :func:`bound` does not bound this job (``""`` when it does): the 16x8x8 torus of 2 GB/s links, the
    16x4x4 box at its origin, four tasks a node, DOR, and a traffic of two phases whose flows are every ordered pair
    of 32 groups of 32 tasks, 8,192 B each, the two phases' groups a product (one task in common)."""
    if tuple(getattr(topology, "dims", ())) != DIMS:
        return f"not the {DIMS} torus"
    cap = np.asarray(topology.capacity)[: topology.n_router_links]
    if not np.all(cap == 2e9):
        return "router links not all 2 GB/s"
    box = np.ravel_multi_index(tuple(np.indices(BOX).reshape(3, -1)), DIMS)
    if not np.array_equal(np.sort(np.asarray(nodes)), np.sort(box)) or tasks_per_node != TASKS_PER_NODE:
        return f"not {TASKS_PER_NODE} tasks a node on the {BOX} box at the origin"
    if str(routing) != "dor":
        return "not DOR"
    phases = getattr(traffic, "phases", None)
    if phases is None or len(phases) != 2:
        return "not two phases"
    rows, cols = (_groups(p) for p in phases)
    if rows is None or cols is None:
        return "a phase is not 32 all-to-alls of 32 tasks, 8,192 B a flow"
    if np.unique(rows * N + cols).size != N * N:
        return "the phases' groups are not a product"
    return ""


def certified_seconds(topology, traffic, nodes, tasks_per_node: int, routing: str) -> tuple[float, str]:
    """``(seconds, why not)``: :func:`bound` in seconds where :func:`applies` (``why not`` empty), else NaN and
    why."""
    why = applies(topology, traffic, nodes, tasks_per_node, routing)
    return (float("nan"), why) if why else (bound()["bound"] * 1e-6, "")


def report(b: dict) -> list[str]:
    """The lines :func:`main` prints for :func:`bound`'s ``b``."""
    return [f"largest x-half row crossing in [{K1:,}, {K2:,}] pairs: at least {b['a']:.1f} us",
            f"rows and columns both above {K2:,}: at least {b['c']:.1f} us",
            f"rows (or columns) below {K1:,}: at least {b['b']:.1f} us",
            f"every mapping of the row: at least {b['bound']:.1f} us"]


def main(argv: list[str]) -> int:
    if argv:
        print(f"usage: python -m evaluator.bench.prism_pencil_bound (no arguments; given: {' '.join(argv)})",
              file=sys.stderr)
        return 2
    print("\n".join(report(bound())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
