"""Jobs and background from Hydra configs: composition, inheritance from the top-level groups, errors, the CLI."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator.errors import ConfigError
from evaluator.jobs import Job, evaluate_jobs
from tests.helpers import TOL, strip

TORUS = ["topology=torus", "topology.dims=[8,4,4]", "routing=dor", "traffic=random_permutation",
         "traffic.n_tasks=64", "placement=subprism", "placement.task_grid=[4,4,4]"]


def test_jobs_inherit_and_override_the_top_level_groups():
    obj = config.compose_object(TORUS + ["jobs=[{name: a}, {name: b, placement: {offset: [4,0,0]}, "
                                         "traffic: {seed: 7}}]"])
    jp = config.build_jobs(obj)
    a, b = jp.jobs
    assert (a.name, b.name) == ("a", "b")
    topo = jp.topology
    want_a = ev.placement.subprism(topo, [4, 4, 4])
    want_b = ev.placement.subprism(topo, [4, 4, 4], [4, 0, 0])
    assert np.array_equal(a.placement.task_node, want_a.task_node)
    assert np.array_equal(b.placement.task_node, want_b.task_node)
    assert np.array_equal(b.traffic.dst, ev.traffic.random_permutation(64, 1e6, 7).dst)
    ds = evaluate_jobs(topo, list(jp.jobs), jp.routing)
    direct = evaluate_jobs(topo, [Job(a.traffic, want_a, name="a"), Job(b.traffic, want_b, name="b")], ev.dor())
    np.testing.assert_allclose(ds.completion_time.values, direct.completion_time.values, rtol=TOL["rel"])


def test_job_with_its_own_kind_and_routing():
    obj = config.compose_object(TORUS + ["jobs=[{placement: {offset: [0,0,0]}}, "
                                         "{traffic: {kind: all_to_all, n_tasks: 64}, placement: {offset: [4,0,0]}, "
                                         "routing: {kind: dor, tie: positive}}]"])
    jp = config.build_jobs(obj)
    assert isinstance(jp.jobs[1].traffic, ev.DenseTraffic)
    assert jp.jobs[1].routing.tie == "positive" and jp.jobs[0].routing is None


def test_background_alone_makes_a_one_job_evaluation():
    obj = config.compose_object(TORUS + ["background.fraction=0.1"])
    assert config.has_jobs(obj)
    jp = config.build_jobs(obj)
    assert len(jp.jobs) == 1 and jp.background.fraction == 0.1
    assert not config.has_jobs(config.compose_object(TORUS))


@pytest.mark.parametrize("override,field", [
    ("jobs=[{plaement: {offset: [0,0,0]}}]", r"jobs\[0\]\.plaement"),
    ("jobs=[{placement: {ofset: [0,0,0]}}]", r"jobs\[0\]\.placement\.ofset"),
    ("jobs=[{traffic: {kind: nope}}]", r"traffic\.kind"),
    ("jobs=[]", r"^jobs = \[\]"),
    ("jobs=[{placement: {offset: [0,0]}}]", r"jobs\[0\]\.placement\.offset"),
])
def test_bad_job_configs_name_the_field(override, field):
    with pytest.raises(ConfigError, match=field):
        config.build_jobs(config.compose_object(TORUS + [override]))


@pytest.mark.parametrize("value", ["1.0", "-0.5", "2"])
def test_background_fraction_outside_range(value):
    with pytest.raises(ConfigError, match=r"background\.fraction"):  # when the config is read, before any build
        config.compose_object(TORUS + [f"background.fraction={value}"])
    obj = config.compose_object(TORUS + ["background.fraction=0.5"])
    jp = config.build_jobs(obj)
    bad = dataclasses.replace(jp.background, fraction=float(value))  # and by the library, given one directly
    with pytest.raises(ConfigError, match=r"background\.fraction"):
        evaluate_jobs(jp.topology, list(jp.jobs), jp.routing, bad)


@pytest.mark.parametrize("override,field", [("background.pattern=foo", "background.pattern"),
                                            ("background.seed=-1", "background.seed"),
                                            ("bound_solver=foo", "bound_solver")])
def test_settings_that_act_only_beside_others_are_checked_when_given(override, field):
    """A background at fraction 0 loads nothing, and bound_solver acts only with bounds: their values were not
    checked until they would act, so a misspelt one ran (and was kept in the dataset's config)."""
    with pytest.raises(ConfigError, match=rf"^{re.escape(field)} = "):
        config.compose_object(TORUS + [override])


def test_eval_cli_prints_the_jobs_table(capsys):
    from evaluator.cli import main

    rc = main(["eval", *TORUS, "jobs=[{name: left}, {name: right, placement: {offset: [2,0,0]}}]",
               "exclusive_nodes=false", "save=false"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "left" in out and "right" in out and "slowdown" in out and "makespan" in out


def test_jobs_sweep_over_an_offset_and_the_background_resumes_identically(tmp_path):
    """A sweep over a job's offset and the background fraction: every point equals evaluate_jobs of its config,
    and a resumed run equals an uninterrupted one."""
    import xarray as xr

    from evaluator.config import RayConfig
    from evaluator.query import open_results
    from evaluator.sweep import plan_sweep, run_sweep

    base = [o for o in TORUS if not o.startswith(("traffic", "placement.task_grid"))] + [
            "traffic=random_pairs", "traffic.n_tasks=32", "placement.task_grid=[4,2,4]",
                    "jobs=[{name: a, placement: {offset: [0,0,0]}}, {name: b, placement: {offset: [4,0,0]}, "
                    "traffic: {seed: 3}}]", "sweep.chunk_size=2"]
    axes = {"jobs.1.placement.offset": [[4, 0, 0], [4, 2, 0], [6, 2, 0]], "background.fraction": [0.0, 0.2]}

    def plan(out):
        return plan_sweep(config.compose_sweep(base + [f"sweep.output_dir={out}"], user_overrides=[],
                                                 config_name="config", axes=axes))

    full = plan(tmp_path / "a")
    ds = open_results(run_sweep(full, RayConfig(enabled=False), progress=False))
    assert ds.completion_time.dims == ("jobs.1.placement.offset", "background.fraction", "job")
    assert list(ds.job.values) == ["a", "b"] and ds.slowdown.attrs["units"] == "1"
    topo = config.build_topology(full.point_config(0).topology)
    for flat in range(full.n_points):
        idx = np.unravel_index(flat, full.shape)
        jp = config.build_jobs(full.point_config(flat), topo)
        ref = evaluate_jobs(jp.topology, list(jp.jobs), jp.routing, jp.background)
        np.testing.assert_allclose(ds.completion_time.values[idx], ref.completion_time.values, rtol=TOL["rel"])
        np.testing.assert_allclose(ds.slowdown.values[idx], ref.slowdown.values, rtol=TOL["rel"])
    part = plan(tmp_path / "b")
    assert run_sweep(part, RayConfig(enabled=False), progress=False, stop_after=1) is None
    done = open_results(run_sweep(part, RayConfig(enabled=False), progress=False))

    xr.testing.assert_identical(strip(done), strip(ds))
