"""Event-driven scheduler simulation: first come first served with EASY backfilling, any allocation policy.

The scheduler (as Slurm's ``sched/backfill`` with one reservation):

* **Events** are job submissions and job ends; all events at one time are
  applied (ends first), then one scheduling pass runs.
* **FCFS**: queued jobs in submission order (then job number); the head
  starts as soon as the policy places it (``policy.allocate``).
* **Reservation** of a blocked head: on a copy of the policy, running jobs
  are released in the order of their *expected* ends (start + requested time,
  never before now: a job past its request is expected to end at once) until
  the head fits; the expected end of the last one released is the head's
  *shadow time*. Because allocation is topology-constrained, the fit is
  asked of the policy, not counted (its ``fits(request)`` where it has one:
  the same answer as placing, without building node arrays).
* **Backfilling**: each later job (the first ``backfill_depth``, as Slurm's
  ``bf_max_job_test``) starts now if the policy places it now and either its
  expected end is by the shadow time, or the head still fits at the shadow
  time with it running (a copy of the policy with the new job placed and
  every running job expected to end by the shadow time released). For a
  policy marked ``count_only`` the same tests are node counts (classic EASY:
  the "extra" nodes).
* **Shortcuts** that change no answer (for a policy on which busier nodes
  never make a placement possible that was not): the reservation is computed only
  when a candidate fits now (and once per head, to record it); at a time
  when no job ended and no head started, only the jobs the last pass did not
  try are (the newly submitted ones, and those its backfills moved into the
  first ``backfill_depth``: a tried one's tests can only have become harder),
  except after a pass that backfilled on a topology policy, where all are
  tried again (a candidate placed on the busier machine may land elsewhere
  and leave the head its groups; until 2026-12-06 neither exception was
  made, and such jobs waited for the next end); a candidate
  that would leave fewer idle nodes at the shadow time than the head needs
  is skipped without asking the policy; a request of the size, mode and
  requirements of one the policy refused since the last job ended is not
  asked again; a head's shadow time is computed on look-ahead copies once
  per state of the machine (kept while no job starts or ends).
* **Times**: reservations use requested times (SWF field 9; a job whose
  run time exceeds its request is given its run time as request, so no job
  outlives what reservations assume); ends use actual run times. On the RDN
  a job's actual run time is shortened by its communication speedup
  (:func:`evaluator.workload.model.accelerated_run_time`, looked up at
  start for its mode and the number of groups it was given).

The result is a per-job :class:`xarray.Dataset` (dim ``job``) with submit,
start, end, wait (s), nodes, groups, mode, speedup, run_time,
requested_time, backfilled and the first reservation computed for the job
while it was a blocked head (``reservation``, NaN if it never was).
"""

from __future__ import annotations

import bisect
import heapq
import math
import time as _time
from typing import Any

import numpy as np
import xarray as xr

from ..display import progress_bar
from ..errors import ConfigError, ConfigTypeError
from ..policies import JobRequest
from ._check import bool_arg, instance_arg, int_arg
from .model import SPEEDUP_RULES, SpeedupTable, accelerated_run_time
from .trace import Trace, validate_requests

__all__ = ["simulate", "JOB_VARS", "DEFAULT_BACKFILL_DEPTH"]

DEFAULT_BACKFILL_DEPTH = 500
"""Queued jobs a pass considers for backfilling (Slurm's default ``bf_max_job_test``); None: all."""

JOB_VARS = {
    "submit": ("s", "submission time"),
    "start": ("s", "start time"),
    "end": ("s", "end time"),
    "wait": ("s", "wait time (start - submit)"),
    "run_time": ("s", "run time in the simulation (after any speedup)"),
    "requested_time": ("s", "requested wall time (what reservations use)"),
    "nodes": ("nodes", "nodes allocated"),
    "groups": ("groups", "groups the allocation spans"),
    "speedup": ("1", "communication speedup ratio applied to the job's MPI time (1: none)"),
    "mpi_fraction": ("1", "fraction of the job's original run time spent in MPI"),
    "backfilled": ("1", "whether the job started ahead of an earlier-submitted job"),
    "reservation": ("s", "first shadow time computed while the job was a blocked queue head (NaN: never)"),
}
"""Per-job variables of the simulation dataset: name -> (units, long name)."""


