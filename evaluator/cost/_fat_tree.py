"""Cost model of fat trees: :data:`FAT_TREE` (:class:`~evaluator.topology.FatTreeTopology`, an XGFT).

Packaging (docs/cost.md): hosts and their leaf switch share a rack (short copper); the links of tier 1 (leaf to
level 2) stay in the pod's row (short optical), those of tiers 2 and up reach the core (long optical); every
optical cable has a transceiver at each end. Every switch is the same product: its radix is the most ports any
level needs (``m_i`` down, times the tier's parallel links above the leaves, plus ``w_{i+1}`` times the parallel
links up), so the top level of a k-ary n-tree leaves half its ports unused.
"""

from __future__ import annotations

import math

from ..topology import FatTreeTopology
from .base import CostKind, Parts

__all__ = ["fat_tree_parts", "FAT_TREE"]


def fat_tree_parts(t: FatTreeTopology) -> Parts:
    """XGFT(h; m; w) with parallel links ``pl``: level ``i`` has ``prod(m_{i+1..h}) prod(w_{1..i})`` switches of
    ``m_i pl_{i-1}`` down and ``w_{i+1} pl_i`` up ports; tier ``t`` has (level-``t`` switches) x ``w_{t+1}
    pl_t`` cables; ``prod(m)`` hosts, one NIC and one short copper cable each. Every switch has the radix of the
    tree's switch product (``topology.radix``) where it gives one, else the most ports any level needs."""
    m, w, pl = [int(x) for x in t.children], [int(x) for x in t.parents], [int(x) for x in t.parallel_links]
    h = len(m)
    n_sw = [math.prod(m[i:]) * math.prod(w[:i]) for i in range(1, h + 1)]
    ports = []
    for i in range(1, h + 1):
        down = m[i - 1] * (1 if i == 1 else pl[i - 2])
        up = w[i] * pl[i - 1] if i < h else 0
        ports.append(down + up)
    radix = max(ports) if t.radix is None else max(int(t.radix), max(ports))  # the product given, else the most
    tier = [n_sw[i - 1] * w[i] * pl[i - 1] for i in range(1, h)]
    hosts = math.prod(m)
    short_opt, long_opt = sum(tier[:1]), sum(tier[1:])
    return Parts(n_switches=sum(n_sw), switch_radix=radix, n_switch_ports=sum(n_sw) * radix,
                 n_ports_used=sum(n * p for n, p in zip(n_sw, ports)), n_nics=hosts, n_electrical_cables_short=hosts,
                 n_optical_cables_short=short_opt, n_optical_cables_long=long_opt,
                 n_transceivers=2 * (short_opt + long_opt))


FAT_TREE = CostKind("fat_tree", FatTreeTopology, fat_tree_parts)
