"""Traffic patterns (one module per member, one registry line each).

Sparse generators return a :class:`Traffic` (flows); dense patterns a
:class:`DenseTraffic` (rank one, never materialised; see
:mod:`evaluator.traffic.dense`); ``phased`` a :class:`PhasedTraffic`. All
three answer :class:`AbstractTraffic` (:mod:`evaluator.traffic.base`), the
contract consumers call. :data:`KINDS` maps a config kind to its
schema and builder; a new pattern is a new module here, its YAML file in
``conf/traffic/`` and one line in :data:`KINDS`.
"""

from __future__ import annotations

from .._registry import Registry
from . import (_all_to_all, _bisection_pairing, _collectives, _file, _group_tornado, _m_to_n, _many_to_many,
               _neighbouring, _pencil, _phased, _random_pairs, _random_permutation, _shift, _stencil, _trace, dense)
from ._group_tornado import group_tornado
from ._all_to_all import all_to_all, all_to_all_dense
from ._bisection_pairing import bisection_pairing, furthest_partner
from ._collectives import (COLLECTIVES, SELECTIONS, collective, collective_steps, optimal_segments, pipeline_segments,
                           select_algorithm)
from ._file import from_file
from ._m_to_n import M_TO_N_MODES, m_to_n
from ._many_to_many import MANY_TO_MANY_MODES, many_to_many, many_to_many_layout
from ._neighbouring import neighbouring
from ._pencil import pencil, pencil_volumes
from ._random_pairs import random_pairs
from ._random_permutation import random_permutation
from ._shift import shift, tornado
from ._stencil import stencil, stencil_message_sizes
from ._trace import from_trace, read_otf2
from .base import (KERNEL_INPUTS, AbstractTraffic, DenseTraffic, PhasedTraffic, Traffic, TrafficKind, from_flows,
                   from_matrix, phased)

__all__ = [
    "AbstractTraffic",
    "KERNEL_INPUTS",
    "Traffic",
    "DenseTraffic",
    "PhasedTraffic",
    "phased",
    "TrafficKind",
    "from_flows",
    "from_matrix",
    "stencil",
    "stencil_message_sizes",
    "all_to_all",
    "all_to_all_dense",
    "bisection_pairing",
    "furthest_partner",
    "random_permutation",
    "random_pairs",
    "shift",
    "tornado",
    "group_tornado",
    "many_to_many",
    "many_to_many_layout",
    "MANY_TO_MANY_MODES",
    "m_to_n",
    "M_TO_N_MODES",
    "from_file",
    "from_trace",
    "read_otf2",
    "pencil",
    "pencil_volumes",
    "neighbouring",
    "collective",
    "collective_steps",
    "select_algorithm",
    "SELECTIONS",
    "optimal_segments",
    "pipeline_segments",
    "COLLECTIVES",
    "dense",
    "KINDS",
]

KINDS: Registry[TrafficKind] = Registry("traffic", [
    _stencil.STENCIL,
    _all_to_all.ALL_TO_ALL,
    _bisection_pairing.BISECTION_PAIRING,
    _random_permutation.RANDOM_PERMUTATION,
    _random_pairs.RANDOM_PAIRS,
    _shift.SHIFT,
    _shift.TORNADO,
    _group_tornado.GROUP_TORNADO,
    _many_to_many.MANY_TO_MANY,
    _m_to_n.M_TO_N,
    _file.FILE,
    _pencil.PENCIL,
    _neighbouring.NEIGHBOURING,
    _collectives.COLLECTIVE,
    _trace.TRACE,
    _phased.kind(lambda: KINDS),
])
"""Traffic kinds by config name."""
