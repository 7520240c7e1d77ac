"""Text variables of a dataset (:func:`evaluator.dataset.labels`): a large object array of references to a few texts
becomes Python strings by indexing its distinct values, with the same values as converting every element, and a
sweep's reasons and bottlenecks read back the same from netCDF and zarr."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from evaluator.dataset import labels
from evaluator.io import write_netcdf, write_zarr


@pytest.mark.parametrize("n", [3, 5000])
def test_labels_equal_the_elementwise_conversion(n):
    table = np.array(["", "placement.gamma: a divisor of beta[0] = 8", "none", "local", np.str_("global")],
                     dtype=object)
    values = table[np.random.default_rng(1).integers(0, table.size, size=(n, 2))]
    got = labels(values)
    assert got.shape == values.shape
    assert [str(x) for x in got.ravel()] == [str(x) for x in values.astype(str).ravel()]
    assert all(type(x) in (str, np.str_) for x in got.ravel())


@pytest.mark.parametrize("fmt", ["nc", "zarr"])
def test_large_label_variables_round_trip(tmp_path, fmt):
    table = np.array(["", "routing: a routing for a torus", "global"], dtype=object)
    reason = labels(table[np.arange(4096) % 3])
    ds = xr.Dataset({"reason": ("point", reason), "t": ("point", np.arange(4096.0))})
    path = (write_netcdf(ds, tmp_path / "d.nc") if fmt == "nc" else write_zarr(ds, tmp_path / "d.zarr"))
    back = xr.open_dataset(path, engine="h5netcdf" if fmt == "nc" else "zarr").load()
    assert back["reason"].values.tolist() == [str(x) for x in table[np.arange(4096) % 3]]
