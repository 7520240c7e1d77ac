"""Neighbouring pattern (Feng et al. Sec. 5.1.3): partners in the own block and in neighbouring blocks.

Tasks come in blocks (one block per group in custom mode), block ``b`` of
``block_sizes[b]`` tasks, numbered block after block. Task ``l`` of block
``b`` sends ``bytes_per_pair`` to

* ``intra`` partners in its block: local indices ``l+1, l-1, l+2, l-2, ...``
  (mod the block size; duplicates and the task itself dropped);
* ``inter`` partners in neighbouring blocks: blocks ``b+1, b-1, b+2, b-2, ...``
  (mod the number of blocks; duplicates and ``b`` dropped), the task with local
  index ``l`` mod that block's size.

The paper's pattern: 4 partners in the group and 4 in 4 neighbouring groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .._types import ConfigOf
from ..errors import ConfigError, check_memory, positive_float, positive_int
from .base import Traffic, TrafficKind

__all__ = ["neighbouring", "NeighbouringConfig", "NEIGHBOURING"]


def _offsets(k: int) -> list[int]:
    return [(i // 2 + 1) * (1 if i % 2 == 0 else -1) for i in range(k)]


def neighbouring(block_sizes: Sequence[int], intra: int = 4, inter: int = 4, bytes_per_pair: float = 1.0) -> Traffic:
    """The neighbouring pattern over blocks of ``block_sizes`` tasks (module docstring); bytes per partner."""
    if not isinstance(block_sizes, (list, tuple, np.ndarray)) or len(block_sizes) == 0:
        raise ConfigError("traffic.block_sizes", block_sizes, "a non-empty list of positive integers "
                                                              "(tasks per block, one block per group)")
    sizes = np.asarray([positive_int(f"traffic.block_sizes[{i}]", s) for i, s in enumerate(block_sizes)], np.int64)
    intra = positive_int("traffic.intra", intra, minimum=0)
    inter = positive_int("traffic.inter", inter, minimum=0)
    b = positive_float("traffic.bytes", bytes_per_pair)
    n = int(sizes.sum())
    check_memory("traffic.block_sizes", list(sizes.tolist())[:8], 48.0 * n * (intra + inter),
                 f"the {n * (intra + inter):,} flows of the neighbouring pattern")
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    nb = sizes.size
    src, dst = [], []
    for blk in range(nb):
        s, base = int(sizes[blk]), int(start[blk])
        loc = np.arange(s)
        offs = sorted({o % s for o in _offsets(intra)} - {0})
        for o in offs:
            src.append(base + loc)
            dst.append(base + (loc + o) % s)
        nbrs = []
        for o in _offsets(inter):
            c = (blk + o) % nb
            if c != blk and c not in nbrs:
                nbrs.append(c)
        for c in nbrs:
            src.append(base + loc)
            dst.append(int(start[c]) + loc % int(sizes[c]))
    src_a = np.concatenate(src) if src else np.zeros(0, np.int64)
    dst_a = np.concatenate(dst) if dst else np.zeros(0, np.int64)
    return Traffic(n, src_a.astype(np.int64), dst_a.astype(np.int64), np.full(src_a.size, b),
                   f"neighbouring {intra}+{inter} over {nb} blocks")


@dataclass
class NeighbouringConfig:
    """Neighbouring pattern: ``block_sizes`` (tasks per block/group), ``intra`` and ``inter`` partners, ``bytes`` per
    partner."""

    kind: str = "neighbouring"
    block_sizes: list[int] = field(default_factory=lambda: [8, 8, 8, 8])
    intra: int = 4
    inter: int = 4
    bytes: float = 1.0e6


def _from_config(cfg: ConfigOf[NeighbouringConfig], topology) -> Traffic:
    return neighbouring(list(cfg.block_sizes), cfg.intra, cfg.inter, cfg.bytes)


NEIGHBOURING = TrafficKind("neighbouring", NeighbouringConfig, _from_config)