class _Running:
    """Running jobs ordered by expected end (start + requested); ``version`` counts the changes of the machine (a
    job added or removed, or :meth:`touch` after a trial placement was undone), so that an answer computed on it can
    be kept while the version is the same."""

    __slots__ = ("keys", "alloc", "nodes", "version")

    def __init__(self):
        self.keys: list[tuple[float, int]] = []  # (expected end, job index), sorted
        self.alloc: dict[int, Any] = {}
        self.nodes: dict[int, int] = {}
        self.version = 0

    def add(self, est_end: float, j: int, alloc, n: int) -> None:
        bisect.insort(self.keys, (est_end, j))
        self.alloc[j] = alloc
        self.nodes[j] = n
        self.version += 1

    def remove(self, est_end: float, j: int):
        k = bisect.bisect_left(self.keys, (est_end, j))
        del self.keys[k]
        self.nodes.pop(j)
        self.version += 1
        return self.alloc.pop(j)

    def touch(self) -> None:
        """The policy changed outside :meth:`add` and :meth:`remove` (a placement released again)."""
        self.version += 1

    def nodes_by(self, when: float) -> int:
        """Nodes of the running jobs expected to end by ``when`` (a prefix of ``keys``)."""
        return sum(self.nodes[j] for _, j in self.keys[:bisect.bisect_right(self.keys, (when, math.inf))])


def simulate(trace: Trace, policy, speedups=None, speedup_rule: str = "time_ratio",
             nodes_per_group: int | None = None, backfill_depth: int | None = DEFAULT_BACKFILL_DEPTH,
             progress: bool = False, allow_foreign_speedups: bool = False) -> xr.Dataset:
    """Simulate ``trace`` on ``policy`` (FCFS + EASY backfilling; see the module docstring).

    Parameters
    ----------
    trace
        Jobs (usually from :func:`evaluator.workload.prepare_trace`); a job
        without a mode is ``minimal_balance``, without an MPI fraction 0.
    policy
        An allocation policy (:mod:`evaluator.policies` or
        :class:`~evaluator.workload.UnrestrictedPolicy`), empty; it is used
        and left in its final state.
    speedups
        A :class:`~evaluator.workload.SpeedupTable` (or the dataset it wraps):
        the RDN's speedup per (mode, groups). None: every job runs as in the
        trace (the traditional Dragonfly).
    speedup_rule
        How a speedup ratio shortens the MPI time (:data:`SPEEDUP_RULES`).
    nodes_per_group
        Nodes per group, to check requirements; default ``policy.nodes_per_group``.
    backfill_depth
        Queued jobs tried for backfilling per pass (None: all).
    progress
        Show a progress bar (tqdm) over started jobs.
    allow_foreign_speedups
        Apply a speedup table that records another machine than the policy's
        (``total_nodes / nodes_per_group`` groups of ``nodes_per_group``), or
        none; refused otherwise (:meth:`SpeedupTable.check_machine`).
    """
    t_wall = _time.perf_counter()
    G, table = _check_simulation(trace, policy, speedups, speedup_rule, nodes_per_group, backfill_depth, progress,
                                 allow_foreign_speedups)
    jobs = _jobs_in_order(trace)
    res = _run(jobs, policy, table, speedup_rule, G, backfill_depth, progress)
    return _simulation_dataset(trace, jobs, res, policy, table, speedup_rule, G, backfill_depth, t_wall)


