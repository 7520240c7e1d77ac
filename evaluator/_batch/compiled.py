"""The compiled batch layer: the one-point kernels of :mod:`evaluator.kernel`, batched and jitted, in one place.

:func:`batch_kernel` builds, once per (topology, routing, ``keep_loads``)
(and shares between networks of the same content: :func:`_kernels_for`),
the jitted entry points that take a *block* of points (a leading ``point``
axis) and evaluate it ``step`` points at a time (``vmap`` of the one-point
kernel over a step, a loop over the steps that hold points: :func:`_map`) in
one device call. A second block of the same shape bucket compiles nothing;
:meth:`Kernels.n_compiles` counts the programs a process holds (compiled,
found in JAX's compilation cache or loaded from the program store), the
public way to tell whether a call compiled; :func:`compile_seconds` the
seconds a process has spent lowering and compiling (any jitted function).

Every caller that evaluates points goes through the runners of this package
(:mod:`.dispatch`, :mod:`.seeded`), which size blocks (:mod:`.blocks`) and
refuse what would not fit in memory (:mod:`.memory`) before calling these.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import weakref
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..kernel import (DensePointInputs, NetworkArrays, PointInputs, link_blocks, packed_dense_point,  # noqa: F401
                      packed_point)
from ..routing import Routing, RoutingOperator, build_routing
from ..topology import Topology

__all__ = ["COMPILER_OPTIONS", "BatchKernel", "Kernels", "batch_kernel", "compile_seconds", "content_key", "forget_kernels"]



_COMPILE_EVENTS = ("/jax/core/compile/backend_compile_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration")
_compiling = [0.0, False]  # seconds so far, listener registered
_compiling_lock = threading.Lock()


def _on_jax_event(event: str, duration: float, **kwargs) -> None:
    if event in _COMPILE_EVENTS:
        with _compiling_lock:
            _compiling[0] += duration


def compile_seconds() -> float:
    """Seconds this process has spent in XLA's compilation and in lowering to it since the first call (JAX's
    monitoring events; tracing is left out: a function traced inside another reports its tracing twice), every
    thread together."""
    with _compiling_lock:
        if not _compiling[1]:
            jax.monitoring.register_event_duration_secs_listener(_on_jax_event)
            _compiling[1] = True
        return _compiling[0]


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


class Kernels:
    """The jitted, batched entry points of one (topology, routing, keep_loads).

    Each takes a *block* of points (leading ``point`` axis), a static
    ``step`` and ``n_valid`` (the block's leading points to evaluate, the
    rest being padding: all by default): the block is evaluated ``step``
    points at a time (:func:`_map`: ``vmap`` of the one-point kernel over a
    step, a loop over the steps that hold points) in ONE device call. The step
    bounds the working set (cache-sized on CPU; large on accelerators); the
    block amortises the call. Returns ``(metrics, link_load)``:
    ``Float[Array, "point metric"]`` (see :func:`evaluator.kernel.unpack_metrics`) and
    ``Float[Array, "point link"]`` or ``None``. Variants:

    * ``self(net, points, step=s, n_valid=k)``: :class:`PointInputs`, one flow list per point;
    * ``self.shared(net, task_node, src, dst, nbytes, n_senders, step=s, n_valid=k)``: one
      flow list for every point, only ``task_node: Int[Array, "point task"]``
      varies (a placement sweep);
    * ``self.dense(net, points, step=s, n_valid=k)``: :class:`DensePointInputs`.

    ``n_compiles()`` counts the compilations of all three (and the programs loaded from the store).

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

        self._options = dict(COMPILER_OPTIONS)  # what the jits below compile with (and what the store's key holds)
        opts = dict(self._options) or None
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
        self.by_content = False  # shared by content (batch_kernel: _kernels_for)
        self.network: tuple | None = None  # (operator, device arrays) of the first network of the content, where
        # the kernels' key holds the operator's data (batch_kernel hands them to networks of the same content)

    def __call__(self, net, points: PointInputs, step: int, n_valid=None):
        return self._run("per_point", (net, points, _count(points.task_node, n_valid)), step)

    def shared(self, net, task_node, src, dst, nbytes, n_senders, step: int, n_valid=None):
        return self._run("shared", (net, task_node, src, dst, nbytes, n_senders, _count(task_node, n_valid)), step)

    def dense(self, net, points: DensePointInputs, step: int, n_valid=None):
        return self._run("dense", (net, points, _count(points.task_node, n_valid)), step)

    def n_compiles(self) -> int:
        """Programs this process holds: compiled here (or found in JAX's compilation cache) or loaded from the
        program store. A call that raised it compiled (or loaded) a program."""
        loaded = sum(p is not None for p in self._programs.values())
        return self._per_point._cache_size() + self._shared._cache_size() + self._dense._cache_size() + loaded

    _cache_size = n_compiles  # (the name of JAX's own jitted functions' count, kept for callers that use it)

    # -- the program store: a new process loads the executable instead of tracing and lowering the kernel --

    def _store_key(self) -> str:
        if self._key is None:
            from .. import _program_store as store

            key = ""
            if self._identity is not None and store.store_dir() is not None:
                env = store.environment_key()
                parts = self._identity()
                # the options these kernels' jits compile with: COMPILER_OPTIONS may have changed since they were built
                ident = None if parts is None else store.fingerprint(*parts, self._options)
                if env is not None and ident is not None:
                    key = env + "\0" + ident
            self._key = key
        return self._key

    def _entry(self, variant: str, sig: tuple) -> dict | None:
        """The store's entry of one program (read at most once per process), or None."""
        k = (variant, sig)
        if k not in self._entries:
            from .. import _program_store as store

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
        from .. import _program_store as store

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
    """The jitted, batched kernels and the device arrays of one network (see :class:`Kernels`)."""

    fn: Kernels
    net: NetworkArrays
    operator: RoutingOperator
    n_links: int


