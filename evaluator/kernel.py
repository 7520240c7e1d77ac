"""JAX kernels: link demand and metrics for ONE design point.

The kernels here are written for a single design point (one traffic, one
placement) and carry no batch axis. :func:`batch_kernel` applies ``vmap``
(``step`` points at a time, in a loop over the steps of a block) and ``jit`` once, at the batch entry
point, for one (topology, routing) pair; a second block of the same shape
bucket compiles nothing.

Two kinds of traffic reach the kernels:

* sparse flows (:class:`PointInputs`): cost linear in the flows (see
  :mod:`evaluator.routing` for the per-topology operators);
* dense rank-one traffic (:class:`DensePointInputs`, built from
  :class:`evaluator.traffic.DenseTraffic`): every task pair, never
  materialised; cost near-linear in the machine size.

Shapes use the axis names of DESIGN.md: ``task``, ``flow``, ``node``,
``router``, ``link`` (all links: router links, then injection, then
ejection), ``class`` (link classes).
"""

from __future__ import annotations

import functools
import weakref
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, Shaped

from ._ops import first_argmax, segment_add, take
from ._types import LinkLoads, PointLinkLoads, PointMetrics  # noqa: F401  (shapes in signatures and docs)
from .dataset import METRIC_NAMES as _FLOAT_METRICS
from .dataset import metric_values
from .routing import Routing, RoutingOperator, build_routing
from .routing.base import NODE_ENDPOINT
from .topology import Topology

__all__ = [
    "PointInputs",
    "DensePointInputs",
    "NetworkArrays",
    "point_link_loads",
    "dense_point_link_loads",
    "point_metrics",
    "batch_kernel",
    "BatchKernel",
    "SCALAR_METRICS",
    "PACKED_METRICS",
    "unpack_metrics",
]


class NetworkArrays(NamedTuple):
    """Device-side description of one (topology, routing) pair.

    ``class_order`` lists the links sorted by class (stable); the static
    class boundaries live in the kernel's closure.
    """

    node_router: Int[Array, "node"]
    capacity: Float[Array, "link"]
    link_class: Int[Array, "link"]
    class_order: Int[Array, "link"]
    routing: dict


class PointInputs(NamedTuple):
    """One design point: a placement and a (padded) flow list.

    Padding flows carry 0 bytes; padding tasks send nothing. ``n_senders``
    (tasks that send a positive number of bytes, a property of the traffic)
    is computed on the host when given, else in the kernel.
    """

    task_node: Int[Array, "task"]
    src: Int[Array, "flow"]
    dst: Int[Array, "flow"]
    nbytes: Float[Array, "flow"]
    n_senders: Int[Array, ""] | None = None


class DensePointInputs(NamedTuple):
    """One design point of dense rank-one traffic (:class:`evaluator.traffic.DenseTraffic`).

    Task ``s`` sends ``bytes_per_pair * src_weight[s] * dst_weight[d]`` bytes
    to every task ``d != s``. Padding tasks carry weight 0.
    """

    task_node: Int[Array, "task"]
    src_weight: Float[Array, "task"]
    dst_weight: Float[Array, "task"]
    bytes_per_pair: Float[Array, ""]


SCALAR_METRICS = _FLOAT_METRICS + ("bottleneck_class", "bottleneck_link")
"""Per-point scalars the kernels return: the metric table's (:data:`evaluator.dataset.METRICS`; its
``off_node_bytes``, the bytes that leave their node, also weighs ``mean_hops`` when phases are combined), then the
bottleneck's class and link (-1 when nothing crosses a link)."""

PACKED_METRICS = SCALAR_METRICS + ("max_load_class",)
"""The kernels' packed output per point, in order (``max_load_class`` the last columns, one per link class); see
:func:`unpack_metrics`. (:data:`evaluator.dataset.METRIC_NAMES` is the dataset's scalar metrics alone.)"""


