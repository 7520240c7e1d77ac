"""Allocation baselines for a traditional Dragonfly (no reconfigurable links; the job's mode is ignored).

* ``slurm_round_robin``: the round-robin, load-balancing allocation the paper
  attributes to Slurm's Dragonfly support: the job's nodes are dealt one at a
  time to the groups in turn (groups with no idle node skipped), starting at a
  cursor that moves on one group per job, so that every job spreads over as
  many groups as possible and the load stays level. Per group the lowest idle
  node ids. (Equivalently: every group gets ``min(idle, L)`` nodes for the
  largest level ``L`` that fits, the remainder one each to the groups with
  spare idle nodes in cursor order.)
* ``contiguous``: the lowest-numbered idle nodes (first fit along the node
  numbering: whole switches, then whole groups).
* ``random``: uniformly random idle nodes (NumPy ``default_rng`` of :func:`policy_seed`, a child of ``seed``
  independent of ``default_rng(seed)``, the stream the synthetic trace draws its jobs from with the same seed;
  one generator for the policy's life; :meth:`copy` copies its state).
"""

from __future__ import annotations

import numpy as np

from .._types import Int
from .base import AllocationPolicy, JobRequest, NoParams, PolicyKind

__all__ = ["SlurmRoundRobin", "Contiguous", "RandomNodes", "SLURM_ROUND_ROBIN", "CONTIGUOUS", "RANDOM", "POLICY_STREAM",
           "policy_seed"]

POLICY_STREAM = 0x706F6C69  # "poli": the spawn key of the random policy's stream


def policy_seed(seed: int) -> np.random.SeedSequence:
    """The seed of the stream the ``random`` policy draws nodes from: a child of ``seed`` (spawn key
    :data:`POLICY_STREAM`), independent of ``default_rng(seed)``, which
    :func:`~evaluator.workload.synthetic.synthetic_trace` draws the jobs' sizes and times from when a study gives
    both the same seed (until 2026-12-06 both drew the same numbers, so the trace's draws chose nodes too)."""
    return np.random.SeedSequence(int(seed), spawn_key=(POLICY_STREAM,))


class _AnyIdleNodes(AllocationPolicy):
    """A baseline: any idle nodes will do, so a request fits when enough nodes are idle and the scheduler
    reserves by counting them (``count_only``: the same reservations as placing on copies, without them)."""

    count_only = True

    def _fits(self, job: JobRequest) -> bool:
        return True                                   # any idle nodes will do


class SlurmRoundRobin(_AnyIdleNodes):
    """Round-robin over groups from a moving cursor (see the module docstring)."""

    name = "slurm_round_robin"

    def __init__(self, groups: int, nodes_per_group: int, seed: int = 0):
        super().__init__(groups, nodes_per_group, seed)
        self.cursor = 0

    def take_counts(self, n: int) -> Int[np.ndarray, "group"]:
        """Nodes per group the round-robin deal gives a job of ``n`` nodes now (needs ``n <= idle_nodes``)."""
        idle = self.idle_per_group
        s = np.sort(idle)
        # full passes: the largest level L with sum(min(idle, L)) <= n
        csum = np.concatenate([[0], np.cumsum(s)])
        g = idle.size
        lo, hi = 0, int(s[-1])
        while lo < hi:                                    # binary search on the level
            mid = (lo + hi + 1) // 2
            k = int(np.searchsorted(s, mid))              # groups with idle < mid
            if csum[k] + mid * (g - k) <= n:
                lo = mid
            else:
                hi = mid - 1
        take = np.minimum(idle, lo)
        rest = n - int(take.sum())
        order = (self.cursor + np.arange(g)) % g
        spare = order[idle[order] > lo]
        take[spare[:rest]] += 1
        return take

    def _choose(self, job: JobRequest):
        take = self.take_counts(job.nodes)
        self.cursor = (self.cursor + 1) % self.groups
        return self.first_idle(take), False


class Contiguous(_AnyIdleNodes):
    """The lowest-numbered idle nodes."""

    name = "contiguous"

    def _choose(self, job: JobRequest):
        return np.flatnonzero(self.owner < 0)[:job.nodes], False


class RandomNodes(_AnyIdleNodes):
    """Uniformly random idle nodes."""

    name = "random"

    def __init__(self, groups: int, nodes_per_group: int, seed: int = 0):
        super().__init__(groups, nodes_per_group, seed)
        self.rng = np.random.default_rng(policy_seed(self.seed))

    def _choose(self, job: JobRequest):
        return self.rng.choice(np.flatnonzero(self.owner < 0), size=job.nodes, replace=False), False


def _kind(cls: type[AllocationPolicy]) -> PolicyKind:
    """A baseline's registry entry: no parameters of its own."""
    return PolicyKind(cls.name, NoParams, lambda cfg, groups, nodes_per_group, seed: cls(groups, nodes_per_group, seed))


SLURM_ROUND_ROBIN = _kind(SlurmRoundRobin)
CONTIGUOUS = _kind(Contiguous)
RANDOM = _kind(RandomNodes)
