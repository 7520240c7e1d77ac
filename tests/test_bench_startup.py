"""``evaluator bench --only startup`` (evaluator/bench/startup.py): one probe process and the rows made of it.
The probe evaluates the 8x8 torus, then the torus built again five times with the kernels shared by content and
five times after ``forget_kernels()``, in turn, and asserts inside that every evaluation gives the first one's
completion time. Timings are reported by the bench, never asserted here."""

from __future__ import annotations

import math
import os

from evaluator.bench import startup


def test_one_probe_and_its_three_rows(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in startup._CACHE_VARS}
    env["EVALUATOR_COMPILATION_CACHE"] = str(tmp_path / "jax")
    run = startup._probe(env)
    assert len(run["rebuilt_shared_s"]) == len(run["rebuilt_fresh_s"]) == 5
    assert run["completion_time"] == 64 * 1024 / 2.0e9  # a face of 64 elements of 1,024 bytes over a 2 GB/s link
    rows = startup.startup_rows({"cold": run, "warm": [run], "cache_entries": 0, "programs": 0, "target_s": 0.5},
                                lambda: "cpu")
    assert len(rows) == 3 and all(r["check"] == "same completion time" for r in rows)
    again = rows[2]
    assert again["scenario"].startswith("start-up: 8x8 torus built again in the same process")
    assert again["seconds"] > 0 and math.isnan(again["ratio"]) and "forget_kernels()" in again["note"]
