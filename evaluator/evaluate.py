"""Evaluate design points: host-side batching around the JAX kernel, xarray output.

:func:`evaluate` answers one design point as an :class:`xarray.Dataset`;
:func:`evaluate_batch` answers many traffic/placement variants of one
(topology, routing) pair with one compilation per shape bucket. Traffic is
sparse (:class:`~evaluator.traffic.Traffic`) or dense rank-one
(:class:`~evaluator.traffic.DenseTraffic`, e.g. all-to-all on 49,152
nodes without its 2.4e9 flows).
"""

from __future__ import annotations

import collections
import dataclasses
import inspect
import math
import os
from collections.abc import Iterable, Sequence
from typing import Any

import jax
from jaxtyping import Float
import numpy as np
import xarray as xr

from ._version import __version__
from .dataset import METRIC_NAMES, PATH_METRIC_NAMES, LinkTable, results_dataset
from . import traffic as _traffic_pkg
from .errors import MEMORY_ENV, ConfigError, ResourceError, fmt_size, check_memory, positive_int, require
from .kernel import SCALAR_METRICS, DensePointInputs, PointInputs, batch_kernel, unpack_metrics
from .placement import Placement
from .routing import KINDS as ROUTING_KINDS
from .routing import Routing
from .topology import Topology
from .traffic import DenseTraffic, PhasedTraffic, Traffic

__all__ = ["evaluate", "evaluate_batch", "BatchResult", "bucket_size"]

def bucket_size(n: int, minimum: int = 16) -> int:
    """Shape bucket for ``n`` items (at least ``minimum``).

    The next power of two up to 64, above that the next of ``2**k`` times 1,
    1.25, 1.5 or 1.75: at most 25% padding, four buckets per doubling.
    """
    n = max(int(n), 1)
    p = 1 << max(0, math.ceil(math.log2(n)))
    if p > 64:
        quarter = p // 8  # p/2 is the previous power of two; steps of p/8
        p = -(-n // quarter) * quarter
    return max(minimum, p)


@dataclasses.dataclass
class BatchResult:
    """Per-point results of :func:`evaluate_batch` (NumPy, leading axis ``point``)."""

    topology: Topology
    routing: Routing
    metrics: dict[str, np.ndarray]
    link_load: Float[np.ndarray, "point link"] | None
    phases: dict[str, Any] | None = None
    """Phased traffic: ``names`` and ``[point, phase]`` arrays ``phase_completion_time``, ``phase_total_bytes``,
    ``phase_bottleneck_class`` (-1: no link used, -2: no such phase); None when no point is phased."""

    def bottleneck_names(self) -> np.ndarray:
        names = np.asarray(list(self.topology.class_names) + ["none"], dtype=object)
        return names[self.metrics["bottleneck_class"]].astype(str)

    def phase_bottleneck_names(self) -> np.ndarray:
        """``[point, phase]`` class of each phase's busiest link ("none"; "" where a point has no such phase)."""
        names = np.asarray(list(self.topology.class_names) + ["", "none"], dtype=object)
        c = self.phases["phase_bottleneck_class"]
        n_cls = len(self.topology.class_names)
        return names[np.where(c == -1, n_cls + 1, np.where(c == -2, n_cls, c))].astype(str)

    def to_dataset(self, dim: str = "variant") -> xr.Dataset:
        """Results as a dataset with dimension ``dim`` (and ``link`` if loads were kept)."""
        return _dataset(self, dim)


class _Shown:
    """A value shown in an error message by a short description (its ``repr``)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _short(value: Any, limit: int = 80) -> Any:
    """``value`` itself when its repr is one short line, else a short description of it."""
    r = repr(value)
    if len(r) <= limit and "\n" not in r:
        return value
    if isinstance(value, np.ndarray):
        return _Shown(f"<array of shape {value.shape}, dtype {value.dtype}>")
    return _Shown(r[: limit - 3] + "...")


def _a(type_name: str) -> str:
    if type_name == "NoneType":
        return "None"
    return ("an " if type_name[:1].lower() in "aeiou" else "a ") + type_name


def _builder_hint(name: str) -> str | None:
    """``evaluator.traffic.<name>(<required args>)`` when ``name`` is a traffic constructor."""
    fn = getattr(_traffic_pkg, name, None) if name.isidentifier() and not name.startswith("_") else None
    if not callable(fn) or isinstance(fn, type):
        return None
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):  # pragma: no cover - builtins
        params = ["..."]
    return f"evaluator.traffic.{name}({', '.join(params)})"


_EXPECTED = {
    "topology": (Topology, "a Topology (build one with evaluator.dragonfly(p, a, h) or evaluator.torus(dims))"),
    "traffic": ((Traffic, DenseTraffic, PhasedTraffic),
                "a Traffic, DenseTraffic or PhasedTraffic (build one with evaluator.traffic.all_to_all(n_tasks))"),
    "placement": (Placement, "a Placement (build one with evaluator.placement.linear(topology, n_tasks))"),
}


def _check_type(what: str, field: str, value: Any) -> None:
    """A :class:`ConfigError` naming ``field``, the value, its type and the expected type, unless it matches."""
    types, allowed = _EXPECTED[what]
    if isinstance(value, types):
        return
    hint = f"Got {_a(type(value).__name__)}."
    if what == "traffic" and isinstance(value, str) and _builder_hint(value):
        allowed = f"a Traffic or DenseTraffic (build one with {_builder_hint(value)})"
    raise ConfigError(field, _short(value), allowed, hint)


def _as_routing(routing: Any, field: str = "routing") -> Routing:
    """A :class:`Routing`; a registered routing kind's name gives that kind with its default parameters."""
    if isinstance(routing, Routing):
        return routing
    names = ", ".join(ROUTING_KINDS)
    if isinstance(routing, str) and routing in ROUTING_KINDS:
        kind = ROUTING_KINDS[routing]
        return kind.build(kind.schema())
    raise ConfigError(field, _short(routing), f"a Routing (e.g. evaluator.minimal(), evaluator.dor()) or the name "
                                              f"of a routing kind: {names}", f"Got {_a(type(routing).__name__)}.")


def _check_pair(topology: Topology, traffic: Traffic, placement: Placement, i: int | None = None,
                names: tuple[str, str] = ("traffic", "placement")) -> None:
    where = "" if i is None else f"[{i}]"
    if placement.n_nodes != topology.n_nodes:  # the message is built only when it is raised (once per point)
        raise ConfigError(f"{names[1]}{where}", placement.name,
                          f"a placement made for {topology.name} ({topology.n_nodes} nodes); it was made for "
                          f"{placement.n_nodes} nodes")
    if traffic.n_tasks != placement.n_tasks:
        raise ConfigError(f"{names[1]}{where}.n_tasks", placement.n_tasks,
                          f"the traffic's task count {traffic.n_tasks} ({traffic.name})",
                          "Traffic and placement must describe the same tasks.")


def _as_list(what: str, name: str, items: Any) -> list:
    """One item (``what``: traffic or placement) or a sequence of them, each checked."""
    types, _ = _EXPECTED[what]
    if isinstance(items, types):
        return [items]
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Iterable):
        _check_type(what, name, items)
    out = list(items)
    for i, x in enumerate(out):
        _check_type(what, f"{name}[{i}]", x)
    return out


