"""Job allocation policies: which nodes (and, on a reconfigurable Dragonfly, which groups' switch ports) a job gets.

A policy holds the machine's state (which node runs which job) and answers one
request at a time. It knows the machine as ``groups`` groups of
``nodes_per_group`` nodes; node ids follow the topology numbering of DESIGN.md,
so group ``g`` holds nodes ``g * nodes_per_group ... (g + 1) * nodes_per_group - 1``
(a Dragonfly(p, a, h, g) has ``nodes_per_group = a * p``).

Interface (used by the workload simulation):

* :class:`JobRequest` ``(id, nodes, mode, requirements)``: a request; ``mode``
  is a GRAP allocation mode (:data:`MODES`), ``requirements`` the node count
  per group requirement of the custom modes (they sum to ``nodes``);
* :meth:`AllocationPolicy.allocate` returns an :class:`Allocation` and marks
  its nodes busy, or ``None`` when the job cannot start now (it may later);
  a request that can never be served (more nodes than the machine, an unknown
  mode, requirements that do not sum to the job size) raises
  :class:`~evaluator.errors.ConfigError`;
* :meth:`AllocationPolicy.release` frees an allocation;
* :meth:`AllocationPolicy.fits` says whether :meth:`allocate` would place the
  job now, without placing it (a scheduler's reservation test: same answer,
  no node arrays built);
* :meth:`AllocationPolicy.copy` is an independent copy (a scheduler's
  look-ahead for backfilling): arrays, dicts and random generators are
  copied; allocations, which are immutable, are shared.

:class:`PolicyBase` is the contract of every policy (these members and the
workload's count-only ``unrestricted``): its :meth:`~PolicyBase.allocate`,
:meth:`~PolicyBase.fits` and :meth:`~PolicyBase.release` check their argument
once (:func:`check_request`: a :class:`JobRequest` of an integer id in
``[0, 2^63)``, an integer size in ``[1, total_nodes]``, a known mode,
requirements that fit; :meth:`~PolicyBase.fits`, like ``allocate``, refuses
the id of a running job) and then call the member's ``_allocate``, ``_fits``
and ``_release`` (a release frees the policy's own record of the job); its
constructor checks the machine (positive integers; the per-node state
estimated before it is allocated, :func:`check_machine_size`). A wrong type
raises :class:`~evaluator.errors.ConfigTypeError` (a TypeError), a wrong value
:class:`~evaluator.errors.ConfigError` (a ValueError).

Each member registers a :class:`PolicyKind` in :data:`evaluator.policies.KINDS`: its name, the schema of
its own parameters (a typed dataclass: ``ports_per_group`` for GRAP, none for the baselines; the machine
size and the seed are every policy's) and its builder.
"""

from __future__ import annotations

import abc
import copy as _copy
import dataclasses
import functools

import numpy as np

from .._registry import Kind
from .._types import Int
from ..errors import ConfigError, ConfigTypeError, check_memory, check_seed, is_int

__all__ = ["MODES", "CUSTOM_MODES", "JobRequest", "Allocation", "PolicyBase", "AllocationPolicy", "check_request",
           "check_machine_size", "NODE_BYTES", "MAX_JOB_ID", "PolicyKind", "NoParams"]


@dataclasses.dataclass(frozen=True)
class PolicyKind(Kind):
    """A policy member: ``schema`` (a dataclass of the policy's own parameters, checked by
    :func:`evaluator._registry.from_mapping`) and ``build(cfg, groups, nodes_per_group, seed) -> policy``."""


@dataclasses.dataclass
class NoParams:
    """The parameters of a policy that has none of its own."""

NODE_BYTES = 48
"""Bytes of policy state per node, estimated: the owner array, a copy for each of the scheduler's two look-aheads,
and the temporaries of a placement (idle mask, ranks)."""

MODES = ("minimal_balance", "custom_balance", "custom", "adaptive")
"""GRAP allocation modes (Feng et al. Sec. 4.2); baselines accept and ignore them."""

CUSTOM_MODES = ("custom_balance", "custom")
"""Modes whose requests carry ``requirements`` (node counts per group)."""


