"""Jobs and background from Hydra configs: composition, inheritance from the top-level groups, errors, the CLI."""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import config
from evaluator.errors import ConfigError
from evaluator.jobs import Job, evaluate_jobs
from tests.helpers import TOL

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
    obj = config.compose_object(TORUS + [f"background.fraction={value}"])
    jp = config.build_jobs(obj)
    with pytest.raises(ConfigError, match=r"background\.fraction"):
        evaluate_jobs(jp.topology, list(jp.jobs), jp.routing, jp.background)


def test_eval_cli_prints_the_jobs_table(capsys):
    from evaluator.cli import main

    rc = main(["eval", *TORUS, "jobs=[{name: left}, {name: right, placement: {offset: [2,0,0]}}]",
               "exclusive_nodes=false", "save=false"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "left" in out and "right" in out and "slowdown" in out and "makespan" in out
