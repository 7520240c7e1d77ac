"""A results dataset gains its networks' cost, power and part counts (:func:`add_cost`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..dataset import metric
from .base import COUNTS, prices_from

__all__ = ["add_cost", "PER_COST"]

PER_COST: dict[str, str] = {"throughput_per_cost": "throughput"}
"""Performance per cost a dataset carries: name -> the metric divided by ``cost`` (where both are finite)."""


def add_cost(ds: xr.Dataset, dims: Sequence[str], shape: Sequence[int], values: Mapping[str, np.ndarray],
             cost_cfg: Any = None) -> xr.Dataset:
    """Add ``cost`` (the price table's currency), ``power`` (W), every count of :data:`~evaluator.cost.COUNTS`
    and :data:`PER_COST` to ``ds`` (in place; returned), each of dimensions ``dims`` from the flat per-point
    ``values`` (NaN: the point's network was not built); the attrs ``cost_currency`` and ``cost_prices_json``
    (every part's price, power and source) say what the figures mean.

    Counts are integers where every point has one, else floats with NaN.
    """
    prices = prices_from(cost_cfg)
    cur = prices.currency
    dims, shape = tuple(dims), tuple(int(s) for s in shape)
    for name in ("cost", "power") + COUNTS:
        if name not in values:
            continue
        v = np.asarray(values[name], dtype=np.float64)
        if name in COUNTS and np.isfinite(v).all():
            v = v.astype(np.int64)
        entry = metric(name)
        units = cur if name == "cost" else entry.units
        ds[name] = (dims, v.reshape(shape), {"units": units, "long_name": entry.long_name})
    if "cost" in ds:
        for name, base in PER_COST.items():
            if base in ds:
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = ds[base] / ds["cost"].where(ds["cost"] > 0)
                ds[name] = ratio.astype(np.float64)
                ds[name].attrs = {"units": f"{ds[base].attrs.get('units', metric(base).units)}/{cur}",
                                  "long_name": metric(name).long_name}
    ds.attrs["cost_currency"] = cur
    ds.attrs["cost_prices_json"] = json.dumps({p: {"price": prices.price[p], "power": prices.power[p],
                                                   "source": prices.source[p]} for p in prices.price})
    if prices.budget is not None:
        ds.attrs["cost_budget"] = float(prices.budget)
    return ds


def with_cost(ds: xr.Dataset, topology, cost_cfg: Any = None) -> xr.Dataset:
    """One design point's dataset (``evaluator eval``) with its network's cost, power and counts (scalars),
    :data:`PER_COST`, and the attrs of :func:`add_cost` plus ``link_products_json`` (per link class, the product
    its bandwidth is: :func:`~evaluator.cost.link_products`). A topology kind without a cost model: unchanged."""
    from . import KINDS, link_products, network_cost

    if topology.kind not in KINDS:
        return ds
    nc = network_cost(topology, cost_cfg)
    add_cost(ds, (), (), {k: np.asarray([v]) for k, v in nc.values().items()}, cost_cfg)
    ds.attrs["link_products_json"] = json.dumps(link_products(topology))
    return ds


def check_point_budget(topology, cost_cfg: Any = None) -> None:
    """Refuse (:class:`~evaluator.errors.ConfigError` on ``cost.budget``) a network over the config's budget."""
    from . import KINDS, check_budget, network_cost

    prices = prices_from(cost_cfg)
    if prices.budget is None or topology.kind not in KINDS:
        return
    check_budget(network_cost(topology, prices), prices.budget)
