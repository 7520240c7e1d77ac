"""Defects an audit of the ``latest`` links of results directories found (2026-12-06), each test failing on the
code before it: every command that saves a dataset but ``evaluator eval`` (``map``, ``schedule``, ``schedule
--study``, ``tiles``, ``partitions``, ``study buyer``/``rdn``, ``sweep``) took over the ``latest`` link of another
command's directory (a sweep's, an eval's, a study's: the next ``evaluator query DIR`` read the newcomer), and left
a ``latest`` of the user's own as it is without a word. Now each calls :func:`evaluator.runs.check_latest_owner`
before computing, with its own kinds of dataset; a rerun into its own directory still moves ``latest``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from evaluator import cli, io
from evaluator.runs import dataset_kind_at, resolve

T = ["topology=torus", "topology.dims=[4,4]", "placement=linear", "routing=dor", "traffic=all_to_all"]
SMOKE = yaml.safe_load((Path(__file__).parent.parent / "sweeps" / "workload" / "smoke.yaml").read_text())
OWN_NOTE = "is a file of your own, not the link evaluator writes: it is left as it is and will not point at"


def _fake(d: Path, attrs: dict, dims=("x",), var: str = "v") -> Path:
    """A dataset with ``attrs`` (what :func:`evaluator.runs.dataset_kind` reads) written as a command writes one,
    ``latest`` pointing at it."""
    ds = xr.Dataset({var: (dims, np.ones((1,) * len(dims)))}, attrs=attrs)
    return io.write_dataset(ds, d, identity=repr(sorted(attrs.items())) + repr(dims))


def _sweep_dir(d: Path, name: str = "sw") -> Path:
    return _fake(d, {"sweep": name, "axes_json": "[]", "n_points": 1})


def _notes(d: Path) -> Path:
    """A directory whose ``latest`` is a file of the user's own."""
    d.mkdir(parents=True)
    (d / "latest").write_text("my notes\n")
    return d


def _refused(capsys, option: str, value, kind: str, d: Path) -> str:
    err = capsys.readouterr().err
    assert f"{option} = '{value}' is invalid" in err and f"the dataset of {kind}" in err, err
    assert f"take {d / 'latest'} over" in err and "Nothing was computed." in err, err
    return err


def _fail(what: str):
    return lambda *a, **k: pytest.fail(f"{what} before the refusal")


def _latest(d: Path) -> Path:
    return (d / "latest").resolve()


# ------------------------------------------------------------------------------------------------------ map
MAP = ["map", *T, "traffic.n_tasks=8", "--iterations", "1", "--candidates", "64", "--no-progress"]


def test_map_into_a_sweeps_directory_is_refused_before_searching(tmp_path, capsys, monkeypatch):
    """Before: ``evaluator map ... output_dir=results/sw`` took the sweep's ``latest`` over."""
    import evaluator.cli.mapping as M

    monkeypatch.setattr(M, "search_mapping", _fail("searched"))
    monkeypatch.setattr(M, "_build", _fail("built"))
    sweep = _sweep_dir(tmp_path / "sw")
    assert cli.main([*MAP, f"output_dir={tmp_path / 'sw'}"]) == 2
    _refused(capsys, "output_dir", tmp_path / "sw", "evaluator sweep (sweep sw)", tmp_path / "sw")
    assert _latest(tmp_path / "sw") == sweep.resolve() and len(list((tmp_path / "sw").glob("*.nc"))) == 1


def test_map_into_its_own_directory_moves_latest_and_warns_at_a_users_latest(tmp_path, capsys):
    own = tmp_path / "maps"
    earlier = _fake(own, {"kind": "mapping", "config_yaml": "x"})
    assert cli.main([*MAP, f"output_dir={own}"]) == 0, capsys.readouterr().err[-2000:]
    out = capsys.readouterr()
    new = Path(out.out.split("dataset: ")[-1].split()[0])
    assert new != earlier and _latest(own) == new.resolve() and "warning" not in out.err
    notes = _notes(tmp_path / "notes")
    assert cli.main([*MAP, f"output_dir={notes}"]) == 0
    err = capsys.readouterr().err
    assert f"evaluator map: warning: output_dir = '{notes}': {notes / 'latest'} {OWN_NOTE} this mapping's" in err, err
    assert (notes / "latest").read_text() == "my notes\n" and len(list(notes.glob("*.nc"))) == 1


# ------------------------------------------------------------------------------------------------- schedule
SCHED = ["schedule", "--synthetic", "50", "--machine", "2,4,2,8", "--no-plot", "--no-progress"]


