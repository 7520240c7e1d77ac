"""The allocation-policy contract the scheduler uses, and the one policy this package owns.

Allocation policies live in :mod:`evaluator.policies` (GRAP on the RDN;
round-robin, contiguous and random on a traditional Dragonfly); the request
and allocation types are theirs (:class:`~evaluator.policies.JobRequest`,
:class:`~evaluator.policies.Allocation`). The scheduler needs only:

* a policy with ``name``, ``total_nodes``, ``idle_nodes``,
  ``allocate(request) -> Allocation | None`` (None: cannot start now;
  otherwise its nodes are busy), ``release(allocation)`` and ``copy()``;
* optionally ``fits(request) -> bool``: whether ``allocate`` would place
  the request now, without placing it (the reservation tests use it on
  copies; without it they place on the copy);
* optionally ``count_only = True`` on a policy whose only constraint is the
  number of idle nodes: the scheduler then computes reservations from node
  counts, without copies (same answers, faster).

:class:`UnrestrictedPolicy` (``"unrestricted"``) is that last kind: any idle
nodes, lowest ids first, no topology rule; with it (and speedup 1) the
simulation is plain FCFS with EASY backfilling. It is a reference for the
scheduler, not a policy of a real network, so it stays here rather than in
the :data:`evaluator.policies.KINDS` registry; :func:`make_policy` knows both.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError, ConfigTypeError
from ..policies import KINDS, Allocation, JobRequest, build_policy
from ..policies.base import PolicyBase, check_machine_size

__all__ = ["JobRequest", "Allocation", "UnrestrictedPolicy", "make_policy", "LOCAL_POLICIES", "POLICY_NAMES",
           "check_machine_size"]


class UnrestrictedPolicy(PolicyBase):
    """Any idle nodes, lowest ids first: no placement rule beyond the count (``count_only``).

    ``groups`` of an allocation are the groups (``node // nodes_per_group``)
    its nodes fall in; ``large`` is whether it spans more than one group's
    worth of nodes. Requests are checked by :class:`~evaluator.policies.base.PolicyBase`.
    """

    name = "unrestricted"
    count_only = True

    def __init__(self, groups: int, nodes_per_group: int, seed: int = 0):
        super().__init__(groups, nodes_per_group, seed)
        self._busy = np.zeros((self.groups, self.nodes_per_group), dtype=bool)
        self._group_idle = np.full(self.groups, self.nodes_per_group, dtype=np.int64)
        self._idle = self._busy.size
        self.running: dict[int, Allocation] = {}  # (a running id is refused by allocate and fits, as by every policy)

    @property
    def idle_nodes(self) -> int:
        return int(self._idle)

    def _fits(self, job: JobRequest) -> bool:
        return True                                   # any idle nodes will do

    def _allocate(self, job: JobRequest) -> Allocation | None:
        if job.id in self.running:  # (two jobs of one id were both placed, the second's release freeing either)
            raise ConfigError("job.id", job.id, "the id of no running job", "it is running already")
        if job.nodes > self._idle:
            return None
        G = self.nodes_per_group
        # the first groups (in id order) whose idle nodes cover the request; their lowest idle nodes
        cum = np.cumsum(self._group_idle)
        last = int(np.searchsorted(cum, job.nodes))
        groups = np.flatnonzero(self._group_idle[: last + 1])
        r, c = np.nonzero(~self._busy[groups])  # row-major: lowest groups, then lowest nodes, first
        r, c = r[: job.nodes], c[: job.nodes]
        self._busy[groups[r], c] = True
        self._group_idle[groups] -= np.bincount(r, minlength=groups.size)
        nodes = groups[r] * G + c
        self._idle -= int(nodes.size)
        alloc = Allocation(job.id, nodes, tuple(int(g) for g in groups), job.nodes > G, job.mode)
        self.running[job.id] = alloc
        return alloc

    def _release(self, alloc: Allocation) -> None:
        held = self.running.get(alloc.job_id)
        if held is None or not np.array_equal(held.nodes, alloc.nodes):
            raise ConfigError("alloc.job_id", alloc.job_id, "a job running on this policy's machine")
        del self.running[alloc.job_id]
        nodes = np.asarray(held.nodes)
        self._busy.reshape(-1)[nodes] = False
        self._group_idle += np.bincount(nodes // self.nodes_per_group, minlength=self.groups)
        self._idle += int(nodes.size)

    def copy(self) -> "UnrestrictedPolicy":
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._busy = self._busy.copy()
        new._group_idle = self._group_idle.copy()
        new.running = dict(self.running)
        return new


LOCAL_POLICIES = {"unrestricted": UnrestrictedPolicy}
"""Policies of this package (name -> class); every other name goes to :func:`evaluator.policies.build_policy`."""

POLICY_NAMES = tuple(LOCAL_POLICIES) + tuple(KINDS)
"""Every policy name :func:`make_policy` accepts."""


def make_policy(name: str, groups: int, nodes_per_group: int, seed: int = 0, **params):
    """A policy by name: ``"unrestricted"`` here, the others from :func:`evaluator.policies.build_policy`
    (ConfigError naming every accepted name for an unknown one)."""
    if not isinstance(name, str):
        raise ConfigTypeError("policy", name, " | ".join(POLICY_NAMES))
    if name in LOCAL_POLICIES:
        if params:
            raise ConfigError("policy.params", sorted(params), f"no parameters for policy {name!r}")
        return LOCAL_POLICIES[name](groups, nodes_per_group, seed)
    if name not in KINDS:
        from ._check import nearest

        near = nearest(name, POLICY_NAMES)
        raise ConfigError("policy", name, " | ".join(POLICY_NAMES), f"Did you mean {near!r}?" if near else None)
    return build_policy(name, groups, nodes_per_group, seed=seed, **params)
