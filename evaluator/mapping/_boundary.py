"""The boundary part of the mapping bound (:func:`boundary_bound`): a set of routers and the bytes that cross its edge.

Take a set ``C`` of routers. A mapping puts some ``k`` of the job's ``n``
tasks on the available nodes of ``C``. Every route from a node of ``C`` to a
node outside it crosses a router link between ``C`` and the rest, and only
the links that some route between two available nodes loads (the routing's
support) can carry it. So the bytes between the ``k`` tasks inside and the
``n - k`` outside, both ways, are spread over those boundary links, and the
busiest of them takes at least their sum over the links' total capacity.
Each phase's busiest link takes at least its own share of that boundary,
and the phases' times add, so the bytes are summed over phases first.

The bytes between any ``k`` tasks and the rest are at least ``lambda_2 k (n -
k) / n``, where ``lambda_2`` is the second smallest eigenvalue of the
Laplacian of the traffic graph (bytes between two tasks, both ways summed;
Fiedler's algebraic connectivity): the Laplacian's quadratic form at the
centred indicator of the ``k`` tasks is exactly those bytes, and the
indicator's squared norm is ``k (n - k) / n``. ``k`` can be anything the
available nodes allow (``tasks_per_node`` per node inside, the rest outside);
``k (n - k)`` is concave, so its least value is at an end of that range.

The sets tried are windows of consecutive values of each router coordinate,
taken cyclically: on a torus the slabs of every width and offset along each
dimension (a half of the ring cuts two links per ring), on a Dragonfly runs
of consecutive groups, on a fat tree runs of a coordinate's digits. Each
set gives a bound; the largest is taken. A structured pattern whose graph
is well connected across its groups (a pencil FFT's two transposes: a
product of cliques, whose ``lambda_2`` is large) has no mapping that keeps
its bytes off the machine's bisection, which the hop-bytes parts, averaging
over every link, do not see.
"""

from __future__ import annotations

import numpy as np

_MAX_SETS = 4096
"""Windows per coordinate above which only some widths are tried (powers of two and the half; still a bound)."""

_WORK = 1 << 24
"""Router links times sets evaluated at once."""


def _windows(col: np.ndarray) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """The cyclic windows of consecutive distinct values of one coordinate ``col`` ([router]): ``(values, m,
    starts, widths)``, a window holding the routers whose value's rank ``r`` has ``(r - start) % m < width``
    (a window and its complement have one boundary: widths up to half)."""
    vals = np.unique(col)
    m = vals.size
    half = m // 2
    widths = range(1, half + 1)
    if m * half > _MAX_SETS:
        widths = sorted({w for w in (1 << np.arange(int(np.log2(max(half, 1))) + 1)).tolist() if w <= half} | {half})
    pairs = [(s, w) for w in widths for s in range(m // 2 if 2 * w == m else m)]
    st, wd = (np.asarray([p[i] for p in pairs], np.int64).reshape(-1) for i in (0, 1))
    return vals, m, st, wd


def boundary_bound(topology, nodes: np.ndarray, tpn: int, n: int, lambda_2: float, support: np.ndarray,
                   cap: np.ndarray) -> tuple[str, float] | None:
    """``(name, seconds)`` of the best boundary bound over the windows of every router coordinate, or None
    (nothing to bound: one task, a disconnected traffic graph, no window).

    ``nodes``: the available nodes; ``tpn``: tasks per node at most; ``n``: tasks; ``lambda_2``: the traffic
    graph's algebraic connectivity (both ways summed, a lower estimate); ``support``: ``[router_link]`` the
    links that some route between available nodes loads; ``cap``: ``[router_link]`` their capacities."""
    if n < 2 or lambda_2 <= 0:
        return None
    n_rl = int(topology.n_router_links)
    src, dst = np.asarray(topology.link_src)[:n_rl], np.asarray(topology.link_dst)[:n_rl]
    w_cap = np.where(support, np.asarray(cap, float), 0.0)
    host = np.asarray(topology.node_router, np.int64)[nodes]
    coords = np.asarray(topology.router_coords)
    best = (0.0, "")
    step = max(1, _WORK // max(n_rl, coords.shape[0], 1))
    for c in range(coords.shape[1]):
        vals, m, starts, widths = _windows(coords[:, c])
        rank = np.searchsorted(vals, coords[:, c])
        for lo in range(0, starts.size, step):
            M = (rank[None] - starts[lo:lo + step, None]) % m < widths[lo:lo + step, None]
            crossing = (M[:, src] != M[:, dst]).astype(float) @ w_cap
            inside = M[:, host].sum(axis=1) * tpn
            k_lo = np.maximum(0, n - (host.size * tpn - inside))
            k_hi = np.minimum(n, inside)
            least = np.minimum(k_lo * (n - k_lo), k_hi * (n - k_hi)) / n
            value = np.where(crossing > 0, lambda_2 * least / np.where(crossing > 0, crossing, 1.0), 0.0)
            i = int(np.argmax(value))
            if value[i] > best[0]:
                s, w = int(starts[lo + i]), int(widths[lo + i])
                best = (float(value[i]), f"coordinate {c} in {int(vals[s])}..{int(vals[(s + w - 1) % m])}")
    return (f"boundary:{best[1]}", best[0]) if best[0] > 0 else None
