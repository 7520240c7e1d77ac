"""Found by two audits of the configs and of the datasets' way from command to command (2026-12-06): a sweep that
returned another run's numbers, Python's own errors from inside Hydra reported as internal errors, and the rest
below. Each test failed on the code before it."""

from __future__ import annotations

import pytest
import xarray as xr

from evaluator import cli

T = ["topology=torus", "topology.dims=[4,4]", "placement=linear", "ray.enabled=false", "--no-progress"]


def _dor_time(path) -> float:
    with xr.open_dataset(path) as ds:
        return float(ds.completion_time.sel(routing="dor"))


def test_a_sweep_rerun_after_its_traffic_file_changed_computes_again(tmp_path, capsys):
    """The run id hashed the config, not the files it names: the same command after the file was edited said
    "has already finished; nothing to compute" and returned the old numbers (500 us for 9 MB flows)."""
    ring = tmp_path / "ring.csv"
    ring.write_text("src,dst,bytes\n0,1,1000000\n1,2,1000000\n2,3,1000000\n3,0,1000000\n")
    args = ["sweep", *T, "traffic=file", f"traffic.path={ring}", "routing=dor,kshortest", "sweep.name=filestale",
            f"sweep.output_dir={tmp_path / 'r'}"]
    assert cli.main(args) == 0
    (first,) = (tmp_path / "r" / "filestale").glob("*.nc")
    assert _dor_time(first) == pytest.approx(1e6 / 2e9, rel=1e-12)
    ring.write_text(ring.read_text().replace("1000000", "9000000"))
    assert cli.main(args) == 0
    assert "already finished" not in capsys.readouterr().err
    second = [p for p in (tmp_path / "r" / "filestale").glob("*.nc") if p != first]
    assert len(second) == 1 and _dor_time(second[0]) == pytest.approx(9e6 / 2e9, rel=1e-12)
    assert cli.main(args) == 0  # unchanged again: the finished run
    assert "already finished" in capsys.readouterr().err


def test_a_machine_file_edit_changes_the_run_id(tmp_path, monkeypatch):
    from evaluator import config
    from evaluator.sweep import plan_sweep

    (tmp_path / "tiny.yaml").write_text("name: Tiny\nkind: torus\ndims: [4, 4, 2]\nlink_bandwidth: 2.0e+9\n"
                                        "nodes_per_router: 1\n")
    monkeypatch.setenv("EVALUATOR_MACHINE_PATH", str(tmp_path))
    args = ["topology=machine", "topology.name=Tiny", "topology.partition=null", "routing=dor",
            "traffic=all_to_all", "traffic.n_tasks=4,8", "placement=linear", f"sweep.output_dir={tmp_path / 'r'}"]
    before = plan_sweep(config.compose_sweep(args)).run_id
    assert plan_sweep(config.compose_sweep(args)).run_id == before
    (tmp_path / "tiny.yaml").write_text((tmp_path / "tiny.yaml").read_text().replace("2.0e+9", "0.5e+9"))
    assert plan_sweep(config.compose_sweep(args)).run_id != before


def test_a_run_id_given_again_with_another_config_is_refused(tmp_path, capsys):
    """``sweep.run_id=myrun`` with other axes returned the first config's dataset as this one's."""
    base = ["sweep", *T, "routing=dor", "traffic=all_to_all", "traffic.n_tasks=16", "sweep.name=rid", "sweep.run_id=myrun",
            f"sweep.output_dir={tmp_path}"]
    assert cli.main([*base, "traffic.bytes=1e6,2e6"]) == 0
    capsys.readouterr()
    assert cli.main([*base, "traffic.bytes=3e6,4e6"]) == 2
    err = capsys.readouterr().err
    assert "sweep.run_id = 'myrun' is invalid" in err and "another config" in err and "Nothing was computed" in err
    assert len(list((tmp_path / "rid").glob("*.nc"))) == 1
    assert cli.main([*base, "traffic.bytes=1e6,2e6"]) == 0  # the same config: its finished run
    assert "already finished" in capsys.readouterr().err


