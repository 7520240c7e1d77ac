"""Fully random placement: tasks on uniformly random node slots.

Random choices (generator ``threefry``, see :mod:`evaluator.placement._seeded`,
whose permutations ``pi`` these are): task ``t`` takes slot ``pi_0(t)`` of the
``n_nodes * tasks_per_node`` slots (stream 0), i.e. node ``pi_0(t) div
tasks_per_node``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._types import ConfigOf
from ..errors import check_memory, require
from ..topology import Topology
from ._seeded import DEFAULT_GENERATOR, MAX_ITEMS, SeededPlacement, check_generator, check_seed, permutation
from .base import Placement, PlacementContext, PlacementKind, check_capacity, check_topology, fits_per_node

__all__ = ['fully_random', 'fully_random_spec', 'RandomConfig', 'RANDOM']


def _generate(xp, k0, k1, prm, static, size):
    """Threefry fully random placement: ``task_node[task]`` from the seed's key words."""
    n_slots, tpn = static
    order = permutation(xp, k0, k1, 0, n_slots)  # int64 past 2^31 slots (rank_type)
    if size > n_slots:
        order = xp.concatenate([order, xp.zeros(size - n_slots, dtype=order.dtype)])
    return (order[:size] // xp.asarray(tpn, dtype=order.dtype)).astype(xp.int32)  # node ids: below n_nodes


SLOT_BYTES = 64
"""Peak host bytes per node slot of the ``threefry`` draw: a random permutation of all ``n_nodes x
tasks_per_node`` slots (the counters and random words, the uint64 sort keys and their temporaries, the argsort
and the ranks), whatever the task count."""


def _check_slots(topology: Topology, n: int, tpn: int, per_slot: float) -> None:
    """Refuse (naming ``placement.tasks_per_node``) a draw over ``n_nodes x tpn`` slots that would not fit in memory:
    10 tasks at 10^10 tasks per node on 32 nodes asked NumPy for 1.16 TiB."""
    slots = topology.n_nodes * tpn
    need = -(-n // topology.n_nodes)
    check_memory("placement.tasks_per_node", tpn, float(slots) * per_slot,
                 f"the random draw over its {topology.n_nodes:,} nodes x {tpn:,} = {slots:,} node slots",
                 f"Use placement.tasks_per_node={need}: it fits the {n:,} tasks (the draw permutes every slot).")


def fully_random_spec(topology: Topology, n_tasks: int, tasks_per_node: int = 1,
                      seed_check: Callable[[], None] | None = None) -> SeededPlacement:
    """A fully random placement with everything checked and decided but the seed (generator ``threefry``)."""
    n, tpn = check_capacity(topology, n_tasks, tasks_per_node)
    slots = topology.n_nodes * tpn
    require(slots <= MAX_ITEMS, "placement.tasks_per_node", tpn,
            f"at most {MAX_ITEMS // topology.n_nodes:,} on {topology.n_nodes:,} nodes: generator 'threefry' permutes "
            f"at most 2^32 = {MAX_ITEMS:,} node slots (its sort keys hold a slot's index in 32 bits), "
            f"not {topology.n_nodes:,} x {tpn:,} = {slots:,}",
            f"Use placement.tasks_per_node={-(-n // topology.n_nodes)} (it fits the {n:,} tasks) "
            "or placement.generator='numpy'.")
    _check_slots(topology, n, tpn, SLOT_BYTES)
    if seed_check is not None:
        seed_check()
    return SeededPlacement(_generate, (topology.n_nodes * tpn, tpn), {}, {}, n,
                           topology.n_nodes, f"random/{tpn}")


def fully_random(topology: Topology, n_tasks: int, tasks_per_node: int = 1, seed: int = 0,
                 generator: str = DEFAULT_GENERATOR) -> Placement:
    """Tasks on uniformly random node slots (at most ``tasks_per_node`` per node), seeded (``generator``
    ``threefry`` or ``numpy`` as in :func:`~evaluator.placement.dragonfly_cartesian`)."""
    check_topology(topology)
    generator = check_generator(generator)
    if generator == "threefry":
        return fully_random_spec(topology, n_tasks, tasks_per_node,
                                 lambda: check_seed(seed, generator)).placement(seed)
    n, tpn = check_capacity(topology, n_tasks, tasks_per_node)
    seed = check_seed(seed, generator)
    # NumPy draws without replacement by a set where the tasks are few, else permutes every slot
    slots = topology.n_nodes * tpn
    _check_slots(topology, n, tpn, 0 if slots > 10000 and n < slots / 50 else 16)
    rng = np.random.default_rng(seed)
    slots = rng.choice(topology.n_nodes * tpn, size=n, replace=False)
    return Placement((slots // tpn).astype(np.int64), topology.n_nodes, f"random(seed={seed})")


@dataclass
class RandomConfig:
    """Uniformly random node slots: ``tasks_per_node``, ``seed``, ``generator`` (threefry | numpy)."""

    kind: str = "random"
    tasks_per_node: int = 1
    seed: int = 0
    generator: str = DEFAULT_GENERATOR


def _seeded(cfg: ConfigOf[RandomConfig], ctx: PlacementContext, seed_check: Callable[[], None]
            ) -> SeededPlacement | None:
    if check_generator(cfg.generator) != "threefry":
        return None
    return fully_random_spec(ctx.topology, ctx.n_tasks, cfg.tasks_per_node, seed_check)


RANDOM = PlacementKind("random", RandomConfig,
                       lambda cfg, ctx: fully_random(ctx.topology, ctx.n_tasks, cfg.tasks_per_node, cfg.seed,
                                                     cfg.generator),
                       seeded=_seeded, fits=fits_per_node)
