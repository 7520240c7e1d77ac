"""The banked runner: flows from a bank on the device, placements drawn from their seeds inside the call.

A sweep evaluates many points that differ only in their traffic (one of a
few configs) and their placement (one of a seeded family). Their flows go to
the device once, as a :class:`~evaluator._batch.blocks.FlowBank` (``[K, F]``
rows, one per traffic) planned for every traffic a network can meet
(:class:`BankPlan`: one flow bucket per traffic kind and task bucket, so a
mix of traffics shares one compilation), and a point carries only its bank
row and its placement: the two Threefry key words of its seed and the
placement's parameters (a few ``int32`` arrays over tasks) for a seeded
placement (:class:`~evaluator.placement.SeededPlacement`), drawn inside
the call; its ``task_node`` row otherwise.

Per block, one jitted call draws the block's placements at once (``vmap``)
and picks its row's flows (:func:`_prepare`; it depends on no kernel, so the
routings of a sweep share its compilation), then the kernels' shared-flows
variant (:mod:`.compiled`, the compilation a placement sweep of
:func:`evaluator.evaluate_batch` uses) walks the block a step of points at a
time. Every call of a shape class (task bucket ``T``, flow bucket ``F``, bank
rows ``K``) reuses one compilation. Blocks are sized by the rule every runner
uses (:func:`~evaluator._batch.blocks.block_sizes`) and the whole call's
working set is estimated and refused by the rule of
:func:`evaluator.evaluate_batch` (:func:`~evaluator._batch.memory.check_working_set`)
before anything is allocated.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._types import Int, Shaped
from ..kernel import SCALAR_METRICS
from ..placement import Placement, SeededPlacement
from ..traffic import Traffic
from . import blocks
from .blocks import FlowBank, block_sizes, block_slices, bucket_size, fetch, flow_point_bytes, make_bank, take
from .compiled import COMPILER_OPTIONS, BatchKernel
from .memory import block_peak, check_working_set

__all__ = ["BankPlan", "BankedPoints", "run_banked"]


class BankPlan:
    """The flow banks of one network: every traffic it can meet, one bank per shape class.

    ``members``: ``(key, kind, traffic)`` of every flow-list traffic (``key``
    the caller's name for it, ``kind`` its config's kind); a class is (kind,
    task bucket), its flow bucket the largest of its traffics' flow counts. A
    class's bank goes to the device when first used (:meth:`bank`).
    """

    def __init__(self, members: Iterable[tuple[Hashable, str, Traffic]]):
        by_class: dict[tuple, list] = collections.defaultdict(list)
        for key, kind, tr in members:
            if tr.kernel_input == "flows":  # (flow lists only go to banks)
                by_class[(tr.kernel_input, kind, bucket_size(tr.n_tasks))].append((key, tr))
        self.rows: dict[Hashable, tuple[tuple, int]] = {}
        self.classes: dict[tuple, dict[str, Any]] = {}
        self._lock = threading.Lock()
        for cls, items in by_class.items():
            seen: dict[Hashable, int] = {}
            traffics = []
            for key, tr in items:
                if key not in seen:
                    seen[key] = len(traffics)
                    traffics.append(tr)
            self.classes[cls] = {"traffics": traffics, "F": bucket_size(max(t.n_flows for t in traffics)),
                                 "bank": None}
            for key, row in seen.items():
                self.rows[key] = (cls, row)

    def bank(self, cls: tuple) -> FlowBank:
        """The bank of class ``cls`` on the device (made once)."""
        c = self.classes[cls]
        with self._lock:
            if c["bank"] is None:
                c["bank"] = make_bank(c["traffics"], c["F"])
            return c["bank"]


class BankedPoints(NamedTuple):
    """Points of one traffic: ``positions`` (the caller's indices), the traffic, and their placements, either
    ``placements`` (one per point) or a seeded family ``seeded`` with per-point ``seeds``; ``bank_key``: the
    traffic's key in a :class:`BankPlan` (None: a bank of its own)."""

    positions: Int[np.ndarray, "point"]
    traffic: Traffic
    placements: Sequence[Placement] | None = None
    seeded: SeededPlacement | None = None
    seeds: Any = None
    bank_key: Hashable | None = None

    def host_placements(self) -> list[Placement]:
        """The points' placements on the host (a seeded family's drawn here: the same as on the device)."""
        if self.seeded is None:
            return list(self.placements)
        return [self.seeded.placement(int(s)) for s in self.seeds]


_LOCK = threading.Lock()
_FIRST_CALLS: dict[tuple, threading.Lock] = {}


def _first_call_lock(key: tuple) -> threading.Lock:
    """One lock per compiled shape: threads that need the same compilation wait for the first to make it."""
    with _LOCK:
        lock = _FIRST_CALLS.get(key)
        if lock is None:
            lock = _FIRST_CALLS[key] = threading.Lock()
        return lock


_PREPARE: dict[Any, Any] = {}


def _prepare(gen: SeededPlacement | None):
    """The jitted first half of a block call: the block's ``task_node`` rows (drawn from the seeds, or given)
    and its bank row's flows. It depends on no kernel, so every routing of a sweep shares its compilation."""
    key = None if gen is None else gen.key
    with _LOCK:
        fn = _PREPARE.get(key)
        if fn is not None:
            return fn
        generate = None if gen is None else gen.generate
        static = None if gen is None else gen.static

        def prepare(bank, row, k0, k1, params, size):
            if generate is None:
                task_node = params["task_node"]
            else:  # the whole block at once: short vectors, vectorised across points
                task_node = jax.vmap(lambda a, b, prm: generate(jnp, a, b, prm, static, size))(k0, k1, params)
            return task_node, bank.src[row], bank.dst[row], bank.nbytes[row], bank.n_senders[row]

        fn = _PREPARE[key] = jax.jit(prepare, static_argnames="size",
                                     compiler_options=dict(COMPILER_OPTIONS) or None)
        return fn


class _Call(NamedTuple):
    """The points of one shape class and generator: their bank, rows, per-point parameters, seeds."""

    positions: np.ndarray
    bank: Any  # () -> FlowBank: made on the device after the memory check
    bank_bytes: int
    rows: np.ndarray
    params: dict
    gen: SeededPlacement | None
    seeds: np.ndarray | None
    n_tasks: int
    n_flows: int


def _calls(groups: Sequence[BankedPoints], banks: BankPlan | None) -> list[_Call]:
    """The device calls of ``groups``: one per (shape class, generator), planned banks where they have the
    traffic, else a bank of the call's own traffics."""
    by: dict[tuple, list[BankedPoints]] = collections.defaultdict(list)
    for g in groups:
        planned = banks is not None and g.bank_key in banks.rows
        cls = (("planned",) + banks.rows[g.bank_key][0] if planned else
               ("own", g.traffic.kernel_input, bucket_size(g.traffic.n_tasks), bucket_size(g.traffic.n_flows)))
        by[(cls, None if g.seeded is None else g.seeded.key)].append(g)
    out = []
    for (cls, gen_key), entries in by.items():
        if cls[0] == "planned":
            T, F = cls[3], banks.classes[cls[1:]]["F"]
            K = len(banks.classes[cls[1:]]["traffics"])

            def bank(key=cls[1:]):
                return banks.bank(key)

            def row_of(g):
                return banks.rows[g.bank_key][1]
        else:
            _, _, T, F = cls
            seen: dict[int, int] = {}
            traffics = []
            for g in entries:
                if id(g.traffic) not in seen:
                    seen[id(g.traffic)] = len(traffics)
                    traffics.append(g.traffic)
            K = bucket_size(len(traffics), minimum=1)

            def bank(traffics=traffics, F=F, K=K):
                return make_bank(traffics, F, K)

            def row_of(g, seen=seen):
                return seen[id(g.traffic)]
        pos = np.concatenate([np.asarray(g.positions, np.int64) for g in entries])
        rows = np.concatenate([np.full(len(g.positions), row_of(g), np.int32) for g in entries])
        if gen_key is None:
            tn = np.zeros((pos.size, T), np.int32)
            r = 0
            for g in entries:
                for p in g.placements:
                    tn[r, : p.n_tasks] = p.task_node
                    r += 1
            params, gen, seeds = {"task_node": tn}, None, None
        else:
            gen = entries[0].seeded
            per_group = [g.seeded.params(T) for g in entries]  # (once per group, not once per parameter)
            params = {k: np.concatenate([np.broadcast_to(pg[k], (len(g.positions),) + np.shape(v))
                                         for g, pg in zip(entries, per_group)]) for k, v in per_group[0].items()}
            seeds = np.concatenate([np.asarray(g.seeds, np.uint64) for g in entries])
        out.append(_Call(pos, bank, K * (F * 16 + 4), rows, params, gen, seeds, T, F))
    return out


def _shapes(call: _Call, block: int) -> tuple:
    """The inputs of one shared-flows block call after the network (what :func:`_prepare` gives)."""
    s = jax.ShapeDtypeStruct
    F = call.n_flows
    return (s((block, call.n_tasks), np.int32), s((F,), np.int32), s((F,), np.int32), s((F,), np.float64),
            s((), np.int32))


def working_set(kern: BatchKernel, calls: Sequence[_Call], block_size: int, n_classes: int,
                keep: bool) -> dict[str, int]:
    """Bytes the calls allocate, by what they hold (the parts of
    :func:`evaluator._batch.memory.working_set`): the per-point inputs and the banks, one block on the device
    (the largest, from its traced program), the results."""
    need = {"inputs": 0, "block": 0, "results": 0, "link_load": 0, "points_per_block": 0, "flows": 0}
    n_cols = len(SCALAR_METRICS) + n_classes
    for c in calls:
        block, step = block_sizes(block_size, flow_point_bytes(c.n_flows, kern.n_links))
        need["inputs"] += sum(int(np.asarray(a).nbytes) for a in jax.tree_util.tree_leaves(c.params))
        need["inputs"] += 16 * c.rows.size + c.bank_bytes
        need["block"] = max(need["block"], block_peak(kern, "shared", _shapes(c, block), step))
        n_pad = -(-c.positions.size // block) * block
        need["results"] += 3 * n_pad * n_cols * 8
        if keep:
            need["link_load"] += 3 * n_pad * kern.n_links * 8
        need["points_per_block"] = max(need["points_per_block"], block)
        need["flows"] = max(need["flows"], c.n_flows)
    return need


def _dispatch(kern: BatchKernel, c: _Call, bank: FlowBank, block: int, step: int
              ) -> tuple[list, Int[np.ndarray, "point"]]:
    """Queue the block calls of one :class:`_Call` (points grouped by bank row; the last block of a row padded
    by repeating its last point, which the kernel skips); not yet fetched. Returns the queued calls and the
    order of the points in them (:func:`~evaluator._batch.blocks.fetch` puts them back)."""
    prep = _prepare(c.gen)
    n = c.rows.size
    if c.seeds is None:
        k0 = k1 = np.zeros(n, np.uint32)
    else:
        s = np.asarray(c.seeds, dtype=np.uint64)
        k0 = (s & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        k1 = (s >> np.uint64(32)).astype(np.uint32)
    order = np.argsort(c.rows, kind="stable")
    cols = jax.tree_util.tree_map(lambda a: a[order], {"k0": k0, "k1": k1, "params": c.params})
    srows = c.rows[order]
    cuts = np.flatnonzero(np.diff(srows)) + 1
    pending = []
    for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [n]])):
        lo, hi = int(lo), int(hi)
        for sl, n_valid in block_slices(hi - lo, block):
            sl = slice(lo + sl.start, lo + sl.stop)
            args = blocks.to_device(jax.tree_util.tree_map(lambda a: take(a, sl, block), cols)
                                    | {"row": np.int32(srows[sl.start]), "n_valid": np.int32(n_valid)})
            call = (bank, args["row"], args["k0"], args["k1"], args["params"])
            key = (id(kern.fn), None if c.gen is None else c.gen.key, step, c.n_tasks) + tuple(
                (tuple(a.shape), str(a.dtype)) for a in jax.tree_util.tree_leaves(call))
            with _first_call_lock(key):  # compiles (once) under the lock; later calls pass at once
                inputs = prep(*call, size=c.n_tasks)
            pending.append((kern.fn.shared(kern.net, *inputs, step=step, n_valid=args["n_valid"]), n_valid))
    return pending, order


