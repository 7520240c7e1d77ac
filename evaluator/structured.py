"""Dense structured traffic: every task pair, never materialised.

A uniform all-to-all over the 49,152 nodes of Mira has 2.4 billion flows; a
flow list of that size cannot be built, let alone walked. Many dense
patterns are *rank one*: the bytes from task ``s`` to task ``d`` factorise as

    bytes(s -> d) = bytes_per_pair * src_weight[s] * dst_weight[d],  s != d.

Uniform all-to-all (all weights 1) and many-to-many (indicator weights of
the source and destination sets) are of this form. After placement the
demand between two different routers is again rank one, ``u[r] v[r']``,
and the routing operators of :mod:`evaluator.routing` map it to link loads
without a router-pair matrix: per dimension on a torus (cost ``O(routers x
n_k)``), by group aggregation on a Dragonfly (cost ``O(routers x groups)``).

:class:`DenseTraffic` is accepted wherever a :class:`evaluator.traffic.Traffic`
is (``evaluate``, ``evaluate_batch``); :meth:`DenseTraffic.to_traffic`
materialises the flow list for small cases (tests, the per-flow baseline).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .errors import positive_float, positive_int, require
from .traffic import Traffic, many_to_many_layout

__all__ = ["DenseTraffic", "all_to_all", "many_to_many", "dense"]


@dataclasses.dataclass(frozen=True, eq=False)
class DenseTraffic:
    """Rank-one dense traffic of one exchange.

    Task ``s`` sends ``bytes_per_pair * src_weight[s] * dst_weight[d]`` bytes
    to every task ``d != s``.

    Attributes
    ----------
    n_tasks
        Number of tasks.
    src_weight, dst_weight : float ndarray, shape [task]
        Non-negative weights (1 for a task that sends / receives, 0 otherwise,
        in all-to-all and many-to-many).
    bytes_per_pair
        Bytes between two tasks of weight 1.
    name
        Short label.
    """

    n_tasks: int
    src_weight: np.ndarray
    dst_weight: np.ndarray
    bytes_per_pair: float
    name: str = "dense"

    @property
    def n_flows(self) -> int:
        """Number of task pairs that exchange bytes (as a flow list would count them)."""
        s, d = self.src_weight > 0, self.dst_weight > 0
        return int(s.sum()) * int(d.sum()) - int((s & d).sum())

    @property
    def total_bytes(self) -> float:
        """Bytes sent in the exchange."""
        ws, wd = self.src_weight, self.dst_weight
        return float(self.bytes_per_pair * (ws.sum() * wd.sum() - (ws * wd).sum()))

    def sent_per_task(self) -> np.ndarray:
        """Bytes sent by every task, shape [task]."""
        return self.bytes_per_pair * self.src_weight * (self.dst_weight.sum() - self.dst_weight)

    def to_traffic(self) -> Traffic:
        """The explicit flow list (``n_flows`` flows): for small cases only."""
        require(self.n_flows <= 50_000_000, "traffic", self.name,
                f"at most 5e7 flows to materialise; this pattern has {self.n_flows}",
                "Evaluate the DenseTraffic directly instead.")
        s = np.nonzero(self.src_weight > 0)[0]
        d = np.nonzero(self.dst_weight > 0)[0]
        S, D = np.meshgrid(s, d, indexing="ij")
        S, D = S.ravel(), D.ravel()
        keep = S != D
        S, D = S[keep], D[keep]
        nb = self.bytes_per_pair * self.src_weight[S] * self.dst_weight[D]
        return Traffic(self.n_tasks, S.astype(np.int64), D.astype(np.int64), nb.astype(np.float64), self.name)


def dense(n_tasks: int, src_weight, dst_weight, bytes_per_pair: float = 1.0, name: str = "dense") -> DenseTraffic:
    """Rank-one dense traffic from weight vectors (validated)."""
    n = positive_int("traffic.n_tasks", n_tasks)
    b = positive_float("traffic.bytes_per_pair", bytes_per_pair)
    out = []
    for field, w in (("traffic.src_weight", src_weight), ("traffic.dst_weight", dst_weight)):
        w = np.broadcast_to(np.asarray(w, dtype=np.float64), (n,)).copy()
        bad = ~np.isfinite(w) | (w < 0)
        require(not bad.any(), field, float(w[bad][0]) if bad.any() else None, "finite weights >= 0")
        w.setflags(write=False)
        out.append(w)
    return DenseTraffic(n, out[0], out[1], b, name)


def all_to_all(n_tasks: int, bytes_per_pair: float = 1.0) -> DenseTraffic:
    """Uniform all-to-all: every task sends ``bytes_per_pair`` to every other task.

    The same pattern as :func:`evaluator.traffic.all_to_all`, without the
    ``n_tasks**2`` flow list.
    """
    return dense(n_tasks, 1.0, 1.0, bytes_per_pair, name="all-to-all")


def many_to_many(n_sources: int, n_destinations: int, bytes_per_pair: float = 1.0, mode: str = "disjoint",
                 overlap: int | None = None, n_tasks: int | None = None) -> DenseTraffic:
    """Many-to-many (Bui et al.) as dense traffic; same arguments and task layout as
    :func:`evaluator.traffic.many_to_many`."""
    m, n, start, nt = many_to_many_layout(n_sources, n_destinations, mode, overlap, n_tasks)
    ws = np.zeros(nt)
    wd = np.zeros(nt)
    ws[:m] = 1.0
    wd[start:start + n] = 1.0
    t = dense(nt, ws, wd, bytes_per_pair)
    return dataclasses.replace(t, name=f"many-to-many {m}->{n} ({mode})")
