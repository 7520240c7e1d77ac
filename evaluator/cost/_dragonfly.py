"""Cost models of Dragonflies: :data:`DRAGONFLY` (:class:`~evaluator.topology.DragonflyTopology`) and :data:`RDN`
(:class:`~evaluator.topology.RdnTopology`, the reconfigurable Dragonfly whose global ports attach to optical
circuit switches).

Packaging (docs/cost.md): a group is one rack; a router has ``p + (a - 1) + h`` ports (nodes, the other routers
of its group, global). Node and local cables stay in the rack (short copper); global cables leave it (long
optical fibre, a transceiver at each switch end).
"""

from __future__ import annotations

from ..topology import DragonflyTopology, RdnTopology
from .base import CostKind, Parts

__all__ = ["dragonfly_parts", "rdn_parts", "DRAGONFLY", "RDN"]


def _group_parts(p: int, a: int, h: int, g: int) -> dict[str, int]:
    """What every Dragonfly-like network has: ``g a`` routers of radix ``p + a - 1 + h``, ``g a p`` NICs with a
    short copper cable each, ``g a (a - 1) / 2`` local short copper cables."""
    radix = p + (a - 1) + h
    return {"n_switches": g * a, "switch_radix": radix, "n_switch_ports": g * a * radix, "n_nics": g * a * p,
            "n_electrical_cables_short": g * a * p + g * a * (a - 1) // 2}


def dragonfly_parts(t: DragonflyTopology) -> Parts:
    """DF(p, a, h, g): with ``m = floor(a h / (g - 1))`` links per group pair, ``g (g - 1) m / 2`` global cables
    (``g a h / 2`` at ``g = a h + 1``), each long optical with 2 transceivers; ports used: the nodes', ``a - 1``
    local and the connected global ports of every router (``g (g - 1) m`` global ports in all)."""
    p, a, h, g, m = int(t.p), int(t.a), int(t.h), int(t.g), int(t.links_per_pair)
    base = _group_parts(p, a, h, g)
    n_global = g * (g - 1) * m // 2
    used = g * a * p + g * a * (a - 1) + 2 * n_global
    return Parts(**base, n_ports_used=used, n_optical_cables_long=n_global, n_transceivers=2 * n_global)


def rdn_parts(t: RdnTopology) -> Parts:
    """RDN(p, a, h, g; k): every one of the ``g a h`` global ports is cabled to an optical circuit switch (one
    long optical cable and one transceiver, at the router, per port: the switch switches light), whatever the
    configuration; ``a h / k`` optical switches of ``g k`` ports."""
    p, a, h, g, k = int(t.p), int(t.a), int(t.h), int(t.g), int(t.ports_per_switch)
    base = _group_parts(p, a, h, g)
    ports = g * a * h
    used = g * a * p + g * a * (a - 1) + ports
    return Parts(**base, n_ports_used=used, n_optical_cables_long=ports, n_transceivers=ports,
                 n_optical_switches=a * h // k, n_optical_switch_ports=(a * h // k) * g * k)


DRAGONFLY = CostKind("dragonfly", DragonflyTopology, dragonfly_parts)
RDN = CostKind("rdn", RdnTopology, rdn_parts)