class BankedResults(NamedTuple):
    """``positions`` (the points' indices as given), their ``metrics`` and ``link_load`` (or None), and the
    time spent compiling (``compile_s``: the calls that compiled a program), evaluating (``eval_s``) and the
    programs compiled (``n_compiles``)."""

    positions: Int[np.ndarray, "point"]
    metrics: dict[str, Shaped[np.ndarray, "point ..."]]
    link_load: Any
    compile_s: float
    eval_s: float
    n_compiles: int


def run_banked(kern: BatchKernel, groups: Sequence[BankedPoints], block_size: int, n_classes: int, keep: bool,
               banks: BankPlan | None = None, block_name: str = "block_size") -> BankedResults:
    """Evaluate flow-list points through the banked runner: every call's working set checked first (refused
    naming ``block_name`` or ``traffics``), every block queued, then every result fetched."""
    t0 = time.perf_counter()
    calls = _calls(groups, banks)
    n = sum(c.positions.size for c in calls)
    check_working_set(working_set(kern, calls, block_size, n_classes, keep), n, block_size, keep, False,
                      block_name)
    before = kern.fn.n_compiles()
    compile_s = 0.0
    pending = []
    for c in calls:
        block, step = block_sizes(block_size, flow_point_bytes(c.n_flows, kern.n_links))  # one block for any call
        tc = time.perf_counter()
        n_before = kern.fn.n_compiles()
        queued, order = _dispatch(kern, c, c.bank(), block, step)
        if kern.fn.n_compiles() > n_before:
            compile_s += time.perf_counter() - tc
        pending.append((c.positions, queued, order))
    positions, metrics, loads = [], [], []
    for pos, queued, order in pending:
        m, ll = fetch(queued, order)
        positions.append(pos)
        metrics.append(m)
        loads.append(ll)
    merged = {k: np.concatenate([m[k] for m in metrics]) for k in metrics[0]}
    ll = None if loads[0] is None else np.concatenate(loads)
    return BankedResults(np.concatenate(positions), merged, ll, compile_s,
                         time.perf_counter() - t0 - compile_s, kern.fn.n_compiles() - before)
