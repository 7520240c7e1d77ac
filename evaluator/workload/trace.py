"""A job trace: what the scheduler simulation reads (from an SWF file or the synthetic generator).

A :class:`Trace` holds one row per job, in arrays (times in seconds, sizes in
nodes):

* ``job_id``: the trace's job number;
* ``submit``: submission time (s, from the trace's start);
* ``run_time``: actual run time on the machine the trace was taken on (s);
* ``requested_time``: the user's wall-time request (s), what reservations
  use (a job whose request is unknown gets its run time: a perfect estimate);
* ``nodes``: nodes requested;
* ``mode``: GRAP allocation mode (:data:`MODES`; ``""`` until the workload
  model assigns one);
* ``requirements``: per-group node counts of custom (balance) jobs, ``()``
  otherwise;
* ``mpi_fraction``: fraction of the run time spent in MPI, in ``[0, 1]``
  (None until the workload model assigns one).

A :class:`Trace` checks itself when made: one entry per job in every array,
job numbers unique integers, times finite and >= 0, sizes integers >= 1,
MPI fractions in ``[0, 1]`` (modes and requirements are checked against the
machine by :func:`validate_requests`); a wrong type raises
:class:`~evaluator.errors.ConfigTypeError` (a TypeError), a wrong value
:class:`~evaluator.errors.ConfigError` (a ValueError), naming the field, the
job and the value.

:func:`validate_requests` checks modes and requirements against a machine
before a simulation starts; bad input raises :class:`~evaluator.errors.ConfigError`
naming the job.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._types import Float, Int, Shaped
from ..errors import ConfigError, ConfigTypeError
from ..policies.base import CUSTOM_MODES as _REQ_MODES  # modes whose jobs carry per-group node requirements
from ..policies.base import MODES  # GRAP's allocation modes (Feng et al. Sec. 4.2): a job's mode is one of these

__all__ = ["MODES", "Trace", "validate_requests"]


@dataclasses.dataclass(frozen=True)
class Trace:
    """Jobs of a workload, one entry per job in every array (see the module docstring for units)."""

    job_id: Int[np.ndarray, "job"]
    submit: Float[np.ndarray, "job"]  # seconds
    run_time: Float[np.ndarray, "job"]  # seconds
    requested_time: Float[np.ndarray, "job"]  # seconds
    nodes: Int[np.ndarray, "job"]  # nodes
    mode: Shaped[np.ndarray, "job"] | None = None  # mode names (str); None: not assigned
    requirements: tuple[tuple[int, ...], ...] | None = None  # per job; None: none
    mpi_fraction: Float[np.ndarray, "job"] | None = None  # in [0, 1]; None: not assigned
    attrs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        ints, reals = ("job_id", "nodes"), ("submit", "run_time", "requested_time")
        for f in ints + reals + ("mpi_fraction",):
            v = getattr(self, f)
            if v is None and f == "mpi_fraction":
                continue
            a = _array(f"trace.{f}", v, integer=f in ints)
            object.__setattr__(self, f, a)
        n = len(self.job_id)
        for f in ints[1:] + reals + ("mpi_fraction", "mode", "requirements"):
            v = getattr(self, f)
            if v is not None and len(v) != n:
                raise ConfigError(f"trace.{f}", f"{len(v)} entries", f"one entry per job ({n})")
        ids = self.job_id
        bad = np.flatnonzero(ids < 0)
        if bad.size:  # the policies mark an idle node -1: refused here, before a schedule runs into it
            raise ConfigError("trace.job_id", int(ids[bad[0]]), "job numbers >= 0",
                              f"Entry {int(bad[0])} of the trace; renumber its jobs.")
        if n:
            u, first, counts = np.unique(ids, return_index=True, return_counts=True)
            if (counts > 1).any():
                dup = int(u[np.flatnonzero(counts > 1)[0]])
                raise ConfigError("trace.job_id", dup, "job numbers used once each (unique)")
        for f in reals:
            a = getattr(self, f)
            bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
            if bad.size:
                i = int(bad[0])
                raise ConfigError(f"job {int(ids[i])}: trace.{f}", float(a[i]), "a finite number of seconds >= 0")
        bad = np.flatnonzero(self.nodes < 1)
        if bad.size:
            i = int(bad[0])
            raise ConfigError(f"job {int(ids[i])}: trace.nodes", int(self.nodes[i]), "an integer >= 1 (nodes)")
        if self.mpi_fraction is not None:
            f = self.mpi_fraction
            bad = np.flatnonzero(~((f >= 0) & (f <= 1)))
            if bad.size:
                i = int(bad[0])
                raise ConfigError(f"job {int(ids[i])}: trace.mpi_fraction", float(f[i]),
                                  "a fraction of the run time in [0, 1]")
        if self.requirements is not None and not isinstance(self.requirements, (tuple, list)):
            raise ConfigTypeError("trace.requirements", type(self.requirements).__name__,
                                  "a tuple of per-group node counts per job, or None")
        if not isinstance(self.attrs, dict):
            raise ConfigTypeError("trace.attrs", type(self.attrs).__name__, "a dict")

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return int(len(self.job_id))

    def __len__(self) -> int:
        return self.n_jobs

    def modes(self) -> Shaped[np.ndarray, "job"]:
        """Each job's mode (``"minimal_balance"`` where none was assigned)."""
        if self.mode is None:
            return np.full(self.n_jobs, MODES[0], dtype=object)
        return np.asarray(self.mode, dtype=object)

    def reqs(self) -> tuple[tuple[int, ...], ...]:
        """Each job's per-group node requirements (``()`` where none)."""
        return self.requirements if self.requirements is not None else ((),) * self.n_jobs

    def replace(self, **changes) -> "Trace":
        """A copy with some fields replaced."""
        return dataclasses.replace(self, **changes)

    def head(self, n: int) -> "Trace":
        """The first ``n`` jobs (in the trace's order)."""
        sl = slice(0, int(n))
        return Trace(self.job_id[sl], self.submit[sl], self.run_time[sl], self.requested_time[sl],
                     self.nodes[sl], None if self.mode is None else self.mode[sl],
                     None if self.requirements is None else self.requirements[sl],
                     None if self.mpi_fraction is None else self.mpi_fraction[sl], dict(self.attrs))


