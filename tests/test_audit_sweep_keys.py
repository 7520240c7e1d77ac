"""A sweep's keys that change nothing, and its mistyped generators: one test per item.

1. A traffic's or a machine's key that acts at no point of a sweep is refused by the sweep's plan (as ``eval``
   refuses it for one point), and kept where it acts at some point; the plan builds no traffic or topology for it.
2. ``topology.layout=ideal`` on a machine without node classes, service or down nodes (Mira) is refused.
3. A mapping without a generator under a key that holds no keys (``{foo: 1}``, ``{rnge: [0, 8]}``) is refused as a
   bad generator, naming the key, the value and the generators, not as an unknown axis ``traffic.n_tasks.foo``.
"""

from __future__ import annotations

import pytest

from evaluator import config
from evaluator.errors import ConfigError

TORUS = ["topology=torus", "topology.dims=[8,4]", "routing=dor", "placement=linear"]
M2N = ["traffic=m_to_n", "traffic.n_sources=4", "traffic.n_destinations=8", "traffic.dests_per_source=2"]
NOTHING = "It changes nothing at any point of this sweep"


def _plan(overrides: list[str]):
    from evaluator.sweep import plan_sweep

    return plan_sweep(config.compose_sweep(overrides))


@pytest.mark.parametrize("overrides,field,kept", [
    (["traffic=many_to_many", "traffic.mode=disjoint,subset", "traffic.overlap=2"], "traffic.overlap",
     ["traffic=many_to_many", "traffic.mode=disjoint,overlap", "traffic.overlap=2"]),
    ([*M2N, "traffic.mode=overlap,subset_spread", "traffic.dst_start=20"], "traffic.dst_start",
     [*M2N, "traffic.mode=overlap,disjoint", "traffic.dst_start=20"]),
    ([*M2N, "traffic.mode=disjoint", "traffic.overlap=1", "traffic.bytes=1e6,2e6"], "traffic.overlap",
     [*M2N, "traffic.overlap=1", "traffic.mode=disjoint,overlap"]),
    (["traffic=many_to_many,m_to_n", "traffic.n_sources=4", "traffic.n_destinations=8", "traffic.overlap=2"],
     "traffic.overlap", ["traffic=many_to_many,m_to_n", "traffic.n_sources=4", "traffic.n_destinations=8",
                         "traffic.mode=overlap", "traffic.overlap=2"]),
])
def test_1_a_traffic_key_that_acts_at_no_point_is_refused(overrides, field, kept):
    """Refused where no point reads it; kept (the sweep planned) where one point does."""
    with pytest.raises(ConfigError, match=NOTHING) as e:
        _plan([*TORUS, *overrides])
    assert e.value.field == field and "null (the default)" in str(e.value)
    assert _plan([*TORUS, *kept]).n_points == 2


def test_1_a_machine_key_that_acts_at_no_point_is_refused_building_nothing(monkeypatch):
    from evaluator.topology import _machine

    def no_build(*args, **kwargs):
        raise AssertionError("the plan's check of an ignored key builds no topology")

    rest = ["routing=dor", "traffic=random_pairs", "traffic.n_tasks=8", "placement=linear", "traffic.seed=1,2"]
    with pytest.raises(ConfigError, match=rf"topology.mode = 'own' .* {NOTHING}"):
        _plan(["topology=machine", "topology.name=BlueWaters", "topology.partition=null", "topology.mode=own", *rest])
    with pytest.raises(ConfigError, match=rf"topology.layout = 'ideal' .* a torus of its own .* {NOTHING}"):
        _plan(["topology=machine", "topology.name=Mira", "topology.partition=[1,1,1,1],[2,1,1,1]",
               "topology.layout=ideal", *rest[:-1], "routing=dor_bgq"])
    plan = _plan(["topology=machine", "topology.name=BlueWaters", "topology.partition=[4,4,4],null",
                  "topology.mode=own", *rest[:-1]])  # kept: own acts on the partition, not on the whole machine
    assert plan.n_points == 2
    monkeypatch.setattr(_machine, "_build_network", no_build)
    with pytest.raises(ConfigError, match=rf"topology.layout = 'ideal' .* {NOTHING}"):
        _plan(["topology=machine", "topology.name=Mira", "topology.partition=null", "topology.layout=ideal", *rest])


