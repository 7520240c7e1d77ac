"""Hydra's sweep grammar on the command line: each sweep override is the ``sweep.axes`` axis it stands for.

Same axes (keys, values, labels), same run id, same dataset, and a run started in one form resumes in the
other; unsupported forms are refused naming the override.
"""

from __future__ import annotations

import dataclasses

import pytest
import xarray as xr

from evaluator import cli, config
from evaluator.config import RayConfig
from evaluator.config.hydra import sweep_axes_from_overrides
from evaluator.errors import ConfigError
from evaluator.query import open_results
from evaluator.sweep import plan_sweep, run_sweep, store
from tests.helpers import strip

NO_RAY = RayConfig(enabled=False)

# a small Dragonfly DF(2,4,2) (72 nodes) with a stencil small enough for it
SMALL = ["topology.p=2", "topology.a=4", "topology.h=2", "traffic=stencil", "traffic.alpha=[16,16,16]",
         "placement=dragonfly_cartesian", "routing=minimal", "sweep.name=hydra_axes", "sweep.chunk_size=8"]
LEAD = ["+sweep.axes.traffic.beta=[[4,2,2],[2,2,2]]", "+sweep.axes.placement.gamma={divisors:traffic.beta}"]
HYDRA = SMALL + LEAD + ["routing=minimal,valiant", "placement.seed=range(0,2)"]
AXES = SMALL + LEAD + ["+sweep.axes.routing=[minimal,valiant]", "+sweep.axes.placement.seed={range:[0,2]}"]


def small_plan(overrides, out):
    req = config.compose_sweep([*overrides, f"sweep.output_dir={out}"], user_overrides=[], config_name="config")
    return plan_sweep(req)


def axes_of(plan):
    return [dataclasses.astuple(a) for a in plan.axes]


def named(extra=()):
    return plan_sweep(config.compose_sweep(["sweeps=dragonfly_nne_placement", *extra]))



@pytest.mark.parametrize("hydra,axes", [
    (["topology.bandwidth_l=5e9,1e10"], ["+sweep.axes.topology.bandwidth_l=[5e9,1e10]"]),
    (["placement.seed=range(0,3)"], ["+sweep.axes.placement.seed={range:[0,3]}"]),
    (["placement.seed=range(0,3)"], ["+sweep.axes.placement.seed={range:[0,3,1]}"]),
    (["placement.seed=range(3)"], ["+sweep.axes.placement.seed={range:{stop:3}}"]),
    (["placement.seed=range(6,0,-2)"], ["+sweep.axes.placement.seed={range:[6,0,-2]}"]),
    (["placement.seed=sort(2,0,1)"], ["+sweep.axes.placement.seed=[0,1,2]"]),
    (["placement.seed=choice(4)"], ["+sweep.axes.placement.seed=[4]"]),
    (["topology.bandwidth_l=range(1e9,3e9,1e9)"], ["+sweep.axes.topology.bandwidth_l=[1e9,2e9]"]),
    (["placement.seed=range(0,2)", "topology.bandwidth_l=5e9,1e10"],
     ["+sweep.axes.placement.seed={range:[0,2]}", "+sweep.axes.topology.bandwidth_l=[5e9,1e10]"]),
])
def test_new_axis_is_the_sweep_axes_form(hydra, axes):
    a, b = named(hydra), named(axes)
    assert a.run_id == b.run_id and a.config_yaml == b.config_yaml
    assert axes_of(a) == axes_of(b)
    assert [ax.name for ax in a.axes][:3] == ["traffic.beta", "placement.gamma", "routing"]  # new axes come last


def test_axis_the_sweep_has_is_replaced_where_it_stands():
    plain = named()
    same = named(["traffic.beta=choice([8,8,4],[16,8,8])", "routing=minimal,valiant"])
    assert same.run_id == plain.run_id and axes_of(same) == axes_of(plain)
    one = named(["routing=valiant,minimal", "traffic.beta=choice([8,8,4])"])
    assert [ax.name for ax in one.axes] == ["traffic.beta", "placement.gamma", "routing"]
    assert one.axes[0].labels == ("8x8x4",) and one.axes[2].labels == ("valiant", "minimal")
    assert one.run_id != plain.run_id


def test_labels_and_values_are_those_of_sweep_axes():
    plan = named(["traffic.beta=choice([16,8,8],[8,8,4])", "placement.seed=range(0,3)"])
    beta = plan.axes[0]
    assert beta.labels == ("16x8x8", "8x8x4") and beta.values == (([16, 8, 8],), ([8, 8, 4],))
    assert plan.axes[-1].labels == ("0", "1", "2") and plan.seeds == [0, 1, 2]
    # the divisors of the earlier axis follow its new values
    assert set(plan.axes[1].labels) >= {"16x8x8", "8x8x4", "1x1x1"}


