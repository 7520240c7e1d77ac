"""The cost contract: what a network is made of (counted parts) and what those parts cost and draw.

A cost model is a pure function of a topology (host-side NumPy, no JAX):
:meth:`CostKind.build` counts its :class:`Parts` (switches and their radix,
ports used, cables by kind and length class, optical transceivers, NICs,
optical circuit switches), and :func:`price` turns the counts into a cost (in
the price table's currency) and a power (W) with the table of
``conf/cost/default.yaml`` (:func:`load_prices`), which the user edits or
overrides (``cost.parts.<part>.price=...``). DESIGN.md: "equal cost" means
equal priced parts, not equal summed bandwidth.

One member per topology family (``evaluator/cost/_<family>.py``), registered
by its topology kind in :data:`evaluator.cost.KINDS`; the counting rules of
each are in ``docs/cost.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Optional

from .._registry import Kind
from ..errors import ConfigError, nearest

__all__ = ["Parts", "COUNTS", "PRICED", "PART_NAMES", "CostKind", "CostConfig", "Prices", "NetworkCost",
           "load_prices", "prices_from", "price", "check_budget", "PRODUCTS", "link_product", "link_products"]


# --------------------------------------------------------------------------------------------- counts
@dataclass(frozen=True)
class Parts:
    """The parts of one network, counted (every field a non-negative integer).

    Attributes
    ----------
    n_switches
        Packet switches (routers), every one of them.
    n_switch_ports
        Ports of those switches, the whole radix of each (used or not): a switch is bought with its radix.
    n_ports_used
        Switch ports in use (to a node, another switch or an optical switch): not priced, shown.
    n_nics
        Network interfaces, one per node.
    n_electrical_cables_short, n_electrical_cables_long
        Copper cables within a rack (passive, up to ~3 m) and between neighbouring racks (active, up to ~7 m).
    n_optical_cables_short, n_optical_cables_long
        Optical cables (the fibre; its transceivers are counted apart) within a row of racks (up to ~30 m) and
        across the machine room to another group or the core (up to ~100 m).
    n_transceivers
        Optical transceivers, one per optical cable end on a switch or NIC port (none at an optical circuit
        switch, which switches light).
    n_optical_switches, n_optical_switch_ports
        Optical circuit switches (a reconfigurable Dragonfly's) and their ports.
    switch_radix
        Ports of one packet switch (the largest, where they differ); not summed, not priced.
    """

    n_switches: int = 0
    n_switch_ports: int = 0
    n_ports_used: int = 0
    n_nics: int = 0
    n_electrical_cables_short: int = 0
    n_electrical_cables_long: int = 0
    n_optical_cables_short: int = 0
    n_optical_cables_long: int = 0
    n_transceivers: int = 0
    n_optical_switches: int = 0
    n_optical_switch_ports: int = 0
    switch_radix: int = 0

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not (isinstance(v, int) and v >= 0):
                raise AssertionError(f"Parts.{f.name} = {v!r}: a count is an integer >= 0")

    def as_dict(self) -> dict[str, int]:
        return {f.name: int(getattr(self, f.name)) for f in dataclasses.fields(self)}


COUNTS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Parts))
"""The count variables every dataset gains (:class:`Parts`' fields, in order)."""

PRICED: dict[str, str] = {
    "n_switches": "switch",
    "n_switch_ports": "switch_port",
    "n_nics": "nic",
    "n_electrical_cables_short": "electrical_cable_short",
    "n_electrical_cables_long": "electrical_cable_long",
    "n_optical_cables_short": "optical_cable_short",
    "n_optical_cables_long": "optical_cable_long",
    "n_transceivers": "transceiver",
    "n_optical_switches": "optical_switch",
    "n_optical_switch_ports": "optical_switch_port",
}
"""Count -> the part of the price table that prices one item of it (``n_ports_used`` and ``switch_radix``:
not priced)."""

PART_NAMES: tuple[str, ...] = tuple(PRICED.values())
"""The parts of the price table (``conf/cost/default.yaml``, ``parts``)."""


@dataclasses.dataclass(frozen=True)
class CostKind(Kind):
    """The cost model of one topology kind: ``name`` the topology kind (``"dragonfly"``), ``schema`` the
    topology class it counts, ``build(topology) -> Parts``."""


# --------------------------------------------------------------------------------------------- prices
@dataclass
class CostConfig:
    """The ``cost`` config group (``conf/cost/default.yaml``).

    ``currency``: the unit of every price and of ``cost`` (``relative``: multiples of one switch port's price);
    ``budget``: the most a network may cost (null: no limit): a sweep point over it is infeasible;
    ``parts``: per part of :data:`PART_NAMES` a mapping ``{price, power, source}`` (price in ``currency`` per
    item, power in W per item, where the figure comes from); a part not given keeps the default file's.
    """

    currency: str = "relative"
    budget: Optional[float] = None
    parts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Prices:
    """A checked price table: ``price[part]`` (currency units per item), ``power[part]`` (W per item)."""

    currency: str
    price: dict[str, float]
    power: dict[str, float]
    source: dict[str, str]
    budget: Optional[float] = None


def _number(fld: str, value: Any, what: str, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    ok = not isinstance(value, bool) and isinstance(value, (int, float, str))
    try:
        x = float(value) if ok else float("nan")
    except ValueError:
        x = float("nan")
    if not (math.isfinite(x) and x >= 0):
        raise ConfigError(fld, value, what, "Edit conf/cost/default.yaml or override it, e.g. "
                          "cost.parts.switch_port.price=1.0.")
    return x


@functools.lru_cache(maxsize=4)
def _default_file(path: str) -> dict:
    from ..io import read_yaml

    with open(path) as fh:
        data = read_yaml(fh) or {}
    data.pop("defaults", None)
    return data


def load_prices(path: str | None = None) -> dict:
    """The price table of ``path`` (default ``conf/cost/default.yaml``) as a plain mapping
    ``{currency, budget, parts: {part: {price, power, source}}}``."""
    from ..io import conf_dir

    return _default_file(str(path or conf_dir() / "cost" / "default.yaml"))


def prices_from(cfg: Any = None) -> Prices:
    """A checked :class:`Prices` from a :class:`CostConfig` (or a plain mapping of its keys; None: the default
    file): each part given overrides the default file's entry, key by key.

    Refused with :class:`ConfigError` naming the field (``cost.parts.nic.price``), the value and what is
    allowed: an unknown part or key, a price, power or budget that is not a finite number >= 0, a currency that
    is not a non-empty string.
    """
    if cfg is None:
        cfg = CostConfig()
    if isinstance(cfg, dict):
        bad = [k for k in cfg if k not in ("currency", "budget", "parts")]
        if bad:
            raise ConfigError(f"cost.{bad[0]}", cfg[bad[0]], "a key of cost: one of ['currency', 'budget', 'parts']",
                              nearest(str(bad[0]), ["currency", "budget", "parts"]))
        cfg = CostConfig(**cfg)
    if not hasattr(cfg, "currency"):  # (a string or a number raised AttributeError)
        raise ConfigError("cost", cfg, "a CostConfig, a mapping of its keys (currency, budget, parts) or None (the "
                          "default prices)")
    default = load_prices()
    currency = cfg.currency
    if not (isinstance(currency, str) and currency.strip()):
        raise ConfigError("cost.currency", currency, "a non-empty string naming the unit of every price "
                          "(e.g. USD, EUR, relative)")
    budget = _number("cost.budget", cfg.budget, f"null (no limit) or a finite number >= 0 ({currency})",
                     allow_none=True)
    given = dict(cfg.parts or {})
    for name in given:
        if name not in PART_NAMES:
            raise ConfigError(f"cost.parts.{name}", given[name], f"a part of the price table: one of "
                              f"{list(PART_NAMES)}", nearest(str(name), PART_NAMES))
    price, power, source = {}, {}, {}
    for name in PART_NAMES:
        entry = dict((default.get("parts") or {}).get(name) or {})
        over = given.get(name) or {}
        if not hasattr(over, "items"):
            raise ConfigError(f"cost.parts.{name}", over, "a mapping {price, power, source}")
        for k, v in over.items():
            if k not in ("price", "power", "source"):
                raise ConfigError(f"cost.parts.{name}.{k}", v, "a key of a part: one of ['price', 'power', "
                                  "'source']", nearest(str(k), ["price", "power", "source"]))
            entry[k] = v
        price[name] = _number(f"cost.parts.{name}.price", entry.get("price"),
                              f"a finite number >= 0 ({currency} per item)")
        power[name] = _number(f"cost.parts.{name}.power", entry.get("power"), "a finite number >= 0 (W per item)")
        source[name] = str(entry.get("source") or "")
    return Prices(currency=currency.strip(), price=price, power=power, source=source, budget=budget)


# --------------------------------------------------------------------------------------------- pricing
@dataclass(frozen=True)
class NetworkCost:
    """One network's parts, cost (``currency``) and power (W)."""

    parts: Parts
    cost: float
    power: float
    currency: str

    def values(self) -> dict[str, float]:
        """``cost``, ``power`` and every count, by dataset variable name."""
        return {"cost": self.cost, "power": self.power, **self.parts.as_dict()}


def price(parts: Parts, prices: Prices) -> NetworkCost:
    """The cost (sum of count x price) and power (sum of count x power, W) of ``parts``."""
    counts = parts.as_dict()
    cost = sum(counts[c] * prices.price[p] for c, p in PRICED.items())
    power = sum(counts[c] * prices.power[p] for c, p in PRICED.items())
    return NetworkCost(parts, float(cost), float(power), prices.currency)


def check_budget(nc: NetworkCost, budget: float | None) -> None:
    """Raise :class:`ConfigError` on ``cost.budget`` when the network costs more than ``budget`` (None: no limit);
    its ``reason`` reads ``cost.budget: a network that costs at most 1000 relative; got 1240 relative``."""
    if budget is not None and nc.cost > budget * (1 + 1e-12):
        raise ConfigError("cost.budget", budget, f"a network that costs at most {budget:g} {nc.currency}; got "
                          f"{nc.cost:g} {nc.currency}", "Raise cost.budget or choose a smaller network.")


# --------------------------------------------------------------------------------------------- products
PRODUCTS: tuple[tuple[str, float], ...] = (
    ("InfiniBand QDR 4x (32 Gb/s data)", 4.0e9),
    ("Blue Gene/Q torus link (2 GB/s)", 2.0e9),
    ("Cray Gemini X/Z link (9.375 GB/s)", 9.375e9),
    ("Cray Gemini Y link (4.6875 GB/s)", 4.6875e9),
    ("InfiniBand FDR 4x (54.5 Gb/s data)", 54.54e9 / 8),
    ("100 Gb/s: InfiniBand EDR 4x, 100GbE", 12.5e9),
    ("200 Gb/s: InfiniBand HDR 4x, 200GbE, HPE Slingshot", 25.0e9),
    ("400 Gb/s: InfiniBand NDR 4x, 400GbE", 50.0e9),
    ("800 Gb/s: InfiniBand XDR 4x, 800GbE", 100.0e9),
    ("25 Gb/s: 25GbE", 3.125e9),
    ("50 Gb/s: 50GbE", 6.25e9),
    ("10 Gb/s: 10GbE", 1.25e9),
)
"""Link products by their data rate per direction (bytes/s): what a link bandwidth of a config can be bought as."""


def link_product(bandwidth: float, rtol: float = 1e-3, warn: bool = False) -> str | None:
    """The product whose data rate is ``bandwidth`` (bytes/s per direction) within ``rtol``, or None; with
    ``warn``, a :class:`UserWarning` names the bandwidth that matches no product and the nearest ones."""
    b = float(bandwidth)
    for name, rate in PRODUCTS:
        if abs(b - rate) <= rtol * rate:
            return name
    if warn:
        near = sorted(PRODUCTS, key=lambda p: abs(math.log(b / p[1])) if b > 0 else 0.0)[:2]
        warnings.warn(f"link bandwidth {b:g} bytes/s ({b * 8 / 1e9:g} Gb/s) matches no product; nearest: "
                      + "; ".join(f"{n} = {r:g} bytes/s" for n, r in near), UserWarning, stacklevel=2)
    return None


def link_products(topology, warn: bool = False) -> dict[str, str]:
    """Per link class of ``topology``: the product of its bandwidth (``"none (10 GB/s)"`` where none matches;
    a class of several bandwidths lists each)."""
    import numpy as np

    out: dict[str, str] = {}
    cap = np.asarray(topology.capacity)
    cls = np.asarray(topology.link_class)
    for c, name in enumerate(topology.class_names):
        rates = np.unique(cap[cls == c])
        texts = []
        for r in rates.tolist():
            p = link_product(r, warn=warn)
            texts.append(p if p is not None else f"none ({r / 1e9:g} GB/s)")
        if texts:
            out[name] = ", ".join(dict.fromkeys(texts))
    return out
