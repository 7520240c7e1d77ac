"""What a network costs: counted parts, priced by a table the user edits (docs/cost.md).

* :func:`network_cost`: a topology's :class:`Parts` (switches and their radix, ports used, cables by kind and
  length class, transceivers, NICs, optical circuit switches), its cost (the price table's currency) and its
  power (W); a pure function of the topology (host-side NumPy);
* :func:`prices_from`, :func:`load_prices`: the price table (``conf/cost/default.yaml``, the ``cost`` config
  group), checked part by part;
* :func:`check_budget`: a network over ``cost.budget`` is refused (a sweep point: infeasible, with the reason);
* :func:`link_product`, :func:`link_products`: the product (100/200/400 Gb/s ...) a link bandwidth is, or a
  warning that it is none.

The contract is in :mod:`evaluator.cost.base`. :data:`KINDS` maps a topology kind to its cost model; a new one is
a module here and one line in :data:`KINDS`.
"""

from __future__ import annotations

from .._registry import Registry
from ..errors import ConfigError, ConfigTypeError
from . import _dragonfly, _fat_tree, _torus
from .base import (COUNTS, PART_NAMES, PRICED, PRODUCTS, CostConfig, CostKind, NetworkCost, Parts, Prices,
                   check_budget, link_product, link_products, load_prices, price, prices_from)

__all__ = ["KINDS", "CostKind", "CostConfig", "Parts", "Prices", "NetworkCost", "COUNTS", "PRICED", "PART_NAMES",
           "PRODUCTS", "network_cost", "parts_of", "price", "prices_from", "load_prices", "check_budget",
           "link_product", "link_products"]

KINDS: Registry[CostKind] = Registry("cost", [
    _torus.TORUS,
    _dragonfly.DRAGONFLY,
    _dragonfly.RDN,
    _fat_tree.FAT_TREE,
])
"""Cost models by topology kind."""


def parts_of(topology) -> Parts:
    """The counted parts of ``topology``; :class:`ConfigError` for a topology kind without a cost model."""
    if not isinstance(getattr(topology, "kind", None), str):  # (None or a name raised AttributeError)
        raise ConfigTypeError("topology", topology, "a Topology (e.g. evaluator.torus([4, 4, 4]))")
    if topology.kind not in KINDS:
        raise ConfigError("topology.kind", topology.kind, f"a topology kind with a cost model: one of {list(KINDS)}")
    kind = KINDS[topology.kind]
    if not isinstance(topology, kind.schema):  # pragma: no cover - a kind name reused by another class
        raise ConfigError("topology.kind", topology.kind, f"a {kind.schema.__name__}")
    return kind.build(topology)


def network_cost(topology, prices: Prices | CostConfig | dict | None = None) -> NetworkCost:
    """Parts, cost and power of ``topology`` with ``prices`` (a :class:`Prices`, a :class:`CostConfig` or its
    mapping; None: ``conf/cost/default.yaml``)."""
    if not isinstance(prices, Prices):
        prices = prices_from(prices)
    return price(parts_of(topology), prices)