@dataclasses.dataclass(frozen=True)
class JobRequest:
    """A job's request: ``id``, ``nodes`` (count), GRAP ``mode`` and, for the custom modes, ``requirements``
    (nodes per group requirement, summing to ``nodes``)."""

    id: int
    nodes: int
    mode: str = "minimal_balance"
    requirements: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class Allocation:
    """What a job got: ``nodes`` (int64 node ids, ascending), the ``groups`` they lie in (ascending), whether it is
    a ``large`` job holding its groups' switch ports (GRAP only), the ``mode`` it was allocated in and, where the
    policy records them, its node ``counts`` in each of ``groups`` (empty: counted from ``nodes`` when needed;
    a release then costs a pass over the job's nodes)."""

    job_id: int
    nodes: Int[np.ndarray, "job_node"]
    groups: tuple[int, ...]
    large: bool
    mode: str
    counts: tuple[int, ...] = ()

    @functools.cached_property
    def group_index(self) -> Int[np.ndarray, "group"]:
        """``groups`` as an int64 array, built once: a schedule releases an allocation on its look-ahead copies
        several times, and a job of many groups is then one fancy-indexed update, not a Python loop."""
        return np.asarray(self.groups, dtype=np.int64)

    @functools.cached_property
    def count_array(self) -> Int[np.ndarray, "group"]:
        """``counts`` as an int64 array, built once (:attr:`group_index`)."""
        return np.asarray(self.counts, dtype=np.int64)

    def add_counts(self, per_group: Int[np.ndarray, "group"]) -> None:
        """``per_group[groups] += counts`` in place (the counts recorded)."""
        if len(self.groups) <= _FEW_GROUPS:
            for g, c in zip(self.groups, self.counts):
                per_group[g] += c
        else:
            per_group[self.group_index] += self.count_array

    def fill_groups(self, per_group: np.ndarray, value: int) -> None:
        """``per_group[groups] = value`` in place (rows, where ``per_group`` has more than one axis)."""
        if len(self.groups) <= _FEW_GROUPS:
            for g in self.groups:
                per_group[g] = value
        else:
            per_group[self.group_index] = value


_FEW_GROUPS = 4
"""An allocation over at most this many groups is updated by plain indexing, one group at a time (cheaper than
building an index array for a few); over more, by one indexed update from its cached arrays."""


def _runs(starts: Int[np.ndarray, "row"], lengths: Int[np.ndarray, "row"]) -> Int[np.ndarray, "entry"]:
    """``starts[r], starts[r] + 1, ..., starts[r] + lengths[r] - 1`` for every row ``r``, back to back."""
    return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))


def _first_of_free(gs: Int[np.ndarray, "taker"], tk: Int[np.ndarray, "taker"], P: int) -> Int[np.ndarray, "idle"]:
    """The first ``tk[r]`` node ids of each wholly idle group ``gs[r]`` (``P`` nodes a group), back to back: a large
    job's common case, taken without reading the node array (on 288 groups of 288 nodes, a job of ten free groups
    read ten rows of 288 owners for them: a third of GRAP's node choices by time in a 20,000-job schedule)."""
    return np.repeat(gs * P, tk) + _runs(np.zeros(gs.size, dtype=np.int64), tk)


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v


def check_machine_size(groups, nodes_per_group) -> tuple[int, int]:
    """``(groups, nodes_per_group)`` as positive ints; the policies' per-node state (:data:`NODE_BYTES` a node)
    estimated from them alone and refused (ResourceError) before anything is allocated when it cannot fit."""
    for name, v in (("policy.groups", groups), ("policy.nodes_per_group", nodes_per_group)):
        if not is_int(v):
            raise ConfigTypeError(name, _plain(v), "an integer >= 1")
        if int(v) < 1:
            raise ConfigError(name, _plain(v), "an integer >= 1")
    g, n = int(groups), int(nodes_per_group)
    check_memory("machine", f"{g} groups x {n} nodes", float(g) * n * NODE_BYTES,
                 f"the allocation policies' per-node state (about {NODE_BYTES} B a node, {g * n:.3g} nodes)",
                 "Simulate a smaller machine (groups x nodes per group).")
    return g, n


MAX_JOB_ID = 2 ** 63 - 1
"""The largest job id: the policies' node array holds ids as int64 (and -1, any negative, for an idle node)."""