def point_link_loads(net: NetworkArrays, pt: PointInputs, *, apply_routing) -> LinkLoads:
    """Expected bytes on every link for one design point of sparse flows.

    Flows between tasks on one node use no link; flows between nodes load
    the source's injection and the destination's ejection link; flows
    between routers are routed by ``apply_routing(tables, src, dst, bytes)``
    where ``src``/``dst`` are the routers of the flow's nodes, or the
    routing's own endpoint ids of them where it routes by more than the
    router (:attr:`RoutingOperator.endpoints`, table ``"_node_endpoint"``:
    D-mod-k on a fat tree routes by destination node). The node links' entries go into the routing's own
    buffer (``extra``: added in place after its entries, never concatenated).
    """
    n_nodes = net.node_router.shape[0]
    sn = take(pt.task_node, pt.src)
    dn = take(pt.task_node, pt.dst)
    off_node = jnp.where(sn != dn, pt.nbytes, 0.0)
    sr = take(net.node_router, sn)
    dr = take(net.node_router, dn)
    off_router = jnp.where(sr != dr, pt.nbytes, 0.0)
    entries = ((sn, off_node), (dn + n_nodes, off_node))  # injection, then ejection
    endpoint = net.routing.get(NODE_ENDPOINT)
    if endpoint is not None:
        sr, dr = take(endpoint, sn), take(endpoint, dn)
    return apply_routing(net.routing, sr, dr, off_router, extra=(entries, 2 * n_nodes))


def dense_point_link_loads(net: NetworkArrays, pt: DensePointInputs, *, n_endpoints: int,
                           apply_dense) -> LinkLoads:
    """Expected bytes on every link for one design point of dense rank-one traffic.

    With ``u[n]``/``v[n]`` the source/destination weights summed per node,
    node ``n`` injects ``b u[n] (V - v[n])`` and ejects ``b v[n] (U - u[n])``
    (pairs on one node use no link), and routers ``r != r'`` exchange
    ``b u[r] v[r']`` (``u``, ``v`` summed per router, or per the routing's
    endpoint, :attr:`RoutingOperator.endpoints`; ``n_endpoints`` of them).
    """
    n_nodes = net.node_router.shape[0]
    b = pt.bytes_per_pair
    uv = segment_add(jnp.concatenate([pt.src_weight, pt.dst_weight]),
                     jnp.concatenate([pt.task_node, pt.task_node + n_nodes]), 2 * n_nodes)
    u, v = uv[:n_nodes], uv[n_nodes:]
    inj = b * u * (v.sum() - v)
    ej = b * v * (u.sum() - u)
    endpoint = net.routing.get(NODE_ENDPOINT, net.node_router)
    ur = segment_add(u, endpoint, n_endpoints)
    vr = segment_add(v, endpoint, n_endpoints)
    router_loads = apply_dense(net.routing, ur * b, vr)
    return jnp.concatenate([router_loads, inj, ej])


MAX_BLOCKS, MAX_PERIOD = 16, 64
"""The metrics' fast path: link order cut into at most this many blocks, each a pattern of at most this many
links (one class and one capacity per position) repeated."""


def link_blocks(topology: Topology) -> tuple[tuple[int, int, tuple[int, ...]], ...] | None:
    """``(lo, hi, classes)`` of the blocks of link order that repeat a short pattern, or None.

    Links ``lo <= i < hi`` of a block have the class ``classes[(i - lo) %
    P]`` and one capacity per position (``P = len(classes)``): a Dragonfly's
    local, global, injection and ejection links are four blocks with ``P =
    1``; a torus's router links (router by router, the same directions each)
    one block with ``P`` its links per router, then the node links. Each
    block is the longest run of one pattern from its start (the shortest
    pattern among equals). None when that takes more than
    :data:`MAX_BLOCKS` blocks (the kernels then take the general path).
    """
    cls = np.asarray(topology.link_class, np.int64)
    cap = np.asarray(topology.capacity, np.float64)
    n = cls.size
    if n == 0 or np.any(~(cap > 0)):
        return None
    caps, cap_id = np.unique(cap, return_inverse=True)
    key = cls * caps.size + cap_id.reshape(-1)  # one integer per (class, capacity)
    blocks, lo = [], 0
    while lo < n:
        if len(blocks) == MAX_BLOCKS:
            return None
        best = (1, 1)  # (length, period)
        for P in range(1, min(MAX_PERIOD, n - lo) + 1):
            m = (n - lo) // P
            if m * P <= best[0] or (m > 1 and not np.array_equal(key[lo + P: lo + 2 * P], key[lo: lo + P])):
                continue  # cannot beat the best, or fails at its first repeat
            rows = key[lo: lo + m * P].reshape(m, P)
            same = np.all(rows == rows[0], axis=1)
            reps = m if same.all() else int(np.argmin(same))
            if reps * P > best[0]:
                best = (reps * P, P)
        length, P = best
        blocks.append((lo, lo + length, tuple(int(c) for c in cls[lo: lo + P])))
        lo += length
    return tuple(blocks)


