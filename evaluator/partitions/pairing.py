"""Link-level confirmation of partition bisection: the bisection-pairing benchmark.

Oltchik & Schwartz (Sec. 4.1) pair every node with its furthest node and
exchange a fixed message; a contention-bound exchange should take time
inversely proportional to the partition's bisection. Here the core evaluator
predicts that time at link level (DOR in the machine's order, BG/Q
longest-dimension-first) for two geometries of the same size, so the
predicted time ratio can be set next to the bisection ratio. Each partition
runs the way its bisection is counted (:mod:`evaluator.partitions.bisection`):
a Blue Gene/Q partition as its own torus, a torus machine's (Cray Gemini)
prism routed over the bare host torus (``mode=embedded``, ``layout=ideal``,
``placement=subprism`` at the origin), its furthest-node pairs taken in the
prism with the ring/chain dimensions of :func:`effective_wrap`.
"""

from __future__ import annotations

import math

import dataclasses

import numpy as np
import xarray as xr

from ..dataset import with_units
from ..display import progress_bar
from ..errors import with_partial
from ..evaluation import evaluate
from ..machines import Machine, load_machine
from ..placement import linear, subprism
from ..routing import dor
from ..topology import machine_topology, torus
from ..traffic import bisection_pairing
from .bisection import effective_wrap
from .geometry import PartitionGeometry, analyse_size, feasible_sizes, size_list

__all__ = ["PairingResult", "pairing_time", "confirm_machine", "pairing_dataset"]


@dataclasses.dataclass(frozen=True)
class PairingResult:
    """Predicted bisection-pairing times of two geometries of one size (``a`` slower or equal)."""

    machine: str
    nodes: int
    a: PartitionGeometry
    b: PartitionGeometry
    time_a: float
    time_b: float
    which: str  # "allowed vs best" or "worst vs best"
    embedded: bool = False  # the prisms ran over the host torus (torus machines) rather than as their own tori

    @property
    def time_ratio(self) -> float:
        return self.time_a / self.time_b

    @property
    def bisection_ratio(self) -> float:
        """B's bisection bandwidth over A's (bytes/s: on a machine whose links differ in bandwidth, the link counts'
        ratio is not the time's; on one of equal links the same)."""
        return self.b.bisection.bandwidth / self.a.bisection.bandwidth


def pairing_time(machine: Machine, geometry: PartitionGeometry, bytes_per_pair: float = 2.0e9,
                 tie: str = "split") -> float:
    """Predicted completion time (s) of furthest-node pairs exchanging ``bytes_per_pair`` on one geometry.

    The partition runs as the machine runs its jobs (and as its bisection is counted): its own torus
    (``default_mode`` own, Blue Gene/Q) or a prism at the origin of the bare host torus (embedded, Cray
    Gemini), whose pairs are the furthest nodes of the prism with the wrap flags of :func:`effective_wrap`
    (a dimension that does not close is a chain: the mirror node).
    """
    shape = list(geometry.shape)
    order = "longest_first" if machine.routing_order == "longest_first" else "as_given"
    if machine.default_mode != "embedded":
        topo = machine_topology(machine, shape, mode="own")
        tr = bisection_pairing(topo, bytes_per_pair)
        ds = evaluate(topo, tr, linear(topo, topo.n_nodes), dor(order, tie))
        return float(ds.completion_time)
    host = machine_topology(machine, shape, mode="embedded",  # bare: no service or down node in the prism
                            layout="ideal" if machine.has_node_layout() else "real")
    prism = torus(shape, effective_wrap(shape, machine.dims, machine.wrap), machine.link_bandwidth,
                  machine.nodes_per_router)  # task t: the prism's node t, row-major then port, as subprism
    tr = bisection_pairing(prism, bytes_per_pair)
    ds = evaluate(host, tr, subprism(host, shape), dor(order, tie))
    return float(ds.completion_time)


def confirm_machine(machine: Machine | str, sizes: list[int] | None = None, bytes_per_pair: float = 2.0e9,
                    tie: str = "split", progress: bool = False) -> list[PairingResult]:
    """For every size where two geometries differ in bisection bandwidth, predict both pairing times.

    Machines with an allowed list compare the best allowed geometry with the
    best possible one (Oltchik Table 1); others the worst with the best (Table 2). Ascending size.
    ``progress`` shows a bar over the sizes (stderr): without ``sizes``, every feasible size of a machine
    without an allowed list (Blue Waters: 1,130) takes minutes. A Ctrl-C stops it and is raised again carrying
    ``.partial`` (:func:`~evaluator.errors.with_partial`): ``(results, sizes done, sizes asked)``, the results of
    the sizes finished, which ``evaluator partitions --pairing`` prints and writes.
    """
    m = load_machine(machine).torus("the pairing benchmark")
    out: list[PairingResult] = []
    asked = size_list(sizes)
    todo = feasible_sizes(m) if asked is None else asked
    done = 0
    try:
        for n in progress_bar(todo, enabled=progress and len(todo) >= 2, unit="size", desc=f"pairing on {m.name}",
                              leave=False):
            _confirm_size(m, n, bytes_per_pair, tie, out)
            done += 1
    except KeyboardInterrupt as stopped:
        raise with_partial(stopped, (sorted(out, key=lambda r: r.nodes), done, len(todo))) from None
    return sorted(out, key=lambda r: r.nodes)  # ascending size, whatever the order given


def _confirm_size(m, n: int, bytes_per_pair: float, tie: str, out: list) -> None:
    """Append size ``n``'s comparison to ``out`` where its two geometries differ in bisection bandwidth."""
    sa = analyse_size(m, n)
    if sa.has_allowed_list:
        if sa.best_allowed is None:
            return
        a, which = sa.best_allowed, "allowed vs best"
    else:
        a, which = sa.worst, "worst vs best"
    b = sa.best
    if math.isclose(a.bisection.bandwidth, b.bisection.bandwidth, rel_tol=1e-12):
        return  # the same bisection bandwidth (links of unequal bandwidth can differ with equal counts)
    out.append(PairingResult(m.name, n, a, b, pairing_time(m, a, bytes_per_pair, tie),
                             pairing_time(m, b, bytes_per_pair, tie), which, m.default_mode == "embedded"))


def pairing_dataset(results: list[PairingResult]) -> xr.Dataset:
    """The comparison as a dataset (one row per size)."""
    nodes = np.array([r.nodes for r in results], dtype=np.int64)
    ds = xr.Dataset(
        {
            "geometry_a": ("nodes", np.array([r.a.label for r in results], dtype=str)),
            "geometry_b": ("nodes", np.array([r.b.label for r in results], dtype=str)),
            "time_a": ("nodes", np.array([r.time_a for r in results]), {"units": "s"}),
            "time_b": ("nodes", np.array([r.time_b for r in results]), {"units": "s"}),
            "time_ratio": ("nodes", np.array([r.time_ratio for r in results]), {"units": "1"}),
            "bisection_ratio": ("nodes", np.array([r.bisection_ratio for r in results]), {"units": "1"}),
        },
        coords={"nodes": nodes},
    )
    if results:
        how = "prism routed over the host torus" if results[0].embedded else "partition as its own torus"
        ds.attrs.update({"machine": results[0].machine, "comparison": results[0].which,
                         "benchmark": f"furthest-node pairs, DOR, {how}"})
    return with_units(ds)
