"""Memory: the peak bytes of a traced block call, the working set of a call, refused before allocating.

:func:`jaxpr_peak_bytes` walks a traced program; :func:`block_peak` measures
one block call of a kernel (cached per kernel and shapes, or read from the
program store); :func:`working_set` adds the host arrays and the results of
a whole :func:`evaluator.evaluate_batch` call and :func:`check_working_set`
refuses it naming the argument that weighs most (the banked runner of
:mod:`.banked` adds its own calls' parts and refuses by the same rule).
"""

from __future__ import annotations

import collections
import math
import os
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from ..errors import MEMORY_ENV, ResourceError, check_memory, fmt_size
from ..kernel import SCALAR_METRICS
from .compiled import BatchKernel
from ..topology import Topology
from ..traffic import AbstractTraffic
from .blocks import bucket_size  # noqa: F401  (re-exported: the buckets the estimate pads to)
from .checks import Shown
from .dispatch import RUNNERS
from .latency import latency_peak

__all__ = ["jaxpr_peak_bytes", "compiled_peak_bytes", "block_peak", "working_set", "device_memory", "check_working_set"]


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


def block_peak(kern: BatchKernel, variant: str, args: tuple, step: int) -> int:
    """Peak bytes of one block call (``args``: its inputs after the network, arrays or
    :class:`jax.ShapeDtypeStruct`), from its traced program: cached per kernel, variant, shapes and step; read
    from the program store when a previous process stored the program (no tracing)."""
    leaves = jax.tree_util.tree_leaves(args)
    shapes = tuple((tuple(a.shape), str(a.dtype)) for a in leaves)
    key = (id(kern.fn), variant, shapes, step)
    hit = _PEAK_CACHE.get(key)
    if hit is not None and hit[0] is kern.fn:
        return hit[1]
    structs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), args)
    peak = kern.fn.peak_bytes(variant, kern.net, *structs, step=step, measure=jaxpr_peak_bytes)
    # XLA copies the block's inputs into the loop over its steps (copy insertion: the loop's operands are the
    # call's parameters, read-only), where the traced program reads them in place: that copy is counted here.
    # Without it the estimate was below XLA's own buffers (memory_analysis: arguments + outputs + temporaries):
    # 2,000-node torus, 64 points of 2,048 flows under DOR, 3.45 MB against 6.07 MB (temporaries 3.19 MB, of
    # which 2.62 MB the block's inputs again); dense all-to-all 3.49 MB against 5.86 MB; Dragonfly DF(4,8,4)
    # Valiant 2.11 MB against 3.62 MB
    peak += sum(math.prod(int(d) for d in a.shape) * np.dtype(a.dtype).itemsize for a in leaves)
    if not getattr(kern.operator.routing, "linear", True):
        peak = max(peak, compiled_peak_bytes(kern, variant, structs, step))
    _PEAK_CACHE[key] = (kern.fn, peak)  # holds the kernels, so their id is not reused while cached
    while len(_PEAK_CACHE) > 64:
        _PEAK_CACHE.popitem(last=False)
    return peak


def compiled_peak_bytes(kern: BatchKernel, variant: str, structs: tuple, step: int) -> int:
    """XLA's own buffer sizes (temporaries, arguments and outputs) of one block call, from its compiled program.

    Used beside :func:`jaxpr_peak_bytes` for routings whose loads are not linear (the adaptive fixed points): there
    XLA keeps gathers' broadcast indices and the loop's path costs that the traced program does not show, and its
    buffers were 2.2x the traced peak (``ft_adaptive`` on a 4,096-node fat tree's halo: 0.99 GB of temporaries
    against 0.44 GB traced; the process grew by 1.19 GB). Compiling costs a fraction of a second beside the fixed
    point's seconds."""
    fn = kern.fn.traced(variant, *(kern.net, *structs), step=step)
    ma = fn.lower().compile().memory_analysis()
    if ma is None:  # pragma: no cover - a backend without the analysis
        return 0
    return int(ma.temp_size_in_bytes + ma.argument_size_in_bytes + ma.output_size_in_bytes)


