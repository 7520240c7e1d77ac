"""Shapes held, not only written (issue 36 item 4): a representative part of the suite, run again with jaxtyping's
import hook checking every annotated function and dataclass of ``evaluator`` at run time (beartype as the checker;
its PEP 484 tower lets an ``int`` stand where a ``float`` is annotated). A wrong dtype family, an array of the other
side (NumPy where JAX is annotated) or a size that breaks an axis name bound in the same call fails here.

Why a subprocess and not the hook on for the whole suite: the hook checks every call of every function of the
package: measured file by file on 10 test files (kernel_metrics, batch_engine, route, mapping_degree_buckets,
fat_tree, typed_fields, axes_declared, flowlevel, jobs, latency), each run without and then with the hook back to
back, they took 143.7 s of wall time without it and 209.4 s with it (+46%; 1.3-3.8x on the short files, where the
hook's rewriting of every imported module dominates; +25-60% on the long ones). That is far past the ~10% a
whole-suite setting may cost, so the check runs here, on files chosen to cover the kernels, the batch engine,
every routing's routes, flow-level sharing and the mapping moves under six routings, in one child process (37 s of
CPU; test_fat_tree, test_jobs and test_mapping_degree_buckets also pass under the hook, 21-23 s each alone, and are
left out for the suite's time) (the hook must be installed before ``evaluator`` is first
imported, which this process has already done). To check another file by hand::

    .venv/bin/python -m pytest -q -p jaxtyping._pytest_plugin \\
        "--jaxtyping-packages=evaluator,beartype.beartype(conf=beartype.BeartypeConf(is_pep484_tower=True))" \\
        -W ignore::DeprecationWarning tests/test_route.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # about 40 s of one core: `make test` runs it, `make test-quick` leaves it out

CHECKER = "beartype.beartype(conf=beartype.BeartypeConf(is_pep484_tower=True))"
HOOK = ["-p", "jaxtyping._pytest_plugin", f"--jaxtyping-packages=evaluator,{CHECKER}"]

FILES = [
    "tests/test_kernel_metrics.py",
    "tests/test_batch_engine.py",
    "tests/test_route.py",
    "tests/test_flowlevel.py",
    "tests/test_mapping_search.py::test_incremental_scores_equal_a_full_evaluation",
]
"""The files run under the hook (every one also runs unchecked in the suite)."""


def test_the_shape_annotations_hold_at_run_time():
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *HOOK,
           "-W", "ignore::DeprecationWarning", *FILES]
    env = dict(os.environ)
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_XDIST_TESTRUNUID", None)
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, (f"with jaxtyping's hook on, {' '.join(FILES)} failed (a shape or dtype annotation "
                                 f"that does not hold):\n{run.stdout[-12000:]}\n{run.stderr[-3000:]}")