def _worst_link(net: NetworkArrays, loads, blocks):
    """``(bottleneck link, completion time, max load per pattern position)``.

    General path: the time of every link (``load / capacity``), its first
    maximum, and the loads gathered into class order for the per-class
    maxima. With ``blocks`` (:func:`link_blocks`) the maxima come from the
    blocks reshaped to ``[repeats, P]`` (a plain reduction: no gather, and
    no division per link before the maximum): a position's largest time is its largest load over
    its capacity (division by a positive constant is monotone and correctly
    rounded, so the time is the general path's); the bottleneck is then the
    first link whose time equals it, in one pass as on the general path (a
    smaller load may round to the same time).
    """
    n = loads.shape[0]
    if blocks is None:
        worst, t = first_argmax(loads / net.capacity)
        return worst, t, None
    col_max = jnp.concatenate([loads[lo:hi].reshape(-1, len(c)).max(axis=0) for lo, hi, c in blocks])
    # the capacities as the network's runtime values, and element by element: XLA may turn a division by a
    # constant or a broadcast scalar into a product with its rounded reciprocal, which rounds differently
    col_cap = take(net.capacity, np.array([lo + k for lo, _, c in blocks for k in range(len(c))], np.int32))
    t = (col_max / col_cap).max()
    pos = jnp.arange(n, dtype=jnp.int32)
    worst = jnp.min(jnp.where(loads / net.capacity == t, pos, n))
    return jnp.minimum(worst, n - 1), t, col_max


def _metrics(net: NetworkArrays, loads, total, off_node_bytes, n_senders, *, class_bounds: tuple[int, ...],
             n_router_links: int, blocks=None):
    worst, t, col_max = _worst_link(net, loads, blocks)
    hop_bytes = loads[:n_router_links].sum()
    if col_max is None:
        by_class = take(loads, net.class_order)
        bounds = zip(class_bounds[:-1], class_bounds[1:])
        max_class = jnp.stack([by_class[lo:hi].max(initial=-jnp.inf) for lo, hi in bounds])
    else:  # the pattern positions of each class (a class without links: -inf)
        of = np.array([c for *_, classes in blocks for c in classes])
        max_class = jnp.stack([take(col_max, np.flatnonzero(of == c).astype(np.int32)).max() if np.any(of == c)
                               else jnp.array(-jnp.inf) for c in range(len(class_bounds) - 1)])
    out = metric_values(jnp, t, total, off_node_bytes, hop_bytes, n_senders, net.link_class[worst], worst)
    out["max_load_class"] = max_class
    return out


def point_metrics(net: NetworkArrays, pt: PointInputs, loads: Float[Array, "link"], *,
                  class_bounds: tuple[int, ...], n_router_links: int, blocks=None) -> dict:
    """Scalar metrics of one design point (DESIGN.md "Metrics").

    Returns ``completion_time`` (s), ``throughput`` (bytes/s),
    ``effective_injection_bandwidth`` (bytes/s per sending task),
    ``bottleneck_class`` / ``bottleneck_link`` (-1 when nothing crosses a
    link), ``mean_hops`` (router-to-router links per byte that leaves its
    node), ``total_bytes`` and ``max_load_class: Float[Array, "class"]``.
    """
    total = pt.nbytes.sum()
    if pt.n_senders is None:
        sent = segment_add(pt.nbytes, pt.src, pt.task_node.shape[0])
        n_senders = (sent > 0).sum()
    else:
        n_senders = pt.n_senders
    n_nodes = net.node_router.shape[0]
    off_node_bytes = loads[n_router_links:n_router_links + n_nodes].sum()
    return _metrics(net, loads, total, off_node_bytes, n_senders, class_bounds=class_bounds,
                    n_router_links=n_router_links, blocks=blocks)