def _array(name: str, value, integer: bool) -> np.ndarray:
    """``value`` as a 1-D NumPy array of integers (``integer``) or real numbers; ConfigTypeError otherwise."""
    what = "a 1-D array of " + ("integers" if integer else "real numbers") + ", one per job"
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        raise ConfigTypeError(name, value if isinstance(value, (str, int, float)) else type(value).__name__, what)
    try:
        a = np.asarray(value)
    except (ValueError, TypeError):
        raise ConfigTypeError(name, type(value).__name__, what) from None
    if a.ndim != 1:
        raise ConfigError(name, f"shape {a.shape}", what)
    if a.size == 0:
        return a.astype(np.int64 if integer else np.float64)
    kind = a.dtype.kind
    if integer:
        if kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.all(np.abs(a) < 2 ** 63):
            return a.astype(np.int64)
        if kind == "f":
            bad = a[np.flatnonzero(~np.isfinite(a) | (a != np.round(a)) | (np.abs(a) >= 2 ** 63))[0]]
            raise ConfigError(name, bad.item(), what)
        if kind not in "iu":
            bad = a[0]
            raise ConfigTypeError(name, bad.item() if isinstance(bad, np.generic) else bad, what)
        return a.astype(np.int64, copy=False)
    if kind not in "iuf":
        bad = a[0]
        raise ConfigTypeError(name, bad.item() if isinstance(bad, np.generic) else bad, what)
    return a.astype(np.float64, copy=False)


def validate_requests(trace: Trace, total_nodes: int, nodes_per_group: int) -> None:
    """Check every job's size, mode and requirements against a machine; raise ConfigError naming the job.

    * sizes in ``[1, total_nodes]``; times finite and >= 0;
    * ``mode`` one of :data:`MODES`;
    * ``custom_balance`` and ``custom`` jobs larger than a group list their
      per-group node counts: each in ``[1, nodes_per_group]``, at most
      ``total_nodes / nodes_per_group`` groups, summing to the job's size
      (``custom_balance``: all equal); other jobs list none.
    """
    groups = total_nodes // nodes_per_group
    ids = trace.job_id
    bad = np.flatnonzero((trace.nodes < 1) | (trace.nodes > total_nodes))
    if bad.size:
        i = int(bad[0])
        raise ConfigError(f"job {int(ids[i])}: nodes", int(trace.nodes[i]),
                          f"an integer in [1, {total_nodes}] (the machine's nodes)",
                          "Enlarge or clamp the trace to the machine (workload enlarge), or simulate a larger machine.")
    for name in ("submit", "run_time", "requested_time"):
        a = np.asarray(getattr(trace, name), dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
        if bad.size:
            i = int(bad[0])
            raise ConfigError(f"job {int(ids[i])}: {name}", float(a[i]), "a finite number of seconds >= 0")
    modes = trace.modes()
    reqs = trace.reqs()
    for i in range(trace.n_jobs):
        m = modes[i]
        if m not in MODES:
            raise ConfigError(f"job {int(ids[i])}: mode", m, f"one of {list(MODES)}")
        r = reqs[i]
        n = int(trace.nodes[i])
        if m in _REQ_MODES and n > nodes_per_group:
            if not r:
                raise ConfigError(f"job {int(ids[i])}: requirements", list(r),
                                  f"per-group node counts for mode {m!r} (a non-empty list summing to {n})")
            if sum(r) != n:
                raise ConfigError(f"job {int(ids[i])}: requirements", list(r),
                                  f"per-group node counts summing to the job's size {n} (they sum to {sum(r)})")
            if min(r) < 1 or max(r) > nodes_per_group:
                raise ConfigError(f"job {int(ids[i])}: requirements", list(r),
                                  f"node counts in [1, {nodes_per_group}] (one group's nodes)")
            if len(r) > groups:
                raise ConfigError(f"job {int(ids[i])}: requirements", list(r),
                                  f"at most {groups} groups (the machine's groups)")
            if m == "custom_balance" and len(set(r)) != 1:
                raise ConfigError(f"job {int(ids[i])}: requirements", list(r),
                                  "equal node counts in every group for mode 'custom_balance'",
                                  "Use mode 'custom' for uneven counts.")
        elif r and (m not in _REQ_MODES or sum(r) != n):
            raise ConfigError(f"job {int(ids[i])}: requirements", list(r),
                              f"none for a job of mode {m!r} and {n} nodes"
                              + ("" if m not in _REQ_MODES else f", or counts summing to {n}"))
