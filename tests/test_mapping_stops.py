"""What ends `evaluator map`'s search besides its budget: a mapping that meets the certified lower bound (no mapping
is faster, so the search stops there instead of spending the rest of its budget: the docs' 4x4x4 example ran its
600 s), and the user's Ctrl-C (the best mapping seen so far is the answer, printed and written; before, the run
ended with `interrupted` and nothing was kept). A Ctrl-C in the draws that follow keeps the mapping found.

The references: ``evaluate_batch`` of the written mapping (the printed time), the bound the command prints, the
starts' own times, and the wall clock.
"""

from __future__ import annotations

import contextlib
import io
import re
import time
from pathlib import Path

import numpy as np

import evaluator.cli.mapping as map_cli
import evaluator.mapping._search as S
from evaluator import cli, config
from evaluator.display import format_value
from evaluator.evaluation import evaluate_batch
from evaluator.placement import explicit
from evaluator.query import open_results

SMALL = ["topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=stencil", "traffic.alpha=[32,32,32]",
         "traffic.beta=[8,4,4]", "placement=linear"]  # docs/mapping.md: the best start is optimal
TORUS = ["topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=random_pairs", "traffic.n_tasks=64",
         "placement=linear"]


def _map(args: list[str], tmp_path: Path) -> tuple[int, str, Path | None]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli.main(["map", *args, f"output_dir={tmp_path}", "--no-progress"])
    files = sorted(tmp_path.rglob("*.nc"))
    return rc, out.getvalue(), files[0] if files else None


def _time_of(args: list[str], path: Path) -> float:
    """``evaluate_batch`` of the dataset's mapping on the job the command built."""
    obj = config.to_object(config.compose([a for a in args if "=" in a]))
    p = config.build(obj)
    tn = open_results(path)["task_node"].values
    return float(evaluate_batch(p.topology, p.routing, p.traffic, explicit(p.topology, tn, "written"))
                 .metrics["completion_time"][0])


def test_a_start_that_meets_the_bound_ends_the_search_at_once(tmp_path):
    t0 = time.perf_counter()
    rc, out, path = _map([*SMALL, "--tasks-per-node", "4", "--nodes", "0-31", "--budget", "600"], tmp_path)
    took = time.perf_counter() - t0
    assert rc == 0 and took < 300, took  # not the 600 s budget
    bound = float(re.search(r"no mapping is below ([0-9.]+) us", out).group(1))
    assert re.search(r"search stopped after [0-9.]+ [mu]?s of its 600\.0 s: the mapping meets the lower bound below",
                     out), out
    ds = open_results(path)
    assert ds.attrs["search_stopped_by"] == "bound"
    t = _time_of([*SMALL, "placement.tasks_per_node=4"], path)
    assert t <= float(ds["lower_bound"]) * (1 + S.BOUND_RTOL)
    assert format_value(t, "s") == f"{bound:.2f} us"


def test_ctrl_c_stops_the_search_and_keeps_the_best_mapping_seen(tmp_path, monkeypatch):
    """A KeyboardInterrupt raised inside the search's third batch, as Ctrl-C raises it: the command prints and
    writes the best mapping of the first two, never slower than its start, and says so."""
    real = S._score_moves
    calls = []

    def score_then_interrupt(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(S, "_score_moves", score_then_interrupt)
    rc, out, path = _map([*TORUS, "--budget", "600"], tmp_path)
    assert rc == 0 and len(calls) == 3
    assert re.search(r"search stopped by Ctrl-C after [0-9.]+ [mu]?s: the mapping below is the best seen until then",
                     out), out
    ds = open_results(path)
    assert ds.attrs["search_stopped_by"] == "ctrl-c"
    t = _time_of(TORUS, path)
    found = re.search(r"mapping found: ([0-9.]+ [mu]?s)", out).group(1)
    assert format_value(t, "s") == found
    assert t <= float(ds["start_completion_time"].sel(start=ds.attrs["best_start"])) * (1 + 1e-12)
    assert np.isclose(float(ds["best_completion_time"][-1]), float(ds["search_completion_time"].min()), rtol=1e-12)


def test_ctrl_c_in_the_draws_keeps_the_mapping_found(tmp_path, monkeypatch):
    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(map_cli, "over_draws", interrupted)
    args = ["topology=fat_tree", "topology.k=4", "topology.levels=3", "routing=ecmp", "traffic=random_pairs",
            "traffic.n_tasks=16", "placement=linear", "--iterations", "3"]
    rc, out, path = _map(args, tmp_path)
    assert rc == 130  # the shell's code for a Ctrl-C: the draws asked for were not evaluated
    assert "draws of the routing interrupted (Ctrl-C): none summarised; the mapping found above is kept" in out
    assert "dataset: " in out and path is not None and "draw_completion_time" not in open_results(path)