def dense_point_metrics(net: NetworkArrays, pt: DensePointInputs, loads: Float[Array, "link"], *,
                        class_bounds: tuple[int, ...], n_router_links: int, blocks=None) -> dict:
    """:func:`point_metrics` for dense rank-one traffic."""
    b = pt.bytes_per_pair
    U, V = pt.src_weight.sum(), pt.dst_weight.sum()
    total = b * (U * V - (pt.src_weight * pt.dst_weight).sum())
    n_senders = ((pt.src_weight > 0) & (V - pt.dst_weight > 0)).sum()
    n_nodes = net.node_router.shape[0]
    off_node_bytes = loads[n_router_links:n_router_links + n_nodes].sum()
    return _metrics(net, loads, total, off_node_bytes, n_senders, class_bounds=class_bounds,
                    n_router_links=n_router_links, blocks=blocks)


def _pack(out: dict, loads, keep_loads: bool):
    """One point's metrics as one vector (``SCALAR_METRICS`` then ``max_load_class``), and its loads."""
    vec = jnp.concatenate([jnp.stack([out[k].astype(jnp.float64) for k in SCALAR_METRICS]), out["max_load_class"]])
    return vec, (loads if keep_loads else None)


def unpack_metrics(packed: Float[np.ndarray, "point metric"]) -> dict[str, Shaped[np.ndarray, "point ..."]]:
    """Per-point metric dict from the kernels' packed ``Float[Array, "point metric"]`` output."""
    n = len(SCALAR_METRICS)
    out = {k: packed[:, i] for i, k in enumerate(SCALAR_METRICS)}
    for k in ("bottleneck_class", "bottleneck_link"):
        out[k] = out[k].astype(np.int64)
    out["max_load_class"] = packed[:, n:]
    return out


def _point(net, pt, *, n_router_links, class_bounds, apply_routing, keep_loads, blocks=None):
    loads = point_link_loads(net, pt, apply_routing=apply_routing)
    out = point_metrics(net, pt, loads, class_bounds=class_bounds, n_router_links=n_router_links, blocks=blocks)
    return _pack(out, loads, keep_loads)


def _dense_point(net, pt, *, n_endpoints, n_router_links, class_bounds, apply_dense, keep_loads, blocks=None):
    loads = dense_point_link_loads(net, pt, n_endpoints=n_endpoints, apply_dense=apply_dense)
    out = dense_point_metrics(net, pt, loads, class_bounds=class_bounds, n_router_links=n_router_links,
                              blocks=blocks)
    return _pack(out, loads, keep_loads)


def _count(task_node, n_valid):
    """The points of a block to evaluate (the leading ones; the rest is padding): all when None; an int32 on the
    device (passed as it is: callers move it with the block's other arrays, in one transfer) or on the host."""
    if isinstance(n_valid, jax.Array):
        return n_valid
    return np.int32(task_node.shape[0] if n_valid is None else n_valid)