def check_request(job: JobRequest, total_nodes: int, nodes_per_group: int, groups: int) -> None:
    """Raise :class:`ConfigError` for a request no state of the machine can serve (shared by every policy), and
    :class:`~evaluator.errors.ConfigTypeError` for one of the wrong type.

    A request that passed is marked with the machine's size (``_checked_on``, outside its dataclass fields: equality,
    hashing and ``repr`` are unchanged) when its requirements are a tuple, so that asking again on a machine of that
    size costs a dictionary read: a 50,000-job schedule asks about the same requests hundreds of thousands of times
    (its reservation tests), and the checks were 8% of its time (2026-11-30)."""
    if not isinstance(job, JobRequest):
        raise ConfigTypeError("job", type(job).__name__ if not isinstance(job, (int, str)) else job,
                              "an evaluator.policies.JobRequest(id, nodes, mode, requirements)")
    machine = (total_nodes, nodes_per_group, groups)
    if job.__dict__.get("_checked_on") == machine:  # checked already on such a machine (its fields cannot change)
        return
    if not is_int(job.id):
        raise ConfigTypeError("job.id", _plain(job.id), "an integer (the job's number)")
    if not 0 <= job.id <= MAX_JOB_ID:  # the node array holds ids as int64, and marks an idle node -1
        raise ConfigError("job.id", _plain(job.id), "an integer in [0, 2^63) (the job's number)",
                          "Negative numbers mark idle nodes.")
    if not isinstance(job.mode, str):
        raise ConfigTypeError("job.mode", _plain(job.mode), " | ".join(MODES), f"job {job.id}")
    if job.mode not in MODES:
        raise ConfigError("job.mode", job.mode, " | ".join(MODES), f"job {job.id}")
    n = job.nodes
    if not is_int(n):
        raise ConfigTypeError("job.nodes", _plain(n), "a positive integer", f"job {job.id}")
    if n < 1:
        raise ConfigError("job.nodes", _plain(n), "a positive integer", f"job {job.id}")
    if n > total_nodes:
        raise ConfigError("job.nodes", _plain(n), f"at most the machine's {total_nodes} nodes", f"job {job.id}")
    if isinstance(job.requirements, (str, bytes)) or not isinstance(job.requirements, (tuple, list, np.ndarray)):
        raise ConfigTypeError("job.requirements", _plain(job.requirements),
                              "a tuple of node counts per group (empty unless a custom mode)", f"job {job.id}")
    req = job.requirements
    if not (type(req) is tuple and all(type(r) is int for r in req)):  # the common case (plain ints) passes as is
        req = tuple(_plain(r) for r in req)
        if any(not is_int(r) for r in req):
            raise ConfigTypeError("job.requirements", req, "positive integers", f"job {job.id}")
    if job.mode in CUSTOM_MODES and n > nodes_per_group and not req:
        raise ConfigError("job.requirements", req, "node counts per group summing to job.nodes",
                          f"job {job.id} is a large job in mode {job.mode!r}")
    if req:
        if min(req) < 1:
            raise ConfigError("job.requirements", req, "positive integers", f"job {job.id}")
        if sum(req) != n:
            raise ConfigError("job.requirements", req, f"node counts summing to job.nodes = {n}",
                              f"job {job.id}: they sum to {sum(req)}")
        if max(req) > nodes_per_group:
            raise ConfigError("job.requirements", req, f"each at most the {nodes_per_group} nodes of a group",
                              f"job {job.id}")
        if len(req) > groups:
            raise ConfigError("job.requirements", req, f"at most {groups} requirements (one group each)",
                              f"job {job.id}")
        if job.mode == "custom_balance" and max(req) - min(req) > 1:
            raise ConfigError("job.requirements", req, "equal node counts (differing by at most 1)",
                              f"job {job.id} is in mode 'custom_balance'")
    if type(job.requirements) is tuple:  # immutable: the answer holds for every later call on this machine size
        object.__setattr__(job, "_checked_on", machine)


