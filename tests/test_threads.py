"""XLA:CPU's pool sized for one core in a process that holds one (evaluator._threads): the backends start with a
one-thread pool, every thread of the process gets its cores back, nothing happens once the backends have started or
when the user keeps JAX's default. Each case runs in a fresh interpreter (the pool is sized once per process, when
the backends start). That a sweep's Ray workers run so, with the same numbers as the command's own process:
tests/test_sweep.py::test_real_ray_two_workers_and_retry_after_killed_worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _child(code: str, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` in a fresh interpreter (this checkout importable) and return the JSON it prints last."""
    e = {k: v for k, v in os.environ.items() if k != "EVALUATOR_WORKER_THREADS"}
    e.update(env or {})
    e["PYTHONPATH"] = str(ROOT)
    run = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


_ONE = """
import json, os, threading
from evaluator._threads import one_core, is_one_core
cores = sorted(os.sched_getaffinity(0))
first = one_core()
import jax, jax.numpy as jnp
total = float(jax.jit(lambda x: (x * 2).sum())(jnp.arange(10.0)))
threads = {t: sorted(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")}
print(json.dumps({"cores": cores, "first": first, "is": is_one_core(), "again": one_core(), "total": total,
                  "after": sorted(os.sched_getaffinity(0)), "threads": threads}))
"""


def test_one_core_starts_the_backends_and_gives_every_thread_its_cores_back():
    got = _child(_ONE)
    assert got["first"] is True and got["is"] is True
    assert got["again"] is False  # the backends have started: sized once
    assert got["total"] == 90.0
    assert got["after"] == got["cores"]
    assert all(c == got["cores"] for c in got["threads"].values()), got["threads"]  # XLA's threads included


@pytest.mark.parametrize("value", ["all", "0"])
def test_the_users_choice_is_kept(value):
    got = _child(_ONE, {"EVALUATOR_WORKER_THREADS": value})
    assert got["first"] is False and got["is"] is False and got["total"] == 90.0


def test_nothing_changes_once_the_backends_have_started():
    got = _child("""
import json, os
import jax.numpy as jnp
from evaluator._threads import one_core, is_one_core
float(jnp.ones(3).sum())  # the backends start: the pool is sized
print(json.dumps({"set": one_core(), "is": is_one_core()}))
""")
    assert got == {"set": False, "is": False}
