"""XLA:CPU's thread pool sized for one core in processes that hold one (private).

JAX's CPU client sizes its thread pool from the cores the process may run
on (its CPU affinity) when the backend starts, and XLA:CPU compiles its
programs to split their loops over that pool. Where several evaluator
processes share the cores, each one's pool competes with the others'. The
sweep's Ray workers are such processes: a task holds one CPU, so a machine
runs one worker per core. JAX has no setting for the pool's size; its
maintainers point to the affinity (jax-ml/jax#1539). :func:`one_core`
starts the backend while the process may run on one core only, then gives
every thread of the process its cores back: the pool holds one thread, and
the process still runs on any core.

Measured on this 2-core machine (2026-11-30, a slow day). 256 seeds of the
README's sweep (``dragonfly_nne_placement``, 21,504 feasible points),
evaluated in one process, programs compiled in it: 2.5-2.9 s a pass and
3.5-3.9 CPU-seconds with the one-thread pool, against 3.4-3.7 s and 5.8-6.0
CPU-seconds with the default pool. The README's 10^6-point sweep, see
README.md ("Measured on this 2-core machine").

The sweep's Ray tasks call it first (the dataset's ``timing_json`` says
whether every worker ran so: ``worker_xla_one_core``); a process already
confined to one core (``taskset -c 0``, a batch system's one-core slot, the
bench's pinned workers) gets a one-thread pool from JAX itself.
``EVALUATOR_WORKER_THREADS=all`` keeps JAX's default pool. What a kernel
computes does not change (the pool decides where its loops run, not what
they add up): the Ray sweep's dataset equals the command's own
(tests/test_sweep.py).
"""

from __future__ import annotations

import os

__all__ = ["one_core", "is_one_core", "ENV"]

ENV = "EVALUATOR_WORKER_THREADS"
_KEEP = ("all", "0", "off", "false", "no")
_DONE: list[bool] = []


def one_core() -> bool:
    """Start JAX's backends with a one-thread XLA:CPU pool (see the module docstring). True when done here;
    False when the backends have started already (the pool is sized), when ``EVALUATOR_WORKER_THREADS`` is
    ``all`` (or ``0``, ``off``), or where the affinity cannot be set (not Linux). Every thread of the process
    gets its former cores back."""
    if os.environ.get(ENV, "").strip().lower() in _KEEP:
        return False
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized() or not hasattr(os, "sched_setaffinity"):
        return False
    import jax

    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    try:
        jax.devices()  # the backends start: the CPU client sizes its pool from this thread's one core
    finally:
        for tid in os.listdir("/proc/self/task"):  # the pool's threads were made here: every thread set back
            try:
                os.sched_setaffinity(int(tid), cores)
            except OSError:  # (a thread that has exited since)
                pass
    _DONE.append(True)
    return True


def is_one_core() -> bool:
    """Whether :func:`one_core` started this process's backends."""
    return bool(_DONE)
