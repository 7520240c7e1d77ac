"""Defects a third audit found running map, placement, the studies, eval, query, plot and runs as a user would
(2026-12-06): files replaced that the command had not written, seeds that crashed after the work, abbreviated
options read as other options, refusals naming the wrong thing or quoting a fixed example, an empty path read as
the working directory, booleans read as byte counts, and a start listed as run and as skipped. Each is now refused
or said before anything is computed or written."""

from __future__ import annotations

import os

import numpy as np
import pytest

from evaluator import cli

RDN = ["study", "rdn", "--machine", "2,2,2,5", "--groups", "2", "--seeds", "1", "--patterns", "stencil"]
DF = ["topology=dragonfly", "topology.p=2", "topology.a=4", "topology.h=2", "routing=minimal",
      "traffic=random_pairs", "traffic.n_tasks=32"]


def test_study_rdn_replaces_its_own_outputs_and_no_other_file(tmp_path, capsys):
    """--speedup-out (and --out FILE.nc) over another command's dataset replaced it in silence; a rerun over the
    study's own files still replaces them, and a plot that would replace a file beside no study dataset is refused."""
    other = tmp_path / "other.nc"
    other.write_bytes(b"CDF\x01 a sweep's dataset, say")
    before = other.read_bytes()
    for flag in ("--speedup-out", "--out"):
        argv = [*RDN, "--out", str(tmp_path / "rdn.nc"), flag, str(other)] if flag == "--speedup-out" else \
            [*RDN, "--out", str(other)]
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert f"{flag} = '{other}' is invalid: allowed is a new file, or this study's own output" in err, err
        assert other.read_bytes() == before and not (tmp_path / "rdn.nc").exists()
    own = [*RDN, "--out", str(tmp_path / "rdn.nc"), "--speedup-out", str(tmp_path / "sp.nc")]
    assert cli.main(own) == 0
    capsys.readouterr()
    first = os.stat(tmp_path / "sp.nc").st_mtime_ns
    assert cli.main(own) == 0                                  # its own files: replaced
    assert os.stat(tmp_path / "sp.nc").st_mtime_ns >= first and "speedup table" in capsys.readouterr().out
    assert cli.main([*RDN, "--out", str(tmp_path / "sp.nc")]) == 2   # a speedup table is not a study dataset
    capsys.readouterr()
    (tmp_path / "fig.png").write_bytes(b"\x89PNG someone's figure")
    assert cli.main([*RDN, "--out", str(tmp_path / "fig.nc")]) == 2
    assert "fig.png exists beside no dataset of this study" in capsys.readouterr().err
    assert (tmp_path / "fig.png").read_bytes() == b"\x89PNG someone's figure"


@pytest.mark.parametrize("argv", [
    [*RDN, "--seed", str(2 ** 64)],                        # ran the whole study, then failed to write it
    ["map", *DF, "--budget", "1", "--no-progress", "--seed", str(2 ** 63)],   # METIS's C long: an internal error
    ["schedule", "--synthetic", "20", "--groups", "4", "--nodes-per-group", "8", "--seed", str(2 ** 64)],
])
def test_seeds_beyond_what_datasets_and_solvers_hold_are_refused_first(argv, tmp_path, capsys):
    out = tmp_path / "out"
    argv = argv + (["--out", str(out / "x.nc")] if argv[0] == "study" else ["--out", str(out)]
                   if argv[0] == "schedule" else ["save=false"])
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "--seed = " in err and "is invalid: allowed is an integer in [0, 2^62)" in err, err
    assert not out.exists()


def test_seed_bound_is_the_largest_accepted():
    from evaluator.errors import MAX_SEED, ConfigError, check_seed

    assert check_seed("seed", MAX_SEED) == 2 ** 62 - 1
    with pytest.raises(ConfigError):
        check_seed("seed", MAX_SEED + 1)