class PolicyBase(abc.ABC):
    """What every allocation policy is: a machine of ``groups`` groups of ``nodes_per_group`` nodes and the jobs
    placed on it. The public methods check their argument here, once, then call the member's private one."""

    name: str = ""
    count_only: bool = False
    """True for a policy whose only constraint is the idle node count (the scheduler then counts)."""

    def __init__(self, groups: int, nodes_per_group: int, seed: int = 0):
        self.groups, self.nodes_per_group = check_machine_size(groups, nodes_per_group)
        if not is_int(seed):
            raise ConfigTypeError("policy.seed", _plain(seed), "an integer >= 0 (a NumPy default_rng seed)")
        self.seed = check_seed("policy.seed", seed)

    @property
    def total_nodes(self) -> int:
        """Nodes of the machine."""
        return self.groups * self.nodes_per_group

    @property
    @abc.abstractmethod
    def idle_nodes(self) -> int:
        """Nodes running no job now."""

    def allocate(self, job: JobRequest) -> Allocation | None:
        """Nodes for ``job`` (marked busy), or ``None`` if it cannot start now; ConfigError if it never can."""
        check_request(job, self.total_nodes, self.nodes_per_group, self.groups)
        return self._allocate(job)

    def fits(self, job: JobRequest) -> bool:
        """Whether :meth:`allocate` would place ``job`` now (nothing changes; ConfigError if it never can).

        Exactly ``allocate(job) is not None`` on this state, for any policy
        whose :meth:`_fits` is exact."""
        check_request(job, self.total_nodes, self.nodes_per_group, self.groups)
        if job.id in getattr(self, "running", ()):  # allocate refuses it: so does fits
            raise ConfigError("job.id", _plain(job.id), "the id of no running job", "it is running already")
        if job.nodes > self.idle_nodes:
            return False
        return self._fits(job)

    def release(self, alloc: Allocation) -> None:
        """Free ``alloc``'s nodes; ConfigError if it is not running here."""
        if not isinstance(alloc, Allocation):
            raise ConfigTypeError("alloc", type(alloc).__name__, "an evaluator.policies.Allocation this policy made")
        self._release(alloc)

    @abc.abstractmethod
    def _allocate(self, job: JobRequest) -> Allocation | None:
        """:meth:`allocate` for a checked request."""

    @abc.abstractmethod
    def _fits(self, job: JobRequest) -> bool:
        """:meth:`fits` for a checked request of at most the idle node count."""

    @abc.abstractmethod
    def _release(self, alloc: Allocation) -> None:
        """:meth:`release` of an :class:`Allocation`."""

    @abc.abstractmethod
    def copy(self) -> "PolicyBase":
        """An independent copy."""

    def lookahead(self) -> "PolicyBase":
        """A copy for the scheduler's look-ahead (its reservation tests), on which only :meth:`release` and
        :meth:`fits` are called; a member may make it lighter than :meth:`copy`."""
        return self.copy()


