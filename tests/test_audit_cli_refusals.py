"""Refusals found by an audit of sweep, query and plot as a user runs them (2026-12-06): each input was accepted
before and lost a file, read one dataset where two were named, wrote outside the results directory, or ignored a
key; each is now one line naming the field, the value and what is allowed, before anything is computed or
written."""

from __future__ import annotations

import pytest

from evaluator import cli

T = ["topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=all_to_all", "placement=linear",
     "ray.enabled=false", "--no-progress"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("audit")
    assert cli.main(["sweep", *T, "traffic.n_tasks=4,8", f"sweep.output_dir={d}", "sweep.name=small"]) == 0
    (path,) = (d / "small").glob("*.nc")
    return path


def test_plot_out_never_overwrites_the_dataset_or_a_file_that_is_not_a_png(dataset, tmp_path, capsys):
    before = dataset.read_bytes()
    assert cli.main(["plot", str(dataset), "--out", str(dataset)]) == 2
    assert "--out = " in capsys.readouterr().err and dataset.read_bytes() == before
    log = tmp_path / "notes.png"
    log.write_text("my notes\n")
    assert cli.main(["plot", str(dataset), "--out", str(log)]) == 2
    assert "exists and is not a PNG" in capsys.readouterr().err and log.read_text() == "my notes\n"
    for out in ("", str(tmp_path / "fig.pdf")):
        assert cli.main(["plot", str(dataset), "--out", out]) == 2
        assert "--out = " in capsys.readouterr().err
    fig = tmp_path / "fig.png"
    assert cli.main(["plot", str(dataset), "--out", str(fig)]) == 0
    assert cli.main(["plot", str(dataset), "--out", str(fig)]) == 0  # a PNG figure is replaced
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("command", ["query", "plot"])
def test_a_second_name_beside_a_dataset_is_refused_not_left_unread(command, dataset, capsys):
    for args in ([str(dataset), "eval"], ["no_such_study", str(dataset)]):
        assert cli.main([command, *args]) == 2
        err = capsys.readouterr().err
        assert "is invalid: allowed is one dataset" in err and "no such file" in err


@pytest.mark.parametrize("override", ["sweep.run_id=../../etc", "sweep.run_id=a/b", "sweep.name=../escape",
                                      "sweep.name=", "sweep.run_id=", "sweep.name=.hidden"])
def test_a_run_name_that_is_not_one_file_name_is_refused(override, tmp_path, capsys):
    assert cli.main(["sweep", *T, "traffic.n_tasks=4,8", f"sweep.output_dir={tmp_path / 'r'}", override]) == 2
    key = override.split("=")[0]
    assert f"{key} = " in capsys.readouterr().err
    assert not (tmp_path / "r").exists() and not any(tmp_path.parent.glob("escape"))


@pytest.mark.parametrize("value", ["nan", "-1", "inf", "0"])
def test_a_connect_timeout_that_is_no_time_is_refused(value, tmp_path, capsys):
    assert cli.main(["sweep", *T, "traffic.n_tasks=4,8", f"sweep.output_dir={tmp_path}",
                     f"ray.connect_timeout_s={value}"]) == 2
    assert "ray.connect_timeout_s = " in capsys.readouterr().err


@pytest.mark.parametrize("axis, field", [
    ("+sweep.axes.traffic.n_tasks={range:[0,8],step:2}", "sweep.axes.traffic.n_tasks = "),
    ("+sweep.axes.traffic.n_tasks={divisors:16,foo:1}", "sweep.axes.traffic.n_tasks = "),
    ("+sweep.axes.traffic.n_tasks={divisors:16,total:maybe}", "sweep.axes.traffic.n_tasks.total = "),
    ("+sweep.axes.traffic.beta={factorizations:{n:8,d:3,foo:1}}", "sweep.axes.traffic.beta.factorizations = "),
    ("+sweep.axes.traffic.beta={factorizations:{n:8,d:3},foo:1}", "sweep.axes.traffic.beta = "),
    ('+sweep.axes.size={zip:{traffic.seed:[1,2],placement.first_node:[0,4]},label:[a,"b,c"]}',
     "sweep.axes.size.label = "),
])
def test_a_generators_unknown_key_and_a_label_with_a_comma_are_refused(axis, field, tmp_path, capsys):
    assert cli.main(["sweep", *T, f"sweep.output_dir={tmp_path}", axis]) == 2
    assert field in capsys.readouterr().err
    assert not any(tmp_path.rglob("*.nc"))


def test_divisors_with_total_true_still_sweeps(tmp_path, capsys):
    assert cli.main(["sweep", *T, f"sweep.output_dir={tmp_path}", "+sweep.axes.traffic.n_tasks={divisors:[2,8],total:true}"]) == 0
    assert "5 feasible of 5 points" in capsys.readouterr().out  # 16's divisors 1, 2, 4, 8, 16


def test_a_query_with_no_row_to_rank_says_so_instead_of_an_empty_table(tmp_path, capsys):
    """Rows all left out (here: --where selects the infeasible point) printed pandas' "Empty DataFrame" and
    exited 0; now one line says there is no row to rank and where the reasons are."""
    assert cli.main(["sweep", "topology=dragonfly", "routing=minimal", "traffic=shift", "placement=linear",
                     "ray.enabled=false", "--no-progress", f"sweep.output_dir={tmp_path}", "sweep.name=half",
                     "traffic.n_tasks=64,2000"]) == 0  # (2,000 tasks: more than the 1,056 nodes)
    capsys.readouterr()
    assert cli.main(["query", "half", "--results", str(tmp_path), "--where", "traffic.n_tasks=2000"]) == 2
    captured = capsys.readouterr()
    assert "no row to rank: no point matching --where is feasible" in captured.err
    assert "Empty DataFrame" not in captured.out
    assert cli.main(["query", "half", "--results", str(tmp_path), "--where", "traffic.n_tasks=64"]) == 0


def test_an_eval_dataset_of_one_draw_says_so_where_it_is_read(tmp_path, capsys):
    """`eval` says under its time that a random placement is one draw; its dataset said nothing, so `query` and
    `plot` of it did not either (a sweep's dataset records it: attrs one_draw)."""
    import xarray as xr

    base = ["eval", "topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=all_to_all",
            "traffic.n_tasks=8"]
    for placement in ("random", "linear"):
        assert cli.main([*base, f"placement={placement}", f"output_dir={tmp_path / placement}"]) == 0
        (path,) = (tmp_path / placement).glob("*.nc")
        with xr.open_dataset(path) as ds:
            assert ds.attrs.get("one_draw") == ("placement random (seed 0)" if placement == "random" else None)
        capsys.readouterr()
        assert cli.main(["query", str(path)]) == 0
        said = "every row is one draw of placement random (seed 0)" in capsys.readouterr().out
        assert said == (placement == "random")


@pytest.mark.parametrize("axes,says", [
    (["background.pattern=foo,uniform"], "background.pattern = 'foo' is invalid"),
    (["background.fraction=0.2", "background.pattern=random_permutation,foo"], "background.pattern = 'foo'"),
    (["background.pattern=random_permutation", "background.seed=0,1"],
     "sweep.axes = 'background.seed' is invalid: allowed is an axis of the background's keys where it loads "
     "something"),
])
def test_a_background_axis_that_is_invalid_or_changes_nothing_is_refused(axes, says, tmp_path, capsys):
    """A background axis at fraction 0 ran every value as the same point (a pattern 'foo' among them), and a value
    no background takes was never checked unless the background loaded something."""
    assert cli.main(["sweep", *T, "traffic.n_tasks=8", f"sweep.output_dir={tmp_path}", *axes]) == 2
    assert says in capsys.readouterr().err
    assert not any(tmp_path.rglob("*.nc"))


def test_latency_keys_are_checked_when_the_model_is_switched_off(capsys):
    """topology.latency.enabled=false with topology.latency.router=-5 ran (the keys were read only when enabled)."""
    base = ["eval", "topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=all_to_all",
            "traffic.n_tasks=8", "placement=linear", "save=false", "topology.latency.enabled=false"]
    assert cli.main([*base, "topology.latency.router=-5"]) == 2
    assert "topology.latency.router = -5.0 is invalid" in capsys.readouterr().err
    assert cli.main([*base, "topology.latency.router=5e-7"]) == 0  # a valid one, switched off: no latency model
    assert "with per-message latency" not in capsys.readouterr().out
    assert cli.main([*base[:-1], "topology.latency.router=5e-7"]) == 0  # (switched on, the line that says so)
    assert "with per-message latency" in capsys.readouterr().out


def test_a_users_latest_file_is_left_alone_and_a_file_in_a_results_directorys_place_is_no_success(tmp_path, capsys):
    """tiles, partitions and optimize replaced a file of the user's own named `latest` by a link to their result;
    partitions printed 'wrote ...nc' and exited 0 where a file stood in its directory's place (nothing written)."""
    import xarray as xr

    from evaluator.io import point_latest, write_dataset

    d = tmp_path / "runs"
    d.mkdir()
    (d / "latest").write_text("my notes\n")
    path = write_dataset(xr.Dataset({"x": ("i", [1.0])}), d, identity="a")
    assert path.is_file() and (d / "latest").read_text() == "my notes\n" and point_latest(d) is None
    (d / "latest").unlink()
    assert point_latest(d) == d / "latest" and (d / "latest").resolve() == path.resolve()
    (tmp_path / "file").write_text("x\n")
    with pytest.raises(OSError):
        write_dataset(xr.Dataset({"x": ("i", [1.0])}), tmp_path / "file", identity="a")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mira").write_text("x\n")
    assert cli.main(["partitions", "mira", "--size", "2048", "--out", str(tmp_path / "out"), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert "--out = " in err and "nothing was computed" in err


def test_runs_refuses_a_results_directory_that_is_not_one(tmp_path, capsys):
    """`runs --results /nonexistent` (or a file) said 'no runs' and exited 0, as for an empty directory."""
    (tmp_path / "f").write_text("x\n")
    for path, says in ((tmp_path / "missing", "No such directory."), (tmp_path / "f", "It is a file")):
        assert cli.main(["runs", "--results", str(path)]) == 2
        assert says in capsys.readouterr().err
    assert cli.main(["runs", "--results", str(tmp_path)]) == 0  # an empty one: no runs
    assert "no runs under" in capsys.readouterr().out


@pytest.mark.parametrize("argv,says", [
    (["tiles", "--grid", "64,64,64", "--nodes", "8", "--tasks-per-node", "8", "--no-save", "--out", "/proc/x"],
     "--out = '/proc/x' is invalid: allowed is not with --no-save"),
    (["tiles", "--grid", "64,64,64", "--nodes", "8", "--tasks-per-node", "8", "--no-save", "--no-plot"],
     "--no-plot = True is invalid: allowed is not with --no-save"),
    (["bench", "--settle", "30", "--only", "startup"], "--settle = 30.0 is invalid: allowed is 0 with one scenario"),
    (["partitions", "Titan"], "--size = None is invalid: allowed is the partition sizes (nodes) to analyse on Titan"),
    (["partitions", "Titan", "--slabs"], "lists no slab shapes"),
])
def test_options_that_do_nothing_here_are_refused(argv, says, tmp_path, capsys):
    """Each was accepted and did nothing (tiles' --out and --no-plot with --no-save, bench's --settle with one
    scenario), or named something the user cannot give (partitions of Titan: 'slabs = None; give router shapes')."""
    assert cli.main([*argv, *(["--out", str(tmp_path)] if argv[0] == "bench" else [])]) == 2
    assert says in capsys.readouterr().err