_BUILD_LOCK = threading.RLock()


def batch_kernel(topology: Topology, routing: Routing, keep_loads: bool) -> BatchKernel:
    """The batched kernels for one (topology, routing): ``vmap`` over points, ``jit`` once per bucket.

    ``kernel.fn(kernel.net, points, step=s)`` with ``points`` a
    :class:`PointInputs` whose arrays have a leading ``point`` axis returns
    the packed per-point metrics (:func:`evaluator.kernel.unpack_metrics`) and, when
    ``keep_loads``, ``link_load: Float[Array, "point link"]``;
    ``kernel.fn.shared`` and ``kernel.fn.dense`` are the shared-flows and
    dense-traffic variants (see :class:`Kernels`). Arrays of the network
    are transferred to the device once, here. Cached (the last 32); threads that miss the same key at once
    wait for one build (two kernels of one network would compile the same programs twice). A network of the
    same content as one met before (another object) gets that one's kernels, and, unless its operator has a
    ``compile_key``, that one's operator and device arrays (:func:`_kernels_for`).
    """
    with _BUILD_LOCK:
        return _batch_kernel(topology, routing, keep_loads)


@functools.lru_cache(maxsize=32)
def _batch_kernel(topology: Topology, routing: Routing, keep_loads: bool) -> BatchKernel:
    op = build_routing(topology, routing)
    fn = _kernels_for(topology, op, keep_loads)
    if fn.network is not None and op.compile_key is None:
        # a network of this content met before (the key holds the operator's data): its operator and device arrays,
        # so that what is cached per operator (message latencies, per-flow routes) is shared too, and nothing is
        # transferred again
        held_op, held_net = fn.network
        return BatchKernel(fn, held_net, held_op, topology.n_links)
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
    if fn.by_content and op.compile_key is None:
        fn.network = (op, net)
    return BatchKernel(fn, net, op, topology.n_links)


_SHARED_KERNELS: "weakref.WeakKeyDictionary[Topology, dict]" = weakref.WeakKeyDictionary()
_CONTENT_KERNELS: "weakref.WeakValueDictionary[str, Kernels]" = weakref.WeakValueDictionary()


def forget_kernels() -> None:
    """Forget the kernels shared by content (:func:`_kernels_for`): the next network built compiles its kernels
    again (or loads them from the program store), as a later process would. Kernels already handed out keep
    theirs. For checks that play a later process in this one, and measurements of a first call."""
    with _BUILD_LOCK:
        _CONTENT_KERNELS.clear()


def content_key(topology: Topology, op: RoutingOperator, keep_loads: bool) -> str | None:
    """What determines the kernels' programs, hashed: the topology's content; the operator's data (its routing,
    tables, flow tables and every other field but its functions: an operator built otherwise, with other table
    shapes, kinds or sizes, is another key) or its ``compile_key``, which stands for every operator that shares
    its programs; ``keep_loads`` and the compiler options. None where something in them cannot be hashed
    (:func:`evaluator._program_store.fingerprint`)."""
    from .. import _program_store as store

    if op.compile_key is not None:
        spec = ("compile_key", op.compile_key)
    else:
        spec = ("operator", {f.name: getattr(op, f.name) for f in dataclasses.fields(op)
                             if not callable(getattr(op, f.name))})
    return store.fingerprint("batch_kernel", topology, spec, bool(keep_loads), dict(COMPILER_OPTIONS))


def _kernels_for(topology: Topology, op: RoutingOperator, keep_loads: bool) -> "Kernels":
    """The jitted kernels of ``op``. Kernels are shared (with their compilations) by every operator whose
    programs are the same: a topology of the same content (a network built again, by another test, point or
    study, gets the kernels already compiled for it while they are alive: held by a
    :func:`batch_kernel`), the same routing or ``compile_key``, ``keep_loads`` and compiler options. A
    topology whose content cannot be hashed shares them only between operators of the same ``compile_key`` on
    that very object."""
    key = content_key(topology, op, keep_loads)
    if key is not None:
        fn = _CONTENT_KERNELS.get(key)
        if fn is not None:
            return fn
    counts = np.bincount(np.asarray(topology.link_class), minlength=len(topology.class_names))
    common = dict(n_router_links=topology.n_router_links, keep_loads=keep_loads, blocks=link_blocks(topology),
                  class_bounds=tuple(int(x) for x in np.concatenate([[0], np.cumsum(counts)])))
    shared = None
    if key is None and op.compile_key is not None:
        shared = _SHARED_KERNELS.setdefault(topology, {})
        if (op.compile_key, keep_loads) in shared:
            return shared[(op.compile_key, keep_loads)]
    point = functools.partial(packed_point, apply_routing=op.apply, **common)
    dense_point = functools.partial(packed_dense_point, n_endpoints=op.endpoint_count(topology), apply_dense=op.apply_dense,
                                    **common)
    if key is not None:
        def identity():  # what determines the programs: already hashed (no reference to the topology kept)
            return ("batch_kernel", key)
    else:
        topo_ref, routing = weakref.ref(topology), op.routing

        def identity():  # what determines the programs (the kernels hold no strong reference to the topology)
            topo = topo_ref()
            return None if topo is None else ("batch_kernel", topo, routing, bool(keep_loads))

    fn = Kernels(point, dense_point, identity)
    if key is not None:
        fn.by_content = True
        _CONTENT_KERNELS[key] = fn
    elif shared is not None:
        shared[(op.compile_key, keep_loads)] = fn
    return fn
