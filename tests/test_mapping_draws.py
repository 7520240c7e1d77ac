"""`evaluator map` under hashed ECMP: the search scores one hash seed, so the gain it prints may be that draw's
luck; the command also prints the mapping found, the best start and the best named placement over 16 hash seeds
(mean, 95th percentile) and keeps them in its dataset.

The reference is independent of :func:`evaluator.mapping.over_draws`: each seed's spec from
``evaluator.routing.ecmp_seeds`` evaluated on the dataset's own mapping by ``evaluate_batch``, then NumPy's mean
and quantile.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

from evaluator import cli, config, routing
from evaluator.evaluation import evaluate_batch
from evaluator.mapping import DRAWS, over_draws
from evaluator.placement import explicit
from evaluator.query import open_results

JOB = ["topology=fat_tree", "topology.k=8", "topology.levels=3", "traffic=stencil", "traffic.alpha=[64,64,32]",
       "traffic.beta=[8,4,4]", "placement=linear"]


def _map(tmp_path: Path, routing_kind: str) -> tuple[str, Path]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["map", *JOB, f"routing={routing_kind}", f"output_dir={tmp_path}", "--iterations", "20",
                         "--budget", "60", "--no-progress"]) == 0
    files = sorted(tmp_path.rglob("*.nc"))
    assert len(files) == 1, files
    return out.getvalue(), files[0]


def test_map_under_hashed_ecmp_reports_the_mapping_over_16_seeds(tmp_path):
    printed, path = _map(tmp_path, "ecmp")
    ds = open_results(path)
    lines = printed.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("over 16 draws of the routing"))
    assert lines[head] == ("over 16 draws of the routing (ecmp-s0 .. ecmp-s15; the search scored ecmp-s0 only), "
                           "mean and 95th percentile:")
    assert lines[head + 1].lstrip().startswith("mapping found")
    cfg = config.to_object(config.compose([*JOB, "routing=ecmp"]))
    point = config.build(cfg)
    specs = routing.ecmp_seeds(DRAWS)
    found = explicit(point.topology, np.asarray(ds["task_node"].values, np.int64), "found")
    t = np.array([float(evaluate_batch(point.topology, s, point.traffic, found).metrics["completion_time"][0])
                  for s in specs])
    # the first draw is the seed the search scored: its time is the mapping found's
    assert t[0] == pytest.approx(float(ds["completion_time"]), rel=1e-12)
    kept = ds["draw_completion_time"]
    assert list(kept["draw"].values) == [s.label for s in specs]
    np.testing.assert_allclose(kept.sel(draw_mapping="mapping found").values, t, rtol=1e-12)
    from evaluator.display import format_value

    assert format_value(t.mean(), "s") in lines[head + 1] and format_value(np.quantile(t, 0.95), "s") in lines[head + 1]
    # the best start's row: its own mapping's times
    best = str(ds.attrs["best_start"])
    assert best in kept["draw_mapping"].values
    assert any(line.lstrip().startswith(f"{best} (the best start") for line in lines[head + 1:head + 4])


def test_a_deterministic_routing_prints_no_draws(tmp_path):
    printed, path = _map(tmp_path, "dmodk")
    assert "draws of the routing" not in printed
    assert "draw_completion_time" not in open_results(path)


def test_draws_of_a_routing():
    assert [s.seed for s in routing.ecmp(3).draws(3)] == [3, 4, 5]
    assert [s.seed for s in routing.ecmp(2**32 - 1).draws(2)] == [2**32 - 1, 0]
    assert routing.dmodk().draws(4) == () and routing.ecmp_spray().draws(4) == ()
    from evaluator.topology import fat_tree
    from evaluator.traffic import random_permutation

    topo = fat_tree(k=4, levels=3)
    assert over_draws(topo, routing.dmodk(), random_permutation(16, 1e6, 0), {"a": np.arange(16)}) is None
