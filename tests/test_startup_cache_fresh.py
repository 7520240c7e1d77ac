"""tests/test_startup_cache.py in a fresh Python process (see the note there): every one of its checks runs, and
this test fails with the inner run's output when one fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_program_store_checks_pass_in_a_fresh_process():
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "EVALUATOR_TEST_FRESH_PROCESS": "1"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "tests/test_startup_cache.py"], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=600)
    tail = (run.stdout + run.stderr)[-4000:]
    assert run.returncode == 0, tail
    assert " passed" in tail and "skipped" not in tail and "failed" not in tail, tail