def working_set(kern: BatchKernel, topology: Topology, traffics: Sequence[AbstractTraffic], block_size: int,
                keep: bool) -> dict[str, int]:
    """Bytes an :func:`evaluator.evaluate_batch` call allocates, by what they hold, before any of it is allocated.

    ``traffics``: the call's single exchanges (a phased traffic's phases).

    * ``inputs``: the host arrays the blocks are cut from: ``points x flows x
      16`` bytes (source, destination, bytes) and ``points x tasks x 4`` (task
      nodes); dense traffic ``points x tasks x 20``;
    * ``block``: one block call on the device (``block_size`` points, the
      largest part), the peak of its traced program (:func:`jaxpr_peak_bytes`):
      the block's inputs, its outputs and the kernel's intermediates, e.g. the
      routing's per-point buffers times the points evaluated at once;
    * ``results``: the metrics of every point, plus ``points x links x 8``
      with ``keep_link_load`` (``link_load``), three times (device, host copy,
      concatenation);
    * ``latency``: with a latency model (``topology.latency``), the largest call of the latency pass
      (:func:`~evaluator._batch.latency.latency_peak`: its traced program and the host arrays it is filled from),
      run after the blocks (so it counts beside the results, in place of the block);
    * ``points_per_block``, ``flows``: the largest block, the largest flow bucket.
    """
    n_cols = len(SCALAR_METRICS) + len(topology.class_names)
    need = {"inputs": 0, "block": 0, "results": 0, "link_load": 0,
            "latency": latency_peak(kern, topology, traffics, jaxpr_peak_bytes)}
    for inp, (layout, _) in RUNNERS.items():
        ts = [t for t in traffics if t.kernel_input == inp]
        if not ts:
            continue
        lay = layout(kern, ts, block_size)
        need["inputs"] += lay.input_bytes
        need["block"] = max(need["block"], block_peak(kern, lay.variant, lay.args, lay.step))
        n_pad = -(-len(ts) // lay.block) * lay.block
        need["results"] += 3 * n_pad * n_cols * 8
        if keep:
            need["link_load"] += 3 * n_pad * kern.n_links * 8
        need["points_per_block"] = max(need.get("points_per_block", 0), lay.block)
        need["flows"] = max(need.get("flows", 0), lay.n_flows)
    return need


def device_memory() -> tuple[str, int] | None:
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


def check_working_set(need: dict[str, int], n: int, block_size: int, keep: bool, single: bool,
                      block_name: str = "block_size") -> None:
    """Refuse with a :class:`~evaluator.errors.ResourceError` naming the argument that weighs most
    (``traffic``/``traffics``, the block size as the caller named it, ``block_name``, or ``keep_link_load``).

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
    lat = need.get("latency", 0)
    if lat:
        parts.append(f"the latency pass {fmt_size(lat)}")
    what = f"{n} point{'s' if n != 1 else ''} ({', '.join(parts)})"
    tname = "traffic" if single else "traffics"
    field: str
    value: Any
    if keep and not single and need["link_load"] >= max(need["inputs"], need["block"]):
        field, value, hint = "keep_link_load", True, ("keep_link_load=False keeps only the metrics (or evaluate "
                                                       "fewer points per call).")
    elif lat > max(need["inputs"], need["block"], need["link_load"]):
        field, value = "topology.latency", "enabled"
        hint = ("Evaluate fewer or smaller traffics per call, or without a latency model "
                "(topology.latency.enabled=false).")
    elif block > 1 and need["block"] >= need["inputs"]:
        field, value = block_name, block_size
        hint = f"Lower {block_name} (one point needs about {fmt_size(need['block'] / block)})."
    else:
        field = tname
        size = f"up to {need['flows']:,} flows each" if need.get("flows") else "dense"
        value = Shown(f"<{n} traffic{'s' if n != 1 else ''}, {size}>")
        hint = ("Evaluate fewer or smaller traffics per call." if n > 1 else
                "Use a smaller traffic (fewer flows) or a smaller network.")
    results = need["results"] + need["link_load"]  # three copies: device, host, concatenated
    device = device_memory()
    work = max(need["block"], lat)  # (the latency pass runs after the blocks: one or the other at a time)
    if device is None:
        check_memory(field, value, need["inputs"] + work + results, what, hint)
        return
    check_memory(field, value, need["inputs"] + results * 2 // 3, what, hint)
    kind, have = device
    dev_need = work + results // 3
    if dev_need > 0.8 * have:
        raise ResourceError(field, value, f"a size that fits in the memory of the {kind}: {what} need about "
                                          f"{fmt_size(dev_need)} there, {fmt_size(have)} is free", hint)