def _broadcast(traffics, placements, names: tuple[str, str] = ("traffics", "placements")):
    traffics = _as_list("traffic", names[0], traffics)
    placements = _as_list("placement", names[1], placements)
    n = max(len(traffics), len(placements))
    if len(traffics) == 1:
        traffics = traffics * n
    if len(placements) == 1:
        placements = placements * n
    require(len(traffics) == len(placements), names[1], len(placements),
            f"one placement, or as many as traffics ({len(traffics)})")
    require(n > 0, names[0], 0, "at least one design point")
    return traffics, placements


CHUNK_BYTES = 256 << 10
"""CPU: aim at about this many bytes of working set per vmapped chunk (caches, not memory bandwidth)."""


def _sizes(chunk_size: int, n: int, per_point_bytes: int) -> tuple[int, int]:
    """``(block, chunk)``: points per device call and points per vmapped step inside it.

    ``block`` is ``chunk_size`` (at most ``n``, to its bucket), as before. On
    CPU the block is evaluated ``chunk`` points at a time, ``chunk`` small
    enough that a step's intermediates stay in cache (measured: 2-5x faster
    than 64 points of 6,144 flows at once); accelerators take the whole
    block in one step.
    """
    block = min(chunk_size, bucket_size(n, minimum=1))
    chunk = block
    if jax.default_backend() == "cpu":
        fit = max(1, CHUNK_BYTES // max(per_point_bytes, 1))
        chunk = min(block, 1 << (fit.bit_length() - 1))
    block = -(-block // chunk) * chunk
    return block, chunk


def _to_device(arrays):
    """The one host-to-device transfer of a block (a pytree of NumPy arrays)."""
    return jax.device_put(arrays)


_FLOW_CACHE: "collections.OrderedDict[tuple[int, int], tuple]" = collections.OrderedDict()


def _device_flows(t: Traffic, F: int) -> tuple:
    """A shared flow list padded to ``F`` on the device (cached for the last few traffics)."""
    key = (id(t), F)
    hit = _FLOW_CACHE.get(key)
    if hit is not None and hit[0] is t:
        _FLOW_CACHE.move_to_end(key)
        return hit[1]
    src = np.zeros(F, np.int32)
    dst = np.zeros(F, np.int32)
    nb = np.zeros(F, np.float64)
    src[: t.n_flows] = t.src
    dst[: t.n_flows] = t.dst
    nb[: t.n_flows] = t.nbytes
    arrays = _to_device((src, dst, nb, np.int32(_n_senders(t))))
    _FLOW_CACHE[key] = (t, arrays)  # holds t, so its id is not reused while cached
    while len(_FLOW_CACHE) > 8:
        _FLOW_CACHE.popitem(last=False)
    return arrays


def _blocks(n: int, block: int):
    """``(slice, pad)`` of every block; the last one is padded by repeating its last point (the kernel skips the
    padding: ``n_valid``)."""
    for start in range(0, n, block):
        stop = min(start + block, n)
        yield slice(start, stop), block - (stop - start)


def _take(a: np.ndarray, sl: slice, pad: int) -> np.ndarray:
    x = a[sl]
    return np.concatenate([x, np.repeat(x[-1:], pad, axis=0)]) if pad else x


def _task_nodes(placements: Sequence[Placement], T: int) -> np.ndarray:
    rows = [p.task_node for p in placements]
    if len({r.size for r in rows}) == 1:  # one task count (a placement sweep): one copy (np.stack: 6x slower)
        tn = np.zeros((len(rows), T), np.int32)
        tn[:, : rows[0].size] = np.concatenate(rows).reshape(len(rows), rows[0].size)
        return tn
    tn = np.zeros((len(placements), T), np.int32)
    for i, r in enumerate(rows):
        tn[i, : r.size] = r
    return tn


def _n_senders(t: Traffic) -> int:
    """Tasks that send a positive number of bytes."""
    return int(np.count_nonzero(_senders(t)))


def _run_flows(kern, traffics: list[Traffic], placements: list[Placement], chunk_size: int,
               flow_bucket: int | None = None) -> list:
    """Dispatch every block of sparse-flow points; returns device results (not yet fetched).

    ``flow_bucket`` fixes the padded flow count (at least the largest traffic's), so that calls with
    different traffics share one compilation (the phases of phased traffic).
    """
    n = len(traffics)
    F = max(flow_bucket or 0, bucket_size(max(t.n_flows for t in traffics)))
    T = bucket_size(max(t.n_tasks for t in traffics))
    block, chunk = _sizes(chunk_size, n, 40 * F + 24 * kern.n_links)
    tn = _task_nodes(placements, T)
    pending = []
    first = traffics[0]
    if all(t is first for t in traffics):
        # One flow list for every point (a placement sweep): the flows are on the device
        # already; each block transfers only its task_node rows.
        flows = _device_flows(first, F)
        for sl, pad in _blocks(n, block):
            rows, n_valid = _to_device((_take(tn, sl, pad), np.int32(block - pad)))
            pending.append((kern.fn.shared(kern.net, rows, *flows, chunk=chunk, n_valid=n_valid), pad))
        return pending
    src = np.zeros((n, F), np.int32)
    dst = np.zeros((n, F), np.int32)
    nb = np.zeros((n, F), np.float64)
    senders = np.zeros(n, np.int32)
    counted: dict[int, int] = {}
    for i, t in enumerate(traffics):
        src[i, : t.n_flows] = t.src
        dst[i, : t.n_flows] = t.dst
        nb[i, : t.n_flows] = t.nbytes
        if id(t) not in counted:
            counted[id(t)] = _n_senders(t)
        senders[i] = counted[id(t)]
    for sl, pad in _blocks(n, block):
        *arrays, n_valid = _to_device(tuple(_take(a, sl, pad) for a in (tn, src, dst, nb, senders))
                                      + (np.int32(block - pad),))
        pending.append((kern.fn(kern.net, PointInputs(*arrays), chunk=chunk, n_valid=n_valid), pad))
    return pending


def _run_dense(kern, traffics: list[DenseTraffic], placements: list[Placement], chunk_size: int) -> list:
    """Dispatch every block of dense-traffic points; returns device results (not yet fetched)."""
    n = len(traffics)
    T = bucket_size(max(t.n_tasks for t in traffics))
    block, chunk = _sizes(chunk_size, n, 24 * T + 24 * kern.n_links)
    tn = _task_nodes(placements, T)
    ws = np.zeros((n, T))
    wd = np.zeros((n, T))
    b = np.zeros(n)
    for i, t in enumerate(traffics):
        ws[i, : t.n_tasks] = t.src_weight
        wd[i, : t.n_tasks] = t.dst_weight
        b[i] = t.bytes_per_pair
    pending = []
    for sl, pad in _blocks(n, block):
        *arrays, n_valid = _to_device(tuple(_take(a, sl, pad) for a in (tn, ws, wd, b)) + (np.int32(block - pad),))
        pending.append((kern.fn.dense(kern.net, DensePointInputs(*arrays), chunk=chunk, n_valid=n_valid), pad))
    return pending


def _fetch(pending: list) -> dict[str, np.ndarray]:
    """Bring dispatched results to the host (after every block is queued) and concatenate."""
    metrics, loads = [], []
    for (packed, link_load), pad in pending:
        keep = packed.shape[0] - pad
        metrics.append(np.asarray(packed)[:keep])
        if link_load is not None:
            loads.append(np.asarray(link_load)[:keep])
    out = unpack_metrics(np.concatenate(metrics))
    if loads:
        out["link_load"] = np.concatenate(loads)
    return out


# --------------------------------------------------------------------------------------
# working-set estimate (refuse before allocating)
# --------------------------------------------------------------------------------------


def _nbytes(var) -> int:
    aval = getattr(var, "aval", None)
    shape, dtype = getattr(aval, "shape", None), getattr(aval, "dtype", None)
    if shape is None or dtype is None:
        return 0
    try:
        return math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize
    except TypeError:  # extended dtypes (keys, tokens)
        return 0


def _sub_jaxprs(params: dict):
    for p in params.values():
        for q in p if isinstance(p, (tuple, list)) else (p,):
            if hasattr(q, "eqns"):
                yield q
            elif hasattr(getattr(q, "jaxpr", None), "eqns"):
                yield q.jaxpr


def _is_var(v) -> bool:
    return hasattr(v, "aval") and not hasattr(v, "val")  # a Var, not a Literal


_ALIASES = frozenset({"reshape", "squeeze", "expand_dims", "slice", "dynamic_update_slice"})
"""Primitives whose result XLA keeps as a view of (or fuses into the readers of) their input, or writes into
their first operand in place (``dynamic_update_slice``: a loop filling its output block by block)."""


def _carried(eqn) -> list:
    """``(outvar, invar)`` pairs of a ``while`` loop's carried values (XLA updates the carry in place)."""
    if eqn.primitive.name != "while":
        return []
    skip = eqn.params["cond_nconsts"] + eqn.params["body_nconsts"]
    return list(zip(eqn.outvars, eqn.invars[skip:]))


def jaxpr_peak_bytes(jaxpr) -> int:
    """Peak bytes of the values live at once while ``jaxpr`` runs, inputs and outputs included.

    Equations run in order; an equation's outputs are allocated while its
    inputs are live, and a value is freed after its last use (a reshape or
    static slice is a view: it keeps its input alive instead); a nested
    program (``pjit``, ``scan``, ``while``, ``cond``) adds its own peak beyond
    its inputs; a ``while`` loop's carried values are updated in place. XLA
    fuses element-wise chains and updates scatters in place, so its own
    buffer assignment is usually smaller: on CPU this bound is
    0.9-2x of it (Mira 5D stencil under DOR 1.2x, DF(8,16,8) stencil under
    Valiant 1.9x, a 100^3 torus random permutation 0.9x).
    """
    jx = getattr(jaxpr, "jaxpr", jaxpr)
    root: dict = {}  # view -> the value it views
    for eqn in jx.eqns:
        if eqn.primitive.name in _ALIASES and len(eqn.outvars) == 1 and _is_var(eqn.invars[0]):
            root[eqn.outvars[0]] = root.get(eqn.invars[0], eqn.invars[0])
        for out, inp in _carried(eqn):
            if _is_var(inp):
                root[out] = root.get(inp, inp)
    last: dict = {}
    for i, eqn in enumerate(jx.eqns):
        for v in eqn.invars:
            if _is_var(v):
                last[root.get(v, v)] = i
    for v in jx.outvars:
        if _is_var(v):
            last[root.get(v, v)] = len(jx.eqns)
    inputs = set(jx.invars) | set(jx.constvars)
    live = sum(_nbytes(v) for v in inputs)
    peak = live
    for i, eqn in enumerate(jx.eqns):
        inner = 0
        for sub in _sub_jaxprs(eqn.params):
            own = sum(_nbytes(v) for v in list(sub.invars) + list(sub.constvars))
            inner = max(inner, jaxpr_peak_bytes(sub) - own)
        outs = [v for v in eqn.outvars if v not in root]
        out = sum(_nbytes(v) for v in outs)
        peak = max(peak, live + inner + out)
        live += out
        for v in {root.get(v, v) for v in eqn.invars if _is_var(v)}:
            if last.get(v) == i and v not in inputs:
                live -= _nbytes(v)
        for v in outs:
            if v not in last:
                live -= _nbytes(v)
    return peak


_PEAK_CACHE: "collections.OrderedDict[tuple, tuple]" = collections.OrderedDict()


def _block_peak(kern, variant: str, args: tuple, chunk: int) -> int:
    """Peak bytes of one block call, from its traced program (cached per kernel and shapes)."""
    shapes = tuple((tuple(a.shape), str(a.dtype)) for a in jax.tree_util.tree_leaves(args))
    key = (id(kern.fn), variant, shapes, chunk)
    hit = _PEAK_CACHE.get(key)
    if hit is not None and hit[0] is kern.fn:
        return hit[1]
    # from the program store when a previous process stored this program (no tracing), else traced and measured
    peak = kern.fn.peak_bytes(variant, kern.net, *args, chunk=chunk, measure=jaxpr_peak_bytes)
    _PEAK_CACHE[key] = (kern.fn, peak)  # holds the kernels, so their id is not reused while cached
    while len(_PEAK_CACHE) > 32:
        _PEAK_CACHE.popitem(last=False)
    return peak


def _struct(shape: tuple, dtype) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, np.dtype(dtype))


def _working_set(kern, topology: Topology, traffics: list, chunk_size: int, keep: bool) -> dict[str, int]:
    """Bytes an :func:`evaluate_batch` call allocates, by what they hold, before any of it is allocated.

    * ``inputs``: the host arrays the blocks are cut from: ``points x flows x
      16`` bytes (source, destination, bytes) and ``points x tasks x 4`` (task
      nodes); dense traffic ``points x tasks x 20``;
    * ``block``: one block call on the device (``chunk_size`` points, the
      largest part), the peak of its traced program (:func:`jaxpr_peak_bytes`):
      the block's inputs, its outputs and the kernel's intermediates, e.g. the
      routing's per-point buffers times the points evaluated at once;
    * ``results``: the metrics of every point, plus ``points x links x 8``
      with ``keep_link_load``, three times (device, host copy, concatenation).
    """
    n_cols = len(SCALAR_METRICS) + len(topology.class_names)
    need = {"inputs": 0, "block": 0, "results": 0, "link_load": 0}
    is_dense = [isinstance(t, DenseTraffic) for t in traffics]
    for dense in (False, True):
        ts = [t for t, d in zip(traffics, is_dense) if d == dense]
        if not ts:
            continue
        n = len(ts)
        T = bucket_size(max(t.n_tasks for t in ts))
        if dense:
            block, chunk = _sizes(chunk_size, n, 24 * T + 24 * kern.n_links)
            need["inputs"] += n * T * 20 + n * 8
            args = (DensePointInputs(_struct((block, T), np.int32), _struct((block, T), np.float64),
                                     _struct((block, T), np.float64), _struct((block,), np.float64)),)
            variant = "dense"
        else:
            F = bucket_size(max(t.n_flows for t in ts))
            block, chunk = _sizes(chunk_size, n, 40 * F + 24 * kern.n_links)
            tn = _struct((block, T), np.int32)
            if all(t is ts[0] for t in ts):
                need["inputs"] += n * T * 4 + F * 16
                args = (tn, _struct((F,), np.int32), _struct((F,), np.int32), _struct((F,), np.float64),
                        _struct((), np.int32))
                variant = "shared"
            else:
                need["inputs"] += n * (F * 16 + T * 4 + 4)
                args = (PointInputs(tn, _struct((block, F), np.int32), _struct((block, F), np.int32),
                                    _struct((block, F), np.float64), _struct((block,), np.int32)),)
                variant = "per_point"
        need["block"] = max(need["block"], _block_peak(kern, variant, args, chunk))
        n_pad = -(-n // block) * block
        need["results"] += 3 * n_pad * n_cols * 8
        if keep:
            need["link_load"] += 3 * n_pad * kern.n_links * 8
        need["points_per_block"] = max(need.get("points_per_block", 0), block)
        need["flows"] = max(need.get("flows", 0), 0 if dense else F)
    return need


def _device_memory() -> tuple[str, int] | None:
    """``(device kind, free bytes)`` of the accelerator the kernels run on; None on CPU (host memory)."""
    if jax.default_backend() == "cpu":
        return None
    dev = jax.local_devices()[0]
    try:
        stats = dev.memory_stats() or {}
    except Exception:  # pragma: no cover - backends without memory statistics
        return None
    if "bytes_limit" not in stats:
        return None
    have = int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    env = os.environ.get(MEMORY_ENV)
    if env:
        have = min(have, int(float(env)))
    return str(getattr(dev, "device_kind", dev.platform)), have


def _check_working_set(need: dict[str, int], n: int, chunk_size: int, keep: bool, single: bool) -> None:
    """Refuse with a :class:`~evaluator.errors.ResourceError` naming the argument that weighs most.

    On CPU everything is host memory (:func:`~evaluator.errors.check_memory`).
    On an accelerator the block and one copy of the results are checked
    against the device's free memory, the inputs and two copies of the
    results against the host's.
    """
    block = need["points_per_block"]
    parts = [f"flow and task arrays {fmt_size(need['inputs'])}",
             f"one block of {block} point{'s' if block != 1 else ''} on the device {fmt_size(need['block'])}"]
    if keep:
        parts.append(f"link loads {fmt_size(need['link_load'])}")
    what = f"{n} point{'s' if n != 1 else ''} ({', '.join(parts)})"
    tname = "traffic" if single else "traffics"
    if keep and not single and need["link_load"] >= max(need["inputs"], need["block"]):
        field, value, hint = "keep_link_load", True, ("keep_link_load=False keeps only the metrics (or evaluate "
                                                       "fewer points per call).")
    elif block > 1 and need["block"] >= need["inputs"]:
        field, value = "chunk_size", chunk_size
        hint = f"Lower chunk_size (one point needs about {fmt_size(need['block'] / block)})."
    else:
        field = tname
        value = _Shown(f"<{n} traffic{'s' if n != 1 else ''}, up to {need['flows']:,} flows each>")
        hint = ("Evaluate fewer or smaller traffics per call." if n > 1 else
                "Use a smaller traffic (fewer flows) or a smaller network.")
    results = need["results"] + need["link_load"]  # three copies: device, host, concatenated
    device = _device_memory()
    if device is None:
        check_memory(field, value, need["inputs"] + need["block"] + results, what, hint)
        return
    check_memory(field, value, need["inputs"] + results * 2 // 3, what, hint)
    kind, have = device
    dev_need = need["block"] + results // 3
    if dev_need > 0.8 * have:
        raise ResourceError(field, value, f"a size that fits in the memory of the {kind}: {what} need about "
                                          f"{fmt_size(dev_need)} there, {fmt_size(have)} is free", hint)


def evaluate_batch(
    topology: Topology,
    routing: Routing | str,
    traffics: Traffic | DenseTraffic | Sequence[Traffic | DenseTraffic],
    placements: Placement | Sequence[Placement],
    keep_link_load: bool = False,
    chunk_size: int = 64,
) -> BatchResult:
    """Evaluate many traffic/placement variants of one (topology, routing).

    ``traffics`` and ``placements`` are sequences of equal length, or a single
    item broadcast against the other. A traffic is a sparse
    :class:`~evaluator.traffic.Traffic` or a dense
    :class:`~evaluator.traffic.DenseTraffic` (never materialised).

    Flow and task arrays are padded to a shape bucket (:func:`bucket_size`)
    and the points go to the device in blocks of ``chunk_size`` (one
    transfer and one call per block), so the kernel compiles once per
    bucket and a second block compiles nothing. Inside a call the block is
    evaluated a few points at a time (on CPU as many as stay in cache, often
    one; on an accelerator the whole block). When every point shares one
    flow list (a placement sweep) the flows are transferred once and each
    block carries only its placements. All blocks are queued before any
    result is fetched; link loads are reduced to the metrics on the device
    and returned only with ``keep_link_load`` (memory: points x links x 8
    bytes). ``metrics`` holds per-point NumPy arrays: ``completion_time``
    (s), ``throughput`` and ``effective_injection_bandwidth`` (bytes/s),
    ``bottleneck_class`` and ``bottleneck_link`` (-1: no link used),
    ``mean_hops``, ``total_bytes``, ``off_node_bytes`` (bytes between tasks on different nodes; the on-node
    share is ``1 - off_node_bytes / total_bytes``), ``max_load_class[point, class]``
    (bytes) and ``paths_per_pair`` (the mean number of router paths a communicating router pair's bytes are
    spread over: 1 for DOR, NaN for the Dragonfly routings; see :data:`evaluator.dataset.PATH_METRICS`).

    ``routing`` may be a registered routing kind's name (``"minimal"``: that
    kind with its default parameters). An argument of the wrong type is a
    :class:`~evaluator.errors.ConfigError` naming it, the type given and the
    type expected. A call whose arrays would not fit in memory (estimated
    before anything is allocated: flow and task arrays, one block on the
    device from its traced program, the results; see :func:`_working_set`)
    is refused with a :class:`~evaluator.errors.ResourceError` naming the
    argument that weighs most (``traffics``, ``chunk_size`` or
    ``keep_link_load``).
    """
    return _evaluate_batch(topology, routing, traffics, placements, keep_link_load, chunk_size, single=False)


def _evaluate_batch(topology, routing, traffics, placements, keep_link_load, chunk_size, single: bool,
                    pair_keys: list | None = None) -> BatchResult:
    names = ("traffic", "placement") if single else ("traffics", "placements")
    _check_type("topology", "topology", topology)
    traffics, placements = _broadcast(traffics, placements, names)
    routing = _as_routing(routing)
    n = len(traffics)
    for i, (t, p) in enumerate(zip(traffics, placements)):
        _check_pair(topology, t, p, None if n == 1 else i)
    chunk_size = positive_int("chunk_size", chunk_size)
    kind = ROUTING_KINDS[routing.kind]
    if kind.bind is not None and getattr(routing, "pairs", None) is None:
        return _evaluate_bound(topology, routing, kind, traffics, placements, keep_link_load, chunk_size, single)
    kern = batch_kernel(topology, routing, bool(keep_link_load))
    exchanges = [x for t in traffics for x in (t.phases if isinstance(t, PhasedTraffic) else (t,))]
    _check_working_set(_working_set(kern, topology, exchanges, chunk_size, bool(keep_link_load)), n, chunk_size,
                       bool(keep_link_load), single)
    if any(isinstance(t, PhasedTraffic) for t in traffics):
        res = _evaluate_phased(kern, topology, routing, traffics, placements, chunk_size)
    else:
        merged = _evaluate_flat(kern, traffics, placements, chunk_size)
        loads = merged.pop("link_load", None)
        res = BatchResult(topology, routing, merged, loads)
    res.metrics["paths_per_pair"] = _paths_per_pair(topology, routing, kind, kern.operator, traffics, placements,
                                                    pair_keys)
    return res


def _paths_per_pair(topology, routing, kind, op, traffics, placements, pair_keys) -> np.ndarray:
    """``paths_per_pair`` of every point (:data:`evaluator.dataset.PATH_METRICS`).

    A path set bound to its pairs: the mean over the point's communicating
    router pairs of the router paths its operator spreads each pair's bytes
    over (:func:`evaluator.routing._paths.paths_per_pair`; ``pair_keys``: the
    points' pair keys when the caller has them). Any other routing: one
    value for every point (1 for DOR, NaN for the Dragonfly expectations).
    """
    from .routing import _paths

    n = len(traffics)
    if kind.bind is None or op.pair_paths is None:
        return np.full(n, _paths.constant_paths_per_pair(kind))
    if pair_keys is None:
        pair_keys = [_router_pairs(topology, t, p, routing.label) for t, p in zip(traffics, placements)]
    return _paths.paths_per_pair(op, pair_keys)


def _router_pairs(topology: Topology, traffic, placement: Placement, label: str = "path set",
                  with_bytes: bool = False, check_size=None):
    """Sorted keys ``src * R + dst`` of the router pairs ``src != dst`` that one point's exchanges load.

    Sparse flows: the pairs of flows with bytes; dense traffic: every pair of
    a router holding a task with source weight and one holding a task with
    destination weight (DenseTraffic's demand; pairs on one router excluded). ``check_size(n_pairs)``
    (optional, e.g. a path-set routing's :meth:`~evaluator.routing._paths.PathSetRouting.check_size`) is
    called with a dense phase's exact pair count before its pairs are listed.
    ``with_bytes``: also the bytes of every pair, summed over flows and phases
    (dense: ``bytes_per_pair * U[s] * V[d]`` with ``U``, ``V`` the weights
    summed per router), as ``(keys, bytes)``.
    """
    R = int(topology.n_routers)
    node_router = topology.node_router
    tr = node_router[np.asarray(placement.task_node)]
    keys, nbytes = [], []
    for x in (traffic.phases if isinstance(traffic, PhasedTraffic) else (traffic,)):
        if isinstance(x, DenseTraffic):
            su = np.unique(tr[x.src_weight > 0])
            dv = np.unique(tr[x.dst_weight > 0])
            if check_size is not None:  # exact: every (s, d) of su x dv with s != d
                check_size(int(su.size) * int(dv.size) - int(np.intersect1d(su, dv, assume_unique=True).size))
            check_memory("routing", label, 48.0 * su.size * dv.size,
                         f"the router pairs of {x.name} ({su.size:,} x {dv.size:,}) for a path-set routing",
                         "Use a routing without path sets (dor, minimal, valiant) for dense traffic on this many "
                         "routers, or a sparse traffic.")
            s, d = np.repeat(su, dv.size), np.tile(dv, su.size)
            U = np.bincount(tr, weights=x.src_weight, minlength=R)
            V = np.bincount(tr, weights=x.dst_weight, minlength=R)
            b = float(x.bytes_per_pair) * U[s] * V[d]
        else:
            live = np.asarray(x.nbytes) > 0
            s, d = tr[np.asarray(x.src)[live]], tr[np.asarray(x.dst)[live]]
            b = np.asarray(x.nbytes, np.float64)[live]
        keep = s != d
        keys.append(s[keep].astype(np.int64) * R + d[keep])
        nbytes.append(b[keep])
    k = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    if not with_bytes:
        return np.unique(k)
    return k, (np.concatenate(nbytes) if nbytes else np.zeros(0))


def _evaluate_bound(topology, routing, kind, traffics, placements, keep_link_load, chunk_size, single) -> BatchResult:
    """A path-set routing (:mod:`evaluator.routing._paths`): bind it to the router pairs of the points, evaluate.

    Paths that do not depend on the other pairs (``kind.joint_pairs`` False,
    e.g. ``kshortest``) are built once for the union of the points' pairs;
    otherwise (``optiq_heuristic``) points are grouped by their pair set, one
    operator per group, and the results put back in input order;
    ``optiq_lp`` groups by pair set and bytes per pair (its split is solved for the demand).
    """
    from .routing import PairSet

    R = int(topology.n_routers)
    size_of = getattr(routing, "check_size", None)
    check = None if size_of is None else (lambda n: size_of(topology, n))
    if kind.pair_demand:
        keys = [_router_pairs(topology, t, p, routing.label, with_bytes=True, check_size=check)
                for t, p in zip(traffics, placements)]
    else:
        keys = [_router_pairs(topology, t, p, routing.label, check_size=check) for t, p in zip(traffics, placements)]
    if not (kind.joint_pairs or kind.pair_demand):
        groups = {0: list(range(len(traffics)))}
        sets = {0: PairSet(np.concatenate(keys), R)}
    else:
        groups, sets = {}, {}
        for i, k in enumerate(keys):
            ps = PairSet(k[0], R, k[1]) if kind.pair_demand else PairSet(k, R)
            groups.setdefault(ps, []).append(i)
            sets[ps] = ps
    results = []
    for gk, idx in groups.items():
        bound = kind.bind(routing, sets[gk])
        point_keys = [keys[i][0] if kind.pair_demand else keys[i] for i in idx]
        results.append((idx, _evaluate_batch(topology, bound, [traffics[i] for i in idx],
                                             [placements[i] for i in idx], keep_link_load, chunk_size, single,
                                             pair_keys=point_keys)))
    if len(results) == 1:
        res = results[0][1]
        return BatchResult(topology, routing, res.metrics, res.link_load, res.phases)
    n = len(traffics)
    metrics = {}
    for key, first in results[0][1].metrics.items():
        out = np.empty((n,) + first.shape[1:], dtype=first.dtype)
        for idx, res in results:
            out[idx] = res.metrics[key]
        metrics[key] = out
    loads = None
    if results[0][1].link_load is not None:
        loads = np.empty((n,) + results[0][1].link_load.shape[1:])
        for idx, res in results:
            loads[idx] = res.link_load
    phases = None
    if any(res.phases is not None for _, res in results):
        P = max(res.phases["phase_completion_time"].shape[1] for _, res in results if res.phases is not None)
        phases = {"names": _phase_names(list(traffics), P),
                  "phase_completion_time": np.full((n, P), np.nan), "phase_total_bytes": np.full((n, P), np.nan),
                  "phase_bottleneck_class": np.full((n, P), -2, np.int64)}
        for idx, res in results:
            ph = res.phases
            if ph is None:  # plain exchanges: one phase
                phases["phase_completion_time"][idx, 0] = res.metrics["completion_time"]
                phases["phase_total_bytes"][idx, 0] = res.metrics["total_bytes"]
                phases["phase_bottleneck_class"][idx, 0] = res.metrics["bottleneck_class"]
                continue
            k = ph["phase_completion_time"].shape[1]
            for name in ("phase_completion_time", "phase_total_bytes", "phase_bottleneck_class"):
                phases[name][idx, :k] = ph[name]
    return BatchResult(topology, routing, metrics, loads, phases)


def _evaluate_flat(kern, traffics: list, placements: list, chunk_size: int, flow_bucket: int | None = None) -> dict:
    """Metrics (and ``link_load`` if the kernel keeps it) of single exchanges, in input order."""
    n = len(traffics)
    is_dense = np.array([isinstance(t, DenseTraffic) for t in traffics])
    parts = []
    for mask, run in ((~is_dense, _run_flows), (is_dense, _run_dense)):
        idx = np.nonzero(mask)[0]
        if idx.size:
            pend = run(kern, [traffics[i] for i in idx], [placements[i] for i in idx], chunk_size,
                       **({} if run is _run_dense else {"flow_bucket": flow_bucket}))
            parts.append((idx, pend))
    fetched = [(idx, _fetch(pend)) for idx, pend in parts]
    if len(fetched) == 1:
        merged = fetched[0][1]
    else:
        merged = {}
        for k in fetched[0][1]:
            first = fetched[0][1][k]
            out = np.empty((n,) + first.shape[1:], dtype=first.dtype)
            for idx, res in fetched:
                out[idx] = res[k]
            merged[k] = out
    return merged


def _senders(t) -> np.ndarray:
    """Tasks of one exchange that send a positive number of bytes (as the kernels count them)."""
    if isinstance(t, DenseTraffic):
        return (t.src_weight > 0) & (t.dst_weight.sum() - t.dst_weight > 0)
    return np.bincount(t.src, weights=t.nbytes, minlength=t.n_tasks) > 0


def _phase_names(traffics: list, n_phases: int) -> list[str]:
    """Labels of the phase axis: the phased traffics' own when they agree, else ``phase0``, ``phase1``, ..."""
    labels = {t.phase_names for t in traffics if isinstance(t, PhasedTraffic) and t.n_phases == n_phases}
    return list(labels.pop()) if len(labels) == 1 else [f"phase{k}" for k in range(n_phases)]


def _evaluate_phased(kern, topology, routing, traffics: list, placements: list, chunk_size: int) -> BatchResult:
    """Phased points: every phase an exchange of its own, evaluated phase by phase in one flow bucket, then combined.

    A point's ``completion_time`` is the sum of its phases' times, ``total_bytes``
    and link loads the sums, ``mean_hops`` the off-node-byte-weighted mean,
    ``max_load_<class>`` the largest over the phases, and the bottleneck that
    of the longest phase (the first one on a tie). A plain exchange is one
    phase and keeps its numbers exactly.
    """
    n = len(traffics)
    phases = [t.phases if isinstance(t, PhasedTraffic) else (t,) for t in traffics]
    P = max(len(ph) for ph in phases)
    sparse = [x for ph in phases for x in ph if not isinstance(x, DenseTraffic)]
    F = bucket_size(max(x.n_flows for x in sparse)) if sparse else None
    per_phase = []
    for k in range(P):
        idx = [i for i in range(n) if len(phases[i]) > k]
        out = _evaluate_flat(kern, [phases[i][k] for i in idx], [placements[i] for i in idx], chunk_size,
                             flow_bucket=F)
        per_phase.append((np.asarray(idx), out))
    n_cls = len(topology.class_names)
    t_ph = np.full((n, P), np.nan)
    b_ph = np.full((n, P), np.nan)
    cls_ph = np.full((n, P), -2, np.int64)
    link_ph = np.full((n, P), -1, np.int64)
    off = np.zeros((n, P))
    hops = np.zeros((n, P))
    maxc = np.full((n, n_cls), -np.inf)
    loads = None
    for k, (idx, out) in enumerate(per_phase):
        t_ph[idx, k] = out["completion_time"]
        b_ph[idx, k] = out["total_bytes"]
        cls_ph[idx, k] = out["bottleneck_class"]
        link_ph[idx, k] = out["bottleneck_link"]
        off[idx, k] = out["off_node_bytes"]
        hops[idx, k] = out["mean_hops"] * out["off_node_bytes"]
        maxc[idx] = np.maximum(maxc[idx], out["max_load_class"])
        if "link_load" in out:
            if loads is None:
                loads = np.zeros((n, out["link_load"].shape[1]))
            loads[idx] += out["link_load"]
    time = np.nansum(t_ph, axis=1)
    total = np.nansum(b_ph, axis=1)
    off_total = off.sum(1)
    senders = np.array([int(np.any([_senders(x) for x in ph], axis=0).sum()) for ph in phases], dtype=np.float64)
    busy = time > 0
    safe = np.where(busy, time, 1.0)
    empty = np.where(total > 0, np.inf, np.nan)
    worst = np.argmax(np.where(np.isnan(t_ph), -np.inf, t_ph), axis=1)
    rows = np.arange(n)
    metrics = {
        "completion_time": time,
        "throughput": np.where(busy, total / safe, empty),
        "effective_injection_bandwidth": np.where(busy, total / np.maximum(senders, 1.0) / safe, empty),
        "mean_hops": np.where(off_total > 0, hops.sum(1) / np.where(off_total > 0, off_total, 1.0), 0.0),
        "total_bytes": total,
        "bottleneck_class": np.where(busy, cls_ph[rows, worst], -1),
        "bottleneck_link": np.where(busy, link_ph[rows, worst], -1),
        "off_node_bytes": off_total,
        "max_load_class": maxc,
    }
    # A plain exchange (one phase) keeps its own numbers exactly.
    plain = np.array([not isinstance(t, PhasedTraffic) for t in traffics])
    if plain.any():
        idx0, out0 = per_phase[0]
        for key in metrics:
            metrics[key][plain] = out0[key][plain[idx0]]
    phase_info = {"names": _phase_names(traffics, P), "phase_completion_time": t_ph, "phase_total_bytes": b_ph,
                  "phase_bottleneck_class": cls_ph}
    return BatchResult(topology, routing, metrics, loads, phase_info)


def _dataset(res: BatchResult, dim: str | None) -> xr.Dataset:
    topo = res.topology
    m = res.metrics
    n = m["completion_time"].shape[0]
    dims, shape = ((dim,), (n,)) if dim else ((), ())
    return results_dataset(
        dims, shape,
        metrics={k: m[k] for k in METRIC_NAMES + PATH_METRIC_NAMES if k in m},
        max_load={c: m["max_load_class"][:, i] for i, c in enumerate(topo.class_names)},
        bottleneck=res.bottleneck_names(),
        link_load=res.link_load,
        links=LinkTable.of(topo) if res.link_load is not None else None,
        phases=None if res.phases is None else {
            "names": res.phases["names"], "phase_completion_time": res.phases["phase_completion_time"],
            "phase_total_bytes": res.phases["phase_total_bytes"], "phase_bottleneck": res.phase_bottleneck_names()},
        attrs={"topology": topo.name, "routing": res.routing.label, "n_nodes": topo.n_nodes,
               "n_routers": topo.n_routers, "evaluator_version": __version__},
    )


def evaluate(topology: Topology, traffic: Traffic | DenseTraffic, placement: Placement,
             routing: Routing | str, bounds: bool | str = False, bound_solver: str = "highs") -> xr.Dataset:
    """Link demand and predicted performance of one design point.

    Returns a dataset with ``link_load[link]`` (bytes), ``link_capacity``
    (bytes/s per direction), coordinates ``link_src``, ``link_dst``,
    ``link_class``, ``link_node``, and scalar ``completion_time`` (s),
    ``throughput`` (bytes/s), ``effective_injection_bandwidth`` (bytes/s),
    ``bottleneck`` (link class), ``max_load_<class>`` (bytes), ``mean_hops``,
    ``total_bytes``, ``off_node_bytes`` and ``paths_per_pair`` (router paths
    per communicating router pair). Arguments are checked as in
    :func:`evaluate_batch` (``routing`` may be a routing kind's name); a point
    too large for memory is refused naming ``traffic``.

    ``bounds`` (opt-in; off costs nothing): ``True`` adds
    ``optimal_completion_time`` (s), a certified lower bound on the time of
    any routing (:func:`evaluator.lp.bounds.optimal`: the edge LP, or
    Garg-Konemann when it is too large; the dual side of the interval),
    ``optimal_completion_time_upper`` (s, the feasible side: flows that
    reach it) and ``routing_efficiency`` = optimal / achieved completion
    time (<= 1; 1: no routing is faster); a method name (``"edge"``,
    ``"garg_konemann"``) picks the method. ``"dragonfly_adaptive"`` is the
    ideal-adaptive bound of the Dragonfly routings (minimal, valiant,
    valiant_router), stored as ``adaptive_completion_time``,
    ``adaptive_completion_time_upper`` and ``adaptive_efficiency``. The
    attrs ``bound_method``, ``bound_solver``, ``bound_gap`` (``upper / lower
    - 1``) and ``bound_bounds`` (which routings it bounds) say how it was
    computed; ``bound_solver`` is ``"highs"`` or ``"pdhg"``.
    """
    _check_type("topology", "topology", topology)
    _check_type("traffic", "traffic", traffic)
    _check_type("placement", "placement", placement)
    if bounds is not False:
        from .lp.bounds import check_bounds

        check_bounds(bounds, bound_solver)
    routing = _as_routing(routing)
    res = _evaluate_batch(topology, routing, [traffic], [placement], True, 1, single=True)
    ds = _dataset(res, None)
    ds.attrs.update({"traffic": traffic.name, "placement": placement.name})
    notes = routing.notes(topology, *_note_pairs(topology, traffic, placement, routing))
    if notes:
        ds.attrs["notes"] = "\n".join(notes)
    if bounds is not False:
        _add_bounds(ds, topology, traffic, placement, "auto" if bounds is True else bounds, bound_solver)
    return ds


def _note_pairs(topology, traffic, placement, routing) -> tuple[np.ndarray, np.ndarray]:
    """The communicating router pairs ``(src, dst)`` of one point for :meth:`~evaluator.routing.Routing.notes`
    (none when dense traffic has too many to list: the notes are commentary, not results)."""
    try:
        keys = _router_pairs(topology, traffic, placement, routing.label)
    except ResourceError:
        keys = np.zeros(0, np.int64)
    R = int(topology.n_routers)
    return keys // R, keys % R


def _add_bounds(ds: xr.Dataset, topology, traffic, placement, method: str, solver: str) -> None:
    """The bound's certified lower side, its feasible side, the efficiency and the bound's attrs, added to ``ds``
    in place under the names of its :class:`~evaluator.lp.bounds.BoundKind`."""
    from .dataset import metric
    from .lp.bounds import bound_kind, optimal

    res = optimal(topology, traffic, placement, method, solver)
    kind = bound_kind(method)
    achieved = float(ds["completion_time"])
    eff = res.completion_time / achieved if achieved > 0 else 1.0
    for name, value in zip(kind.variables, (res.completion_time, res.completion_time_upper, eff)):
        ds[name] = xr.DataArray(value, attrs=metric(name).attrs)
    ds.attrs.update({"bound_method": res.method, "bound_solver": res.solver, "bound_gap": res.gap,
                     "bound_bounds": kind.bounds})
