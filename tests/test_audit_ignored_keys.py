"""Keys that were accepted and changed nothing are refused (or act): one test per item of the audit.

The rule: bad input gets a clear error naming the field, the value given and what is allowed. A key that the
chosen member ignores is refused at any value but its default (configs always carry the defaults, which stay
accepted); before, each of these ran and gave the same answer as without the key.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import cli, config
from evaluator.errors import ConfigError


def _refused(overrides: list[str], field: str) -> ConfigError:
    """The refusal of composing and building ``overrides`` (one job), checked to name ``field``."""
    with pytest.raises(ConfigError) as e:
        obj = config.compose_object(overrides)
        config.build_routing_spec(obj.routing)
        config.build_traffic(obj.traffic, config.build_topology(obj.topology))
    assert e.value.field == field, str(e.value)
    return e.value


def test_1_power_of_a_local_adaptive_variant_is_refused():
    from evaluator.routing import ft_adaptive, ugal

    err = _refused(["routing=ugal_local", "routing.power=1"], "routing.power")
    assert "routing.variant='local'" in str(err) and "32 (the default)" in str(err)
    with pytest.raises(ConfigError, match="routing.power"):
        ugal(variant="local", power=2.0)
    assert ugal(variant="global", power=2.0).power == 2.0  # the global variant reads it
    assert ugal(variant="local").power == 32.0 and ft_adaptive().variant == "local"  # the defaults stay accepted
    config.build_routing_spec(config.compose_object(["routing=ugal_local"]).routing)  # the shipped file's 32.0


@pytest.mark.parametrize("overrides,field", [
    (["fairness=job"], "fairness"),
    (["progression=rank"], "progression"),
    (["sharing=max_min", "progression=rank", "topology=torus", "topology.dims=[4,4]", "routing=dor",
      "traffic=random_pairs", "traffic.n_tasks=8", "placement=linear", "background.fraction=0.1"], "progression"),
])
def test_2_max_min_settings_without_max_min_sharing_are_refused(overrides, field):
    err = _refused(overrides, field)
    assert "(the default)" in str(err)
    obj = config.compose_object(["sharing=max_min", "fairness=rtt", "progression=rank"])  # where they act
    assert (obj.fairness, obj.progression) == ("rtt", "rank")
    obj = config.compose_object(["sharing=max_min", "fairness=job", "background.fraction=0.1"])  # several jobs
    assert obj.fairness == "job"
    err = _refused(["sharing=max_min", "fairness=job"], "fairness")  # one job: its job-fair weights are flow-fair
    assert "for one job" in str(err)
    config.compose_object(["fairness=flow", "progression=phase"])  # the defaults, given explicitly


def test_3_background_seed_of_the_uniform_pattern_is_refused():
    from evaluator.jobs import Background, check_background

    err = _refused(["background.fraction=0.1", "background.seed=5"], "background.seed")
    assert "background.pattern='uniform'" in str(err) and "draws nothing" in str(err)
    with pytest.raises(ConfigError, match="background.seed"):
        check_background(Background(0.1, "uniform", seed=5))
    check_background(Background(0.1, "random_permutation", seed=5))  # the pattern that draws from it
    config.compose_object(["background.fraction=0.1", "background.pattern=random_permutation", "background.seed=5"])


@pytest.mark.parametrize("overrides,field", [
    (["traffic=many_to_many", "traffic.overlap=-1"], "traffic.overlap"),  # mode disjoint
    (["traffic=many_to_many", "traffic.mode=subset", "traffic.overlap=4"], "traffic.overlap"),
    (["traffic=m_to_n", "traffic.n_sources=4", "traffic.n_destinations=8", "traffic.overlap=2"], "traffic.overlap"),
    (["traffic=m_to_n", "traffic.n_sources=4", "traffic.n_destinations=8", "traffic.mode=overlap",
      "traffic.dst_start=20"], "traffic.dst_start"),
])
def test_4_a_layout_key_of_another_mode_is_refused(overrides, field):
    err = _refused(["topology=torus", "topology.dims=[4,4,4]", "routing=dor", "placement=linear", *overrides], field)
    assert "null (the default)" in str(err)


def test_4_the_layout_keys_of_their_own_modes_still_act():
    from evaluator.traffic import m_to_n
    from evaluator.traffic._many_to_many import many_to_many_dense

    assert many_to_many_dense(8, 8, mode="overlap", overlap=2).n_tasks == 14
    assert m_to_n(4, 4, 1, n_tasks=20, dst_start=10).dst.min() == 10
    assert m_to_n(8, 8, 1, mode="overlap", overlap=4).n_tasks == 16


def test_5_a_bound_solver_beside_garg_konemann_is_refused():
    from evaluator.lp.bounds import check_bounds

    err = _refused(["bounds=garg_konemann", "bound_solver=pdhg"], "bound_solver")
    assert "bounds=garg_konemann" in str(err)
    with pytest.raises(ConfigError, match="bound_solver"):
        check_bounds("garg_konemann", "pdhg")
    assert check_bounds("garg_konemann", "highs") == "garg_konemann"  # the default solver stays accepted
    assert check_bounds("edge", "pdhg") == "edge" and check_bounds(True, "pdhg") == "auto"


def test_6_a_machine_mode_that_changes_nothing_is_refused():
    from evaluator.topology import machine_topology

    with pytest.raises(ConfigError) as e:
        machine_topology("Theta", None, mode="own")  # a Dragonfly machine: no partitions of its own
    assert e.value.field == "topology.mode" and e.value.value == "own" and "Theta" in str(e.value)
    with pytest.raises(ConfigError, match="topology.mode = 'own'"):
        machine_topology("BlueWaters", None, mode="own")  # the whole machine: own and embedded are one network
    assert machine_topology("Theta", None, mode="embedded").n_nodes == machine_topology("Theta").n_nodes
    own = machine_topology("BlueWaters", [4, 4, 4], mode="own")  # a partition: the mode acts
    assert own.n_nodes == 128
    machine_topology("BlueWaters", None, mode="embedded")  # the machine's own way, as the shipped studies give it


def test_7_hydra_settings_are_refused_naming_the_override(capsys):
    assert cli.main(["eval", "hydra.run.dir=x", "save=false"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hydra.run.dir = 'x' is invalid" in err and "output_dir" in err, err
    with pytest.raises(ConfigError, match="hydra.job.chdir"):
        config.compose(["hydra.job.chdir=true"])
    with pytest.raises(ConfigError, match="hydra/launcher"):
        config.compose(["hydra/launcher=basic"])


DF_SMALL = ["topology=dragonfly", "topology.p=2", "topology.a=4", "topology.h=2", "traffic=random_pairs",
            "traffic.n_tasks=16", "placement=linear"]


def test_a_sweep_keeps_a_key_that_acts_at_some_of_its_points(tmp_path):
    """``routing.power=8`` beside a routing axis of ugal (which reads it) and ugal_local (which does not), and a
    background seed beside a pattern axis: each acts at some points, so the sweep runs them all (the refusal is
    for a key that acts nowhere); a key that acts at none of the sweep's points is refused, as eval refuses it."""
    from evaluator.sweep import plan_sweep, run_sweep
    from evaluator.sweep.worker import evaluate_chunk

    plan = plan_sweep(config.compose_sweep([*DF_SMALL, "routing=ugal,ugal_local", "routing.power=8",
                                            f"sweep.output_dir={tmp_path}"]))
    out = evaluate_chunk(plan, np.arange(plan.n_points))
    assert len(out["ok"]) == plan.n_points == 2  # both feasible: the local point ignores the power
    torus = ["topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=random_pairs", "traffic.n_tasks=8",
             "placement=linear", "background.fraction=0.1"]
    plan = plan_sweep(config.compose_sweep([*torus, "background.pattern=uniform,random_permutation",
                                            "background.seed=3", "ray.enabled=false", f"sweep.output_dir={tmp_path}"]))
    assert run_sweep(plan, progress=False) is not None
    with pytest.raises(ConfigError, match=r"routing.power = 8.0 .* It changes nothing at any point of this sweep"):
        plan_sweep(config.compose_sweep([*DF_SMALL, "routing=ugal_local", "routing.power=8", "traffic.seed=1,2"]))
    with pytest.raises(ConfigError, match=r"background.seed = 3 .* It changes nothing at any point of this sweep"):
        plan_sweep(config.compose_sweep([*torus, "background.seed=3", "traffic.seed=1,2"]))


def test_a_bound_solver_without_bounds_and_a_layout_of_an_own_partition_are_refused():
    """The two the audit's helper left: ``bound_solver=pdhg`` with no bounds (nothing is solved) and
    ``topology.layout=ideal`` on a Blue Gene/Q partition in its own mode (a bare torus either way)."""
    with pytest.raises(ConfigError, match=r"bound_solver = 'pdhg' is invalid: allowed is 'highs' \(the default\) "
                                          r"without bounds"):
        config.compose_object(["bound_solver=pdhg"])
    config.compose_object(["bound_solver=pdhg", "bounds=true"])
    with pytest.raises(ConfigError, match=r"topology.layout = 'ideal' .* a torus of its own"):
        config.build_topology(config.compose_object(["topology=machine", "topology.name=Mira",
                                                     "topology.layout=ideal"]).topology)
    config.build_topology(config.compose_object(["topology=machine", "topology.name=BlueWaters",
                                                 "topology.partition=null", "topology.layout=ideal"]).topology)
