"""A sweep axis may not switch between one job and several jobs (issue 23 follow-up: such a sweep was evaluated
silently the way of each chunk's first point, so a background.fraction axis of 0 and 0.1 gave equal results)."""

from __future__ import annotations

import pytest

from evaluator import config
from evaluator.errors import ConfigError
from evaluator.sweep import plan_sweep

BASE = ["sweeps=torus_bounds", "bounds=false", "topology.dims=[4,4]", "traffic.n_tasks=12"]


def _plan(tmp_path, axes):
    ov = [*BASE, f"sweep.output_dir={tmp_path}"]
    return plan_sweep(config.compose_sweep(ov, user_overrides=[o for o in BASE if o != "sweeps=torus_bounds"],
                                           axes=axes))


def test_background_axis_mixing_none_and_some_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"sweep.axes = 'background.fraction'.*all one job or all several jobs"
                                          r".*'0.0' is one job alone and '0.1' several jobs"):
        _plan(tmp_path, {"background.fraction": [0.0, 0.1]})


@pytest.mark.parametrize("values", [[0.05, 0.1], [0.0]])
def test_background_axis_of_one_sort_plans(tmp_path, values):
    plan = _plan(tmp_path, {"background.fraction": values})
    assert plan.n_points == len(values)
