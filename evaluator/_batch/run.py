"""A whole batch: the arguments checked, a path set bound, the working set refused or allowed, every point
dispatched (phased traffic phase by phase), the paths per pair counted."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .compiled import batch_kernel
from ..placement import Placement
from ..routing import Routing, require_linear
from ..topology import Topology
from ..traffic import AbstractTraffic
from .checks import as_routing, block_size_arg, broadcast, check_pair, check_type
from .blocks import bucket_size
from .dispatch import Results, evaluate_exchanges
from .memory import check_working_set, working_set
from .pathsets import evaluate_bound, router_pairs
from ..errors import ResourceError, nearest, require
from .flowlevel import FAIRNESS, PROGRESSIONS, SHARINGS, check_flowlevel_memory, check_sharing_size, phase_max_min
from .latency import phase_max_latency, with_latency
from .phases import PHASE_BLOCK, evaluate_phased, put_back

__all__ = ["run_batch", "evaluate_points"]


def run_batch(topology: Any, routing: Any, traffics: Any, placements: Any, keep_link_load: bool, block_size: Any,
              chunk_size: Any = None, single: bool = False,
              meanwhile: Callable[[], None] | None = None, sharing: Any = "bound",
              fairness: Any = "flow", progression: Any = "phase") -> tuple[Routing, Results]:
    """``(routing, results)`` of :func:`evaluator.evaluate_batch` (``single``: of :func:`evaluator.evaluate`, whose
    arguments are named in the singular), after every argument is checked (:mod:`.checks`). ``meanwhile()``
    (optional) runs once, on the host, while the first points are on the device."""
    names = ("traffic", "placement") if single else ("traffics", "placements")
    check_type("topology", "topology", topology)
    traffics, placements = broadcast(traffics, placements, names)
    routing = as_routing(routing)
    n = len(traffics)
    for i, (t, p) in enumerate(zip(traffics, placements)):
        check_pair(topology, t, p, None if n == 1 else i, names)  # (``placements[i]`` where the argument is a list)
    block_size, block_name = block_size_arg(block_size, chunk_size)
    require(isinstance(sharing, str) and sharing in SHARINGS, "sharing", sharing, f"one of {list(SHARINGS)}",
            nearest(sharing, SHARINGS))
    require(isinstance(fairness, str) and fairness in FAIRNESS, "fairness", fairness, f"one of {list(FAIRNESS)}",
            nearest(fairness, FAIRNESS))
    require(isinstance(progression, str) and progression in PROGRESSIONS, "progression", progression,
            f"one of {list(PROGRESSIONS)}", nearest(progression, PROGRESSIONS))
    require(isinstance(keep_link_load, (bool, np.bool_)), "keep_link_load", keep_link_load, "True or False")
    if sharing == "max_min":
        check_sharing_size(traffics, progression)
        require_linear(routing, "sharing=max_min (its flow-level incidence routes every flow alone)",
                       hint="Use sharing=bound.")
    if topology.latency is not None:
        require_linear(routing, "The latency model (path latencies from the transpose of the link loads)")
    return routing, evaluate_points(topology, routing, traffics, placements, bool(keep_link_load), block_size,
                                    single, block_name, meanwhile=meanwhile, sharing=sharing, fairness=fairness,
                                    progression=progression)


def evaluate_points(topology: Topology, routing: Routing, traffics: Sequence[AbstractTraffic],
                    placements: Sequence[Placement], keep: bool, block_size: int, single: bool = False,
                    block_name: str = "block_size", pair_keys: list | None = None,
                    meanwhile: Callable[[], None] | None = None, sharing: str = "bound",
                    fairness: str = "flow", progression: str = "phase", merged: bool = False) -> Results:
    """The results of checked points, in input order (``pair_keys``: the points' router pair keys, where a
    bound path set's caller has them; ``meanwhile()``: see :func:`run_batch`; ``merged``: ``routing``'s merge of
    router pairs already decided, :func:`_merge_groups`)."""
    if routing.needs_pairs:
        todo = [meanwhile]  # (the first group's points run it)

        def group(bound, ts, ps, keys):
            first, todo[0] = todo[0], None
            return evaluate_points(topology, bound, ts, ps, keep, block_size, single, block_name, pair_keys=keys,
                                   meanwhile=first, sharing=sharing, fairness=fairness, progression=progression)

        return evaluate_bound(topology, routing, traffics, placements, group)
    exchanges = [x for t in traffics for x in t.phases]
    if not merged:  # (a routing that merges the flows of a router pair counts the pairs: an adaptive fixed point)
        groups = _merge_groups(topology, routing, traffics, placements)
        if len(groups) > 1:
            return put_back(traffics, [
                (idx, evaluate_points(topology, spec, [traffics[i] for i in idx], [placements[i] for i in idx],
                                      keep, block_size, single, block_name, pair_keys=None if pair_keys is None
                                      else [pair_keys[i] for i in idx], meanwhile=meanwhile if not j else None,
                                      sharing=sharing, fairness=fairness, progression=progression, merged=True))
                for j, (spec, idx) in enumerate(groups)])
        routing = groups[0][0]
    kern = batch_kernel(topology, routing, keep)
    phased = any(t.kernel_input == "phases" for t in traffics)
    block = _checked_block(kern, topology, exchanges, len(traffics), keep, block_size, single, block_name, phased)
    if sharing == "max_min":  # one point of the flow-level pass must fit, before the bound's blocks run
        check_flowlevel_memory(kern, topology, traffics, progression, fairness)
    if phased:
        res = evaluate_phased(kern, topology, traffics, placements, block, meanwhile)
    else:
        res = evaluate_exchanges(kern, traffics, placements, block_size, meanwhile=meanwhile)
    if topology.latency is not None:  # (no latency model: nothing computed, every number the bound's)
        with_latency(res.metrics, res.phases, phase_max_latency(kern, topology, traffics, placements))
    if sharing == "max_min":
        mm = phase_max_min(kern, topology, traffics, placements, fairness, progression=progression)
        res.metrics["time_max_min"] = mm["time_max_min"]
        if res.phases is not None:
            res.phases["phase_time_max_min"] = mm["phase_time_max_min"]
        res = res._replace(flows=mm["message_finish_time"])
    # (:data:`evaluator.dataset.PATH_METRICS`; the points' pair keys listed only where the routing counts paths)
    res.metrics["paths_per_pair"] = routing.paths_per_pair(
        len(traffics), kern.operator, (lambda: pair_keys) if pair_keys is not None else
        (lambda: [router_pairs(topology, t, p, routing.label) for t, p in zip(traffics, placements)]))
    return res


def _merge_groups(topology: Topology, routing: Routing, traffics: Sequence[AbstractTraffic],
                  placements: Sequence[Placement]) -> list[tuple[Routing, list[int]]]:
    """``[(spec, points)]``: the points whose flows ``routing`` merges by router pair (:meth:`Routing.merge_pairs`),
    with the most slots any of them asks for, and those it routes flow by flow. Each point's own counts decide, as
    :func:`evaluator.evaluate` decides for it alone: merged and unmerged flows give the same loads only up to
    rounding, so a decision from the batch's largest counts made a point's numbers depend on the other points (an
    adaptive fixed point; padding the merged slots or the flows changes nothing). Until 2026-12-07: ``ft_adaptive``
    on a 2-level 4-ary fat tree, 8 tasks of multiples of 7,654,321 bytes, 0.026107761550387572 s alone,
    0.026107761550387576 s in a batch with a 15-task traffic (tests/test_audit_execution_shapes_more.py)."""
    specs = []
    for t, p in zip(traffics, placements):
        flows = [x.n_flows for x in t.phases if x.kernel_input == "flows"]
        specs.append(routing.merge_pairs(lambda t=t, p=p, f=max(flows, default=0): (
            bucket_size(router_pairs(topology, t, p, routing.label).size, 64), bucket_size(f))) if flows else routing)
    merged = [i for i, s in enumerate(specs) if s is not routing]
    if not merged or len(merged) == len(specs):
        return [(max(specs, key=lambda s: getattr(s, "pair_slots", 0)), list(range(len(specs))))]
    spec = max((specs[i] for i in merged), key=lambda s: s.pair_slots)  # (more slots, padded: the same loads)
    return [(routing, [i for i, s in enumerate(specs) if s is routing]), (spec, merged)]


def _checked_block(kern, topology: Topology, exchanges: Sequence[AbstractTraffic], n: int, keep: bool,
                   block_size: int, single: bool, block_name: str, phased: bool) -> int:
    """Points (phases) per device call, after the working set of that block is allowed (else refused, naming what
    weighs most). Phased traffic goes to the device :data:`~.phases.PHASE_BLOCK` phases a call where that fits
    (its phases are many where its points are few), else ``block_size`` as asked; the estimate is the block's
    that runs (an accelerator takes a block in one step: 1,024 phases weigh 16 times 64)."""
    if phased and PHASE_BLOCK > block_size:
        try:
            check_working_set(working_set(kern, topology, exchanges, PHASE_BLOCK, keep), n, PHASE_BLOCK, keep,
                              single, block_name)
            return PHASE_BLOCK
        except ResourceError:
            pass  # (the block asked for, checked below: a refusal then names it)
    check_working_set(working_set(kern, topology, exchanges, block_size, keep), n, block_size, keep, single,
                      block_name)
    return block_size