@pytest.mark.parametrize("argv, unknown", [
    (["study", "buyer", "--nodes", "32", "--workloads", "permutation", "--seed", "3"], "--seed 3"),  # was --seeds 3
    (["map", *DF, "--budg", "1", "--no-progress", "save=false"], "--budg 1"),                 # was --budget 1
])
def test_abbreviated_options_are_not_read_as_others(argv, unknown, tmp_path, capsys):
    try:
        rc = cli.main(argv + (["--out", str(tmp_path / "b")] if argv[1] == "buyer" else []))
    except SystemExit as exc:  # (argparse's own exit, as the console command ends)
        rc = exc.code
    assert rc == 2
    assert f"unrecognized arguments: {unknown}" in capsys.readouterr().err


def test_the_candidates_refusal_names_decimal_sizes(capsys):
    assert cli.main(["map", *DF, "--candidates", "2000000", "--no-progress", "save=false"]) == 2
    err = capsys.readouterr().err
    assert "--candidates = 2000000 is invalid" in err and "80 TB" in err and "TiB" not in err


def test_a_dangling_latest_names_a_runs_command_that_works(tmp_path, capsys):
    import shutil

    from evaluator import evaluate_batch  # noqa: F401  (a dataset of any command will do: write a tiny sweep's)

    root = tmp_path / "r2"
    (root / "s2").mkdir(parents=True)
    assert cli.main(["eval", "topology=torus", "topology.dims=[2,2,2]", "routing=dor", "traffic=all_to_all",
                     "placement=linear", f"output_dir={tmp_path / 'ev'}"]) == 0
    shutil.copy(next((tmp_path / "ev").glob("*.nc")), root / "s2" / "b.nc")
    os.symlink("nothere.nc", root / "s2" / "latest")
    capsys.readouterr()
    assert cli.main(["query", "s2", "--results", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"`evaluator runs s2 --results {root}` lists what is there" in err, err
    assert cli.main(["runs", "s2", "--results", str(root)]) == 0     # the command it names runs


def test_two_study_names_are_not_called_missing_files(tmp_path, capsys):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    assert cli.main(["query", "a", "b", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "2 names: give one dataset or study at a time" in err and "(beside )" not in err, err


def test_an_empty_node_list_is_not_the_working_directory(capsys):
    assert cli.main(["map", *DF, "--nodes", "", "--budget", "1", "--no-progress", "save=false"]) == 2
    err = capsys.readouterr().err
    assert "--nodes = '' is invalid: allowed is all, placement, a node list file" in err and "directory" not in err


def test_an_empty_output_directory_is_refused_not_the_working_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["eval", "topology=torus", "topology.dims=[2,2,2]", "routing=dor", "traffic=all_to_all",
                     "placement=linear", "output_dir="]) == 2
    assert "output_dir = '' is invalid" in capsys.readouterr().err and not os.listdir(tmp_path)


def test_a_boolean_npy_is_no_byte_counts(tmp_path, capsys):
    np.save(tmp_path / "bool.npy", np.ones((4, 4), bool))
    assert cli.main(["eval", f"traffic.path={tmp_path / 'bool.npy'}", "traffic=file", "topology=torus",
                     "topology.dims=[2,2]", "routing=dor", "placement=linear", "save=false"]) == 2
    assert "has dtype bool (booleans, not byte counts)" in capsys.readouterr().err


def test_a_dense_pattern_too_large_to_list_says_what_to_change(capsys):
    assert cli.main(["map", "topology=torus", "topology.dims=[32,32,32]", "routing=dor", "traffic=all_to_all",
                     "--budget", "1", "--no-progress", "save=false"]) == 2
    err = capsys.readouterr().err
    assert "this pattern has 1,073,709,056" in err and "Use fewer tasks (traffic.n_tasks)" in err
    assert "DenseTraffic" not in err


def test_a_start_run_as_configured_is_not_also_skipped(capsys):
    assert cli.main(["map", "topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=stencil",
                     "traffic.alpha=[16,16,16]", "traffic.beta=[4,4,4]", "placement=random", "--iterations", "1",
                     "--budget", "5", "--no-progress", "save=false"]) == 0
    out = capsys.readouterr().out
    assert "random (as configured" in out
    skipped = next(line for line in out.splitlines() if line.startswith("skipped"))
    assert "(random," not in skipped and " random," not in skipped and "dragonfly_random" in skipped, skipped


def test_buyer_prints_decimal_bandwidth_and_four_digits():
    import xarray as xr

    from evaluator.studies.buyer import _fmt_t

    us = ("us", 1e-6)  # (each column's unit is named in its head since 2026-12-07)
    assert _fmt_t(3.7232e-6, us) == "3.723" and _fmt_t(3.7245e-6, us) == "3.725"    # both were 3.72 us
    assert _fmt_t(float("nan"), us) == "NaN"
    from evaluator.studies import buyer

    ds = xr.Dataset(attrs={"equal": "cost", "tolerance": 0.1, "link_bandwidth": 2.5e10, "link_product": "x"})
    head = buyer.format_study(ds.assign_coords(size=("size", np.array([], int)), workload=("workload", [])))
    assert head.splitlines()[0].endswith("links 25.00 GB/s (x)"), head


def test_a_rank_order_written_in_alps_order_reads_back_as_written(tmp_path, capsys):
    """evaluator placement writes its lines in ALPS's order on a 3-D torus (its default --fill alps); map --start
    read them in id order, another mapping, in silence (Blue Waters' topaware example: 1.132 ms against 377.5 us).
    The file now says '# fill: alps' and is read back as the placement itself; on a machine without ALPS's order
    such a file is refused."""
    from evaluator import config
    from evaluator.mapping import read_start_file
    from evaluator.mapping._user_starts import parse_node_ids

    over = ["topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=stencil", "traffic.alpha=[16,16,16]",
            "traffic.beta=[4,4,2]", "placement=alps"]
    d = tmp_path / "launch"
    assert cli.main(["placement", *over, "--write-rank-order", str(d)]) == 0
    text = (d / "MPICH_RANK_ORDER").read_text()
    assert "# fill: alps" in text
    point = config.build(config.to_object(config.compose(over)))
    nodes = parse_node_ids((d / "node_list").read_text())
    start = read_start_file(d / "MPICH_RANK_ORDER", point.topology, 32, nodes, 1)
    assert np.array_equal(start.task_node, point.placement.task_node)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "node_list").write_text((d / "node_list").read_text())
    (plain / "MPICH_RANK_ORDER").write_text(text.replace("# fill: alps\n", ""))   # an id-order file: as listed
    assert not np.array_equal(read_start_file(plain / "MPICH_RANK_ORDER", point.topology, 32, nodes, 1).task_node,
                              point.placement.task_node)
    (plain / "MPICH_RANK_ORDER").write_text(text.replace("# fill: alps", "# fill: hilbert"))
    from evaluator.errors import ConfigError

    with pytest.raises(ConfigError, match="whose '# fill:' line says alps or id"):
        read_start_file(plain / "MPICH_RANK_ORDER", point.topology, 32, nodes, 1)


def test_query_over_every_axis_keeps_the_best_row_and_its_ties():
    """--over naming every axis printed the plain ranking (every row); the help says the best per combination of
    the other axes, of which there is one: the best row, with the rows tied with it and by how much they win."""
    import xarray as xr

    from evaluator.query import best

    t = np.array([[1.0, 2.0, 4.0], [1.0, 3.0, 5.0]])
    ds = xr.Dataset({"completion_time": (("routing", "n"), t, {"units": "s"})},
                    coords={"routing": ["dor", "adaptive"], "n": [4, 8, 16]})
    ds["feasible"] = ds.completion_time > 0
    table = best(ds, "completion_time", over=["routing", "n"])
    assert list(table["completion_time"]) == [1.0, 1.0] and list(table.index) == [1, 1]
    assert list(table["ahead_by"]) == [2.0, 2.0] and set(table["runner_up"]) == {"routing=dor, n=8"}
    assert len(best(ds, "completion_time")) == 6                     # a plain ranking: every row


def test_draws_are_seed_axes_not_choices():
    """--draws traffic.n_tasks averaged 4-, 8- and 16-task jobs into one 'mean' (--draws routing, DOR with adaptive
    routing): an axis of choices is refused, naming the seed axes the dataset has."""
    import xarray as xr

    from evaluator.dataset import is_draw_axis
    from evaluator.errors import ConfigError
    from evaluator.query import best

    ds = xr.Dataset({"completion_time": (("n", "placement.seed"), np.ones((3, 2)), {"units": "s"})},
                    coords={"n": [4, 8, 16], "placement.seed": [0, 1]})
    with pytest.raises(ConfigError, match=r"draws = \['n'\] is invalid: allowed is axes of random draws.*"
                                          r"\['placement.seed'\]"):
        best(ds, "completion_time", draws=["n"])
    assert len(best(ds, "completion_time", draws=["placement.seed"])) == 3
    assert [is_draw_axis(a) for a in ("seed", "routing.seed", "jobs.0.traffic.seed", "tdn_seed", "seeds", "n")] == \
        [True, True, True, True, False, False]


@pytest.mark.parametrize("override", ["sweep.format=xyz", "sweep.chunk_size=-5", "ray.address=bogus:1"])
def test_eval_refuses_the_settings_only_a_sweep_reads(override, capsys):
    """eval ran with these and used none of them, without a word."""
    assert cli.main(["eval", "topology=torus", "topology.dims=[2,2,2]", "routing=dor", "traffic=all_to_all",
                     "placement=linear", "save=false", override]) == 2
    key, value = override.split("=")
    assert f"{key} = '{value}' is invalid: allowed is a setting evaluator eval reads" in capsys.readouterr().err


@pytest.mark.parametrize("option", [["--fill", "alps"], ["--force"]])
def test_placement_launch_options_without_the_files_are_refused(option, capsys):
    """--fill and --force say how the launcher's files are written; without --write-rank-order they were ignored."""
    assert cli.main(["placement", "topology=torus", "topology.dims=[4,4,4]", "traffic=all_to_all",
                     "placement=linear", *option]) == 2
    assert f"{option[0]} = " in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["random_pairs", "all_to_all", "shift", "random_permutation"])
def test_a_bad_byte_count_names_the_key_written(kind, capsys):
    """traffic.bytes=nan was refused as traffic.bytes_per_task (random pairs) or traffic.bytes_per_pair (all-to-all):
    keys the config does not have."""
    assert cli.main(["eval", "topology=torus", "topology.dims=[2,2,2]", "routing=dor", f"traffic={kind}",
                     "placement=linear", "traffic.bytes=nan", "save=false"]) == 2
    assert "traffic.bytes = nan is invalid" in capsys.readouterr().err


def test_traffic_bytes_with_a_file_that_gives_its_bytes_is_refused(tmp_path, capsys):
    """traffic.bytes=7 with a .csv ran with the file's 100-byte flows and said nothing; it sets a pattern Matrix
    Market file's bytes only."""
    (tmp_path / "ring.csv").write_text("0,1,100\n1,0,100\n")
    (tmp_path / "real.mtx").write_text("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 100\n2 1 100\n")
    for name in ("ring.csv", "real.mtx"):
        assert cli.main(["eval", "traffic=file", f"traffic.path={tmp_path / name}", "traffic.bytes=7",
                         "topology=torus", "topology.dims=[2,2]", "routing=dor", "placement=linear",
                         "save=false"]) == 2
        assert "traffic.bytes = 7.0 is invalid: allowed is null for the" in capsys.readouterr().err
