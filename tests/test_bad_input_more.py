"""Traffic files are checked against the placement from their header, before they are read.

A small compressed .npz can declare a matrix far larger than the machine holds (22,000 tasks on DF(4,8,4)'s
1,056 nodes under linear placement, one task per node): the placement is built for the declared count first
and refuses it, so the 3.6 GiB matrix is never loaded.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import cli


def _fail_on_load(*a, **k):
    raise AssertionError("np.load was called before the task count was checked")


@pytest.mark.parametrize("how", ["dense", "coo"])
def test_a_file_with_more_tasks_than_the_placement_holds_is_refused_before_loading(how, tmp_path, capsys,
                                                                                   monkeypatch):
    f = tmp_path / f"big-{how}.npz"
    if how == "dense":
        m = np.zeros((2200, 2200), np.float32)  # (the case: 22,000 tasks; the same code path)
        m[0, 1] = 1e6
        np.savez_compressed(f, matrix=m)
    else:
        np.savez(f, row=np.zeros(10**5, np.int64), col=np.ones(10**5, np.int64), data=np.ones(10**5),
                 shape=np.array([2200, 2200]))
    real_load = np.load

    def load(path, *a, **k):  # the header reader may read the tiny 'shape' array, nothing else
        z = real_load(path, *a, **k)
        return _Only(z, {"shape"})

    monkeypatch.setattr(np, "load", load)
    rc = cli.main(["eval", "traffic=file", f"traffic.path={f}", "placement=linear", "save=false"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "placement.n_tasks = 2200" in err and "1056" in err, err


class _Only:
    """An NpzFile that lets only some arrays be read."""

    def __init__(self, z, allowed):
        self._z, self._allowed = z, allowed

    def __getitem__(self, key):
        if key not in self._allowed:
            _fail_on_load()
        return self._z[key]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._z.close()

    def __getattr__(self, name):
        return getattr(self._z, name)


def test_a_file_that_fits_still_evaluates(tmp_path, capsys):
    f = tmp_path / "ok.npz"
    m = np.zeros((64, 64))
    m[np.arange(64), (np.arange(64) + 1) % 64] = 1e6
    np.savez(f, matrix=m)
    rc = cli.main(["eval", "topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=file",
                   f"traffic.path={f}", "placement=linear", "save=false"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    # one 1 MB flow to the next node: on a 4x4x4 torus at DOR, the busiest link carries 1 MB
    assert "completion" in out.out


# ----------------------------------------------------------------------------------------------
# a placement builder given something that is not a topology: a TypeError naming the argument
# ----------------------------------------------------------------------------------------------

import evaluator.placement as P  # noqa: E402
from evaluator.errors import ConfigError  # noqa: E402

BUILDERS = [
    ("linear", lambda t: P.linear(t, 4)),
    ("explicit", lambda t: P.explicit(t, [0, 1])),
    ("fully_random", lambda t: P.fully_random(t, 4)),
    ("dragonfly_cartesian", lambda t: P.dragonfly_cartesian(t, [2, 2, 1], [2, 1, 1])),
    ("dragonfly_random", lambda t: P.dragonfly_random(t, 4, 2)),
    ("torus_block", lambda t: P.torus_block(t, [2, 2])),
    ("subprism", lambda t: P.subprism(t, [2, 2, 2])),
    ("alps", lambda t: P.alps(t, 4)),
    ("fragmented", lambda t: P.fragmented(t, 4)),
    ("features", lambda t: P.features(t, 4)),
    ("topaware", lambda t: P.topaware(t, [2, 2, 1], 1)),
    ("select_routers", lambda t: P.select_routers(t, [2, 2, 1])),
    ("alps_order", lambda t: P.alps_order(t)),
    ("compute_mask", lambda t: P.compute_mask(t)),
    ("free_after_history", lambda t: P.free_after_history(t, 0.5)),
]


@pytest.mark.parametrize("name,call", BUILDERS, ids=[b[0] for b in BUILDERS])
@pytest.mark.parametrize("given", ["torus", None, 4, [4, 4]], ids=["str", "none", "int", "list"])
def test_a_placement_builder_names_a_topology_that_is_not_one(name, call, given):
    with pytest.raises(TypeError) as e:
        call(given)
    assert isinstance(e.value, ConfigError)
    text = str(e.value)
    assert text.startswith(f"topology = {given!r} is invalid") and "\n" not in text, text


# ----------------------------------------------------------------------------------------------
# names in messages, silently ignored settings (one line naming the field as the user wrote it, exit 2)
# ----------------------------------------------------------------------------------------------

TWO_JOBS = "jobs=[{name: a}, {name: b, placement: {gamma: [4,4,2]}}]"
CLI_CASES = [
    ("bounds-with-jobs", ["bounds=true", TWO_JOBS], ["bounds = True", "several jobs"]),
    ("bounds-method-with-jobs", ["bounds=edge", TWO_JOBS], ["bounds = 'edge'", "several jobs"]),
    ("bounds-with-background", ["bounds=true", "background.fraction=0.2"], ["bounds = True", "background"]),
    ("bound-solver", ["bounds=true", "bound_solver=gurobi"], ["bound_solver = 'gurobi'", "'highs'"]),
    ("job-traffic-kind", ["jobs=[{name: a, traffic: {kind: stencill}}]"],
     ["jobs[0].traffic.kind = 'stencill'", "Did you mean 'stencil'?"]),
    ("job-placement-kind", ["jobs=[{name: a}, {name: b, placement: {kind: linearr}}]"],
     ["jobs[1].placement.kind = 'linearr'", "Did you mean 'linear'?"]),
    ("phase-kind", ["traffic=phased", "traffic.phases=[{kind: all_to_al}]", "placement=linear"],
     ["traffic.phases[0].kind = 'all_to_al'", "Did you mean 'all_to_all'?"]),
    ("job-phase-kind", ["jobs=[{name: a}, {name: b, traffic: {kind: phased, phases: [{kind: shfit}]}}]"],
     ["jobs[1].traffic.phases[0].kind = 'shfit'", "Did you mean 'shift'?"]),
    # a kind set by its key kept the group's schema: an internal error (a missing key) where the builder read it
    ("placement-kind-key", ["placement.kind=random"],
     ["placement.kind = 'random' is invalid: allowed is 'dragonfly_cartesian', the kind of the placement group "
      "chosen (placement=dragonfly_cartesian)", "write placement=NAME"]),
    ("traffic-kind-key", ["traffic.kind=all_to_all"], ["traffic.kind = 'all_to_all'", "write traffic=NAME"]),
    ("topology-kind-key", ["topology.kind=torus"], ["topology.kind = 'torus'", "write topology=NAME"]),
    ("routing-kind-key", ["routing.kind=valiant"], ["routing.kind = 'valiant'", "write routing=NAME"]),
]


@pytest.mark.parametrize("argv,texts", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_names_the_field_as_written(argv, texts, capsys, tmp_path):
    rc = cli.main(["eval", *argv, "save=true", f"output_dir={tmp_path}"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("evaluator eval: error: "), err
    for t in texts:
        assert t in err, (t, err)
    assert not list(tmp_path.iterdir())  # nothing written


def test_integer_bytes_where_floats_are_expected_are_accepted(capsys):
    """An rdn's demand matrices in integers (valid bytes) were refused by OmegaConf's float type."""
    rc = cli.main(["eval", "topology=rdn", "topology.configuration=traffic", "topology.jobs=[[0,1]]",
                   "topology.demand=[[[0,5],[5,0]]]", "routing=tago", "traffic=all_to_all", "placement=linear",
                   "save=false"])
    assert rc == 0, capsys.readouterr().err
    rc = cli.main(["eval", "topology=rdn", "topology.configuration=traffic", "topology.jobs=[[0,1]]",
                   "topology.demand=[[[0,-5],[5,0]]]", "routing=tago", "traffic=all_to_all", "placement=linear",
                   "save=false"])
    err = capsys.readouterr().err
    assert rc == 2 and "topology.demand[0] = [[0, -5], [5, 0]]" in err, err


def test_an_array_in_a_message_stays_on_one_line():
    import numpy as np

    text = str(ConfigError("traffic.matrix", np.arange(12).reshape(3, 4), "a square\nmatrix", "two\nlines"))
    assert "\n" not in text and text.startswith("traffic.matrix = array([[ 0, 1, 2, 3], [ 4, 5, 6, 7]"), text


# ----------------------------------------------------------------------------------------------
# a misspelt key at any depth (Hydra's '+' adds it; it was dropped silently and the run used the default)
# ----------------------------------------------------------------------------------------------

GEMINI_ALPS = ["topology=gemini", "placement=alps", "traffic=all_to_all", "routing=dor"]
KEY_CASES = [
    ("eval", ["+background.fractoin=0.2"], "background.fractoin = 0.2", "'fraction'"),
    ("eval", ["+background.sed=3"], "background.sed = 3", "'seed'"),
    ("eval", ["+bound=true"], "bound = True", "'bounds'"),
    ("eval", ["+exclusive_node=false"], "exclusive_node = False", "'exclusive_nodes'"),
    ("eval", [*GEMINI_ALPS, "+placement.rank_order.mjr=C"], "placement.rank_order.mjr = 'C'", "'major'"),
    ("eval", [*GEMINI_ALPS, "+placement.rank_order.methd=smp"], "placement.rank_order.methd = 'smp'", "'method'"),
    ("sweep", ["sweeps=dragonfly_nne_placement", "+sweep.chunk_sze=4"], "sweep.chunk_sze = 4", "'chunk_size'"),
    ("sweep", ["sweeps=dragonfly_nne_placement", "+ray.num_cpu=2"], "ray.num_cpu = 2", "'num_cpus'"),
    ("sweep", ["sweeps=dragonfly_nne_placement", "+ray.adress=auto"], "ray.adress = 'auto'", "'address'"),
]


@pytest.mark.parametrize("cmd,argv,named,near", KEY_CASES, ids=[c[2].split(" ")[0] for c in KEY_CASES])
def test_a_misspelt_key_at_any_depth_is_refused_with_the_nearest(cmd, argv, named, near, capsys, tmp_path):
    out = [f"output_dir={tmp_path}"] if cmd == "eval" else [f"sweep.output_dir={tmp_path}"]
    rc = cli.main([cmd, *argv, *out])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and named in err and f"Did you mean {near}?" in err, err
    assert not list(tmp_path.iterdir())


# ----------------------------------------------------------------------------------------------
# schedule names its machine as the RDN study does: --machine DF(P,A,H,G), or --groups/--nodes-per-group
# ----------------------------------------------------------------------------------------------

SCHEDULE = ["schedule", "--synthetic", "50", "--mode-range", "8,32", "--no-plot", "--no-progress"]


@pytest.mark.parametrize("argv,texts", [
    (["--machine", "2,4,2,8", "--groups", "9"], ["--groups = 9", "8 (what --machine 2,4,2,8 implies)"]),
    (["--machine", "DF(2,4,2,8)", "--nodes-per-group", "16"], ["--nodes-per-group = 16", "8 (what --machine"]),
    (["--machine", "2,4,2"], ["--machine = '2,4,2'", "P,A,H,G"]),
    (["--machine", "DF(2,4,2,99)"], ["--machine = 'DF(2,4,2,99)'"]),
], ids=["groups-differ", "nodes-differ", "three-numbers", "too-many-groups"])
def test_schedule_machine_named_one_way(argv, texts, capsys, tmp_path):
    rc = cli.main([*SCHEDULE, *argv, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    for t in texts:
        assert t in err, (t, err)
    assert not (tmp_path / "out").exists()


def test_schedule_machine_is_its_groups_and_nodes(capsys, tmp_path):
    import xarray as xr

    rc = cli.main([*SCHEDULE, "--machine", "DF(2,4,2,8)", "--out", str(tmp_path)])
    assert rc == 0, capsys.readouterr().err
    (path,) = tmp_path.glob("*.nc")
    with xr.open_dataset(path) as ds:  # G groups of A x P nodes
        assert int(ds.attrs["groups"]) == 8 and int(ds.attrs["nodes_per_group"]) == 8


# ----------------------------------------------------------------------------------------------
# tiles: the baseline's errors name the baseline's flags; an unwritable --out is refused before the work
# ----------------------------------------------------------------------------------------------

TILES = ["tiles", "--grid", "64,64,64", "--nodes", "8", "--tasks-per-node", "2"]


@pytest.mark.parametrize("argv,texts", [
    (["--baseline-grid", "64,64,64", "--baseline-decomposition", "3,3,3"], ["--baseline-decomposition = '3x3x3'"]),
    (["--baseline-grid", "64,64,64", "--baseline-tile", "2,2,2"], ["--baseline-tile = '2x2x2'"]),
    (["--baseline-grid", "64,64,x"], ["--baseline-grid = '64,64,x'"]),
], ids=["decomposition", "tile", "grid"])
def test_tiles_baseline_errors_name_the_baseline_flags(argv, texts, capsys):
    rc = cli.main([*TILES, *argv, "--no-save"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    for t in texts:
        assert t in err, (t, err)


def test_tiles_unwritable_out_is_refused_before_the_work(capsys, tmp_path, monkeypatch):
    import evaluator.tiles as TL

    monkeypatch.setattr(TL, "advise", lambda *a, **k: pytest.fail("advise ran before the output was checked"))
    (tmp_path / "afile").write_text("x")
    rc = cli.main([*TILES, "--out", str(tmp_path / "afile" / "sub")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--out = " in err, err


@pytest.mark.parametrize("kw,named", [
    ({"groups": "abc"}, "groups = 'abc'"), ({"patterns": "stencil"}, "patterns = 'stencil'"),
    ({"groups": [2, "x"]}, "groups = 'x'"), ({"bounds": "adaptive"}, "bounds = 'adaptive'"),
], ids=["groups-str", "patterns-str", "groups-item", "bounds-str"])
def test_rdn_study_arguments_of_the_wrong_type(kw, named):
    from evaluator.studies.rdn import RdnMachine, allocation_mode_study

    with pytest.raises(TypeError) as e:
        allocation_mode_study(RdnMachine(2, 4, 2, 8), **kw)
    assert str(e.value).startswith(named) and "\n" not in str(e.value)


@pytest.mark.parametrize("how", [["+sweep.axes.placement.kind=[linear,random]"], ["placement.kind=linear,random"],
                                 ["+sweep.axes.routing.kind=[minimal,valiant]"]])
def test_a_sweep_over_a_kind_key_is_refused_before_it_runs(how, capsys, tmp_path):
    group = how[0].lstrip("+").replace("sweep.axes.", "").split(".")[0]
    rc = cli.main(["sweep", *how, f"sweep.output_dir={tmp_path}", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"sweep.axes = '{group}.kind' is invalid: allowed is an axis over the {group} group" in err, err
    assert not list(tmp_path.iterdir())
