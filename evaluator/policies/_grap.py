"""GRAP, the group-level resource allocation policy of a reconfigurable Dragonfly (Feng et al., Algorithms 1-3).

* **Small job** (at most ``nodes_per_group`` nodes, any mode): one group, no
  switch ports. Candidates are the groups with enough idle nodes; groups that
  already hold a large job come first, then the one with the fewest idle nodes
  (ties: lowest group id). Within a group: the lowest idle node ids.
* **Large job**: only groups that hold no large job; the job takes every switch
  port of its groups (:attr:`Grap.port_owner`). Node requirements per group:

  - ``minimal_balance``: ``ceil(nodes / nodes_per_group)`` groups, the nodes
    split as evenly as possible (whole groups when ``nodes`` is a multiple of
    the group size; the paper writes ``nodes / nodes_per_group``);
  - ``custom_balance`` / ``custom``: the request's ``requirements``;

  requirements and candidate groups are sorted by size / idle nodes ascending
  and each requirement takes the first group left with enough idle nodes, each
  requirement its own group (the pseudo-code's pointer does not advance after
  a match; the text says one group per requirement);
  - ``adaptive`` (Algorithm 3): ``ceil(nodes / nodes_per_group)`` groups;
    candidates sorted by idle nodes descending, the window of that many
    consecutive candidates furthest back that still holds the job (the
    pseudo-code bounds the window by all groups, not the candidates); every
    group of the window receives nodes, from the fewest idle up (``i = en``
    down to ``st``): line 15's ``Nnodes_remain / (i - st + 1)`` in integer
    division (rounded down), capped by the group's idle nodes (lines 16-17),
    so the groups with more idle nodes take the remainder (10 nodes left for
    three groups: 3, 3, then 4). The pseudo-code's indentation puts the
    allocation (lines 18-21) inside the capped branch; the text (shares "as
    close as possible") and placing every node need it in every group, as
    here. Rounding down always places the whole job when the window holds it:
    an uncapped group takes ``q = floor(r / k)`` of the ``r`` nodes left for
    ``k`` groups, and the ``k - 1`` others, each with at least as many idle
    nodes, hold the ``r - q`` left.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._types import ConfigOf
from .base import Allocation, AllocationPolicy, JobRequest, PolicyKind

__all__ = ["Grap", "GrapConfig", "GRAP"]


@dataclasses.dataclass
class GrapConfig:
    """GRAP's own parameters: ``ports_per_group``, the optical switch ports of each group (a large job takes
    every port of its groups)."""

    ports_per_group: int = 1


class Grap(AllocationPolicy):
    """GRAP on ``groups`` groups of ``nodes_per_group`` nodes, ``ports_per_group`` switch ports each.

    ``large_owner[g]``: the large job holding group ``g`` (-1: none);
    ``port_owner[g, i]``: the job holding port ``i`` of group ``g`` (-1: none)."""

    name = "grap"
    fits_reads_nodes = False                          # _fits: idle_per_group and large_owner

    def __init__(self, groups: int, nodes_per_group: int, seed: int = 0, ports_per_group: int = 1):
        super().__init__(groups, nodes_per_group, seed)
        from ..errors import ConfigTypeError, is_int, positive_int
        if not is_int(ports_per_group):  # a wrong type is a TypeError, as for the machine (base module)
            raise ConfigTypeError("policy.ports_per_group", ports_per_group, "an integer >= 1")
        self.ports_per_group = positive_int("policy.ports_per_group", ports_per_group)
        self.large_owner = np.full(self.groups, -1, dtype=np.int64)
        self.port_owner = np.full((self.groups, self.ports_per_group), -1, dtype=np.int64)

    # ------------------------------------------------------------------ small jobs (Algorithm 1)
    def _small(self, n: int) -> np.ndarray | None:
        idle = self.idle_per_group
        ok = idle >= n
        if not ok.any():
            return None
        with_large = ok & (self.large_owner >= 0)
        pool = with_large if with_large.any() else ok
        cand = np.flatnonzero(pool)
        g = int(cand[np.argmin(idle[cand])])          # argmin: first (lowest id) of the fewest idle
        return self.idle_in_group(g)[:n]

    # ------------------------------------------------------------------ large jobs (Algorithms 2 and 3)
    def _requirements(self, job: JobRequest) -> list[int]:
        if job.mode == "minimal_balance":
            k = -(-job.nodes // self.nodes_per_group)
            q, r = divmod(job.nodes, k)
            return [q + 1] * r + [q] * (k - r)
        return [int(x) for x in job.requirements]

    def _balanced(self, reqs: list[int]) -> list[tuple[int, int]] | None:
        free = np.flatnonzero(self.large_owner < 0)
        cand = free[np.argsort(self.idle_per_group[free], kind="stable")]
        need = np.sort(np.asarray(reqs, dtype=np.int64))
        if need.size > cand.size:
            return None
        if not need.size:
            return []
        # each requirement (ascending) takes the first candidate left (ascending idle) with enough idle nodes,
        # each its own group: j[i] = max(j[i-1] + 1, first[i]), i.e. i + the running maximum of first[i] - i
        first = np.searchsorted(self.idle_per_group[cand], need, side="left")
        i = np.arange(need.size)
        j = np.maximum.accumulate(first - i) + i
        if j[-1] >= cand.size:
            return None
        return list(zip(cand[j].tolist(), need.tolist()))

    def _adaptive_window(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
        """Algorithm 3's candidates for ``n`` nodes: ``(cand, idle, win, k)``, the free groups by idle nodes
        descending (ties: lower group), their idle nodes, the idle nodes of each window of ``k`` consecutive
        candidates and ``k``; None when even the first window (the ``k`` with the most idle nodes) cannot hold
        ``n``."""
        free = np.flatnonzero(self.large_owner < 0)
        cand = free[np.argsort(-self.idle_per_group[free], kind="stable")]
        k = -(-n // self.nodes_per_group)
        if cand.size < k:
            return None
        idle = self.idle_per_group[cand]
        cs = np.concatenate(([0], np.cumsum(idle)))
        win = cs[k:] - cs[:-k]                        # win[s] = sum idle[s:s+k] (integers: exact)
        if win[0] < n:
            return None
        return cand, idle, win, k

    def _adaptive_fits(self, n: int) -> bool:
        """Whether Algorithm 3 places ``n`` nodes: a window holds them (the division of :meth:`_adaptive` then
        always places every node)."""
        return self._adaptive_window(n) is not None

    def _adaptive(self, n: int) -> list[tuple[int, int]] | None:
        """Algorithm 3's plan for ``n`` nodes, or None."""
        found = self._adaptive_window(n)
        if found is None:
            return None
        cand, idle, win, k = found
        st = int(np.flatnonzero(win >= n)[-1])        # sums fall as the window moves back: the last that holds
        out, remain = [], n
        ids, counts = cand[st:st + k].tolist(), idle[st:st + k].tolist()  # plain ints: the loop runs k times
        for left in range(k):
            i = k - 1 - left                          # the window's groups from the fewest idle nodes up
            share = min(remain // (k - left), counts[i])        # Algorithm 3, lines 15-17: divide, round down
            out.append((ids[i], share))
            remain -= share
        assert remain == 0
        return out

    def _plan(self, job: JobRequest) -> list[tuple[int, int]] | None:
        """``[(group, nodes), ...]`` of a large job, or None."""
        return self._adaptive(job.nodes) if job.mode == "adaptive" else self._balanced(self._requirements(job))

    def _choose(self, job: JobRequest) -> tuple[np.ndarray, bool] | None:
        if job.nodes <= self.nodes_per_group:
            nodes = self._small(job.nodes)
            return None if nodes is None else (nodes, False)
        plan = self._plan(job)
        if plan is None:
            return None
        gs, tk = np.array(plan, dtype=np.int64).reshape(-1, 2).T
        order = np.argsort(gs)
        return self.first_idle_of(gs[order], tk[order]), True  # the lowest idle nodes of each group, ascending

    def _fits(self, job: JobRequest) -> bool:
        if job.nodes <= self.nodes_per_group:
            return bool((self.idle_per_group >= job.nodes).any())
        if job.mode == "adaptive":
            return self._adaptive_fits(job.nodes)
        return self._plan(job) is not None

    def _after_allocate(self, alloc: Allocation) -> None:
        if alloc.large:
            g = np.asarray(alloc.groups)
            self.large_owner[g] = alloc.job_id
            self.port_owner[g, :] = alloc.job_id

    def _after_release(self, alloc: Allocation) -> None:
        if alloc.large:
            alloc.fill_groups(self.large_owner, -1)
            alloc.fill_groups(self.port_owner, -1)


def _build(cfg: ConfigOf[GrapConfig], groups: int, nodes_per_group: int, seed: int) -> Grap:
    return Grap(groups, nodes_per_group, seed, ports_per_group=cfg.ports_per_group)


GRAP = PolicyKind(Grap.name, GrapConfig, _build)
