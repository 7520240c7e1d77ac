"""Candidate moves of a mapping, evaluated incrementally and in batches.

The state of a search is a *slot* assignment: every available node offers
``tasks_per_node`` slots (``slot_node[slot]``), and every slot holds one task
(``slot_task[slot]``; tasks ``n_tasks ..`` are empty slots, which send
nothing). A move swaps the contents of two groups of ``k`` slots: ``k = 1``
swaps two tasks (or moves one to a free slot), ``k = tasks_per_node`` swaps
two nodes' tasks, ``k = `` a router's slots swaps two routers' tasks (block
moves). Every move keeps the mapping a permutation of the slots, so tasks per
node are respected by construction.

A move changes only the flows of the tasks it moves. Their link loads are
taken off the current loads and put on again at the new nodes through the
routing's own ``apply`` (:func:`evaluator.kernel.point_link_loads`: the
kernel's link-load function, so the model is the kernel's): ``loads + delta``
is exactly the loads of the moved mapping up to rounding, per phase for a
phased traffic (the rounding of ``loads``: the bytes taken off cancel against a link's stored sum, so a small
flow beside one 10^18 times larger on the same link is not seen in a score until the move is applied and the
state evaluated in full; docs/mapping.md, tests/test_audit_mapping_magnitudes.py). The predicted completion time is the kernel's: the sum over
phases of the largest ``load / capacity``. Written for ONE move;
:meth:`MoveEvaluator.scores` batches it (``vmap`` in steps) in one place.

A second score steers the search across the plateaus of the maximum: the
``q``-norm of the link times (``q`` = :data:`Q_NORM`), which falls when a hot
link that is not the hottest cools.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._types import AnyArray, TaskInts
from ..errors import ConfigError, check_memory
from .._batch.compiled import batch_kernel
from ._move_calls import (  # noqa: F401  (COMPACT_*, _size_above: read from here too)
    BUCKET_CHUNK, COMPACT_ENTRY_BYTES, COMPACT_MIN, COMPACT_QUANTILE, COMPACT_SHRINK, COMPACT_STEP_BYTES, NARROW_SPLITS,
    SINGLE_SPLITS, MoveCalls, _size_above, cpu_workers, moves_within, wanted_size)
from ._move_scores import Q_NORM, SparseMoves, lane_sum, move_jit, phase_scores
from ._move_store import CompiledMoves, compiled_moves
from ..kernel import PointInputs, node_endpoints, point_link_loads
from ..routing import require_linear
from ..topology import Topology

__all__ = ["Q_NORM", "FlowTable", "flow_table", "MoveEvaluator", "BUCKET_QUANTILES", "BUCKET_RATIO",
           "BUCKET_CHUNK", "NARROW_SPLITS", "SINGLE_SPLITS"]

BUCKET_QUANTILES = (0.9, 0.99)
"""Degree buckets of the flow table: for each quantile, the tasks' degree there (rounded up to a power of two) is
a bucket's width (``incident[:, :width]``), kept where it is at least :data:`BUCKET_RATIO` times narrower than the
next wider bucket (the widest: the busiest task's degree)."""

BUCKET_RATIO = 4
"""A bucket is kept only where it is at least this many times narrower than the next wider one."""


@dataclass(frozen=True)
class FlowTable:
    """The flows of a traffic for the search (host arrays).

    ``src``, ``dst``: tasks; ``nbytes``; ``phase``: the phase of each flow
    (duplicates of a (src, dst, phase) merged, flows of a task to itself and
    empty flows dropped); ``incident[task, :]``: the flows a task sends or
    receives, padded with -1 (``n_slots`` rows: empty slots have none,
    every row's flows first); ``degree[task]``: how many (the row's used
    width); ``widths``: the degree buckets, ascending, the last the full
    width: a task of degree ``<= widths[i]`` is described in full by
    ``incident[:, :widths[i]]`` (:data:`BUCKET_QUANTILES`).
    """

    src: Int[np.ndarray, "flow"]
    dst: Int[np.ndarray, "flow"]
    nbytes: Float[np.ndarray, "flow"]
    phase: Int[np.ndarray, "flow"]
    n_phases: int
    incident: Int[np.ndarray, "slot W"]
    degree: Int[np.ndarray, "slot"] | None = None
    widths: tuple = ()

    def bucket(self, tasks) -> np.ndarray:
        """The bucket (index into :attr:`widths`) of each task: the narrowest that holds its flows."""
        return np.searchsorted(np.asarray(self.widths), self.degree[np.asarray(tasks)], side="left")

    @property
    def n_flows(self) -> int:
        return int(self.src.size)


def _bucket_widths(degree: np.ndarray, n_tasks: int, width: int) -> tuple:
    """The degree buckets (ascending widths, the last ``width``) of tasks of degrees ``degree[:n_tasks]``."""
    out = [width]
    real = degree[:n_tasks]
    for q in sorted(BUCKET_QUANTILES, reverse=True):
        if real.size == 0:
            break
        w = 1 << max(int(np.ceil(np.quantile(real, q))) - 1, 0).bit_length()  # a power of two >= the quantile
        if w * BUCKET_RATIO <= out[0]:
            out.insert(0, w)
    return tuple(out)


def flow_table(traffic, n_slots: int) -> FlowTable:
    """The :class:`FlowTable` of ``traffic`` (any kind: dense traffic is expanded to its flows) for ``n_slots``
    slots (>= the traffic's tasks)."""
    srcs, dsts, nbs, phs = [], [], [], []
    phases = traffic.to_flows().phases
    for p, ex in enumerate(phases):
        s, d, b = np.asarray(ex.src, np.int64), np.asarray(ex.dst, np.int64), np.asarray(ex.nbytes, np.float64)
        keep = (s != d) & (b > 0)
        s, d, b = s[keep], d[keep], b[keep]
        key = s * n_slots + d
        uk, inv = np.unique(key, return_inverse=True)
        srcs.append(uk // n_slots)
        dsts.append(uk % n_slots)
        nbs.append(np.bincount(inv, weights=b, minlength=uk.size).astype(np.float64))  # (int64 when empty)
        phs.append(np.full(uk.size, p, np.int64))
    src, dst, nbytes, phase = (np.concatenate(x) if x else np.zeros(0, t)
                               for x, t in ((srcs, np.int64), (dsts, np.int64), (nbs, np.float64), (phs, np.int64)))
    ends = np.concatenate([src, dst])
    fid = np.concatenate([np.arange(src.size), np.arange(src.size)])
    order = np.argsort(ends, kind="stable")
    ends, fid = ends[order], fid[order]
    deg = np.bincount(ends, minlength=n_slots)
    width = max(int(deg.max(initial=0)), 1)
    check_memory("traffic", f"{src.size} flows, {width} per task at most", 8.0 * n_slots * width,
                 "the flows of every task for the mapping search")
    incident = np.full((n_slots, width), -1, np.int64)
    start = np.concatenate([[0], np.cumsum(deg)[:-1]])
    col = np.arange(ends.size) - start[ends]
    incident[ends, col] = fid
    return FlowTable(src, dst, nbytes, phase, max(len(phases), 1), incident, deg,
                     _bucket_widths(deg, min(int(traffic.n_tasks), n_slots), width))


def csr_start(deg: Int[np.ndarray, "task"]) -> Int[np.ndarray, "task"]:
    """Where each task's flows start in the flows listed task after task (CSR): ``cumsum(deg) - deg``, int32 while
    the entries (2 per flow) total under 2^31 (the moves' gathers stay int32), else int64 (in int32 the offsets
    past 2^31 entries, 2^30 flows, wrapped negative)."""
    deg = np.asarray(deg, np.int64)
    start = np.cumsum(deg) - deg
    return start.astype(np.int32 if int(deg.sum()) < 2**31 else np.int64)


class MoveEvaluator(MoveCalls, SparseMoves):
    """Scores of candidate moves of one (topology, routing, traffic, slots), on the device.

    ``slot_node``: the node of every slot. :meth:`loads` gives the link loads
    of a mapping (``[phase, link]``), :meth:`score` its (time, q-norm),
    :meth:`scores` those of a batch of moves from a state, and :meth:`heat`
    how much each slot's task loads the hot links (to draw moves where they
    matter).

    Degree buckets (:attr:`FlowTable.widths`, while :attr:`bucketing`), so
    that on power-law traffic a move of light tasks does not pay for the
    busiest task's degree: given the state on the host, :meth:`scores`
    gathers each move's flows back to back, as many entries as the moved
    tasks' degrees sum to, rounded up to one of a few lengths
    (:meth:`levels`), instead of ``2k`` full-width rows; the heat takes each
    task through its bucket's table (``incident[:, :width]``). The scores are
    the same (the extra entries are padding, weight 0).
    """

    bucketing: bool = True
    """Use the degree buckets (off: every move and the heat through the full-width table)."""

    level_fractions: tuple | None = None
    """Flow-list lengths a move is also scored at, between the buckets' and the widest, as fractions of the widest
    (rounded up to a multiple of 8); None: the default splits under a compact listing (:data:`NARROW_SPLITS`, or
    :data:`SINGLE_SPLITS` where every task is in one bucket), none otherwise; ``()``: none. They paid where a
    routing listed each flow's links in a fixed width and a move's cost was about linear in its list's length
    (DOR before it listed compactly, fractions 0.5 to 0.875:
    1,024-rank mesh halo on a 16x8x8 torus, 21,600 -> 26,600 moves/s); not on a Dragonfly (``apply`` over every
    link: DF(4,8,4) mesh halo 143,000 -> 121,000) nor on a fat tree, whose D-mod-k lists two links a tier since
    2026-12-01 (the bench's 1,024-rank stencil on XGFT(2;32,32;1,16): 551,000-580,000 moves/s with them,
    733,000-767,000 without, interleaved)."""

    def __init__(self, topology: Topology, routing, traffic, slot_node: Int[np.ndarray, "slot"]):
        if routing.needs_pairs:
            raise ConfigError("routing.kind", routing.kind,
                              "a routing that does not bind the communicating router pairs (dor, minimal, valiant, "
                              "dmodk, ecmp, ...)",
                              "A path-set routing is compiled for the router pairs of one mapping; the search "
                              "changes them at every move. Search with the routing's base (e.g. minimal) and "
                              "evaluate the result with the path set.")
        require_linear(routing, "The mapping search (its incremental moves)",
                       hint="Search with an oblivious routing (e.g. minimal) and evaluate the result with it.")
        self.topology = topology
        self.kernel = batch_kernel(topology, routing, False)
        self.slot_node = np.asarray(slot_node, np.int64)
        self.n_slots = int(self.slot_node.size)
        self.table = flow_table(traffic, self.n_slots)
        self.n_tasks = int(traffic.n_tasks)
        n_links = int(topology.n_links)
        self.n_links = n_links
        cap = np.asarray(topology.capacity, np.float64)
        t = self.table
        # int32 ids (slots, nodes, phases below 2^31: their tables would not fit first); flow ids in int32 while
        # the flows are under 2^31, else int64
        fid = np.int32 if t.src.size < 2**31 else np.int64
        self._dev = jax.device_put(dict(
            slot_node=self.slot_node.astype(np.int32), src=t.src.astype(np.int32), dst=t.dst.astype(np.int32),
            nbytes=t.nbytes, phase=t.phase.astype(np.int32), incident=t.incident.astype(fid),
            cap=cap, inv_cap=1.0 / cap))
        self._net = self.kernel.net
        self._apply = self.kernel.operator.apply
        op = self.kernel.operator
        self._flow_tables = jax.device_put(op.flow_tables) if op.flow_tables is not None else None
        P = t.n_phases
        # the jitted functions (one mapping's loads, its score, the heat, the scorers of the calls), shared with the
        # evaluators of the same content (._move_store): made at the first call
        self._held: dict = {}
        self._state_memo = None
        self._state_lock = threading.Lock()
        self.workers = cpu_workers(self._dev["cap"])
        """Threads that score a batch's calls at once (:mod:`._move_calls`): the usable cores, at most
        :data:`~._move_calls.MAX_WORKERS`, on a CPU; 1 on an accelerator (which runs the calls itself)."""
        self._on_cpu = next(iter(self._dev["cap"].devices())).platform == "cpu"
        self._compact_sizes: dict = {}
        self._compact_needs: dict = {}
        # the degree buckets: the table of each (a prefix of the full one's columns), the tasks of each
        widths = t.widths or (t.incident.shape[1],)
        self._incident = [self._dev["incident"][:, :w] for w in widths[:-1]] + [self._dev["incident"]]
        self._task_bucket = (t.bucket(np.arange(self.n_slots)) if len(widths) > 1
                             else np.zeros(self.n_slots, np.int64))
        self._bucket_tasks = [jnp.asarray(np.flatnonzero(self._task_bucket == i).astype(np.int32))
                              for i in range(len(widths))]
        self._all_tasks = jnp.arange(self.n_slots, dtype=jnp.int32)
        # the moves' flows by task, back to back (CSR): a move gathers the sum of its tasks' degrees
        deg = t.degree if t.degree is not None else (t.incident >= 0).sum(axis=1)
        self._degree = deg
        flat = t.incident[t.incident >= 0]
        self._dev.update(jax.device_put(dict(
            flat=(flat if flat.size else np.full(1, -1)).astype(fid),
            start=csr_start(deg), degree=deg.astype(fid))))
        self.bytes_per_move = 8.0 * P * n_links * 3

    # -- one mapping --

    def _flow_loads(self, task_node, src, dst, w):
        """Link loads of flows ``src -> dst`` (tasks) of bytes ``w`` under ``task_node``, [link]."""
        pt = PointInputs(task_node, src, dst, w)
        return point_link_loads(self._net, pt, apply_routing=self._apply)

    def _loads_fn(self, dev, task_node):
        P = self.table.n_phases

        def one(p):
            w = jnp.where(dev["phase"] == p, dev["nbytes"], 0.0)
            return self._flow_loads(task_node, dev["src"], dev["dst"], w)

        return jax.vmap(one)(jnp.arange(P, dtype=jnp.int32))

    @staticmethod
    def _objective(loads, cap):
        u = loads / cap[None, :]  # [phase, link] seconds (a division, as the kernel's: the same rounding)
        t = u.max(axis=1)
        ref = jnp.where(t > 0, t, 1.0)
        qn = ref * (((u / ref[:, None]) ** Q_NORM).sum(axis=1)) ** (1.0 / Q_NORM)
        return t.sum(), qn.sum()

    def _score_fn(self, dev, loads):
        return self._objective(loads, dev["cap"])

    @property
    def _compiled(self) -> CompiledMoves:
        """The jitted functions this evaluator calls now (:func:`~._move_store.compiled_moves`)."""
        return compiled_moves(self, self._held)

    @property
    def _loads(self):
        return self._compiled.loads

    @property
    def _score(self):
        return self._compiled.score

    @property
    def _heat(self):
        return self._compiled.heat

    @property
    def _scores(self) -> dict:
        return self._compiled.scores

    @property
    def _state_calls(self) -> dict:
        return self._compiled.state_calls

    @property
    def _need_calls(self) -> dict:
        return self._compiled.need_calls

    @property
    def n_compiled(self) -> int:
        """Functions compiled so far for this evaluator's content, by it or by an evaluator of the same content
        (:mod:`._move_store`) (the scores: one per move size, call size, step, flow-list level and listing
        size; a batch's state: one per move size; the entries a compact listing needs: one per move size and level,
        :meth:`~._move_calls.MoveCalls._first_sizes`): a caller timing warm calls repeats until it stops growing."""
        return len(self._compiled)

    @property
    def widths(self) -> tuple:
        """The degree buckets' widths (ascending; the last: the full table's)."""
        return tuple(int(x.shape[1]) for x in self._incident)

    @property
    def narrow_width(self) -> int | None:
        """The narrowest bucket's width, ``None`` without buckets."""
        return self.widths[0] if len(self._incident) > 1 else None

    def _dev_bucket(self, i: int) -> dict:
        """The device arrays with bucket ``i``'s flow table as ``incident``."""
        if i == len(self._incident) - 1:
            return self._dev
        return {**self._dev, "incident": self._incident[i]}

    def _heat_fn(self, dev, task_node, loads, tasks):
        """How much the q-norm falls when a task's flows are taken off (its flows' share of the hot links), for
        each of ``tasks`` (their flows in ``dev["incident"]``; empty slots: 0)."""
        P = self.table.n_phases
        q0 = self._objective(loads, dev["cap"])[1]
        compact = self.kernel.operator.flow_compact is not None
        n_rl, n_nodes = int(self.topology.n_router_links), int(self.topology.n_nodes)

        def one(t):
            f = dev["incident"][t]
            ok = f >= 0
            f = jnp.where(ok, f, 0)
            w = jnp.where(ok, dev["nbytes"][f], 0.0)
            ph = dev["phase"][f]
            m = f.shape[0]
            nodes = jnp.concatenate([task_node[dev["src"][f]], task_node[dev["dst"][f]]])
            idx = jnp.arange(m, dtype=jnp.int32)
            if compact:  # the router links of the task's flows listed compactly (room for every longest path)
                sn, dn = nodes[:m], nodes[m:]
                wp = jnp.where(ph[:, None] == jnp.arange(P, dtype=jnp.int32)[None, :], w[:, None], 0.0)
                c_links, c_vals, _ = self._compact_entries(sn, dn, wp, m * int(self.kernel.operator.flow_width))
                c_links = jnp.where(c_links >= 0, c_links, n_rl)
                n_idx = jnp.concatenate([sn, dn + n_nodes])

            def off(p):
                if compact:  # the node links as the kernel loads them: injection, ejection, off the node only
                    wn = jnp.where(sn != dn, wp[:, p], 0.0)
                    return jnp.concatenate([jnp.zeros(n_rl, loads.dtype).at[c_links].add(c_vals[:, p], mode="drop"),
                                            jnp.zeros(2 * n_nodes, loads.dtype).at[n_idx].add(
                                                jnp.concatenate([wn, wn]))])
                return self._flow_loads(nodes, idx, idx + m, jnp.where(ph == p, w, 0.0))

            d = jax.vmap(off)(jnp.arange(P, dtype=jnp.int32)) if P > 1 else off(0)[None, :]
            return q0 - self._objective(loads - d, dev["cap"])[1]

        return jax.lax.map(one, tasks, batch_size=128)

    def task_node(self, slot_task: Int[np.ndarray, "slot"]) -> TaskInts:
        """The node of every task (real tasks only) of a slot assignment."""
        task_slot = np.empty(self.n_slots, np.int64)
        task_slot[np.asarray(slot_task)] = np.arange(self.n_slots)
        return self.slot_node[task_slot[: self.n_tasks]]

    def _all_task_node(self, slot_task):
        task_slot = np.empty(self.n_slots, np.int64)
        task_slot[np.asarray(slot_task)] = np.arange(self.n_slots)
        return self.slot_node[task_slot].astype(np.int32)

    def loads(self, slot_task) -> Float[Array, "phase link"]:
        return self._loads(self._dev, jnp.asarray(self._all_task_node(slot_task)))

    def score(self, loads) -> tuple[float, float]:
        t, q = self._score(self._dev, loads)
        return float(t), float(q)

    def heat(self, slot_task, loads) -> Float[np.ndarray, "slot"]:
        """Per slot: how much its task's flows load the hot links (>= 0)."""
        tn = jnp.asarray(self._all_task_node(slot_task))
        if self.bucketing and len(self._incident) > 1:  # each bucket's tasks through its table
            parts = [(ids, self._heat(self._dev_bucket(i), tn, loads, ids))
                     for i, ids in enumerate(self._bucket_tasks) if ids.shape[0]]
            h = np.zeros(self.n_slots)
            for ids, hi in parts:
                h[np.asarray(ids)] = np.asarray(hi)
        else:
            h = np.asarray(self._heat(self._dev, tn, loads, self._all_tasks))  # per task
        return np.maximum(h[np.asarray(slot_task)], 0.0)

    # -- a batch of moves --

    def _moved_flows(self, dev, slot_task, task_node, a, b, L: int | None = None):
        """The flows ONE move (swap slots ``a[k]`` with ``b[k]``) changes: ``(f, bytes, (src, dst) nodes before,
        (src, dst) nodes after)``, each flow once (padding: bytes 0). ``L``: gather ``L`` entries of the moved
        tasks' flow lists back to back (the move's tasks' degrees sum to ``L`` at most); ``None``: each task's
        row of the full-width table."""
        n_nodes = int(self.topology.n_nodes)
        ta, tb = slot_task[a], slot_task[b]  # [k]
        T = jnp.concatenate([ta, tb])
        n_t = T.shape[0]
        if L is None:
            W = dev["incident"].shape[1]
            fl = dev["incident"][T].ravel()
            which = jnp.repeat(jnp.arange(n_t, dtype=jnp.int32), W)  # the moved task whose row holds entry j
        else:
            dg, st = dev["degree"][T], dev["start"][T]
            cum = jnp.cumsum(dg)
            j = jnp.arange(L, dtype=jnp.int32)
            which = (j[:, None] >= cum[None, :]).sum(axis=1, dtype=jnp.int32)  # the task of entry j (n_t: none)
            wc = jnp.minimum(which, n_t - 1)
            pos = jnp.clip(st[wc] + j - (cum[wc] - dg[wc]), 0, dev["flat"].shape[0] - 1)
            fl = jnp.where(which < n_t, dev["flat"][pos], -1)
        # each flow once: a flow between two moved tasks is in both their rows; the first moved task's row keeps it
        ok = fl >= 0
        f = jnp.where(ok, fl, 0)
        s, d = dev["src"][f], dev["dst"][f]
        earlier = jnp.arange(n_t, dtype=jnp.int32)[None, :] < which[:, None]  # [entry, moved task]
        dup = jnp.any(earlier & ((T[None, :] == s[:, None]) | (T[None, :] == d[:, None])), axis=1)
        first = ok & ~dup
        w = jnp.where(first, dev["nbytes"][f], 0.0)
        na, nb = dev["slot_node"][a], dev["slot_node"][b]

        def moved(t):  # the node of task t after the move
            in_a = t[:, None] == ta[None, :]
            in_b = t[:, None] == tb[None, :]
            to_b = jnp.where(in_a, nb[None, :], 0).sum(axis=1, dtype=jnp.int32)
            to_a = jnp.where(in_b, na[None, :], 0).sum(axis=1, dtype=jnp.int32)
            node = jnp.where(in_a.any(axis=1), to_b, jnp.where(in_b.any(axis=1), to_a, task_node[t]))
            # in range whatever the move (the kernel's gathers and scatters promise in-bounds indices: a slot
            # listed twice in a group would otherwise write outside its move's buffer)
            return jnp.clip(node, 0, n_nodes - 1)

        return f, w, (task_node[s], task_node[d]), (moved(s), moved(d))

    def _router_loads(self, dev, sn, dn, w):
        """Router-link loads [router_link] of flows between nodes ``sn -> dn`` of bytes ``w``: the routing's own
        ``apply`` as the kernel calls it (:func:`evaluator.kernel.point_link_loads`), without the node links."""
        net = self._net
        sr, dr = net.node_router[sn], net.node_router[dn]
        off_router = jnp.where(sr != dr, w, 0.0)
        sr, dr = node_endpoints(net, sn, dn, sr, dr)
        return self.kernel.operator.route_few(net.routing, self._flow_tables, sr, dr, off_router,
                                              int(self.topology.n_router_links))

    def _move_fn(self, k: int, L: int | None = None, size: int | None = None):
        """The scores of ONE move (swap slots ``a[k]`` with ``b[k]``) from a state.

        The router links are updated densely (the routing's ``apply`` on the moved flows, before and after; or
        sparsely where a compact listing is short, :meth:`_sparse`); the node links only where they can change:
        a move changes the injection and ejection loads of the moved slots' nodes only (a flow keeps its unmoved
        end's node, and becomes or stops being node-local only on a moved slot's node). The largest untouched
        node-link time of a phase is read from its ``4k + 1`` largest.
        ``size``: list the moved flows' router links compactly in ``size`` entries (:meth:`_compact_entries`;
        the move's ``(time, norm, entries needed)``: its scores are valid where ``needed <= size``).
        """
        P = self.table.n_phases
        n_rl, n_nodes = int(self.topology.n_router_links), int(self.topology.n_nodes)
        top = min(4 * k + 1, 2 * n_nodes)
        listed = self.kernel.operator.flow_links is not None
        compact = size is not None
        sparse = self._sparse(size)
        # the norm's sum over the router links by lanes where the routing lists compactly (DOR: 3-6 % more moves a
        # second, docs/mapping.md), listed or not (the same bits); plainly elsewhere (a Dragonfly: 17 % fewer)
        sum_norm = lane_sum if self.kernel.operator.flow_compact is not None else jnp.sum

        def one(dev, bs, slot_task, task_node, loads, a, b):
            ref, node_sum, top_v, top_i = bs[:4]
            f, w, (s0, d0), (s1, d1) = self._moved_flows(dev, slot_task, task_node, a, b, L)
            ph = dev["phase"][f]
            if compact:  # the moved flows' links before (bytes taken off) and after (put on), back to back
                w2, ph2 = jnp.concatenate([-w, w]), jnp.concatenate([ph, ph])
                if P > 1:  # the bytes of each phase
                    w2 = jnp.where(ph2[:, None] == jnp.arange(P, dtype=jnp.int32)[None, :], w2[:, None], 0.0)
                c_links, c_vals, need = self._compact_entries(jnp.concatenate([s0, s1]), jnp.concatenate([d0, d1]),
                                                              w2, size)
                c_links = jnp.where(c_links >= 0, c_links, n_rl)  # past the end: dropped
            X = jnp.concatenate([dev["slot_node"][a], dev["slot_node"][b]])  # the nodes whose links may change
            nx = X.shape[0]
            dup = jnp.any((X[:, None] == X[None, :]) & (jnp.arange(nx)[None, :] < jnp.arange(nx)[:, None]), axis=1)
            on0, on1 = s0 != d0, s1 != d1

            def node_delta(wp):  # [2 nx]: injection then ejection of the nodes X
                inj = (jnp.where((s1[None, :] == X[:, None]) & on1[None, :], wp[None, :], 0.0).sum(1)
                       - jnp.where((s0[None, :] == X[:, None]) & on0[None, :], wp[None, :], 0.0).sum(1))
                ej = (jnp.where((d1[None, :] == X[:, None]) & on1[None, :], wp[None, :], 0.0).sum(1)
                      - jnp.where((d0[None, :] == X[:, None]) & on0[None, :], wp[None, :], 0.0).sum(1))
                return jnp.concatenate([inj, ej])

            links = jnp.concatenate([n_rl + X, n_rl + n_nodes + X])  # [2 nx]
            first = jnp.concatenate([~dup, ~dup])
            cap_x = dev["cap"][links]

            def router(p, wp, inv_ref):  # the router links' largest time and norm term of phase p after the move
                if compact:
                    r = loads[p, :n_rl] + jnp.zeros(n_rl, loads.dtype).at[c_links].add(
                        c_vals if P == 1 else c_vals[:, p], mode="drop")
                elif listed:  # one scatter of the moved flows' links, before (bytes taken off) and after (put on)
                    r = loads[p, :n_rl] + self._router_loads(dev, jnp.concatenate([s0, s1]),
                                                             jnp.concatenate([d0, d1]), jnp.concatenate([-wp, wp]))
                else:  # apply (not promised linear for negative bytes): before and after
                    r = loads[p, :n_rl] + (self._router_loads(dev, s1, d1, wp) - self._router_loads(dev, s0, d0, wp))
                u_r = r * dev["inv_cap"][:n_rl]
                return u_r.max(), sum_norm((u_r * inv_ref) ** Q_NORM)

            def nodes(p, wp, inv_ref):  # the node links' largest time and norm term of phase p after the move
                old_x = loads[p, links]
                new_x = old_x + node_delta(wp)
                u_old, u_new = old_x / cap_x, new_x / cap_x
                # the largest untouched node-link time: the first of the top list whose link is not touched
                hit = jnp.any(top_i[p][:, None] == links[None, :], axis=1)
                untouched = jnp.where(hit, -jnp.inf, top_v[p]).max()
                untouched = jnp.where(hit.all(), top_v[p][-1], untouched)
                q_nodes = node_sum[p] + jnp.where(first, (u_new * inv_ref) ** Q_NORM - (u_old * inv_ref) ** Q_NORM,
                                                  0.0).sum()
                return jnp.maximum(jnp.where(first, u_new, -jnp.inf).max(), untouched), jnp.maximum(q_nodes, 0.0)

            def phase(p):
                wp = jnp.where(ph == p, w, 0.0)
                inv_ref = 1.0 / ref[p]
                t_n, q_n = nodes(p, wp, inv_ref)
                if sparse:  # the router links in :meth:`_sparse_finish`, move after move
                    return t_n, q_n
                t_r, q_r = router(p, wp, inv_ref)
                return phase_scores(t_r, q_r, t_n, q_n, ref[p])

            if P == 1:
                t, q = phase(0)
            else:
                t, q = jax.vmap(phase)(jnp.arange(P, dtype=jnp.int32))
            if sparse:  # per phase, and the listing
                return jnp.reshape(t, (P,)), jnp.reshape(q, (P,)), c_links, c_vals.reshape(size, P), need
            if P > 1:
                t, q = t.sum(), q.sum()
            return (t, q, need) if compact else (t, q)

        return one

    def _compact_entries(self, sn, dn, w, size: int):
        """The routing's compact listing (:attr:`~evaluator.routing.RoutingOperator.flow_compact`) of flows
        between nodes ``sn -> dn`` of signed bytes ``w`` (``[flow]``, or ``[flow, phase]``): ``(links, bytes,
        needed)``, ``size`` entries; a flow of no bytes or within one router lists none (its ends are put on
        router 0)."""
        net = self._net
        sr, dr = net.node_router[sn], net.node_router[dn]
        on = (sr != dr) & ((w != 0) if w.ndim == 1 else (w != 0).any(axis=1))
        sr, dr = node_endpoints(net, sn, dn, sr, dr)
        sr, dr = jnp.where(on, sr, 0), jnp.where(on, dr, 0)
        return self.kernel.operator.flow_compact(self._flow_tables, sr, dr, w, size)

    def _state(self, dev, loads, k: int, size: int | None = None):
        """What every move of a batch reads besides the loads (computed once per batch): the node links' state
        (:meth:`_node_state`), and with a sparse compact listing of ``size`` entries (:meth:`_sparse`) the router
        links' per phase: the norm's sum and the ``size + 1`` largest times with their links (more than a move's
        listing can touch, so that one of them is untouched)."""
        state = self._node_state(dev, loads, k)
        if not self._sparse(size):
            return state
        n_rl = int(self.topology.n_router_links)
        ref = state[0]
        u = loads[:, :n_rl] * dev["inv_cap"][None, :n_rl]  # as the dense pass rounds them
        r_sum = ((u * (1.0 / ref)[:, None]) ** Q_NORM).sum(axis=1)
        r_top_v, r_top_i = jax.lax.top_k(u, size + 1)
        return (*state, r_sum, r_top_v, r_top_i)

    @property
    def _top_size(self) -> int | None:
        """The longest compact listing scored sparsely (:meth:`_sparse`), ``None`` where none is: the batch's state
        (:meth:`_batch_state_of`) holds the router links' top list for it, and each call takes a prefix."""
        size = int(self.topology.n_router_links) // COMPACT_SPARSE - 1
        return size if size >= 0 and self._compact_full(1, None) is not None and self._sparse(size) else None

    def _fit_state(self, bs, size: int | None):
        """The batch's state (:meth:`_batch_state_of`) as a call of listings of ``size`` entries reads it
        (:meth:`_state`): the router links' top list cut to ``size + 1`` links where it scores sparsely, left out
        where it does not. The first untouched link of a longer list has the same time (every link of a larger time
        is touched, and a list longer than a move's listing holds an untouched one), so the cut only keeps a
        move's reads as short as its listing."""
        if not self._sparse(size):
            return bs[:4]
        return (*bs[:5], bs[5][:, :size + 1], bs[6][:, :size + 1])

    def _batch_state_of(self, loads, k: int):
        """:meth:`_state` for the loads ``loads`` and moves of ``k`` slots a side with the longest sparse listing
        (:attr:`_top_size`), computed once for the calls of a batch (they pass the same loads: the last one's is
        kept; JAX arrays do not change) rather than once per call (on the 16x8x8 torus under DOR, 0.6 ms for the
        node links and about 1.2 ms more for a top list of the router links, a call: 33 calls a batch of the
        power law)."""
        with self._state_lock:
            memo = self._state_memo
            if memo is not None and memo[0] is loads and memo[1] == k:
                return memo[2]
            if k not in self._state_calls:
                top = self._top_size
                self._state_calls[k] = move_jit(lambda dev, ld: self._state(dev, ld, k, top))
            bs = self._state_calls[k](self._dev, loads)
            self._state_memo = (loads, k, bs)
            return bs

    def _sparse(self, size: int | None) -> bool:
        """Whether a move listed compactly in ``size`` entries updates only the router links it lists (a scatter
        of its entries, their new times and norm terms; the largest untouched time from the batch's top list)
        rather than passing over every router link: where the listing is at least :data:`COMPACT_SPARSE` times
        shorter than the router links, on a CPU (the sparse moves are scored one after another, which an
        accelerator would run as a long sequence of small steps; there the dense pass scores a step at once)."""
        return (size is not None and self._on_cpu
                and COMPACT_SPARSE * (size + 1) <= int(self.topology.n_router_links))

    def _node_state(self, dev, loads, k: int):
        """Per phase: the current maximum time (the norm's reference), the norm's sum over the node links, and the
        ``4k + 1`` largest node-link times with their links."""
        n_rl = int(self.topology.n_router_links)
        u = loads / dev["cap"][None, :]
        t = u.max(axis=1)
        ref = jnp.where(t > 0, t, 1.0)
        un = u[:, n_rl:]
        node_sum = ((un / ref[:, None]) ** Q_NORM).sum(axis=1)
        top_v, top_i = jax.lax.top_k(un, min(4 * k + 1, un.shape[1]))
        return ref, node_sum, top_v, top_i + n_rl

    step_choices = (16, 32, 128)
    """Steps the search tries (and keeps the fastest of) when its budget allows (:attr:`default_step` otherwise):
    which is fastest depends on the machine's caches and on how many threads score at once (:attr:`workers`);
    three, as before 2026-11-30 (each compiles its calls), the new default and the old one among them."""

    @property
    def default_step(self) -> int:
        """Moves per vmapped step without tuning: about 1 MB of per-move router-link arrays (the loads of every
        phase), a power of two in [16, 128]; 2 MB with a compact listing (its moves read and write fewer
        entries). A step's arrays are written and read several times a move, so the step that keeps them near
        the core's own cache runs fastest: 1,024-rank moves, two threads on 2 cores, steps of 32 against 128
        (the previous default, 4 and 8 MB; medians of 4 interleaved calls of 16,384 moves, 2026-11-30):
        DF(4,8,4) minimal stencil 197,962 against 99,373/s, power law 101,208 against 62,992/s; 16x8x8 torus
        under DOR stencil 85,580 against 37,329/s, mesh halo 56,700 against 32,597/s, power law 37,832
        against 28,870/s; a fat tree's 1,024 router links keep 128."""
        per_move = 8.0 * self.table.n_phases * int(self.topology.n_router_links)
        budget = 2e6 if self._compact_full(1, None) is not None else 1e6
        return int(np.clip(2 ** round(np.log2(max(budget / per_move, 1.0))), 16, 128))

    def scores(self, slot_task: Int[Array, "slot"], task_node, loads, a: Int[np.ndarray, "move k"],
               b: Int[np.ndarray, "move k"], step: int | None = None, host_state: Int[np.ndarray, "slot"] | None = None,
               fractions: tuple | None = None) -> tuple[Float[AnyArray, "move"], Float[AnyArray, "move"]]:
        """(time, q-norm) after each move ``a[i] <-> b[i]`` (slot groups) from the state; moves in steps of
        ``step`` (``vmap``; default :attr:`default_step`) in one device call.

        ``host_state``: the state's slot assignment on the host (the same as ``slot_task``); with it, each move
        gathers its flows by the sum of its tasks' degrees, rounded up to one of a few levels (:meth:`levels`),
        instead of ``2k`` times the busiest task's degree: the moves are split by level, each part scored in calls
        of fixed size (the narrowest level: a quarter of the batch; the others: :data:`BUCKET_CHUNK`; the last
        call padded by repeating a move), and the scores come back in the moves' order (host arrays).
        ``fractions``: the levels' fractions for this call (:meth:`levels`; ``None``: :attr:`level_fractions`)."""
        step = self.default_step if step is None else int(step)
        n = int(a.shape[0])
        state = (slot_task, task_node, loads)
        if n == 0:
            return self._resolved(None, state, a, b, step, self._scores_with(None, *state, a, b, step))
        a, b = np.asarray(a), np.asarray(b)
        calls = self._plan_calls(a, b, host_state, fractions)
        self._first_sizes(calls, state, a, b)
        t_out, q_out = np.empty(n), np.empty(n)
        for (idx, L, p), res in zip(calls, self._run_calls(calls, state, a, b, step)):
            t, q = self._resolved(L, state, a[p], b[p], step, res)
            t_out[idx] = np.asarray(t)[:idx.size]
            q_out[idx] = np.asarray(q)[:idx.size]
        return t_out, q_out

    def _compact_full(self, k: int, L: int | None) -> int | None:
        """Entries of the compact listing that hold any move of ``k`` slots a side at flow-list level ``L``
        (both sides' flows at the longest path); ``None`` where the routing has no compact listing."""
        op = self.kernel.operator
        if op.flow_compact is None:
            return None
        flows = L if L is not None else 2 * k * int(self._dev["incident"].shape[1])
        return max(2 * flows * int(op.flow_width), 1)

    def _compact_size(self, k: int, L: int | None) -> int | None:
        """The compact listing's entries for the next call (:meth:`_resolved` adapts it), ``None``: none."""
        full = self._compact_full(k, L)
        return None if full is None else self._compact_sizes.get((k, L), full)

    def _resolved(self, L: int | None, state, a, b, step: int, res):
        """A call's ``(time, norm)``; with a compact listing, its moves that needed more entries than the
        call listed scored again with the full listing (host arrays), and the listing's size for the next calls
        set from the entries the recent moves of its level needed (the last :data:`COMPACT_POOL`): the size of the
        grid (:func:`_size_above`) above their :data:`COMPACT_QUANTILE` quantile (their largest while fewer than
        100), taken when it is below :data:`COMPACT_SHRINK` of the current size or when more than
        :data:`COMPACT_OVERFLOW` of this call's moves did not fit. Pooled over calls, so that the size, and with it
        the compiled call, stays put from batch to batch (a level's few moves a call would make it jump). The
        scores depend on the size in the last place at most: the same entries, the rest padding, but XLA may add
        a link's entries in another order at another size (tests/test_dor_compact.py)."""
        if len(res) == 2:
            return res
        t, q, need, size = res
        k = int(np.shape(a)[1])
        need = np.asarray(need)
        over = np.flatnonzero(need > size)
        full = self._compact_full(k, L)
        pool = self._compact_needs.setdefault((k, L), [])
        pool.append(need)
        while sum(x.size for x in pool) - pool[0].size >= COMPACT_POOL:
            pool.pop(0)
        want = wanted_size(np.concatenate(pool), full)
        current = self._compact_size(k, L)
        if want < COMPACT_SHRINK * current or (over.size > COMPACT_OVERFLOW * need.size and want > current):
            self._compact_sizes[(k, L)] = want
        if not over.size:
            return t, q
        t, q = np.array(t), np.array(q)
        m = 16
        while m < over.size:  # calls of 16, 64, 256, ... moves, with the full listing: few compilations
            m *= 4
        p = np.concatenate([over, np.full(m - over.size, over[0])])
        t2, q2, _, _ = self._scores_with(L, *state, np.asarray(a)[p], np.asarray(b)[p], step, full)
        t[over], q[over] = np.asarray(t2)[:over.size], np.asarray(q2)[:over.size]
        return t, q

    def _scores_with(self, L: int | None, slot_task, task_node, loads, a, b, step: int, size: int | None = None):
        """:meth:`scores` of moves whose tasks' degrees sum to ``L`` at most (``None``: through the full-width
        table): ``(time, norm)``, or, with a compact listing of ``size`` entries (default
        :meth:`_compact_size`), ``(time, norm, entries needed, size)`` for :meth:`_resolved`."""
        k = int(a.shape[1])
        if size is None:
            size = self._compact_size(k, L)
        out = self._score_call(k, int(a.shape[0]), step, L, size)(
            self._dev, self._batch_state_of(loads, k), slot_task, task_node, loads, jnp.asarray(a, jnp.int32),
            jnp.asarray(b, jnp.int32))
        return out if size is None else (*out, size)

    @staticmethod
    def _call_key(k: int, n: int, step: int, L: int | None, size: int | None) -> tuple:
        """The shape of a call of ``n`` moves (:meth:`_score_call`): ``(k, n, step, level, listing size)``, the step
        at most ``n`` and, with a listing, within :data:`COMPACT_STEP_BYTES` (a hub's node swap lists ~10^5
        entries)."""
        step = min(step, n) if n else step
        if size is not None:
            step = max(1, min(step, moves_within(size)))
        return (k, n, int(step), L, size)

    def _score_call(self, k: int, n: int, step: int, L: int | None, size: int | None):
        """The jitted call scoring ``n`` moves of ``k`` slots a side, made once per shape (:meth:`_call_key`,
        :attr:`n_compiled`)."""
        key = self._call_key(k, n, step, L, size)
        step = key[2]
        if key not in self._scores:
            one = self._move_fn(k, L, size)

            def batch(dev, bs, slot_task, task_node, loads, a, b):
                bs = self._fit_state(bs, size)
                if not self._sparse(size):
                    return jax.lax.map(lambda ab: one(dev, bs, slot_task, task_node, loads, ab[0], ab[1]), (a, b),
                                       batch_size=step)
                return self._sparse_batch(dev, bs, loads, a, b, step,
                                          lambda x, y: one(dev, bs, slot_task, task_node, loads, x, y))

            self._scores[key] = move_jit(batch)
        return self._scores[key]

    def device_state(self, slot_task):
        """The state's device arrays: slot_task, the node of every task (empty slots included)."""
        return (jnp.asarray(np.asarray(slot_task, np.int32)), jnp.asarray(self._all_task_node(slot_task)))


COMPACT_SPARSE = 5
"""A compact listing at least this many times shorter than the router links is scored sparsely (:meth:`MoveEvaluator
._sparse`, :class:`~evaluator.mapping._move_scores.SparseMoves`: move after move, each touching its entries only);
where the ratio is smaller the dense pass of a well-sized step is faster. 12 until 2026-12-01, when the sparse
moves stopped copying their buffer (every router link) twice a move (:meth:`SparseMoves._sparse_finish`): the
bench's 16,384 moves of 1,024 ranks on the 16x8x8 torus (6,144 router links), two threads, two evaluators in one
process scored in turn (9 alternations, medians), with 12 then 5: stencil (listings of 768 entries) 115,283 ->
140,575 moves/s, mesh halo (1,024 entries) 94,861 -> 107,446. Before that change the dense pass had been the faster
at these sizes (mesh halo 57,000 moves/s dense against 40,000-45,000 sparse, 2026-11-30). Where the ratio is large
the sparse moves win by far (4,096-rank mesh halo on 16x16x16, 24,576 links: 25,000 moves/s against 9,100 for an
earlier sparse update, 2026-11-30)."""

COMPACT_POOL = 4096
"""Recent moves (per move size and level) whose needed entries set the compact listing's size."""

COMPACT_OVERFLOW = 0.02
"""Above this share of a call's moves scored again, the compact listing grows."""