def test_overrides_that_are_not_sweeps_are_left_to_composition():
    plain, axes, sweeps = sweep_axes_from_overrides(
        ["traffic.alpha=[512,512,512]", "x='a,b'", "routing=glob([m*,v*])", "topology.p=", "y=range(0,1,0.25)"],
        {"routing": ["dor"]})
    assert plain == ["traffic.alpha=[512,512,512]", "x='a,b'", "topology.p="]
    assert sweeps == ["routing=glob([m*,v*])", "y=range(0,1,0.25)"]
    assert axes == {"routing": ["minimal", "valiant", "valiant_router"], "y": [0.0, 0.25, 0.5, 0.75]}
    from evaluator.io import conf_dir

    from evaluator.config import FAMILIES

    # a group's options: its YAML files and the registered kinds without one (their schema's defaults)
    options = sorted({p.stem for p in (conf_dir() / "routing").glob("*.yaml")} | set(FAMILIES["routing"]))
    options = [o for o in options if not o.startswith("dor")]
    assert sweep_axes_from_overrides(["routing=glob(*,exclude=dor*)"], None)[1] == {"routing": options}
    assert "minimal" in options and "valiant" in options


def test_nested_and_dotted_axes_are_replaced_in_place():
    given = {"placement.gamma": [1], "placement": {"seed": [0]}, "routing": ["minimal"]}
    _, axes, _ = sweep_axes_from_overrides(["placement.seed=3,4", "placement.gamma=5,6", "topology.p=2,4"], given)
    assert axes == {"placement.gamma": [5, 6], "placement": {"seed": [3, 4]}, "routing": ["minimal"],
                    "topology": {"p": [2, 4]}}
    assert given["placement"] == {"seed": [0]}  # not changed in place


def test_same_dataset_and_resume_across_the_two_forms(tmp_path):
    hydra, axes = small_plan(HYDRA, tmp_path / "shared"), small_plan(AXES, tmp_path / "shared")
    assert hydra.run_id == axes.run_id and axes_of(hydra) == axes_of(axes)
    assert hydra.n_points == 2 * 12 * 2 * 2 and len(hydra.chunks()) > 2
    # started in Hydra's grammar, interrupted, resumed in the sweep.axes form
    assert run_sweep(hydra, NO_RAY, progress=False, stop_after=2) is None
    assert len(store.done_chunks(axes, axes.chunks(), None)) == 2
    resumed = open_results(run_sweep(axes, NO_RAY, progress=False))
    fresh = open_results(run_sweep(small_plan(HYDRA, tmp_path / "fresh"), NO_RAY, progress=False))
    assert int(fresh.feasible.sum()) > 0
    xr.testing.assert_identical(strip(resumed), strip(fresh))


BAD = [
    ("placement.seed=interval(0,1)", ["placement.seed", "interval(0,1)", "continuous", "range(start, stop, step)"]),
    ("placement.seed=tag(log,interval(1,8))", ["placement.seed", "interval", "continuous"]),
    ("placement.seed=range(0,8,0)", ["placement.seed", "range(0,8,0)", "step is 0"]),
    ("placement.seed=range(8,0)", ["placement.seed", "range(8,0)", "empty"]),
    ("placement.seed=shuffle(range(3))", ["placement.seed", "shuffle", "resume"]),
    ("traffic.beta=glob(*)", ["traffic.beta", "glob(*)", "config group"]),
    ("routing=glob(zz*)", ["routing", "glob(zz*)", "minimal", "valiant"]),
    ("~routing=minimal,valiant", ["routing", "~routing=minimal,valiant", "deletes"]),
    ("routing@net=minimal,valiant", ["routing", "routing@net=minimal,valiant", "package"]),
    ("sweeps=a,b", ["sweeps", "run setting"]),
    ("sweep.chunk_size=8,16", ["sweep.chunk_size", "run setting"]),
    ("ray.num_cpus=1,2", ["ray.num_cpus", "run setting"]),
    ("topology.bandwidth_l=range(0,1,1e-9)", ["topology.bandwidth_l", "1,000,000,000 values", "sweep.max_points"]),
]


@pytest.mark.parametrize("override,needles", BAD, ids=[b[0] for b in BAD])
def test_unsupported_sweep_is_refused_naming_the_override(override, needles, capsys, tmp_path, monkeypatch):
    with pytest.raises(ConfigError) as e:
        config.compose_sweep(["sweeps=dragonfly_nne_placement", override])
    assert all(n in str(e.value) for n in needles), str(e.value)
    assert override in str(e.value) or override.split("=", 1)[1] in str(e.value)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["sweep", override, "ray.enabled=false", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and needles[0] in err, err


def test_a_swept_key_also_overridden_is_a_conflict():
    with pytest.raises(ConfigError, match="conflicts with the sweep axis"):
        named(["topology.bandwidth_l=5e9", "topology.bandwidth_l=5e9,1e10"])


def test_show_config_shows_the_axes(capsys):
    import yaml

    assert cli.main(["sweep", "--show-config", "sweeps=dragonfly_nne_placement", "placement.seed=range(0,4)",
                     "routing=valiant,minimal"]) == 0
    axes = yaml.safe_load(capsys.readouterr().out)["sweep"]["axes"]
    assert axes["placement"] == {"seed": {"range": [0, 4]}}
    assert list(axes) == ["traffic.beta", "placement.gamma", "routing", "placement"]
    assert axes["routing"] == ["valiant", "minimal"]
