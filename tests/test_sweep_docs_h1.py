"""docs/sweeps.md runs as written: every ``evaluator sweep`` command of its shell blocks is run to the end
(``ray.enabled=false``), but three slower ones that are planned (composed, axes expanded, every key and value
checked against the schemas, the routings against the topology; the BG/Q one runs shrunk in
tests/test_sweep_compose.py); its study files (the YAML blocks with a ``# file: ~/studies/...`` line) are written
to a directory outside the checkout and run from there."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import xarray as xr

from evaluator import cli, config
from evaluator.errors import ConfigError
from evaluator.sweep import plan_sweep

DOC = Path(__file__).resolve().parent.parent / "docs" / "sweeps.md"
TEXT = DOC.read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", TEXT, flags=re.S)
COMMANDS = [line.strip() for lang, body in BLOCKS if lang == "sh" for line in body.splitlines()
            if line.strip().startswith("evaluator sweep")]
FILES = {m.group(1): body for lang, body in BLOCKS if lang == "yaml"
         for m in [re.search(r"^# file: ~/studies/(\S+)", body, flags=re.M)] if m}
NO_RAY = ["ray.enabled=false", "--no-progress"]
PLAN_ONLY = ("topology=bgq", "glob(kshortest_k*)", "range(5e9,2e10,5e9)")
"""Commands (by a part of their text) planned only (5-12 s each to the end on 2 cores); the others are run."""


def _args(command: str, studies: Path) -> tuple[list[str], str | None]:
    """``(overrides, --config-dir)`` of a documented command, ``~/studies`` being ``studies``."""
    words = shlex.split(command.replace("~/studies", str(studies)), comments=True)[2:]
    overrides, config_dir = [], None
    it = iter(words)
    for w in it:
        if w in ("--config-dir", "-cd"):
            config_dir = next(it)
        elif w.startswith("--config-dir="):
            config_dir = w.split("=", 1)[1]
        else:
            overrides.append(w)
    return overrides, config_dir


@pytest.fixture
def studies(tmp_path, monkeypatch):
    d = tmp_path / "studies"
    for name, body in FILES.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(body)
    monkeypatch.chdir(tmp_path)
    return d


def test_the_doc_has_the_examples_it_promises():
    assert len(COMMANDS) >= 18 and set(FILES) == {"labels.yaml", "stencil_study.yaml", "routing/my_dor.yaml"}
    for generator in ("range", "divisors", "factorizations", "zip", "product", "label", "choice(", "glob(",
                      "sort(", "--config-dir", "sweeps=~/studies/stencil_study.yaml"):
        assert any(generator in c for c in COMMANDS), generator
    for slow in PLAN_ONLY:
        assert sum(slow in c for c in COMMANDS) == 1, slow


@pytest.mark.parametrize("command", COMMANDS, ids=[f"{i:02d}" for i in range(len(COMMANDS))])
def test_every_documented_command_runs(command, studies, capsys):
    overrides, config_dir = _args(command, studies)
    if not any(slow in command for slow in PLAN_ONLY):
        argv = ["sweep", *overrides, *NO_RAY] + (["--config-dir", config_dir] if config_dir else [])
        rc = cli.main(argv)
        err = capsys.readouterr().err
        if "topology.p=0" in command:  # the documented empty sweep: exit 2, the reasons counted, the dataset kept
            assert rc == 2 and "0 feasible of 2 points: 2 x topology.p" in err, err
        else:
            assert rc == 0, err
        return
    p = plan_sweep(config.compose_sweep(overrides, config_dir=config_dir))
    assert p.n_points >= 1


def test_the_documented_study_file_runs_from_outside_the_checkout(studies, capsys):
    p = plan_sweep(config.compose_sweep(["sweeps=stencil_study"], config_dir=str(studies)))
    assert p.name == "stencil_study" and p.bases[()].routing.order == [1, 0]
    assert p.out_dir == Path("results") / "stencil_study"


def test_the_documented_labels(studies):
    p = plan_sweep(config.compose_sweep(["sweeps=labels"], config_dir=str(studies)))
    assert p.name == "labels"
    assert [a.labels for a in p.axes] == [("n_tasks=8 seed=1", "n_tasks=16 seed=2"), ("small", "large"),
                                          ("1 per node from 0", "1 per node from 8")]
    for command, labels in [("label:[near,far]", ("near", "far")),
                            ("from node {placement.first_node}", ("from node 0", "from node 4"))]:
        overrides, _ = _args(next(c for c in COMMANDS if command in c), studies)
        assert plan_sweep(config.compose_sweep(overrides)).axes[-1].labels == labels


@pytest.mark.parametrize("overrides,needle", [
    (["sweeps=dragonfly_nne_placement", "placement.gamma=[2,2,2]"], "conflicts with the sweep axis"),
    (["topology=torus", "topology.dims=[4,4]", "traffic=all_to_all", "placement=linear", "routing=dor",
      "routing=dor,kshortest"], "conflicts with the sweep axis"),
    (["routing=dor,minimal", "placement.seed=0,1"], "serves the dragonfly topology"),
    (["topology=torus", "topology.dims=[8,4]", "routing=dor", "traffic=random_pairs", "traffic.n_tasks=8",
      "placement=subprism", "placement.task_grid=[2,4]", "background.fraction=0,0.1"], "one job"),
    (["topology.p=8"], "evaluator eval topology.p=8"),
])
def test_the_documented_refusals(overrides, needle):
    with pytest.raises(ConfigError) as e:
        plan_sweep(config.compose_sweep(overrides))
    assert needle in str(e.value), str(e.value)


def test_the_documented_empty_sweep_dataset_is_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["sweep", "topology.p=0", "routing=minimal,valiant", *NO_RAY]) == 2
    (written,) = (tmp_path / "results" / "sweep").glob("*.nc")
    with xr.open_dataset(written) as ds:
        assert set(map(str, ds.reason.values.ravel())) == {str(ds.reason.values.ravel()[0])} and ds.reason.size == 2
