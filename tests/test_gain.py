"""``evaluator.query.gain`` and ``evaluator plot --relative-to``: the gain over one label of an axis."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from evaluator import cli
from evaluator.errors import ConfigError
from evaluator.query import gain
from tests.helpers import TOL


def _ds():
    ct = np.array([[8.0, 4.0, 16.0], [10.0, 5.0, 2.0]])  # [size, routing]
    feasible = np.array([[True, True, True], [True, False, True]])
    coords = {"size": ["512", "1024"], "routing": ["dor", "k4", "lp"]}
    return xr.Dataset({"completion_time": (("size", "routing"), ct, {"units": "s"}),
                       "throughput": (("size", "routing"), 1.0 / ct, {"units": "B/s"}),
                       "feasible": (("size", "routing"), feasible)}, coords=coords)


def test_gain_is_the_ratio_to_the_reference_in_the_better_direction():
    ds = _ds()
    g = gain(ds, "completion_time", "routing", "dor")
    want = np.array([[1.0, 2.0, 0.5], [1.0, np.nan, 5.0]])  # by hand: 8/8, 8/4, 8/16; 10/10, infeasible, 10/2
    np.testing.assert_allclose(g.transpose("size", "routing").values, want, rtol=TOL["rel"])
    # larger-is-better metrics divide the other way: the same gains
    t = gain(ds, "throughput", "routing", "dor")
    np.testing.assert_allclose(t.transpose("size", "routing").values, want, rtol=TOL["rel"])


def test_bad_reference_and_plot(tmp_path, capsys):
    ds = _ds()
    with pytest.raises(ConfigError) as e:
        gain(ds, "completion_time", "routing", "valiant")
    assert "relative_to.routing" in str(e.value) and "'dor'" in str(e.value)
    with pytest.raises(ConfigError):
        gain(ds, "completion_time", "placement", "dor")
    path = tmp_path / "r.nc"
    ds.to_netcdf(path, engine="h5netcdf")
    out = tmp_path / "gain.png"
    assert cli.main(["plot", str(path), "--relative-to", "routing=dor", "--x", "size", "--out", str(out)]) == 0
    assert out.stat().st_size > 1000 and out.read_bytes()[:4] == b"\x89PNG"
    assert cli.main(["plot", str(path), "--relative-to", "routing"]) == 2
    assert "--relative-to" in capsys.readouterr().err