def test_pythons_own_errors_inside_hydra_name_the_override(tmp_path, capsys):
    """Each was "internal error: ValueError / AssertionError / TypeError / ParserError" (exit 1)."""
    cases = [
        (["eval", "save=false", "topology=5"], "topology = '5' is invalid: allowed is the name of one of the group's "
                                               "options: bgq, dragonfly"),
        (["eval", "save=false", "topology=torus", "topology.dims=[4,4]", "topology.dims.a=2"],
         "'topology.dims.a=2' could not be applied: invalid literal for int()"),
        (["eval", "save=false", "jobs.0=5"], "'jobs.0=5' could not be applied"),
    ]
    for args, expected in cases:
        assert cli.main(args) == 2, args
        err = capsys.readouterr().err
        assert expected in err and "internal error" not in err, err
    studies = tmp_path / "studies"
    studies.mkdir()
    (studies / "broken.yaml").write_text("# @package _global_\nsweep: [\n")
    assert cli.main(["sweep", f"sweeps={studies / 'broken.yaml'}"]) == 2
    err = capsys.readouterr().err
    assert f"{studies / 'broken.yaml'} is not valid YAML at line 3, column 1" in err, err
    (tmp_path / "cd" / "cost").mkdir(parents=True)
    (tmp_path / "cd" / "cost" / "quotes.yaml").write_text("currency: [\n")
    assert cli.main(["sweep", "--config-dir", str(tmp_path / "cd"), *T, "routing=dor", "traffic=all_to_all",
                     "traffic.n_tasks=4,16", "cost=quotes"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'cd' / 'cost' / 'quotes.yaml'} is not valid YAML at line 2" in err, err


def test_a_finished_runs_damaged_dataset_is_named_not_returned(tmp_path, capsys):
    """"has already finished; nothing to compute" returned a truncated file (its chunks gone), and query then
    said to rerun the sweep: the advice looped. Now the rerun names the file and says to move it."""
    args = ["sweep", *T, "routing=dor", "traffic=all_to_all", "traffic.n_tasks=4,8", "sweep.name=dmg",
            f"sweep.output_dir={tmp_path}"]
    assert cli.main(args) == 0
    (path,) = (tmp_path / "dmg").glob("*.nc")
    path.write_bytes(path.read_bytes()[:3000])
    capsys.readouterr()
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert f"its dataset {path} cannot be read" in err and "move the file away" in err, err
    path.unlink()
    assert cli.main(args) == 0 and len(list((tmp_path / "dmg").glob("*.nc"))) == 1


def test_kept_link_loads_are_sized_before_the_run(tmp_path, capsys):
    """5 million points of a 32x32 torus with sweep.keep_link_load were accepted and wrote GBs of chunks before the
    assembly refused them (2e8 point-links)."""
    args = ["sweep", "topology=torus", "topology.dims=[32,32]", "routing=dor", "traffic=shift",
            "traffic.n_tasks=1024", "placement=random", "placement.seed=range(0,50000)", "sweep.keep_link_load=true",
            "sweep.name=kll", f"sweep.output_dir={tmp_path}", "ray.enabled=false", "--no-progress"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "sweep.keep_link_load = True is invalid" in err and "50,000 points x 6,144 links" in err, err
    assert not list((tmp_path / "kll").glob(".*.chunks/*.pkl"))


def test_query_of_a_study_reads_the_study_not_the_table_written_beside(tmp_path, capsys):
    """``study rdn --speedup-out results/rdn/speedup.nc`` (the README's own example) left no ``latest``, so
    ``query rdn`` and ``plot rdn`` read the newest file there: the speedup table."""
    out = tmp_path / "rdn"
    assert cli.main(["study", "rdn", "--machine", "2,2,2,5", "--groups", "2", "--seeds", "2", "--bounds", "none",
                     "--adaptive", "none", "--baseline", "oblivious", "--out", str(out),
                     "--speedup-out", str(out / "speedup.nc")]) == 0
    (study,) = out.glob("rdn-*.nc")
    assert (out / "latest").resolve() == study.resolve()
    capsys.readouterr()
    assert cli.main(["query", "rdn", "--results", str(tmp_path)]) == 0
    out_text = capsys.readouterr().out
    assert "rdn_time" in out_text and "speedup_no_bg" not in out_text


def test_sweep_refuses_evals_output_keys(tmp_path, capsys, monkeypatch):
    """``output_dir=`` and ``save=false`` are eval's: a sweep read neither and wrote under results/."""
    monkeypatch.chdir(tmp_path)
    for override, needle in (("output_dir=rodir", "output_dir = 'rodir' is invalid: allowed is sweep.output_dir"),
                             ("save=false", "save = 'false' is invalid: allowed is a sweep always writes")):
        assert cli.main(["sweep", *T, "routing=dor", "traffic=all_to_all", "traffic.n_tasks=4,8", override]) == 2
        assert needle in capsys.readouterr().err
    assert not (tmp_path / "results").exists() and not (tmp_path / "rodir").exists()


def test_the_docs_sweep_examples_survive_the_shell():
    """Two examples of docs/sweeps.md failed when pasted into bash: its brace expansion split
    ``{factorizations:{n:8,d:3}}`` and ``{range:[0,8,2]}``. Every value with a comma inside braces is quoted now
    (an unquoted bracket is left as it is by bash where no file matches it)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "sweeps.md").read_text()
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith("evaluator sweep"):
                for word in re.findall(r"(?:^|\s)([^'\s]*\{[^\s']*,[^\s']*\}[^\s]*)", line):
                    raise AssertionError(f"unquoted {word!r} in: {line}")


def test_a_link_class_without_links_is_no_value(capsys):
    """DF(p, a=1, h): no local link; its largest load was -inf, printed "-inf MB"."""
    assert cli.main(["eval", "save=false", "topology.a=1", "traffic=all_to_all", "traffic.n_tasks=16",
                     "placement=linear"]) == 0
    out = capsys.readouterr().out
    assert "max_load_local        - (no link of this class)" in out and "inf" not in out


def test_query_ranks_several_jobs_by_their_makespan_as_the_sweep_does(tmp_path, capsys):
    """The sweep's own table ranks a several-jobs sweep by makespan; query and plot ranked each job's time, and
    named another winner."""
    jobs = ("jobs=[{name: a, traffic: {n_tasks: 32, seed: 1}}, {name: b, traffic: {n_tasks: 32, seed: 2}, "
            "placement: {first_node: 32}}]")
    assert cli.main(["sweep", "topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=random_pairs",
                     "placement=linear", jobs, "routing.tie=split,positive", "sweep.name=jobs2",
                     f"sweep.output_dir={tmp_path}", "ray.enabled=false", "--no-progress"]) == 0
    sweep_table = capsys.readouterr().out
    assert cli.main(["query", "jobs2", "--results", str(tmp_path)]) == 0
    query_table = capsys.readouterr().out
    first = [line.split()[:2] for line in (sweep_table, query_table)
             for line in [next(x for x in line.splitlines() if x.startswith("1"))]]
    assert first[0] == first[1] == ["1", "positive"], (sweep_table, query_table)
    assert "makespan [ms]" in query_table.splitlines()[0]


def test_query_options_given_without_a_value_are_refused(tmp_path, capsys):
    assert cli.main(["sweep", *T, "routing=dor", "traffic=all_to_all", "traffic.n_tasks=4,8", "sweep.name=q",
                     f"sweep.output_dir={tmp_path}"]) == 0
    for option in ("--where", "--over", "--draws"):
        capsys.readouterr()
        assert cli.main(["query", "q", "--results", str(tmp_path), option]) == 2
        assert f"{option} = '' is invalid: allowed is one" in capsys.readouterr().err


def test_plot_out_never_replaces_a_png_it_did_not_write(tmp_path, capsys):
    from pathlib import Path

    from evaluator.io import is_our_figure

    assert cli.main(["sweep", *T, "routing=dor", "traffic=all_to_all", "traffic.n_tasks=4,8", "sweep.name=p",
                     f"sweep.output_dir={tmp_path}"]) == 0
    user = tmp_path / "user.png"
    user.write_bytes((Path(__file__).resolve().parent.parent / "docs" / "img" / "buyer-cost.png").read_bytes())
    before = user.read_bytes()
    capsys.readouterr()
    assert cli.main(["plot", "p", "--results", str(tmp_path), "--out", str(user)]) == 2
    assert "is a PNG that evaluator did not write" in capsys.readouterr().err and user.read_bytes() == before
    mine = tmp_path / "mine.png"
    assert cli.main(["plot", "p", "--results", str(tmp_path), "--out", str(mine)]) == 0 and is_our_figure(mine)
    assert cli.main(["plot", "p", "--results", str(tmp_path), "--out", str(mine)]) == 0  # its own: replaced
    assert not is_our_figure(user)


def test_plot_of_no_feasible_point_writes_nothing(tmp_path, capsys):
    """Every point infeasible (two jobs on the same nodes): plot wrote an empty figure and exited 0."""
    jobs = "jobs=[{name: a, traffic: {n_tasks: 32, seed: 1}}, {name: b, traffic: {n_tasks: 32, seed: 2}}]"
    assert cli.main(["sweep", "topology=torus", "topology.dims=[4,4,4]", "routing=dor", "traffic=random_pairs",
                     "placement=linear", jobs, "routing.tie=split,positive", "sweep.name=jinf",
                     f"sweep.output_dir={tmp_path}", "ray.enabled=false", "--no-progress"]) == 2
    capsys.readouterr()
    assert cli.main(["plot", "jinf", "--results", str(tmp_path)]) == 2
    assert "No point of the dataset has a finite makespan" in capsys.readouterr().err
    assert not list((tmp_path / "jinf").glob("*.png"))


def test_a_closed_pipe_ends_a_command_quietly(monkeypatch, capsys):
    """``evaluator query ... | head`` printed "evaluator query: error: Broken pipe" once head had its rows."""
    import evaluator.cli.query as query_cli

    def closed(argv):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(query_cli, "main", closed)
    assert cli.main(["query", "anything"]) == 141
    assert capsys.readouterr().err == ""


def test_a_blocked_job_names_the_rates_in_decimal_units():
    """The blocked line printed ``7.21697e+09 bytes/s``; rates are shown in GB/s as everywhere else."""
    import evaluator as ev
    from evaluator import placement as P
    from evaluator import traffic as TR
    from evaluator.jobs import Background, Job, evaluate_jobs

    topo = ev.torus((8,), link_bandwidth=1e9, injection_bandwidth=1e10)
    ds = evaluate_jobs(topo, [Job(TR.from_flows(2, [0], [1], [1e6]), P.explicit(topo, [0, 4]))], "dor",
                       background=Background(0.5))
    assert "the background puts 4.500 GB/s on it, its capacity is 1.000 GB/s" in ds.attrs["blocked"]


def test_a_broken_machine_file_does_not_hide_another_machine(tmp_path, monkeypatch):
    """One broken, unrelated file on $EVALUATOR_MACHINE_PATH made every lookup through the catalogue fail with
    its error (``machine 'BadBW' ...: required key 'link_bandwidth' is missing`` when asking for Tiny)."""
    import pytest as _pytest

    from evaluator.errors import UnknownMachineError
    from evaluator.machines import list_machines, load_machine

    (tmp_path / "mine.yaml").write_text("name: Tiny\nkind: torus\ndims: [4, 4, 2]\nlink_bandwidth: 2.0e+9\n"
                                        "nodes_per_router: 1\n")
    (tmp_path / "other.yaml").write_text("name: BadBW\nkind: torus\ndims: [4, 4]\n")
    monkeypatch.setenv("EVALUATOR_MACHINE_PATH", str(tmp_path))
    assert load_machine("Tiny").name == "Tiny"
    with _pytest.raises(UnknownMachineError, match=r"unknown machine 'Nope'.*Left out, not loaded: .*other\.yaml.*"
                                                   r"link_bandwidth"):
        load_machine("Nope")
    with _pytest.raises(Exception, match="BadBW"):  # the whole list still names the broken file
        list_machines()


def test_a_finished_run_in_a_directory_it_cannot_write_is_read(tmp_path, capsys, monkeypatch):
    """The lock was taken before the finished dataset was looked for: a finished sweep in a read-only directory
    said "cannot write .../.lock ... No chunk had finished ... rerun the same command to resume"."""
    from evaluator.errors import StorageError
    from evaluator.sweep import store

    args = ["sweep", *T, "routing=dor", "traffic=all_to_all", "traffic.n_tasks=4,8", "sweep.name=ro",
            f"sweep.output_dir={tmp_path}"]
    assert cli.main(args) == 0

    def read_only(self):
        raise StorageError(f"cannot write {self.path}: Read-only file system.", "sweep.output_dir", str(tmp_path),
                           "a writable directory")

    monkeypatch.setattr(store.RunLock, "__enter__", read_only)
    capsys.readouterr()
    assert cli.main(args) == 0
    assert "has already finished; nothing to compute" in capsys.readouterr().err
    assert cli.main([*args[:-2], "traffic.n_tasks=4,16", "sweep.name=ro", f"sweep.output_dir={tmp_path}"]) == 2
    assert "Read-only file system" in capsys.readouterr().err  # (a run to compute: the refusal as before)


def test_plot_of_a_dataset_without_axes_names_it_not_x(tmp_path, capsys):
    assert cli.main(["eval", "topology=torus", "topology.dims=[4,4]", "routing=dor", "traffic=all_to_all",
                     "traffic.n_tasks=4", "placement=linear", f"output_dir={tmp_path / 'one'}"]) == 0
    (path,) = (tmp_path / "one").glob("*.nc")
    capsys.readouterr()
    assert cli.main(["plot", str(path)]) == 2
    err = capsys.readouterr().err
    assert "dataset = " in err and "a dataset with an axis to put on x" in err and "--x" not in err, err


def test_query_si_names_the_stored_unit_and_the_draws_hint_keeps_best(tmp_path, capsys):
    assert cli.main(["sweep", *T, "routing=dor", "traffic=random_permutation", "traffic.n_tasks=8",
                     "traffic.seed=range(0,3)", "sweep.name=s", f"sweep.output_dir={tmp_path}"]) == 0
    capsys.readouterr()
    assert cli.main(["query", "s", "--results", str(tmp_path), "--si"]) == 0
    assert "completion_time [s]" in capsys.readouterr().out
    assert cli.main(["query", "s", "--results", str(tmp_path), "--best", "throughput"]) == 0
    assert "evaluator query s --best throughput --draws traffic.seed" in capsys.readouterr().out