def test_schedule_into_a_sweeps_directory_is_refused_before_simulating(tmp_path, capsys, monkeypatch):
    import evaluator.workload.run as R

    monkeypatch.setattr(R, "run_schedule", _fail("simulated"))
    sweep = _sweep_dir(tmp_path / "sw")
    assert cli.main([*SCHED, "--out", str(tmp_path / "sw")]) == 2
    _refused(capsys, "--out", tmp_path / "sw", "evaluator sweep (sweep sw)", tmp_path / "sw")
    assert resolve(tmp_path / "sw") == sweep


def test_schedule_runs_share_their_directory_and_warn_at_a_users_latest(tmp_path, capsys):
    own = tmp_path / "schedule"
    earlier = _fake(own, {}, dims=("run", "job"))  # a schedule's dataset: dims run x job
    assert cli.main([*SCHED, "--out", str(own)]) == 0
    out = capsys.readouterr()
    new = Path(out.out.splitlines()[-1])
    assert new != earlier and _latest(own) == new.resolve() and "warning" not in out.err
    notes = _notes(tmp_path / "notes")
    assert cli.main([*SCHED, "--out", str(notes)]) == 0
    err = capsys.readouterr().err
    assert f"evaluator schedule: warning: --out = '{notes}': {notes / 'latest'} {OWN_NOTE} this schedule's" in err
    assert (notes / "latest").read_text() == "my notes\n"


# ---------------------------------------------------------------------------------------- schedule --study
def _study_file(tmp_path: Path, name: str = "tiny") -> Path:
    study = dict(SMOKE, name=name, trace={"synthetic": 200, "load": 0.9}, machines={"16x64": [16, 64]},
                 mode_mixes={"paper": SMOKE["mode_mixes"]["paper"]})
    f = tmp_path / f"{name}.yaml"
    f.write_text(yaml.safe_dump(study, sort_keys=False))
    return f


def _study(f: Path, out: Path) -> int:
    return cli.main(["schedule", "--study", str(f), "--no-ray", "--no-progress", "--no-plot", "--out", str(out)])


def test_a_schedule_study_into_a_sweeps_or_another_studys_directory_is_refused(tmp_path, capsys, monkeypatch):
    import evaluator.sweep.schedule as S

    monkeypatch.setattr(S, "_compute", _fail("computed"))
    sweep = _sweep_dir(tmp_path / "sw")
    assert _study(_study_file(tmp_path), tmp_path / "sw") == 2
    _refused(capsys, "--out", tmp_path / "sw", "evaluator sweep (sweep sw)", tmp_path / "sw")
    assert resolve(tmp_path / "sw") == sweep and not list((tmp_path / "sw").glob(".*.points"))
    other = _fake(tmp_path / "other", {"study": "other", "study_id": "other-0123456789ab"}, ("machine", "mix", "run"))
    assert _study(_study_file(tmp_path), tmp_path / "other") == 2
    _refused(capsys, "--out", tmp_path / "other", "evaluator schedule --study (workload study other)",
             tmp_path / "other")
    assert resolve(tmp_path / "other") == other


def test_a_schedule_study_run_again_in_its_directory_and_warned_at_a_users_latest(tmp_path, capsys):
    out = tmp_path / "tiny"
    earlier = _fake(out, {"study": "tiny", "study_id": "tiny-0123456789ab"}, ("machine", "mix", "run"))
    assert _study(_study_file(tmp_path), out) == 0  # another run of the same study (its edited file): its own
    said = capsys.readouterr()
    new = Path(said.out.splitlines()[-1])
    assert new != earlier and _latest(out) == new.resolve() and "warning" not in said.err
    notes = _notes(tmp_path / "notes")
    assert _study(_study_file(tmp_path), notes) == 0
    err = capsys.readouterr().err
    assert f"evaluator schedule --study: warning: --out = '{notes}': {notes / 'latest'} {OWN_NOTE} this study's" in err


# ---------------------------------------------------------------------------------------------------- tiles
def _tiles(tmp_path: Path, out: Path) -> int:
    m = tmp_path / "halfy.yaml"
    m.write_text("name: HalfY\nkind: torus\ndims: [4, 4, 4]\nlink_bandwidth: [2.0e+9, 1.0e+9, 2.0e+9]\n"
                 "nodes_per_router: 2\ninjection_bandwidth: 1.0e+12\nrouting_order: as_given\n")
    return cli.main(["tiles", "--grid", "24,24,24", "--nodes", "64", "--tasks-per-node", "1", "--machine", str(m),
                     "--decomposition", "4,4,4", "--no-plot", "--out", str(out)])


def test_tiles_into_an_evals_directory_is_refused_before_advising(tmp_path, capsys, monkeypatch):
    import evaluator.tiles as TL

    monkeypatch.setattr(TL, "advise", _fail("advised"))
    ev = _fake(tmp_path / "eval", {"config_yaml": "x", "topology": "torus"})
    assert _tiles(tmp_path, tmp_path / "eval") == 2
    _refused(capsys, "--out", tmp_path / "eval", "evaluator eval", tmp_path / "eval")
    assert resolve(tmp_path / "eval") == ev


