"""Defects found by the third round of audits (2026-12-06): answers given in silence."""

from __future__ import annotations

import pytest

from evaluator import config
from evaluator.errors import ConfigError


def _topology_name(*overrides: str) -> str:
    obj = config.to_object(config.compose(["topology=machine", "topology.name=Mira", *overrides]))
    return config.build_topology(obj.topology).name


def test_a_partition_outside_the_allowed_list_says_so():
    """Mira's scheduler grants 1x1x1x1, 2x1x1x1, ... (Oltchik & Schwartz, Table 6), not 1x1x3x1: eval evaluated it
    under the plain name, as if it could be allocated. It stays a what-if, named as one."""
    assert _topology_name("topology.partition=[1,1,3,1]") == (
        "Mira 1x1x3x1 midplanes, not in Mira's allowed partitions")
    assert _topology_name("topology.partition=[1,2,1,1]") == "Mira 1x2x1x1 midplanes"  # a rotation of 2x1x1x1
    assert _topology_name("topology.partition=null") == "Mira 4x4x3x2 midplanes"


def test_a_refused_task_count_names_where_it_came_from():
    """The task count is the traffic's (traffic.n_tasks, the stencil's grid): the placement's refusal named only
    placement.n_tasks, a key no config has."""
    obj = config.to_object(config.compose(["traffic=random_pairs", "traffic.n_tasks=100000", "placement=linear"]))
    with pytest.raises(ConfigError, match=r"The 100000 tasks are traffic.n_tasks = 100000 \(traffic=random_pairs\)"):
        config.build(obj)
    obj = config.to_object(config.compose(["traffic=stencil", "traffic.beta=[64,64,64]", "placement=linear"]))
    with pytest.raises(ConfigError, match=r"The 262144 tasks are the task grid traffic.beta = \[64, 64, 64\]"):
        config.build(obj)


def test_the_default_dragonfly_placement_says_what_to_do_without_a_task_grid():
    obj = config.to_object(config.compose(["traffic=random_pairs", "traffic.n_tasks=64"]))
    with pytest.raises(ConfigError, match=r"traffic=random_pairs has no task grid: give placement.beta \(a grid of "
                                          r"64 tasks\) or another placement \(placement=linear"):
        config.build(obj)


def test_an_overflowing_byte_total_says_which_keys_set_it():
    obj = config.to_object(config.compose(["traffic=random_pairs", "traffic.n_tasks=64", "traffic.bytes=1e307",
                                           "placement=linear"]))
    with pytest.raises(ConfigError, match=r"The 64 flows' bytes come from the traffic's byte size \(traffic.bytes"):
        config.build(obj)


def test_latency_wire_and_link_default_are_one_value():
    """``wire`` is the wire latency of the classes ``link`` does not name, as ``link.default`` is: with both given the
    wire was dropped in silence, and a bad wire was refused as ``link.default``."""
    from evaluator.latency import latency_from_config

    with pytest.raises(ConfigError, match=r"topology.latency.wire = 1e-06 .*link.default = 1e-08 says it too"):
        latency_from_config({"wire": 1e-6, "link": {"default": 1e-8}})
    with pytest.raises(ConfigError, match=r"^topology.latency.wire = -1"):
        latency_from_config({"wire": -1.0})
    assert dict(latency_from_config({"wire": 1e-8, "link": {"default": 1e-8}}).link) == {"default": 1e-8}


JOBS = ["topology=torus", "routing=dor", "traffic=random_pairs", "placement=linear"]


@pytest.mark.parametrize("extra, field, hint", [
    (["jobs=[{name: a, traffic: {n_tasks: 16}}, {name: b, traffic: {n_tasks: 16}, routing: {tie: bad}}]"],
     "jobs[1].routing.tie", None),
    (["jobs=[{name: a, traffic: {n_tasks: 16}}, {name: a, traffic: {n_tasks: 16}}]"], "jobs[1].name",
     "jobs[0] has it too."),
    (["traffic.n_tasks=16", "background.fraction=0.1", "+background.routing={tie: bad}"],
     "background.routing.tie", None),
])
def test_a_job_refusal_names_the_job(extra, field, hint):
    """A job's own routing refused as ``routing.tie`` (the top-level key, which was fine) and a repeated job name as
    ``jobs.name`` did not say which job; the background's routing neither."""
    from evaluator.jobs import evaluate_jobs

    with pytest.raises(ConfigError) as info:
        obj = config.to_object(config.compose(JOBS + extra))
        jp = config.build_jobs(obj)
        evaluate_jobs(jp.topology, list(jp.jobs), jp.routing, jp.background)
    assert info.value.field == field
    assert hint is None or info.value.hint == hint


def test_omegaconf_refusals_in_the_projects_words(monkeypatch):
    """A value of the wrong type and an interpolation that cannot be resolved were OmegaConf's own text ("Error
    merging override topology.p=abc | Value 'abc' of type 'str' could not be converted to Integer full_key: ...",
    "KeyError raised while resolving interpolation: ...")."""
    from evaluator.errors import ConfigCompositionError

    with pytest.raises(ConfigCompositionError, match=r"^topology.p = 'abc' is invalid: allowed is an integer"):
        config.compose(["topology.p=abc"])
    monkeypatch.delenv("EVALUATOR_NO_SUCH_VARIABLE", raising=False)
    with pytest.raises(ConfigCompositionError, match=r"^an interpolation in 'topology.p=\$\{oc.env:EVALUATOR_NO_SUCH_"
                                                     r"VARIABLE\}' could not be resolved: .*EVALUATOR_NO_SUCH_VARIABLE"):
        config.compose(["topology.p=${oc.env:EVALUATOR_NO_SUCH_VARIABLE}"])


def test_the_default_partition_on_another_machine_says_it_is_the_default():
    obj = config.to_object(config.compose(["topology=machine", "topology.name=BlueWaters"]))
    with pytest.raises(ConfigError, match=r"\[1, 1, 1, 1\] is topology=machine's default partition \(one Blue Gene/Q "
                                          r"midplane\)"):
        config.build_topology(obj.topology)