class AllocationPolicy(PolicyBase):
    """A machine of ``groups`` groups of ``nodes_per_group`` nodes and the jobs placed on it.

    State: ``owner[node]`` (job id, -1 when idle), ``idle_per_group[g]`` and their sum ``idle`` (kept with
    them: the scheduler asks for it millions of times in a 50,000-job schedule).
    Subclasses implement :meth:`_choose` (the nodes for a request, or None)."""

    def __init__(self, groups: int, nodes_per_group: int, seed: int = 0):
        super().__init__(groups, nodes_per_group, seed)
        self.owner = np.full(self.groups * self.nodes_per_group, -1, dtype=np.int64)
        self.idle_per_group = np.full(self.groups, self.nodes_per_group, dtype=np.int64)
        self.idle = self.groups * self.nodes_per_group
        self.running: dict[int, Allocation] = {}

    @property
    def idle_nodes(self) -> int:
        """Nodes running no job now."""
        return self.idle

    def idle_in_group(self, g: int) -> Int[np.ndarray, "idle"]:
        """Idle node ids of group ``g``, ascending."""
        lo = g * self.nodes_per_group
        return lo + np.flatnonzero(self.owner[lo:lo + self.nodes_per_group] < 0)

    def first_idle(self, take: Int[np.ndarray, "group"]) -> Int[np.ndarray, "idle"]:
        """The lowest ``take[g]`` idle node ids of every group ``g`` (needs ``take <= idle_per_group``), ascending.
        Only the groups that take nodes are read (a large job on a machine of hundreds of groups takes a few)."""
        take = np.asarray(take, dtype=np.int64)
        gs = np.flatnonzero(take)
        return self.first_idle_of(gs, take[gs])

    def first_idle_of(self, gs: Int[np.ndarray, "taker"], tk: Int[np.ndarray, "taker"]) -> Int[np.ndarray, "idle"]:
        """:meth:`first_idle` of the groups ``gs`` (ascending, distinct) taking ``tk[r]`` nodes each (the others
        none; ``tk <= idle_per_group[gs]``): the lowest ``tk[r]`` idle node ids of group ``gs[r]``, ascending,
        without a ``take`` row over every group (GRAP passes its plan)."""
        P = self.nodes_per_group
        counts = self.idle_per_group[gs]
        free = counts == P  # a wholly idle group: its first tk[r] nodes, with no read of the node array
        if free.all():
            return _first_of_free(gs, tk, P)
        if free.any():  # wholly idle groups by arithmetic, the others read; each row's nodes at its place
            out = np.empty(int(tk.sum()), dtype=np.int64)
            starts = np.cumsum(tk) - tk
            out[_runs(starts[free], tk[free])] = _first_of_free(gs[free], tk[free], P)
            out[_runs(starts[~free], tk[~free])] = self.first_idle_of(gs[~free], tk[~free])
            return out
        owner = self.owner.reshape(self.groups, P)
        idle = owner < 0 if gs.size == self.groups else owner[gs] < 0
        flat = np.flatnonzero(idle)  # the idle nodes of those groups, group by group, ascending
        if np.array_equal(counts, tk):  # every idle node of each group
            pick = flat
        else:  # the first tk[r] of row r's idle nodes: row r's start in flat, then a run of tk[r]
            at = np.repeat(np.cumsum(counts) - counts - (np.cumsum(tk) - tk), tk) + np.arange(int(tk.sum()))
            pick = flat[at]
        return gs[pick // P] * P + pick % P

    def _allocate(self, job: JobRequest) -> Allocation | None:
        if self.owner is None:
            raise RuntimeError(f"policy {self.name!r}: a look-ahead copy (lookahead()) places no job")
        if job.id in self.running:
            raise ConfigError("job.id", job.id, "the id of no running job", "it is running already")
        if job.nodes > self.idle_nodes:
            return None
        got = self._choose(job)
        if got is None:
            return None
        nodes, large = got
        nodes = np.asarray(nodes, dtype=np.int64)
        if nodes.size > 1 and not (nodes[1:] > nodes[:-1]).all():
            nodes = np.sort(nodes)
        assert nodes.size == job.nodes and np.all(self.owner[nodes] < 0), "policy chose a busy node"
        self.owner[nodes] = job.id
        per = np.bincount(nodes // self.nodes_per_group, minlength=self.groups)
        self.idle_per_group -= per
        self.idle -= int(nodes.size)
        groups = np.flatnonzero(per)
        alloc = Allocation(job.id, nodes, tuple(groups.tolist()), large, job.mode, tuple(per[groups].tolist()))
        self.running[job.id] = alloc
        self._after_allocate(alloc)
        return alloc

    def _release(self, alloc: Allocation) -> None:
        held = self.running.get(alloc.job_id)
        if held is not alloc and not (held is not None and np.array_equal(held.nodes, alloc.nodes)):
            raise ConfigError("alloc.job_id", alloc.job_id, "a job running on this policy's machine")
        alloc = held  # this policy's own record: an equal-node allocation's groups, counts or large flag may differ
        del self.running[alloc.job_id]
        if self.owner is not None:  # None: a look-ahead copy (group counts only)
            self.owner[alloc.nodes] = -1
        if not alloc.counts:
            self.idle_per_group += np.bincount(alloc.nodes // self.nodes_per_group, minlength=self.groups)
        else:
            alloc.add_counts(self.idle_per_group)
        self.idle += int(alloc.nodes.size)
        self._after_release(alloc)

    def _fits(self, job: JobRequest) -> bool:
        """Whether :meth:`_choose` finds nodes (a checked request, at most the idle node count); override with a
        cheaper exact test where there is one."""
        return self.copy()._choose(job) is not None

    fits_reads_nodes: bool = True
    """Whether :meth:`_fits` reads the node array ``owner`` (the default, a placement on a copy, does). A member
    whose test reads group-level state only (``idle_per_group`` and its own per-group arrays) sets False: its
    look-ahead copies (:meth:`lookahead`) then carry no node array."""

    def lookahead(self) -> AllocationPolicy:
        """A copy for the scheduler's look-ahead, on which only :meth:`release` and :meth:`fits` are called: the
        :meth:`copy`, less the node array where :meth:`_fits` does not read it (a release then updates the group
        counts only; a placement on it is refused). On 288 groups of 288 nodes, GRAP's 8,000-job schedule spent a
        third of its time releasing running jobs on full copies before 2026-11-29."""
        if self.fits_reads_nodes:
            return self.copy()
        new = self.copy(_skip=("owner",))
        new.owner = None
        return new

    def copy(self, _skip: tuple[str, ...] = ()) -> AllocationPolicy:
        """An independent copy: every array, dict, list and random generator attribute is copied (the
        allocations in ``running`` are immutable and shared)."""
        new = _copy.copy(self)
        for k, v in self.__dict__.items():
            if k in _skip:
                continue
            if isinstance(v, np.ndarray):
                new.__dict__[k] = v.copy()
            elif isinstance(v, (dict, list, set)):
                new.__dict__[k] = type(v)(v)
            elif isinstance(v, np.random.Generator):
                new.__dict__[k] = _copy.deepcopy(v)
        return new

    @abc.abstractmethod
    def _choose(self, job: JobRequest) -> tuple[np.ndarray, bool] | None:
        """``(node ids, large)`` for a checked request with at most the idle node count, or None."""

    def _after_allocate(self, alloc: Allocation) -> None:
        """Hook: bookkeeping beyond nodes (GRAP's port ownership)."""

    def _after_release(self, alloc: Allocation) -> None:
        """Hook: undo :meth:`_after_allocate`."""
