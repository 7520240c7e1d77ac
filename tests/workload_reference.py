"""Brute-force references for the workload simulation (tests only).

* :func:`easy_counts`: FCFS + EASY backfilling stepped one second at a time,
  with nodes as a bare counter (classic EASY: the head's shadow time and the
  "extra" nodes), no policy object, no events;
* :func:`easy_stepped`: the same stepping with a policy object: the shadow
  time is the first whole second at which the head fits on a copy of the
  policy with every job expected to end by then released;
* :class:`GroupFirstFit`: a topology-constrained test policy conforming to
  the allocation-policy contract: a job of at most one group's nodes goes in
  the first group with room; a larger job takes whole empty groups, first
  ones first.

Jobs are dicts with integer ``id, submit, run, req, nodes`` (and optional
``mode``, ``requirements``); both references return ``{id: start}``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from evaluator.policies import Allocation, JobRequest


def _fcfs(jobs):
    return sorted(jobs, key=lambda j: (j["submit"], j["id"]))


def easy_counts(jobs, total_nodes):
    """Classic EASY by node counts, one pass per whole second; returns {id: start}."""
    jobs = _fcfs(jobs)
    start, end = {}, {}
    idle = total_nodes
    running = {}  # id -> job
    t = 0
    while len(start) < len(jobs):
        for i in [i for i in running if end[i] <= t]:
            idle += running.pop(i)["nodes"]
        queue = [j for j in jobs if j["submit"] <= t and j["id"] not in start]
        while queue and queue[0]["nodes"] <= idle:
            j = queue.pop(0)
            start[j["id"]], end[j["id"]] = t, t + j["run"]
            running[j["id"]] = j
            idle -= j["nodes"]
        if queue:
            head = queue[0]
            s = t
            while True:  # the first second at which enough nodes are expected to be free
                free = idle + sum(r["nodes"] for i, r in running.items() if start[i] + r["req"] <= s)
                if free >= head["nodes"]:
                    break
                s += 1
            extra = free - head["nodes"]
            for j in queue[1:]:
                if j["nodes"] > idle:
                    continue
                if t + j["req"] <= s:
                    pass
                elif j["nodes"] <= extra:
                    extra -= j["nodes"]
                else:
                    continue
                start[j["id"]], end[j["id"]] = t, t + j["run"]
                running[j["id"]] = j
                idle -= j["nodes"]
        t += 1
    return start


def easy_stepped(jobs, make_policy):
    """FCFS + EASY with a policy object, one pass per whole second; returns ({id: start}, {id: first shadow})."""
    jobs = _fcfs(jobs)
    req = {j["id"]: JobRequest(j["id"], j["nodes"], j.get("mode", "minimal_balance"),
                               tuple(j.get("requirements", ()))) for j in jobs}
    pol = make_policy()
    start, end, alloc, shadow_first = {}, {}, {}, {}
    running = {}
    t = 0
    while len(start) < len(jobs):
        for i in [i for i in running if end[i] <= t]:
            running.pop(i)
            pol.release(alloc[i])
        queue = [j for j in jobs if j["submit"] <= t and j["id"] not in start]
        while queue:
            a = pol.allocate(req[queue[0]["id"]])
            if a is None:
                break
            j = queue.pop(0)
            start[j["id"]], end[j["id"]], alloc[j["id"]] = t, t + j["run"], a
            running[j["id"]] = j

        def state_at(s, extra_running=()):
            pc = pol.copy()
            for i, r in running.items():
                if start[i] + r["req"] <= s:
                    pc.release(alloc[i])
            return pc

        if queue:
            head = queue[0]
            s = t
            while state_at(s).allocate(req[head["id"]]) is None:
                s += 1
            shadow_first.setdefault(head["id"], s)
            for j in queue[1:]:
                a = pol.allocate(req[j["id"]])
                if a is None:
                    continue
                if t + j["req"] <= s or state_at(s).allocate(req[head["id"]]) is not None:
                    start[j["id"]], end[j["id"]], alloc[j["id"]] = t, t + j["run"], a
                    running[j["id"]] = j
                else:
                    pol.release(a)
        t += 1
    return start, shadow_first


class GroupFirstFit:
    """Test policy: small jobs in the first group with room; large jobs on whole empty groups (first ones)."""

    name = "group_first_fit"

    def __init__(self, groups, nodes_per_group):
        self.nodes_per_group = nodes_per_group
        self.busy = np.zeros((groups, nodes_per_group), dtype=bool)

    @property
    def total_nodes(self):
        return int(self.busy.size)

    @property
    def idle_nodes(self):
        return int((~self.busy).sum())

    def allocate(self, job):
        G = self.nodes_per_group
        free = (~self.busy).sum(axis=1)
        if job.nodes <= G:
            cand = np.flatnonzero(free >= job.nodes)
            if cand.size == 0:
                return None
            g = int(cand[0])
            cols = np.flatnonzero(~self.busy[g])[: job.nodes]
            self.busy[g, cols] = True
            return Allocation(job.id, g * G + cols, (g,), False, job.mode)
        k = -(-job.nodes // G)
        empty = np.flatnonzero(free == G)
        if empty.size < k:
            return None
        gs = empty[:k]
        nodes = (gs[:, None] * G + np.arange(G)[None, :]).ravel()[: job.nodes]
        self.busy.reshape(-1)[nodes] = True
        return Allocation(job.id, nodes, tuple(int(g) for g in gs), True, job.mode)

    def release(self, a):
        self.busy.reshape(-1)[a.nodes] = False

    def copy(self):
        new = GroupFirstFit.__new__(GroupFirstFit)
        new.__dict__.update(self.__dict__)
        new.busy = self.busy.copy()
        return new


@dataclasses.dataclass
class CountOnlyOff:
    """Wraps a policy, hiding its ``count_only`` mark: the simulator then asks the policy (through copies)."""

    inner: object

    @property
    def name(self):
        return self.inner.name

    @property
    def total_nodes(self):
        return self.inner.total_nodes

    @property
    def idle_nodes(self):
        return self.inner.idle_nodes

    def allocate(self, job):
        return self.inner.allocate(job)

    def release(self, a):
        self.inner.release(a)

    def copy(self):
        return CountOnlyOff(self.inner.copy())


def random_jobs(rng, n, total_nodes, max_t=20, max_run=12):
    """``n`` random jobs with integer times, run <= req, sizes in [1, total_nodes]."""
    jobs = []
    for i in range(n):
        run = int(rng.integers(1, max_run + 1))
        jobs.append({"id": i + 1, "submit": int(rng.integers(0, max_t)), "run": run,
                     "req": run + int(rng.integers(0, 6)), "nodes": int(rng.integers(1, total_nodes + 1))})
    return jobs