def _map(f, xs, n_valid, step: int):
    """``f`` over the first ``n_valid`` points of ``xs``, ``step`` points at a time (``vmap`` of ``f``).

    A loop with a dynamic trip count (``ceil(n_valid / step)`` steps; the
    block's size is a multiple of ``step``): a block padded to its compiled
    size costs no work for its padding, whose rows stay zero.
    """
    n = jax.tree_util.tree_leaves(xs)[0].shape[0]
    n_steps = n // step
    blocks = jax.tree_util.tree_map(lambda x: x.reshape((n_steps, step) + x.shape[1:]), xs)
    g = jax.jit(jax.vmap(f))  # traced once: the shapes below and the loop body share the trace (XLA inlines it)

    def at(i):
        return jax.tree_util.tree_map(lambda x: jax.lax.dynamic_index_in_dim(x, i, keepdims=False), blocks)

    shapes = jax.eval_shape(g, at(0))
    out = jax.tree_util.tree_map(lambda s: jnp.zeros((n_steps,) + s.shape, s.dtype), shapes)

    def body(i, out):
        return jax.tree_util.tree_map(lambda o, y: jax.lax.dynamic_update_index_in_dim(o, y, i, 0), out, g(at(i)))

    out = jax.lax.fori_loop(0, (n_valid + step - 1) // step, body, out)
    return jax.tree_util.tree_map(lambda o: o.reshape((n,) + o.shape[2:]), out)


COMPILER_OPTIONS: dict[str, object] = {"xla_disable_hlo_passes": "tree_reduction_rewriter"}
"""XLA options the kernels (and the sweep's placement draw) are compiled with.

XLA:CPU's ``tree_reduction_rewriter`` splits every reduction over more than
32 elements into reduce-window stages of 32, each its own unfused kernel:
the 17 reductions of a Dragonfly kernel (link maxima, byte sums) became 52
kernels of 81, each compiled through its own MLIR pipeline (7-9 ms apiece).
Without it the DF(4,8,4) Valiant kernel compiles in 0.46-0.59 s instead of
0.63-0.78 s and runs as fast or faster (interleaved, one process: DF(4,8,4)
minimal 0.84x the time, Valiant 0.99x, Mira 5D DOR 1.00x, 256x256x4 torus
1.03x). The link loads are identical; sums become one sequential pass, which
changes nothing where the summands are integer byte counts (exact below 2^53).
"""


_MISSING = object()


def _signature(args: tuple, step: int) -> tuple | None:
    """What selects one compiled program of a kernel: the arguments' tree, shapes, dtypes, and the step (None
    when an argument is not an array: a Python number, whose type JAX weakens; the store is then left out)."""
    leaves, tree = jax.tree_util.tree_flatten(args)
    if not all(hasattr(x, "shape") and hasattr(x, "dtype") for x in leaves):
        return None
    return tree, tuple((tuple(x.shape), np.dtype(x.dtype).str, bool(getattr(x, "weak_type", False)))
                       for x in leaves), int(step)


def _sig_text(sig: tuple) -> str:
    return f"{sig[0]}|{sig[1]}|step={sig[2]}"


class _Kernels:
    """The jitted, batched entry points of one (topology, routing, keep_loads).

    Each takes a *block* of points (leading ``point`` axis), a static
    ``step`` and ``n_valid`` (the block's leading points to evaluate, the
    rest being padding: all by default): the block is evaluated ``step``
    points at a time (:func:`_map`: ``vmap`` of the one-point kernel over a
    step, a loop over the steps that hold points) in ONE device call. The step
    bounds the working set (cache-sized on CPU; large on accelerators); the
    block amortises the call. Returns ``(metrics, link_load)``:
    ``Float[Array, "point metric"]`` (see :func:`unpack_metrics`) and
    ``Float[Array, "point link"]`` or ``None``. Variants:

    * ``self(net, points, step=s, n_valid=k)``: :class:`PointInputs`, one flow list per point;
    * ``self.shared(net, task_node, src, dst, nbytes, n_senders, step=s, n_valid=k)``: one
      flow list for every point, only ``task_node: Int[Array, "point task"]``
      varies (a placement sweep);
    * ``self.dense(net, points, step=s, n_valid=k)``: :class:`DensePointInputs`.

    ``_cache_size()`` counts the compilations of all three (and the programs loaded from the store).

    ``identity()`` (optional) returns what determines the traced programs
    (the topology, the routing, ``keep_loads``), or None: with it, and the
    compilation cache on, a program is kept in the program store
    (:mod:`evaluator._program_store`) and a later process loads it instead of
    tracing and lowering the kernel (its first call then costs the loading
    of an executable, 0.05-0.1 s on CPU, instead of 0.5-1 s); the results
    are the same (the stored executable is the one the jit compiled).
    """

    def __init__(self, point, dense_point, identity=None):
        def per_point(net, points, n_valid, step):
            return _map(lambda pt: point(net, pt), points, n_valid, step)

        def shared(net, task_node, src, dst, nbytes, n_senders, n_valid, step):
            return _map(lambda tn: point(net, PointInputs(tn, src, dst, nbytes, n_senders)), task_node, n_valid,
                        step)

        def dense(net, points, n_valid, step):
            return _map(lambda pt: dense_point(net, pt), points, n_valid, step)

        opts = dict(COMPILER_OPTIONS) or None
        self._per_point = jax.jit(per_point, static_argnames="step", compiler_options=opts)
        self._shared = jax.jit(shared, static_argnames="step", compiler_options=opts)
        self._dense = jax.jit(dense, static_argnames="step", compiler_options=opts)
        self._jits = {"per_point": self._per_point, "shared": self._shared, "dense": self._dense}
        # the program store (evaluator._program_store): what determines the programs, hashed when first needed
        self._identity = identity
        self._key: str | None = None  # None: not decided yet; "": no store; else the kernels' part of every key
        self._programs: dict = {}  # (variant, signature) -> a Compiled loaded from the store, or None: the jit's
        self._entries: dict = {}  # (variant, signature) -> the store's entry, read once (or None: absent)
        self._peaks: dict = {}  # (variant, signature) -> working-set bytes measured here (saved with the program)

    def __call__(self, net, points: PointInputs, step: int, n_valid=None):
        return self._run("per_point", (net, points, _count(points.task_node, n_valid)), step)

    def shared(self, net, task_node, src, dst, nbytes, n_senders, step: int, n_valid=None):
        return self._run("shared", (net, task_node, src, dst, nbytes, n_senders, _count(task_node, n_valid)), step)

    def dense(self, net, points: DensePointInputs, step: int, n_valid=None):
        return self._run("dense", (net, points, _count(points.task_node, n_valid)), step)

    def _cache_size(self) -> int:
        """Programs this process holds: compiled here (or found in JAX's compilation cache) or loaded from the
        program store."""
        loaded = sum(p is not None for p in self._programs.values())
        return self._per_point._cache_size() + self._shared._cache_size() + self._dense._cache_size() + loaded

    # -- the program store: a new process loads the executable instead of tracing and lowering the kernel --

    def _store_key(self) -> str:
        if self._key is None:
            from . import _program_store as store

            key = ""
            if self._identity is not None and store.store_dir() is not None:
                env = store.environment_key()
                parts = self._identity()
                ident = None if parts is None else store.fingerprint(*parts, dict(COMPILER_OPTIONS))
                if env is not None and ident is not None:
                    key = env + "\0" + ident
            self._key = key
        return self._key

    def _entry(self, variant: str, sig: tuple) -> dict | None:
        """The store's entry of one program (read at most once per process), or None."""
        k = (variant, sig)
        if k not in self._entries:
            from . import _program_store as store

            self._entries[k] = store.load(store.entry_key(self._key, variant, _sig_text(sig)))
        return self._entries[k]

    def _run(self, variant: str, args: tuple, step: int):
        """One block call: the program loaded from the store when it holds it, else the jit (then stored)."""
        fn = self._jits[variant]
        if self._key == "" or (self._key is None and not self._store_key()):
            return fn(*args, step=step)
        sig = _signature(args, step)
        prog = None if sig is None else self._programs.get((variant, sig), _MISSING)
        if prog is None:
            return fn(*args, step=step)
        if prog is not _MISSING:
            return prog(*args)
        from . import _program_store as store

        entry = self._entry(variant, sig)
        prog = store.unpack_executable(entry["program"]) if entry and entry.get("program") else None
        if entry is not None:  # the executable's bytes are not needed any more
            self._entries[(variant, sig)] = {"peak": entry.get("peak"), "program": None}
        if prog is not None:
            try:  # waited for: XLA:CPU reports a deserialized executable's missing functions only when it runs
                out = jax.block_until_ready(prog(*args))
            except Exception:  # not runnable here after all: the usual path (which raises what is the input's)
                prog = None
            else:
                self._programs[(variant, sig)] = prog
                return out
        out = fn(*args, step=step)
        self._programs[(variant, sig)] = None
        if prog is None:
            try:  # the jit's executable (lowering and compiling again hit its in-memory caches: < 1 ms)
                packed = store.pack_executable(fn.lower(*args, step=step).compile())
            except Exception:
                packed = None
            if packed is not None:
                peak = self._peaks.get((variant, sig), entry.get("peak") if entry else None)
                store.save(store.entry_key(self._key, variant, _sig_text(sig)), {"program": packed, "peak": peak})
        return out

    def peak_bytes(self, variant: str, *args, step: int, measure) -> int:
        """``measure(jaxpr)`` of one block call's traced program (:meth:`jaxpr`), read from the program store
        when it holds the program (no tracing), else measured (and stored with the program when it is)."""
        if self._key == "" or (self._key is None and not self._store_key()):
            return measure(self.jaxpr(variant, *args, step=step))
        sig = _signature(args + (jax.ShapeDtypeStruct((), np.int32),), step)
        entry = None if sig is None else self._entry(variant, sig)
        if entry is not None and isinstance(entry.get("peak"), int):
            return entry["peak"]
        peak = int(measure(self.jaxpr(variant, *args, step=step)))
        if sig is not None:
            self._peaks[(variant, sig)] = peak
        return peak

    def traced(self, variant: str, *args, step: int):
        """The traced (not compiled) block call of ``variant`` (:meth:`jaxpr` is its program)."""
        fn = {"per_point": self._per_point, "shared": self._shared, "dense": self._dense}[variant]
        return fn.trace(*args, jax.ShapeDtypeStruct((), np.int32), step=step)  # n_valid: an int32

    def jaxpr(self, variant: str, *args, step: int):
        """The traced program of one block call (``variant``: ``"per_point"``, ``"shared"`` or ``"dense"``).

        ``args`` may be :class:`jax.ShapeDtypeStruct`; this traces and compiles
        nothing new (the jit caches count no compilation). :func:`evaluator.evaluate_batch`
        sizes a block's working set from it before allocating anything.
        """
        return self.traced(variant, *args, step=step).jaxpr


class BatchKernel(NamedTuple):
    """The jitted, batched kernels and the device arrays of one network (see :class:`_Kernels`)."""

    fn: _Kernels
    net: NetworkArrays
    operator: RoutingOperator
    n_links: int


@functools.lru_cache(maxsize=32)
def batch_kernel(topology: Topology, routing: Routing, keep_loads: bool) -> BatchKernel:
    """The batched kernels for one (topology, routing): ``vmap`` over points, ``jit`` once per bucket.

    ``kernel.fn(kernel.net, points, step=s)`` with ``points`` a
    :class:`PointInputs` whose arrays have a leading ``point`` axis returns
    the packed per-point metrics (:func:`unpack_metrics`) and, when
    ``keep_loads``, ``link_load: Float[Array, "point link"]``;
    ``kernel.fn.shared`` and ``kernel.fn.dense`` are the shared-flows and
    dense-traffic variants (see :class:`_Kernels`). Arrays of the network
    are transferred to the device once, here.
    """
    op = build_routing(topology, routing)
    link_class = np.asarray(topology.link_class)
    # one transfer (jax.device_put compiles nothing; jnp.asarray of a host array compiles a staging program per
    # shape: 5-25 ms each, on every run)
    net = jax.device_put(NetworkArrays(
        node_router=topology.node_router.astype(np.int32),
        capacity=np.asarray(topology.capacity),
        link_class=link_class.astype(np.int32),
        class_order=np.argsort(link_class, kind="stable").astype(np.int32),
        routing=op.device_tables(),
    ))
    return BatchKernel(_kernels_for(topology, op, keep_loads), net, op, topology.n_links)


_SHARED_KERNELS: "weakref.WeakKeyDictionary[Topology, dict]" = weakref.WeakKeyDictionary()


def _kernels_for(topology: Topology, op: RoutingOperator, keep_loads: bool) -> "_Kernels":
    """The jitted kernels of ``op``; operators with the same ``compile_key`` share them (and their compilations)."""
    counts = np.bincount(np.asarray(topology.link_class), minlength=len(topology.class_names))
    common = dict(n_router_links=topology.n_router_links, keep_loads=keep_loads, blocks=link_blocks(topology),
                  class_bounds=tuple(int(x) for x in np.concatenate([[0], np.cumsum(counts)])))
    shared = _SHARED_KERNELS.setdefault(topology, {}) if op.compile_key is not None else None
    if shared is not None and (op.compile_key, keep_loads) in shared:
        return shared[(op.compile_key, keep_loads)]
    point = functools.partial(_point, apply_routing=op.apply, **common)
    dense_point = functools.partial(_dense_point, n_endpoints=op.endpoint_count(topology), apply_dense=op.apply_dense,
                                    **common)
    topo_ref, routing = weakref.ref(topology), op.routing

    def identity():  # what determines the programs (the kernels hold no strong reference to the topology)
        topo = topo_ref()
        return None if topo is None else ("batch_kernel", topo, routing, bool(keep_loads))

    fn = _Kernels(point, dense_point, identity)
    if shared is not None:
        shared[(op.compile_key, keep_loads)] = fn
    return fn
