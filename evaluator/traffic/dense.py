"""Dense rank-one traffic, never materialised (also importable as ``evaluator.structured``).

``bytes(s -> d) = bytes_per_pair * src_weight[s] * dst_weight[d]`` for every
task pair ``s != d``; see :class:`evaluator.traffic.DenseTraffic`.
"""

from __future__ import annotations

from ._all_to_all import all_to_all_dense as all_to_all
from ._many_to_many import many_to_many_dense as many_to_many
from .base import DenseTraffic, dense

__all__ = ["DenseTraffic", "all_to_all", "many_to_many", "dense"]
