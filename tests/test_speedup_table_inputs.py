"""Speedup tables given wrong: a table without some of the modes the workload's jobs run in names every missing
mode before any simulation runs; ``evaluator.studies.speedup_table(study=...)`` refuses what is not a study."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from evaluator.errors import ConfigError, ConfigTypeError
from evaluator.workload import WorkloadModel, speedup_table, synthetic_trace
from evaluator.workload import run as run_mod
from evaluator.workload.run import RunSpec, run_schedule


def test_a_table_without_the_mix_s_modes_names_every_missing_one(monkeypatch):
    # 200 jobs on 16 groups of 64 nodes, the paper's mix: the jobs run in all four modes; the table has one.
    # It named one missing mode ('custom'), after the baseline run had been simulated.
    calls = []
    monkeypatch.setattr(run_mod, "simulate", lambda *a, **k: calls.append(1) or pytest.fail("simulated"))
    trace = synthetic_trace(200, 16 * 64, seed=1)
    table = speedup_table({"adaptive": {2: 1.2, 16: 1.0}}, machine=(16, 64))
    with pytest.raises(ConfigError) as e:
        run_schedule(trace, [RunSpec("slurm_round_robin"), RunSpec("grap", table)], 16, 64,
                     model=WorkloadModel(mode_lo=64, mode_hi=1024))
    msg = str(e.value)
    assert e.value.field == "speedup_table.mode" and e.value.value == ["custom", "custom_balance", "minimal_balance"]
    assert "the table (in memory) has ['adaptive']" in msg
    for mode in ("custom (", "custom_balance (", "minimal_balance ("):
        assert mode in msg, msg
    assert "workload.mode_mix = {'minimal_balance': 0.4, 'adaptive': 0.4, 'custom_balance': 0.1, 'custom': 0.1}" \
        in msg and "workload.default_mode = 'minimal_balance'" in msg
    assert calls == []  # refused before the first run


@pytest.mark.parametrize("study", [3, "study.nc", [1, 2]])
def test_rdn_speedup_table_refuses_a_study_that_is_no_dataset(study):
    from evaluator.studies import speedup_table as rdn_speedup_table

    with pytest.raises(ConfigTypeError) as e:  # was AttributeError: 'int' object has no attribute 'pattern'
        rdn_speedup_table(study=study)
    assert e.value.field == "study" and "allocation_mode_study" in str(e.value)


def test_rdn_speedup_table_names_what_a_study_lacks():
    from evaluator.studies import speedup_table as rdn_speedup_table

    coords = {"pattern": ["stencil", "all_to_all"], "groups": [2, 4]}
    gains = {v: (("pattern", "groups"), np.full((2, 2), 1.2)) for v in ("gain_adaptive", "gain_adaptive_no_bg")}
    with pytest.raises(ConfigError) as e:
        rdn_speedup_table(study=xr.Dataset({"gain_adaptive": gains["gain_adaptive"]}, coords=coords))
    assert e.value.field == "study" and "['gain_adaptive_no_bg']" in str(e.value)
    with pytest.raises(ConfigError, match="gain_oblivious"):
        rdn_speedup_table(study=xr.Dataset(gains, coords=coords), baseline="oblivious")
    table = rdn_speedup_table(study=xr.Dataset(gains, coords=coords))  # a study with what it needs
    assert list(table["mode"].values) == ["minimal_balance", "custom_balance", "adaptive"]
