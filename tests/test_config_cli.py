"""Every real config composes; the CLI evaluates and writes a dataset; bad keys fail clearly."""

from pathlib import Path

import pytest
import xarray as xr

from evaluator import cli, config
from evaluator.config import build
from evaluator.io import conf_dir
from tests.helpers import composed_option

CONF = conf_dir()
GROUPS = ["topology", "routing", "traffic", "placement"]


def options(group):
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


COMPATIBLE = {
    "torus": ["topology.dims=[4,4,2]", "routing=dor"],
    "bgq": ["routing=dor_bgq"],
    "gemini": ["topology.dims=[4,2,4]", "routing=dor"],
    "dragonfly": ["topology.p=2", "topology.a=4", "topology.h=2", "routing=minimal"],
}


@pytest.mark.parametrize("group", GROUPS)
def test_every_option_composes(group):
    opts = options(group)
    assert opts, group
    for opt in opts:
        _, obj = composed_option(group, opt)  # compose + to_object, shared with tests/test_layout.py
        kind = getattr(obj, group).kind  # an option is a kind, or a preset of one (dor_bgq, kshortest_k8)
        assert kind == opt or opt.startswith(kind + "_"), (opt, kind)


@pytest.mark.parametrize("topo", list(COMPATIBLE))
def test_every_topology_builds_and_evaluates(topo):
    cfg = config.compose([f"topology={topo}", *COMPATIBLE[topo], "traffic=all_to_all", "placement=linear"])
    point = build(config.to_object(cfg))
    assert point.topology.kind in ("torus", "dragonfly")
    from evaluator import evaluate

    ds = evaluate(point.topology, point.traffic, point.placement, point.routing)
    assert float(ds.completion_time) > 0


@pytest.mark.parametrize("traffic", ["stencil", "all_to_all", "bisection_pairing", "random_permutation", "shift",
                                     "tornado", "many_to_many"])
def test_every_traffic_builds(traffic):
    extra = {"stencil": ["traffic.alpha=[8,8,8]", "traffic.beta=[4,4,2]", "placement=torus_block"],
             "tornado": ["traffic.grid=[4,4,2]"]}.get(traffic, [])
    cfg = config.compose(["topology=torus", "topology.dims=[4,4,2]", "routing=dor", f"traffic={traffic}",
                       "placement=linear", *extra])
    p = build(config.to_object(cfg))
    assert p.traffic.n_tasks == p.placement.n_tasks


def test_cli_eval_writes_dataset(tmp_path, capsys):
    rc = cli.main(["eval", f"output_dir={tmp_path}"])
    out = capsys.readouterr().out
    assert rc == 0 and "bottleneck: global" in out
    files = list(Path(tmp_path).glob("*.nc"))
    assert len(files) == 1 and not list(Path(tmp_path).glob("*.tmp"))
    ds = xr.open_dataset(files[0], engine="h5netcdf")
    assert float(ds.max_load_global) == 134_217_728
    assert "link_src" in ds.coords and "link_class" in ds.coords
    assert "config_yaml" in ds.attrs and ds.completion_time.attrs["units"] == "s"


@pytest.mark.parametrize("override,needle", [
    ("topology.foo=1", "foo"),
    ("topology.p=abc", "topology.p"),
    ("topology=dragonfy", "dragonfly"),
    ("topology.g=40", "topology.g = 40"),
    ("placement.gamma=[3,4,2]", "placement.gamma[0] = 3"),
    ("traffic.bytes_per_element=-1", "traffic.bytes_per_element"),
])
def test_cli_bad_input_one_line(override, needle, capsys):
    rc = cli.main(["eval", override, "save=false"])
    err = capsys.readouterr().err
    assert rc == 2
    assert needle in err and err.count("\n") == 1, err
