"""tests/test_startup_cache.py in a fresh Python process (see the note there): every one of its checks runs, and
this test fails with the inner run's output when one fails.

The inner run gets its own, empty JAX compilation cache: these checks play "a later process" with new kernels in
the same process, and when the program's first compilation came from a warm JAX cache (an executable deserialized
there), XLA:CPU cannot hold the store's copy of the same program beside it ("NOT_FOUND: Function
broadcast_divide_fusion not found"; the store then falls back to the usual path, as documented in
evaluator/_program_store.py). A real later process holds only the store's copy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_program_store_checks_pass_in_a_fresh_process(tmp_path):
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "EVALUATOR_TEST_FRESH_PROCESS": "1", "EVALUATOR_TEST_JAX_CACHE": str(tmp_path / "jax"),
           "EVALUATOR_COMPILATION_CACHE": str(tmp_path / "jax")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "tests/test_startup_cache.py"], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=600)
    tail = (run.stdout + run.stderr)[-4000:]
    assert run.returncode == 0, tail
    assert " passed" in tail and "skipped" not in tail and "failed" not in tail, tail