def test_2_a_layout_of_a_machine_without_node_classes_is_refused():
    from evaluator.topology import machine_topology

    for where in (["topology.partition=[1,1,1,1]", "topology.mode=embedded"], ["topology.partition=null"]):
        obj = config.compose_object(["topology=machine", "topology.name=Mira", *where, "topology.layout=ideal"])
        with pytest.raises(ConfigError) as e:
            config.build_topology(obj.topology)
        assert e.value.field == "topology.layout" and e.value.value == "ideal", str(e.value)
        assert "Mira" in str(e.value) and "'real' (the default)" in str(e.value) and "BlueWaters" in str(e.value)
    assert machine_topology("Mira", [1, 1, 1, 1], mode="embedded").n_nodes == 49152  # the default layout
    assert machine_topology("BlueWaters", [4, 4, 4], mode="embedded", layout="ideal").n_nodes > 0  # it acts there


@pytest.mark.parametrize("axis,given,hint", [
    ("+sweep.axes.traffic.n_tasks={foo:1}", "{'foo': 1}", "'foo' is not a generator"),
    ("+sweep.axes.traffic.n_tasks={rnge:[0,8]}", "{'rnge': [0, 8]}", "Did you mean 'range'?"),
    ("+sweep.axes.topology.dims={divisor:[4,4]}", "{'divisor': [4, 4]}", "Did you mean 'divisors'?"),
    ("+sweep.axes.p={product:{traffic.n_tasks:{rnge:[1,4]}}}", "{'rnge': [1, 4]}", "Did you mean 'range'?"),
])
def test_3_a_mistyped_generator_is_refused_as_one(axis, given, hint):
    with pytest.raises(ConfigError) as e:
        _plan(["topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=random_pairs", "placement=linear",
               axis])
    text = str(e.value)
    assert e.value.field.startswith("sweep.axes.") and given in text and hint in text, text
    assert "{range: [start, stop, step]}" in text and "divisors" in text and "Unknown axis" not in text


def test_3_a_generator_mapping_in_a_plain_override_and_a_mistyped_zip_say_where_generators_go():
    with pytest.raises(ConfigError, match=r"traffic.n_tasks = .* is invalid: allowed is an integer .* only under "
                                          r"sweep.axes .*'\+sweep.axes.traffic.n_tasks=\{range:\[0,8\]\}'"):
        config.compose_sweep(["traffic=random_pairs", "traffic.n_tasks={range:[0,8]}"])
    with pytest.raises(ConfigError, match=r"If 'zpi' is a generator, it is 'zip'"):
        _plan(["topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=random_pairs", "placement=linear",
               "+sweep.axes.s={zpi:{traffic.n_tasks:[4,8],traffic.seed:[1,2]}}"])
    plan = _plan(["topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=random_pairs",
                  "placement=linear", "+sweep.axes.topology.dims.0=[2,4]"])  # an item of a list is a key
    assert plan.n_points == 2


def test_a_jobs_ignored_traffic_key_is_named_under_its_job():
    """A job's traffic key that changes nothing was refused as the top-level ``traffic.overlap``, though the
    top-level traffic had none: the refusal now names the job (as a job's plain ConfigError already did)."""
    from evaluator.errors import IgnoredKeyError

    cfg = config.compose_object(["topology=torus", "topology.dims=[4,4]", "routing=dor", "placement=linear",
                                 "jobs=[{name: a, traffic: {kind: many_to_many, n_sources: 2, n_destinations: 2, "
                                 "mode: disjoint, overlap: 1}}, {name: b, placement: {offset: 8}, "
                                 "traffic: {kind: all_to_all}}]"])
    with pytest.raises(IgnoredKeyError, match=r"^jobs\[0\]\.traffic\.overlap = 1 is invalid") as err:
        config.build_jobs(cfg)
    assert err.value.field == "jobs[0].traffic.overlap"