def _check_simulation(trace, policy, speedups, speedup_rule, nodes_per_group, backfill_depth, progress,
                      allow_foreign_speedups):
    """:func:`simulate`'s arguments checked (a :class:`ConfigError` naming the field): ``(nodes per group, speedup
    table or None)``."""
    instance_arg("trace", trace, Trace, "an evaluator.workload.Trace (read_swf, synthetic_trace, prepare_trace)")
    if trace.n_jobs == 0:
        raise ConfigError("trace", str(trace.attrs.get("source", "in memory")),
                          "a trace with at least one job: nothing to simulate")
    for attr in ("allocate", "release", "copy", "total_nodes", "idle_nodes"):
        if not hasattr(policy, attr) or isinstance(policy, type):
            raise ConfigTypeError("policy", policy if isinstance(policy, (str, int, float)) else type(policy).__name__,
                                  "an allocation policy (evaluator.workload.make_policy, evaluator.policies.KINDS): "
                                  "allocate, release, copy, total_nodes, idle_nodes")
    if not isinstance(speedup_rule, str):
        raise ConfigTypeError("workload.speedup_rule", speedup_rule, f"one of {list(SPEEDUP_RULES)}")
    if speedup_rule not in SPEEDUP_RULES:
        raise ConfigError("workload.speedup_rule", speedup_rule, f"one of {list(SPEEDUP_RULES)}")
    int_arg("schedule.backfill_depth", backfill_depth, 0, none=True, what="queued jobs tried; None for every one")
    bool_arg("progress", progress)
    bool_arg("allow_foreign_speedups", allow_foreign_speedups)
    total = int(policy.total_nodes)
    int_arg("nodes_per_group", nodes_per_group, 1, total, none=True, what="a group's nodes")
    own = getattr(policy, "nodes_per_group", None)
    if nodes_per_group is not None and (total % int(nodes_per_group)
                                        or own is not None and int(own) != nodes_per_group):
        # until 2026-12-06 accepted: requirements, and a speedup table's machine, were checked against a machine
        # the policy does not have
        raise ConfigError("nodes_per_group", nodes_per_group,
                          f"the policy's own, {own}" if own is not None else f"a divisor of its {total} nodes",
                          "Leave it out: it defaults to the policy's nodes_per_group.")
    G = int(nodes_per_group or own or total)
    if int(policy.idle_nodes) != total:
        raise ConfigError("policy", getattr(policy, "name", type(policy).__name__),
                          "an empty policy (every node idle) at the start of a simulation")
    validate_requests(trace, total, G)
    table = None
    if speedups is not None:
        table = speedups if isinstance(speedups, SpeedupTable) else SpeedupTable(speedups)
        table.check_machine(total // G, G, allow_foreign_speedups)
        table.check_modes(trace.modes())

    return G, table


def _jobs_in_order(trace: Trace) -> dict:
    """The jobs in FCFS order (submission, then job number): ids, submit, run and requested times (a job that ran
    past its request has its request raised to its run time), nodes, modes, MPI fractions and requests."""
    order = np.lexsort((trace.job_id, trace.submit))
    n = trace.n_jobs
    ids = trace.job_id[order].astype(np.int64)
    sub = np.asarray(trace.submit, np.float64)[order]
    run = np.asarray(trace.run_time, np.float64)[order]
    # a job that ran past its request keeps running (logs record grace periods; Slurm would have killed it):
    # its request is raised to its run time, so that no job outlives what reservations assume
    req_t = np.maximum(np.asarray(trace.requested_time, np.float64)[order], run)
    size = np.asarray(trace.nodes, np.int64)[order]
    modes = trace.modes()[order]
    reqs = trace.reqs()
    mpi = (np.zeros(n) if trace.mpi_fraction is None else np.asarray(trace.mpi_fraction, np.float64))[order]
    requests = [JobRequest(int(ids[i]), int(size[i]), str(modes[i]), tuple(reqs[int(order[i])])) for i in range(n)]
    shapes: dict[tuple, int] = {}  # a number per distinct (size, mode, requirements): the scheduler's refusal memo
    shape = [shapes.setdefault((r.nodes, r.mode, r.requirements), len(shapes)) for r in requests]

    return {"n": n, "ids": ids, "sub": sub, "run": run, "req_t": req_t, "size": size, "modes": modes, "mpi": mpi,
            "requests": requests, "shape": shape}


def _launcher(jobs: dict, res: dict, running, ends: list, table, speedup_rule: str, G: int):
    """``launch(j, alloc, t, late)``: start job ``j`` at ``t`` on ``alloc`` (its speedup looked up for its mode
    and groups; ``late``: backfilled), recorded in ``res``, its end queued in ``ends`` and it in ``running``."""
    modes, run, mpi, req_t, size = jobs["modes"], jobs["run"], jobs["mpi"], jobs["req_t"], jobs["size"]
    start, actual, end = res["start"], res["run_time"], res["end"]
    n_groups, spd, backfilled = res["groups"], res["speedup"], res["backfilled"]

    def launch(j: int, alloc, t: float, late: bool) -> None:
        g = len(alloc.groups) if len(alloc.groups) else int(np.unique(np.asarray(alloc.nodes) // G).size)
        s = table(str(modes[j]), g) if table is not None else 1.0
        a = accelerated_run_time(run[j], mpi[j], s, speedup_rule)
        req_t[j] = max(req_t[j], a)  # slower than requested (a speedup < 1): as a trace's overrun, the request grows
        start[j], actual[j], end[j] = t, a, t + a
        n_groups[j], spd[j], backfilled[j] = g, s, late
        heapq.heappush(ends, (t + a, j))
        running.add(t + req_t[j], j, alloc, int(size[j]))

    return launch


def _placer(jobs: dict, policy):
    """``(place, refused)``: ``place(j)`` is ``policy.allocate`` of job ``j``, or None without asking when a request
    of its shape (size, mode, requirements) is in ``refused``, the shapes the policy refused since the scheduler last
    cleared it (when a job ended): the machine has only become busier since, which makes no placement possible that
    was not (the policies' premise of the module docstring's shortcuts)."""
    shape, requests = jobs["shape"], jobs["requests"]
    refused: set[int] = set()

    def place(j: int):
        if shape[j] in refused:
            return None
        a = policy.allocate(requests[j])
        if a is None:
            refused.add(shape[j])
        return a

    return place, refused


def _scheduler(jobs: dict, res: dict, policy, running, queue: list, launch, backfill_depth, total: int):
    """``schedule(t, first_new, changed)``: one FCFS + EASY backfilling pass (module docstring)."""
    size, req_t = jobs["size"], jobs["req_t"]
    reservation = res["reservation"]
    count_only = bool(getattr(policy, "count_only", False))
    min_size = int(size.min()) if jobs["n"] else 0
    shadow_of, head_fits_at_shadow, never_fits = _reservations(jobs, policy, running, total)
    shape = jobs["shape"]
    place, refused = _placer(jobs, policy)

    tried = [0]  # queued jobs behind the head whose backfill tests failed on the machine as it is now

    def schedule(t: float, first_new: int, changed: bool) -> int:
        """One pass at time ``t``. ``first_new``: queue position of the jobs submitted at ``t``; ``changed``:
        whether a job ended at ``t``. When nothing ended and no head starts, the machine is as at the last pass,
        so only the jobs that pass did not try can backfill (a tried one's tests can only have become harder):
        the new ones, and those its backfills moved into the first ``backfill_depth`` (until 2026-12-06 these
        waited for the next end). Returns the jobs it started."""
        n_started = 0
        if changed:
            refused.clear()
        while queue:
            h = queue[0]
            a = None if size[h] > policy.idle_nodes else place(h)
            if a is None:
                break
            launch(h, a, t, False)
            queue.pop(0)
            n_started += 1
            changed = True
        if not queue:
            tried[0] = 0
            return n_started
        h = queue[0]
        if not running.keys:  # an empty machine, and the head does not fit
            raise never_fits(h)
        stop = len(queue) if backfill_depth is None else min(len(queue), 1 + backfill_depth)
        lo = 1 if changed else max(1, min(first_new, 1 + tried[0]))
        shadow = free_at_shadow = None
        if math.isnan(reservation[h]):
            shadow, free_at_shadow = shadow_of(h, t)
            reservation[h] = shadow
        started = []
        need = int(size[h])
        for k in range(lo, stop):
            idle = policy.idle_nodes
            if idle < min_size:
                break
            j = queue[k]
            if size[j] > idle or shape[j] in refused:  # (refused: ``place`` would not ask the policy)
                continue
            if shadow is None:  # computed once a candidate fits now
                shadow, free_at_shadow = shadow_of(h, t)
            by_shadow = t + req_t[j] <= shadow
            if not by_shadow and free_at_shadow - size[j] < need:
                continue  # would hold nodes the head needs at its shadow time (a count: no placement asked)
            a = place(j)
            if a is None:
                continue
            if not (by_shadow or count_only or head_fits_at_shadow(h, shadow, t)):
                policy.release(a)
                running.touch()
                continue
            if not by_shadow:
                free_at_shadow -= int(size[j])
            launch(j, a, t, True)
            started.append(k)
            n_started += 1
        for k in reversed(started):
            del queue[k]
        # the jobs tried before a backfill saw a machine it changed: by counts their tests only became harder, but a
        # topology policy's may not (the candidate placed elsewhere now can leave the head its groups): all again
        tried[0] = 0 if started and not count_only else max(tried[0] if lo > stop else stop - 1 - len(started), 0)
        return n_started

    return schedule


def _reservations(jobs: dict, policy, running, total: int):
    """``(shadow_of, head_fits_at_shadow, never_fits)``: EASY's reservation tests of a blocked head (module
    docstring), on look-ahead copies of ``policy`` (or node counts for a ``count_only`` policy)."""
    size, requests, ids, modes = jobs["size"], jobs["requests"], jobs["ids"], jobs["modes"]
    count_only = bool(getattr(policy, "count_only", False))
    look = getattr(policy, "lookahead", policy.copy)  # a copy for reservation tests (a policy's lighter one)

    def fits(pol, req) -> bool:
        """Whether ``pol`` would place ``req`` now: its ``fits`` if it has one (nothing built), else a placement
        on ``pol`` (a throw-away copy here)."""
        f = getattr(pol, "fits", None)
        return f(req) if f is not None else pol.allocate(req) is not None

    last = [-1, -1, 0.0]  # [machine version, head, expected end of the job whose release lets it fit]

    def shadow_of(h: int, t: float) -> tuple[float, int]:
        """(shadow time, nodes free at it) of head ``h``: release running jobs by expected end until it fits. On the
        same machine (version) the same job lets it fit: that job's expected end is kept (a later pass at another
        time, with no job started or ended since, asks again)."""
        if last[0] != running.version or last[1] != h:
            last[:] = running.version, h, _fitting_end(h)
        shadow = max(last[2], t)
        # the jobs expected to end by the shadow time (max(est, t) <= shadow: est <= shadow, as shadow >= t)
        return shadow, int(policy.idle_nodes) + running.nodes_by(shadow)

    def _fitting_end(h: int) -> float:
        """The expected end of the running job (by expected end) whose release lets head ``h`` fit."""
        need = int(size[h])
        if count_only:
            free = int(policy.idle_nodes)
            for est, j in running.keys:
                free += running.nodes[j]
                if free >= need:
                    return est
        else:
            pc = look()
            for est, j in running.keys:
                pc.release(running.alloc[j])
                if pc.idle_nodes >= need and fits(pc, requests[h]):
                    return est
        raise _never_fits(h)

    def _never_fits(h: int) -> ConfigError:
        return ConfigError(f"job {int(ids[h])}: request", f"{int(size[h])} nodes, mode {modes[h]!r}",
                           f"a request policy {getattr(policy, 'name', '?')!r} can place on an empty machine "
                           f"of {total} nodes", "Check the job's mode and requirements against the machine.")

    def head_fits_at_shadow(h: int, shadow: float, t: float) -> bool:
        pc = look()
        for est, j in running.keys:
            if max(est, t) > shadow:
                break
            pc.release(running.alloc[j])
        return fits(pc, requests[h])

    return shadow_of, head_fits_at_shadow, _never_fits


def _run(jobs: dict, policy, table, speedup_rule: str, G: int, backfill_depth, progress: bool) -> dict:
    """The event loop (module docstring): ends, then submissions, then a pass, at each event time. Returns each
    job's start, end, run time, groups, speedup, whether backfilled and first reservation."""
    n, sub, req_t, start = jobs["n"], jobs["sub"], jobs["req_t"], np.full(jobs["n"], np.nan)
    res = {"start": start, "end": np.full(n, np.nan), "run_time": np.full(n, np.nan),
           "groups": np.zeros(n, np.int64), "speedup": np.ones(n), "backfilled": np.zeros(n, bool),
           "reservation": np.full(n, np.nan)}
    running = _Running()
    ends: list[tuple[float, int]] = []  # heap of (end, job index)
    queue: list[int] = []
    nxt = 0  # next submission (index into the FCFS order)
    launch = _launcher(jobs, res, running, ends, table, speedup_rule, G)
    schedule = _scheduler(jobs, res, policy, running, queue, launch, backfill_depth, int(policy.total_nodes))
    bar = None
    if progress:
        bar = progress_bar(total=n, unit="job", desc=f"schedule {getattr(policy, 'name', '')}".strip())
    while nxt < n or ends:
        t = min(sub[nxt] if nxt < n else math.inf, ends[0][0] if ends else math.inf)
        changed = False
        while ends and ends[0][0] <= t:
            _, j = heapq.heappop(ends)
            policy.release(running.remove(start[j] + req_t[j], j))
            changed = True
        first_new = len(queue)
        while nxt < n and sub[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        started = schedule(t, first_new, changed)
        if bar is not None and started:
            bar.update(started)
    if bar is not None:
        bar.close()
    if queue:  # pragma: no cover - every job fits an empty machine (checked in schedule)
        raise RuntimeError(f"{len(queue)} jobs never started")
    return res


def _simulation_dataset(trace, jobs: dict, res: dict, policy, table, speedup_rule: str, G: int, backfill_depth,
                        t_wall: float) -> xr.Dataset:
    """The per-job dataset of :func:`simulate` (:data:`JOB_VARS`, the mode) and its attributes."""
    sub = jobs["sub"]
    data = {
        "submit": sub, "start": res["start"], "end": res["end"], "wait": res["start"] - sub,
        "run_time": res["run_time"], "requested_time": jobs["req_t"], "nodes": jobs["size"], "groups": res["groups"],
        "speedup": res["speedup"], "mpi_fraction": jobs["mpi"], "backfilled": res["backfilled"],
        "reservation": res["reservation"],
    }
    ds = xr.Dataset({k: ("job", v, {"units": JOB_VARS[k][0], "long_name": JOB_VARS[k][1]}) for k, v in data.items()},
                    coords={"job": ("job", jobs["ids"], {"long_name": "job number in the trace"})})
    ds["mode"] = ("job", np.asarray(jobs["modes"], dtype=str), {"long_name": "allocation mode"})
    ds.attrs.update({k: v for k, v in trace.attrs.items() if isinstance(v, (str, int, float))})
    ds.attrs.update({
        "policy": str(getattr(policy, "name", type(policy).__name__)),
        "total_nodes": int(policy.total_nodes),
        "nodes_per_group": G,
        "speedups": "none" if table is None else table.describe(),
        "speedup_rule": speedup_rule,
        "backfill_depth": -1 if backfill_depth is None else int(backfill_depth),
        "scheduler": "FCFS + EASY backfilling",
        "n_jobs": int(jobs["n"]),
        "simulation_s": _time.perf_counter() - t_wall,
    })
    return ds
