"""`evaluator study` (issue 24 item 5) and its bad input (issue 25, "Studies" and "Outputs"): every bad option,
study name and output gets one line naming the flag or name, the value and what is allowed, exit status 2, before
any work; nothing is written. The study itself is not run here (tests/test_rdn_study.py runs it on tiny machines).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator import cli
from evaluator.studies import rdn


@pytest.fixture
def no_compute(monkeypatch):
    """The study must not start: every case below is refused before it."""
    def refuse(*a, **k):
        raise AssertionError("the study was computed before its input was checked")
    monkeypatch.setattr(rdn, "allocation_mode_study", refuse)


def run(capsys, *args) -> tuple[int, str, str]:
    rc = cli.main(["study", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, args, *words):
    """Exit 2, one line on stderr naming each of ``words`` (the flag or name, the value, what is allowed)."""
    rc, out, err = run(capsys, *args)
    assert rc == 2, (args, out, err)
    assert err.count("\n") == 1 and err.startswith("evaluator study: error: "), err
    assert "internal error" not in err and "Traceback" not in err
    for w in words:
        assert w in err, (w, err)
    return err


# ------------------------------------------------------------------------------------------------ the command
def test_help_lists_the_studies(capsys):
    rc, out, err = run(capsys, "--help")
    assert rc == 0 and "rdn" in out and "evaluator study NAME" in out
    rc, out, err = run(capsys)  # no study: the usage, exit 2
    assert rc == 2 and "rdn" in err


def test_study_help(capsys):
    with pytest.raises(SystemExit) as exc:  # argparse's --help (the console command turns it into exit 0)
        cli.main(["study", "rdn", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: evaluator study rdn")
    for flag in ("--machine P,A,H,G", "--groups", "--out DIR|FILE.nc", "--speedup-out FILE.nc", "--baseline"):
        assert flag in out


def test_console_command_study_rdn_help():
    """The acceptance command, as a user types it (the console script's quick exit included)."""
    exe = Path(sys.executable).with_name("evaluator")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "from evaluator.cli import run; run()"]
    proc = subprocess.run([*cmd, "study", "rdn", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "--machine" in proc.stdout and proc.stderr == ""


@pytest.mark.parametrize("name", ["rdx", "RDN", "stencil", "rdn.py"])
def test_unknown_study_named(capsys, name):
    refused(capsys, [name, "--machine", "2,4,2,8"], "study", repr(name), "rdn")


def test_python_m_alias_goes_through_the_cli():
    """`python -m evaluator.studies` is `evaluator study`: one line and exit 2, no traceback."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.run([sys.executable, "-m", "evaluator.studies", "rdn", "--machine", "1,2,1,2"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--machine" in proc.stderr and "'1,2,1,2'" in proc.stderr


# ------------------------------------------------------------------------------------------------ --machine
@pytest.mark.parametrize("value", ["12,24,x,288", "2,4,2", "2,4,2,8,1", "", "DF(2,4,2,8", "2.0,4,2,8",
                                   "0,4,2,8", "2,0,2,8", "2,4,0,8", "2,4,2,1", "2,4,2,10", "-2,4,2,8"])
def test_bad_machine(capsys, no_compute, value):
    refused(capsys, ["rdn", f"--machine={value}"], "--machine", repr(value), "P,A,H,G", "A*H+1")


@pytest.mark.parametrize("value", ["1,2,1,2", "2,1,1,2", "DF(1,2,1,2)"])
def test_machine_the_all_to_all_cannot_use(capsys, no_compute, value):
    """Two nodes per group: GRAP packs two groups' all-to-all shares into one (an AssertionError before)."""
    refused(capsys, ["rdn", "--machine", value], "--machine", repr(value), "all_to_all", "A*P = 2")


def test_machine_grammar():
    m = rdn.RdnMachine(2, 4, 2, 8, bandwidth=12.0e9)
    for text in ("2,4,2,8", "DF(2,4,2,8)", " df( 2, 4, 2, 8 ) ", "+2,4,2,8"):
        assert rdn.parse_machine(text) == m
    assert rdn.parse_machine("2,4,2,9").g == 9  # A*H+1 = 9: every pair of groups joined by one link
    rdn.check_machine(rdn.parse_machine("1,2,1,2"), ("stencil", "neighbouring"))  # fine without all_to_all


# ------------------------------------------------------------------------------------------------ --groups
@pytest.mark.parametrize("value", ["0,2", "1", "2,-4", "abc", "2,,4", "", "2.5", "4;8"])
def test_bad_groups(capsys, no_compute, value):
    refused(capsys, ["rdn", "--machine", "2,4,2,8", f"--groups={value}"], "--groups", repr(value), "integers >= 2")


# ------------------------------------------------------------------------------------------------ other options
@pytest.mark.parametrize("flag,value,allowed", [
    ("--patterns", "stencil,stencil", "each once"),
    ("--patterns", "stencil,alltoall", "neighbouring"),
    ("--patterns", "", "stencil"),
    ("--bounds", "ugal", "adaptive,optimal"),
    ("--bounds", "adaptive,none", "or none"),
    ("--background", "1", "[0, 1)"),
    ("--background", "-0.1", "[0, 1)"),
    ("--background", "nan", "[0, 1)"),
    ("--background", "lots", "[0, 1)"),
    ("--seed", "-1", ">= 0"),
    ("--seed", "1.5", ">= 0"),
    ("--max-lp-nnz", "0", ">= 1"),
    ("--bandwidth", "0", "> 0"),
    ("--bandwidth", "inf", "> 0"),
])
def test_bad_option(capsys, no_compute, flag, value, allowed):
    refused(capsys, ["rdn", "--machine", "2,4,2,8", f"{flag}={value}"], flag, repr(value), allowed)


def test_argparse_errors_are_one_line(capsys, no_compute):
    refused(capsys, ["rdn", "--baseline", "fastest"], "--baseline", "fastest", "oblivious")
    refused(capsys, ["rdn", "--machne", "2,4,2,8"], "--machne")
    refused(capsys, ["rdn", "--groups"], "--groups")


def test_baseline_bound_must_be_computed(capsys, no_compute, tmp_path):
    refused(capsys, ["rdn", "--machine", "2,4,2,8", "--bounds", "none", "--speedup-out", str(tmp_path / "s.nc")],
            "--baseline", "'adaptive'", "--bounds adaptive")


# ------------------------------------------------------------------------------------------------ outputs
def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def blocker(tmp_path) -> Path:
    f = tmp_path / "file"
    f.write_text("not a directory")
    return f


@pytest.mark.parametrize("make", [
    lambda b: ["--out", str(b / "results")],                       # a directory below a file
    lambda b: ["--out", str(b / "rdn.nc")],                        # a dataset file below a file
    lambda b: ["--out", str(b)],                                   # a file where the directory should be
    lambda b: ["--speedup-out", str(b / "speedup.nc")],
    lambda b: ["--speedup-out", str(b.parent)],                    # a directory, not a .nc file
    lambda b: ["--speedup-out", str(b.parent / "speedup.txt")],
    lambda b: ["--out", str(b.parent / "x.nc"), "--speedup-out", str(b / "deep" / "s.nc")],
])
def test_unwritable_outputs_refused_before_computing(capsys, no_compute, blocker, make):
    args = make(blocker)
    before = _tree(blocker.parent)
    refused(capsys, ["rdn", "--machine", "2,4,2,8", *args], args[-2], repr(args[-1]))
    assert _tree(blocker.parent) == before and blocker.read_text() == "not a directory"  # nothing written


def test_default_output_check_leaves_nothing(capsys, no_compute, tmp_path, monkeypatch):
    """The default --out (results/rdn) is probed, not made, before a refusal."""
    monkeypatch.chdir(tmp_path)
    refused(capsys, ["rdn", "--machine", "2,4,2,8", "--groups", "0"], "--groups")
    assert _tree(tmp_path) == []


def test_output_paths():
    m = rdn.RdnMachine(2, 4, 2, 8)
    assert rdn.output_paths("a/b.nc", m, "T") == (Path("a/b.nc"), Path("a/b.png"))
    assert rdn.output_paths("res", m, "20261126T010203Z") == (Path("res/rdn-2-4-2-8-20261126T010203Z.nc"),
                                                              Path("res/rdn-2-4-2-8-20261126T010203Z.png"))


def test_rdn_says_which_job_sizes_it_leaves_out(tmp_path, capsys):
    """--groups sizes above the machine's group count are left out (as --help says); the run says which."""
    rc = cli.main(["study", "rdn", "--machine", "2,4,2,9", "--groups", "2,64,4,128", "--patterns", "stencil",
                   "--seeds", "1", "--bounds", "none", "--adaptive", "none", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.splitlines()[0] == ("job sizes above the machine's 9 groups left out: 64, 128 (the whole machine, "
                                   "9 groups, is always a size)"), out
    assert [ln.split()[1] for ln in out.splitlines()[1:4]] == ["2", "4", "9"]  # the sizes run, in order
