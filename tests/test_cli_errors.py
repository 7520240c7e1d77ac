"""Bad input on every command: one line on stderr naming the field or file and the value, exit status 2.

(The file readers, generators and query inputs are in test_bad_input_corpus.py; sizes and hangs in
test_bad_sizes.py; sweep faults in test_faults.py.)
"""

from __future__ import annotations

import pytest

from evaluator import cli
from evaluator.errors import ConfigError

TINY = ["topology=torus", "topology.dims=[2,2]", "routing=dor", "traffic=all_to_all", "placement=linear",
        "save=false"]

CASES = [
    # (argv, texts the one line must contain)
    (["eval", "topology=hypercube"], ["topology", "hypercube", "dragonfly"]),
    (["eval", "routing=adaptive"], ["routing", "adaptive", "valiant"]),
    (["eval", "traffic=broadcast"], ["traffic", "broadcast", "stencil"]),
    (["eval", "placement=spiral"], ["placement", "spiral", "linear"]),
    (["eval", "topology.p=four"], ["topology.p", "four"]),
    (["eval", "topology.a=0"], ["topology.a", "0"]),
    (["eval", "topology.h=-1"], ["topology.h", "-1"]),
    (["eval", "topology.g=1"], ["topology.g", "1"]),
    (["eval", "topology.bandwidth_r=0"], ["topology.bandwidth_r", "0"]),
    (["eval", "topology.arrangement=spiral"], ["topology.arrangement", "spiral"]),
    (["eval", "traffic.beta=[8,8,3]"], ["3"]),
    (["eval", "traffic.alpha=[512,512]"], ["traffic.beta", "alpha"]),
    (["eval", "placement.gamma=[8,8,4]"], ["placement.gamma", "8, 8, 4"]),
    (["eval", "placement.group_order=zigzag"], ["placement.group_order", "zigzag"]),
    (["eval", "save=maybe"], ["save", "maybe"]),
    (["eval", *TINY[:-1], "topology.dims=[2,0]", "save=false"], ["topology.dims[1]", "0"]),
    (["eval", *TINY, "topology.wrap=[true,false,true]"], ["topology.wrap", "True, False, True"]),
    (["eval", *TINY, "routing.tie=negative"], ["routing.tie", "negative"]),
    (["eval", *TINY, "placement.tasks_per_node=0"], ["placement.tasks_per_node", "0"]),
    (["eval", *TINY, "placement.first_node=3"], ["placement.first_node", "3"]),
    (["eval", *TINY, "traffic.n_tasks=9"], ["placement.n_tasks", "9"]),
    (["eval", "topology=machine", "topology.name=Nope", "routing=dor_bgq", "placement=linear",
      "traffic=all_to_all", "save=false"], ["topology.name", "Nope", "Mira"]),
    (["eval", "topology=machine", "topology.partition=[9,1,1,1]", "routing=dor_bgq", "placement=linear",
      "traffic=all_to_all", "save=false"], ["topology.partition", "9"]),
    (["eval", "topology=machine", "topology.mode=inside", "routing=dor_bgq", "placement=linear",
      "traffic=all_to_all", "save=false"], ["topology.mode", "inside"]),
    (["eval", "topology=bgq", "topology.midplanes=[1,1,1]", "routing=dor_bgq", "placement=linear",
      "traffic=all_to_all", "save=false"], ["topology.midplanes", "1, 1, 1"]),
    (["eval", "topology=torus", "routing=minimal", "traffic=all_to_all", "placement=linear", "save=false"],
     ["routing.kind", "minimal", "dor"]),
    (["sweep", "sweeps=nope"], ["sweeps", "nope", "dragonfly_nne_placement"]),
    (["sweep", "sweep.format=parquet", "ray.enabled=false"], ["sweep.format", "parquet"]),
    (["sweep", "+sweep.axes.topology.q=[1,2]", "ray.enabled=false"], ["topology.q"]),
    (["sweep", "placement.gamma=[2,2,2]", "ray.enabled=false"], ["placement.gamma"]),
    (["query", "/nonexistent/results.nc"], ["/nonexistent/results.nc"]),
    (["plot", "/nonexistent/results.nc"], ["/nonexistent/results.nc"]),
    (["partitions", "Atlantis"], ["Atlantis", "Mira"]),
    (["partitions", "Mira", "--size", "1000"], ["1000", "512"]),
    (["bench", "--only", "everything"], ["--only", "everything", "small"]),
    (["optimize", "--tasks", "16", "--alpha", "16,16", "topology.p=x"], ["topology.p", "x"]),
    # optimize's own options, named as written, before the search (a routing Hydra could not find; a placement
    # that made every configuration infeasible was reported as a fault of --tasks)
    (["optimize", "--tasks", "16", "--alpha", "16,16,16", "--routings", "minimal,valiantt"],
     ["--routings = 'valiantt'", "an option of the routing group", "Did you mean 'valiant'?"]),
    (["optimize", "--tasks", "16", "--alpha", "16,16,16", "--placement", "alps"],
     ["--placement = 'alps'", "on a dragonfly. 'alps' needs a 3-D torus"]),
    (["eval", "--no-compilation-cache", "topology.a=0"], ["topology.a", "0"]),
    (["sweep", "placement.seed=interval(0,8)", "ray.enabled=false"], ["placement.seed", "interval(0,8)", "range("]),
    (["sweep", "traffic.beta=glob(*)", "ray.enabled=false"], ["traffic.beta", "glob(*)", "config group"]),
]


@pytest.mark.parametrize("argv,needles", CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_command_line_is_one_clear_line(argv, needles, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing is written into the repository
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 2, (rc, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert all(n in err for n in needles), (needles, err)


def test_unknown_command_and_debug_flag(capsys):
    assert cli.main(["evaluate-all"]) == 2
    assert "unknown command 'evaluate-all'" in capsys.readouterr().err
    with pytest.raises(ConfigError):  # --debug: the exception (and its traceback) instead of one line
        cli.main(["eval", "--debug", "topology.a=0"])


def test_options_may_sit_between_overrides(tmp_path, capsys):
    rc = cli.main(["eval", "topology=torus", "--show-config", "topology.dims=[2,2]"])
    out = capsys.readouterr().out
    assert rc == 0 and "dims:" in out and "- 2" in out


def test_console_command_exits_quickly_losing_nothing(tmp_path):
    """``python -m evaluator`` (the console command's :func:`evaluator.cli.run`) ends with ``os._exit`` after the
    exit handlers: the exit status, everything printed (through a pipe) and the dataset written all survive."""
    import subprocess
    import sys

    import xarray as xr

    def run(*argv):
        return subprocess.run([sys.executable, "-m", "evaluator", *argv], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)

    bad = run("frobnicate")
    assert bad.returncode == 2 and "unknown command 'frobnicate'" in bad.stderr
    usage = run("optimize")  # argparse's own usage error, through SystemExit
    assert usage.returncode == 2 and "the following arguments are required" in usage.stderr
    done = run("optimize", "--tasks", "8", "--alpha", "8,8,8", "--no-progress", "topology.p=2", "topology.a=4",
               "topology.h=2", f"sweep.output_dir={tmp_path}/results")
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.rstrip().splitlines()[-1]
    assert last.startswith("dataset: ")
    path = tmp_path / last.removeprefix("dataset: ")
    with xr.open_dataset(path if path.exists() else last.removeprefix("dataset: ")) as ds:
        assert int(ds.attrs["n_feasible"]) > 0