def test_tiles_into_its_own_directory_moves_latest_and_warns_at_a_users_latest(tmp_path, capsys):
    own = tmp_path / "tiles"
    earlier = _fake(own, {"title": "evaluator tiles: halo-exchange tile advisor"})
    assert dataset_kind_at(earlier) == "evaluator tiles"
    assert _tiles(tmp_path, own) == 0
    out = capsys.readouterr()
    new = Path(out.out.split("dataset: ")[-1].split()[0])
    assert new != earlier and _latest(own) == new.resolve() and dataset_kind_at(new) == "evaluator tiles"
    notes = _notes(tmp_path / "notes")
    assert _tiles(tmp_path, notes) == 0
    err = capsys.readouterr().err
    assert f"evaluator tiles: warning: --out = '{notes}': {notes / 'latest'} {OWN_NOTE} this advice's" in err, err


# ----------------------------------------------------------------------------------------------- partitions
def test_partitions_into_a_sweeps_directory_of_its_name_is_refused_before_analysing(tmp_path, capsys, monkeypatch):
    """``--out DIR`` writes ``DIR/mira/``: a sweep named mira under DIR lost its ``latest``; with ``--slabs`` and
    ``--size`` the sizes' directory is checked before the slabs are computed."""
    import evaluator.partitions as P

    monkeypatch.setattr(P, "analyse_machine", _fail("analysed"))
    monkeypatch.setattr(P, "slab_bisections", _fail("analysed"))
    sweep = _sweep_dir(tmp_path / "mira", "mira")
    assert cli.main(["partitions", "Mira", "--size", "2048", "--no-plot", "--out", str(tmp_path)]) == 2
    _refused(capsys, "--out", tmp_path, "evaluator sweep (sweep mira)", tmp_path / "mira")
    assert cli.main(["partitions", "Mira", "--slabs", "--size", "2048", "--no-plot", "--out", str(tmp_path)]) == 2
    _refused(capsys, "--out", tmp_path, "evaluator sweep (sweep mira)", tmp_path / "mira")
    assert resolve(tmp_path / "mira") == sweep and not (tmp_path / "mira_slabs").exists()


def test_partitions_again_moves_latest_and_warns_at_a_users_latest(tmp_path, capsys):
    out = tmp_path / "partitions"
    paths = []
    for size in ("2048", "4096"):
        assert cli.main(["partitions", "Mira", "--size", size, "--no-plot", "--out", str(out)]) == 0
        said = capsys.readouterr()
        paths.append(Path(said.out.split("wrote ")[-1].split()[0]))
        assert "warning" not in said.err
    assert paths[0] != paths[1] and _latest(out / "mira") == paths[1].resolve()
    assert dataset_kind_at(paths[1]) == "evaluator partitions (machine Mira)"
    _notes(tmp_path / "notes" / "mira")
    assert cli.main(["partitions", "Mira", "--size", "2048", "--no-plot", "--out", str(tmp_path / "notes")]) == 0
    err = capsys.readouterr().err
    assert (f"evaluator partitions: warning: --out = '{tmp_path / 'notes'}': {tmp_path / 'notes' / 'mira' / 'latest'} "
            f"{OWN_NOTE} this analysis's") in err, err


# ---------------------------------------------------------------------------------------------------- study
BUYER = ["study", "buyer", "--nodes", "32", "--seeds", "1", "--workloads", "permutation"]


def test_a_study_into_a_sweeps_directory_is_refused_before_computing(tmp_path, capsys, monkeypatch):
    from evaluator.studies import buyer, rdn

    monkeypatch.setattr(buyer, "buyer_study", _fail("computed"))
    monkeypatch.setattr(rdn, "allocation_mode_study", _fail("computed"))
    sweep = _sweep_dir(tmp_path / "sw")
    assert cli.main([*BUYER, "--out", str(tmp_path / "sw")]) == 2
    _refused(capsys, "--out", tmp_path / "sw", "evaluator sweep (sweep sw)", tmp_path / "sw")
    # rdn's --out FILE.nc: its directory's latest
    assert cli.main(["study", "rdn", "--machine", "2,4,2,4", "--out", str(tmp_path / "sw" / "r.nc")]) == 2
    _refused(capsys, "--out", tmp_path / "sw" / "r.nc", "evaluator sweep (sweep sw)", tmp_path / "sw")
    assert resolve(tmp_path / "sw") == sweep and not list((tmp_path / "sw").glob("*.png"))


