"""Max-min fair sharing of link capacity between jobs that run together (DESIGN.md "Jobs and phases").

The model
---------
Every job ``j`` runs its phases one after another. Alone on the machine
(with the background, if any, already taking its share of every link),
phase ``p`` takes ``T[j, p] = max_l L[j, p, l] / c[l]`` seconds, where
``L`` is the phase's load in bytes and ``c`` the capacity left by the
background (bytes/s). During that phase the job, alone, puts
``r[j, l] = L[j, p, l] / T[j, p]`` bytes/s on link ``l``.

Together, every job progresses at a *speed* ``s_j`` in ``(0, 1]`` relative
to its speed alone: at speed ``s`` it puts ``s r[j, l]`` on every link it
uses and advances through its solo timeline at ``s`` seconds per second.
Speeds are max-min fair (progressive filling): all speeds rise together
from 0; when a link becomes full (``sum_j s_j r[j, l] = c[l]``), the jobs
that use it are frozen at the current level and the others go on rising,
until every job is frozen or has reached speed 1. On one shared link that
every job alone would fill (its bottleneck) this gives every job an equal
share of its bandwidth; a job whose bottleneck is elsewhere uses less of it
at the same speed (equal speeds, not equal bytes/s). Speeds are recomputed at
every *event*: a job finishing (the others may speed up) or a job moving to
its next phase (its link usage changes). Between events speeds are
constant, so the whole run is a finite sequence of intervals, computed
exactly here (no time stepping).

Two facts keep it cheap: a link used by one job only can never stop that
job below speed 1 (``r[j, l] <= c[l]`` by the definition of ``T``), so only
links used by two or more jobs need to be passed in; and within one event a
job is frozen once, so the filling costs ``O(jobs x links)`` per freeze.

A phase whose time is 0 (no bytes leave a node) takes no time; a phase
whose time is infinite (a link it uses has no capacity left) blocks its
job: the job never finishes, takes no capacity, and the others run as
without it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._types import Float
from ..errors import require

__all__ = ["max_min_speeds", "SharingResult", "share", "REL_TIE"]

REL_TIE = 1e-12
"""Relative tolerance under which two saturation levels (or two event times) count as the same."""


def max_min_speeds(rates: Float[np.ndarray, "job link"], capacity: Float[np.ndarray, "link"]
                   ) -> Float[np.ndarray, "job"]:
    """Max-min fair speeds in ``(0, 1]`` by progressive filling.

    Parameters
    ----------
    rates : float array [job, link]
        Bytes/s each job puts on each link at speed 1 (>= 0).
    capacity : float array [link]
        Bytes/s available on each link (> 0 where some rate is positive).

    Returns
    -------
    float array [job]: every job's speed; a job that no full link stops gets 1.
    """
    rates = np.asarray(rates, dtype=np.float64)
    capacity = np.asarray(capacity, dtype=np.float64)
    # checked: a NaN rate or capacity never froze a job (the loop ran forever), other shapes raised IndexError
    require(rates.ndim == 2, "rates", rates.shape, "a [job, link] array")
    require(capacity.shape == (rates.shape[1],), "capacity", capacity.shape,
            f"one capacity per link: shape ({rates.shape[1]},)")
    require(bool(np.isfinite(rates).all() and (rates >= 0).all()), "rates", "a rate < 0 or not finite",
            "rates finite and >= 0 (bytes/s at speed 1)")
    require(bool((~np.isnan(capacity)).all() and (capacity >= 0).all()), "capacity", "a capacity < 0 or NaN",
            "capacities >= 0 (bytes/s)")
    J = rates.shape[0]
    speed = np.ones(J)
    if J == 0 or rates.shape[1] == 0:
        return speed
    frozen = np.zeros(J, dtype=bool)
    uses = rates > 0
    users = uses.sum(axis=0)  # jobs still rising that use each link (exact counts)
    free_use = rates.sum(axis=0)  # their usage per unit speed
    used = np.zeros(rates.shape[1])  # bytes/s taken by frozen jobs
    level = 0.0
    while not frozen.all():
        live = users > 0
        if not live.any():
            break
        lv = np.full(rates.shape[1], np.inf)
        lv[live] = np.maximum(capacity[live] - used[live], 0.0) / free_use[live]
        low = float(lv.min())
        if low >= 1.0:
            break
        level = max(level, low)
        full = live & (lv <= low * (1 + REL_TIE))
        hit = ~frozen & uses[:, full].any(axis=1)
        speed[hit] = level
        frozen |= hit
        users = users - uses[hit].sum(axis=0)
        touched = uses[hit].any(axis=0)
        free_use[touched] = rates[~frozen][:, touched].sum(axis=0)  # summed again, not subtracted: no cancellation
        used = used + level * rates[hit].sum(axis=0)
    return speed


@dataclasses.dataclass
class SharingResult:
    """Outcome of :func:`share`.

    Attributes
    ----------
    finish : float array [job]
        When each job finishes (s from the common start; ``inf`` if blocked).
    events : list of (time, {job: speed})
        The start of every interval and the speeds of the running jobs during it.
    """

    finish: Float[np.ndarray, "job"]
    events: list


def share(loads: list[Float[np.ndarray, "_phase link"]], times: list[Float[np.ndarray, "_phase"]],
          capacity: Float[np.ndarray, "link"]) -> SharingResult:
    """Run jobs together under max-min fair sharing (module docstring) and return their finish times.

    Parameters
    ----------
    loads
        Per job, ``Float[np.ndarray, "phase link"]`` (each job its own phase count: ``_phase`` in the
        annotation, not matched across jobs): bytes of each phase on the links given
        (typically only the links used by two or more jobs; see the module docstring).
    times
        Per job, ``Float[np.ndarray, "phase"]``: solo time of each phase in seconds, taken
        over ALL links (``inf`` blocks the job).
    capacity
        ``Float[np.ndarray, "link"]``: bytes/s left for the jobs on the links of ``loads``.
    """
    J = len(loads)
    capacity = np.asarray(capacity, dtype=np.float64)
    require(len(times) == J, "times", len(times), f"one array of phase times per job ({J})")
    for j in range(J):  # (a negative time finished a job at -1 s; mismatched shapes raised IndexError)
        t, ld = np.asarray(times[j], dtype=np.float64), np.asarray(loads[j], dtype=np.float64)
        require(t.ndim == 1 and not np.isnan(t).any() and (t >= 0).all(), f"times[{j}]", t.tolist()[:8],
                "solo times of the job's phases: seconds >= 0 (inf: blocked)")
        require(ld.shape == (t.size, capacity.size), f"loads[{j}]", ld.shape,
                f"[phase, link] bytes: shape ({t.size}, {capacity.size})")
    finish = np.full(J, np.inf)
    phase = np.zeros(J, dtype=np.int64)
    done = np.zeros(J)  # solo seconds of the current phase already done
    n_phases = [len(t) for t in times]
    now = 0.0
    events: list = []

    def skip_empty(j: int) -> None:
        while phase[j] < n_phases[j] and times[j][phase[j]] == 0.0:
            phase[j] += 1
            done[j] = 0.0
        if phase[j] >= n_phases[j]:
            finish[j] = now

    for j in range(J):
        skip_empty(j)
    while True:
        active = [j for j in range(J) if phase[j] < n_phases[j] and np.isfinite(times[j][phase[j]])]
        if not active:
            break
        rates = np.stack([loads[j][phase[j]] / times[j][phase[j]] for j in active])
        s = max_min_speeds(rates, capacity)
        events.append((now, dict(zip(active, s.tolist()))))
        left = np.array([times[j][phase[j]] - done[j] for j in active])
        dt_each = left / s
        dt = float(dt_each.min())
        ends = dt_each <= dt * (1 + REL_TIE)
        now = now + dt
        for k, j in enumerate(active):
            if ends[k]:
                phase[j] += 1
                done[j] = 0.0
                skip_empty(j)
            else:
                done[j] += s[k] * dt
    return SharingResult(finish, events)
