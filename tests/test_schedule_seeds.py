"""Workload studies over several seeds (evaluator/sweep/schedule.py ``seeds``): a study of one seed answers for one
draw of its synthetic trace, mode draws and policies, and a queue's mean wait moves a lot with them
(docs/workload.md). ``seeds: K`` runs every point at ``seed .. seed + K - 1``; each seed's values are checked against
the same study run alone with that ``seed`` (without ``seeds``), the table's mean and range against NumPy's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from evaluator import cli
from evaluator.errors import ConfigError
from evaluator.sweep.schedule import load_study, run_study, study_points, study_table
from tests.helpers import once

SMOKE = yaml.safe_load((Path(__file__).parent.parent / "sweeps" / "workload" / "smoke.yaml").read_text())


def _study(tmp_path: Path, name: str, **keys) -> dict:
    study = dict(SMOKE, trace={"synthetic": 300, "load": 0.9}, machines={"16x64": [16, 64]}, **keys)
    f = tmp_path / f"{name}.yaml"
    f.write_text(yaml.safe_dump(study, sort_keys=False))
    return load_study(f)


def _run(tmp_path: Path, name: str, **keys) -> xr.Dataset:
    path = run_study(_study(tmp_path, name, **keys), use_ray=False, progress=False, out_dir=tmp_path / name)
    with xr.open_dataset(path) as ds:
        return ds.load()


@pytest.fixture(scope="module")
@once
def three(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("seeds")
    return tmp, _run(tmp, "three", seed=5, seeds=3)


def test_each_seed_is_the_study_run_with_that_seed(three):
    tmp, ds = three
    assert list(ds.seed.values) == [5, 6, 7] and ds["mean_wait"].dims == ("machine", "mix", "run", "seed")
    for i, s in enumerate((5, 6, 7)):
        alone = _run(tmp, f"alone{s}", seed=s)
        assert "seed" not in alone.dims
        for v in ("mean_wait", "p95_wait", "mean_utilisation", "mean_speedup", "wait_reduction"):
            np.testing.assert_array_equal(ds[v].isel(seed=i).values, alone[v].values, err_msg=f"{v}, seed {s}")
    assert len(set(ds["mean_wait"].sel(run="tdn").values.reshape(-1))) > 1  # the seeds differ


def test_the_table_gives_the_mean_and_range_over_the_seeds(three):
    _, ds = three
    text = study_table(ds)
    red = 100 * ds["wait_reduction"].sel(machine="16x64", mix="paper", run="rdn_speedup").values
    assert f"{red.mean():+.1f}% [{red.min():+.1f}%, {red.max():+.1f}%]" in text
    assert "(mean over the 3 seeds 5 .. 7: trace, mode draws and policies;" in text


def test_a_study_without_seeds_is_as_before_and_says_it_is_one_draw(tmp_path, capsys):
    study = _study(tmp_path, "one")
    assert "seeds" not in study and all(len(p) == 3 for p in study_points(study))
    f = tmp_path / "one.yaml"
    assert cli.main(["schedule", "--study", str(f), "--no-ray", "--no-progress", "--no-plot",
                     "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert ("seed 0: one draw of the trace (synthetic), the mode draws and the policies' choices, and a queue's mean "
            "wait moves a lot with them; add seeds: K to the study for the mean and range over K seeds") in out


def test_a_rerun_with_seeds_computes_nothing_again(three, tmp_path, monkeypatch):
    """The same study again returns its finished dataset (no point computed, no second file; it wrote a copy
    recomputed from its kept points until 2026-12-06, when the points directory went once the dataset was
    written)."""
    from evaluator.sweep import schedule as S

    tmp, _ = three
    before = sorted((tmp / "three").glob("*.nc"))
    monkeypatch.setattr(S, "_point", lambda *a: pytest.fail(f"point {a[1:]} computed again"))
    path = run_study(_study(tmp, "three", seed=5, seeds=3), use_ray=False, progress=False, out_dir=tmp / "three")
    assert [path] == before == sorted((tmp / "three").glob("*.nc"))
    with xr.open_dataset(path) as ds:
        assert int(ds.attrs["n_computed"]) == int(ds.attrs["n_points"]) == 2 * 2 * 3


@pytest.mark.parametrize("bad", [0, -1, 1.5, "many"])
def test_bad_seeds_are_refused_naming_the_key(bad, tmp_path):
    with pytest.raises(ConfigError, match="seeds"):
        _study(tmp_path, "bad", seeds=bad)


def test_a_study_too_large_is_refused_before_its_points_are_listed(tmp_path):
    """seeds: 10^11 would list 2 x 10^11 points (memory); refused naming seeds, the count and the limit."""
    with pytest.raises(ConfigError, match=r"seeds = 100000000000 is invalid: allowed is a study of at most "
                                          r"100,000 points\. 4 \(machine, mix, run\) points x 100,000,000,000 seeds"):
        _study(tmp_path, "huge", seeds=10**11)