def test_a_study_again_in_its_directory_and_warned_at_a_users_latest(tmp_path, capsys, monkeypatch):
    own = tmp_path / "buyer"
    earlier = _fake(own, {"study": "buyer", "equal": "cost"})
    assert cli.main([*BUYER, "--out", str(own)]) == 0
    said = capsys.readouterr()
    new = Path(said.out.split("dataset: ")[-1].split()[0])
    assert new != earlier and _latest(own) == new.resolve() and "warning" not in said.err
    from evaluator.errors import ConfigError
    from evaluator.studies import rdn as R

    def reached(*a, **k):  # the study got past its output checks to its computation (stubbed: it takes minutes)
        raise ConfigError("computation", "reached", "-")

    monkeypatch.setattr(R, "allocation_mode_study", reached)
    rdn = tmp_path / "rdn"  # rdn's directory: its runs of any machine and the speedup tables beside them
    table = _fake(rdn, {"rdn_routing": "minimal", "machine": "DF(2,4,2,4)", "baseline": "adaptive"}, ("mode", "groups"),
                  var="speedup")
    assert dataset_kind_at(table).startswith("evaluator study rdn --speedup-out")
    assert cli.main(["study", "rdn", "--machine", "2,4,2,4", "--out", str(rdn)]) == 2
    assert "computation = 'reached'" in capsys.readouterr().err
    notes = _notes(tmp_path / "notes")
    assert cli.main(["study", "rdn", "--machine", "2,4,2,4", "--out", str(notes / "r.nc")]) == 2
    err = capsys.readouterr().err
    assert (f"evaluator study rdn: warning: --out = '{notes / 'r.nc'}': {notes / 'latest'} {OWN_NOTE} this "
            "study's") in err, err


# ---------------------------------------------------------------------------------------------------- sweep
SWEEP = ["sweep", *T, "ray.enabled=false", "--no-progress"]


def test_a_sweep_named_after_an_evals_directory_is_refused_before_computing(tmp_path, capsys, monkeypatch):
    """Before: ``evaluator sweep ... sweep.name=eval`` took ``results/eval/latest`` (an eval's) over."""
    import evaluator.sweep.driver as D

    monkeypatch.setattr(D, "_run_locked", _fail("computed"))
    ev = _fake(tmp_path / "eval", {"config_yaml": "x", "topology": "torus"})
    assert cli.main([*SWEEP, "traffic.n_tasks=8,16", "sweep.name=eval", f"sweep.output_dir={tmp_path}"]) == 2
    _refused(capsys, "sweep.name", "eval", "evaluator eval", tmp_path / "eval")
    other = _sweep_dir(tmp_path / "sw", "other")  # runs of another sweep (its directory renamed sw)
    assert cli.main([*SWEEP, "traffic.n_tasks=8,16", "sweep.name=sw", f"sweep.output_dir={tmp_path}"]) == 2
    _refused(capsys, "sweep.name", "sw", "evaluator sweep (sweep other)", tmp_path / "sw")
    assert resolve(tmp_path / "eval") == ev and resolve(tmp_path / "sw") == other
    assert not list(tmp_path.glob("**/.*.chunks"))


def test_a_sweep_run_again_in_its_directory_moves_latest_and_warns_at_a_users_latest(tmp_path, capsys):
    paths = []
    for n in ("8,16", "4,8"):  # the same sweep, another config: its second run, now its latest
        assert cli.main([*SWEEP, f"traffic.n_tasks={n}", "sweep.name=sw", f"sweep.output_dir={tmp_path}"]) == 0
        said = capsys.readouterr()
        paths.append(Path(said.out.split("dataset: ")[-1].split()[0]))
        assert "warning" not in said.err
    assert paths[0] != paths[1] and _latest(tmp_path / "sw") == paths[1].resolve()
    _notes(tmp_path / "notes")
    assert cli.main([*SWEEP, "traffic.n_tasks=4,8", "sweep.name=notes", f"sweep.output_dir={tmp_path}"]) == 0
    err = capsys.readouterr().err
    assert (f"evaluator sweep: warning: sweep.name = 'notes': {tmp_path / 'notes' / 'latest'} {OWN_NOTE} this "
            "sweep's") in err, err


def test_a_directory_holding_a_users_own_netcdf_file_is_not_refused(tmp_path):
    """A dataset no evaluator command wrote (the user's own netCDF file in the directory given) is no study of ours
    to lose: the command goes ahead (check_latest_owner lets an unknown kind through)."""
    import xarray as xr

    from evaluator.runs import check_latest_owner, dataset_kind_at

    d = tmp_path / "mine"
    d.mkdir()
    xr.Dataset({"x": ("i", [1.0, 2.0])}, attrs={"title": "my measurements"}).to_netcdf(d / "20250101T000000Z-mine.nc",
                                                                                        engine="h5netcdf")
    assert dataset_kind_at(d / "20250101T000000Z-mine.nc") == ""
    check_latest_owner(d, "evaluator eval", "output_dir", own="evaluator eval", expected="-", new="-", taken_by="-",
                       instead="-", remedy="-")  # no ConfigError
