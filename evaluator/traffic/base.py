"""The traffic contract: task-level bytes of one exchange, sparse or dense.

Every generator returns a :class:`Traffic`: sparse flows ``(src_task,
dst_task, bytes)`` over ``n_tasks`` tasks (MPI ranks), or a
:class:`DenseTraffic`: every task pair, never materialised. Task ids of grid
patterns are the row-major order of the task grid (last dimension fastest, as
:func:`numpy.ravel_multi_index`).

One contract
------------

:class:`AbstractTraffic` is what every traffic answers, whichever form it
takes (explicit flows, rank-one dense demand, a sequence of phases): its
sizes (``n_tasks``, ``n_flows``, ``total_bytes``), who sends
(:meth:`~AbstractTraffic.senders`, ``n_senders``), its phases (``phases``:
a tuple of single exchanges, ``(self,)`` for one exchange), the bytes
between the places its tasks are put on (:meth:`~AbstractTraffic.pair_bytes`,
:meth:`~AbstractTraffic.location_bytes`), explicit flows
(:meth:`~AbstractTraffic.to_flows`) and the input the kernel reads for it
(:attr:`~AbstractTraffic.kernel_input`). Consumers call these; none asks a
traffic for its type.

Dense traffic
-------------

A uniform all-to-all over the 49,152 nodes of Mira has 2.4 billion flows; a
flow list of that size cannot be built, let alone walked. Many dense
patterns are *rank one*: the bytes from task ``s`` to task ``d`` factorise as

    bytes(s -> d) = bytes_per_pair * src_weight[s] * dst_weight[d],  s != d.

Uniform all-to-all (all weights 1) and many-to-many (indicator weights of
the source and destination sets) are of this form. After placement the
demand between two different routers is again rank one, ``u[r] v[r']``,
and the routing operators of :mod:`evaluator.routing` map it to link loads
without a router-pair matrix: per dimension on a torus (cost ``O(routers x
n_k)``), by group aggregation on a Dragonfly (cost ``O(routers x groups)``).

:class:`DenseTraffic` is accepted wherever a :class:`evaluator.traffic.Traffic`
is (``evaluate``, ``evaluate_batch``); :meth:`DenseTraffic.to_traffic`
materialises the flow list for small cases (tests, the per-flow baseline).

A member of the family is one private module with its generator(s), its
config schema and a :class:`TrafficKind` entry for the registry in
``evaluator/traffic/__init__.py``; ``build(cfg, topology)`` makes the traffic
(``n_tasks`` null in a config means one task per node of the topology).
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Callable

import numpy as np
from jaxtyping import Bool, Float, Int

from .._registry import Kind
from .._types import FlowFloats, FlowInts, TaskBools, TaskFloats
from ..errors import ConfigError, check_memory, positive_float, positive_int, require

__all__ = ["AbstractTraffic", "KERNEL_INPUTS", "Traffic", "DenseTraffic", "PhasedTraffic", "TrafficKind", "from_flows", "from_matrix", "dense", "phased",
           "tasks_or_nodes"]


@dataclasses.dataclass(frozen=True)
class TrafficKind(Kind):
    """A traffic member: ``build(cfg, topology) -> AbstractTraffic`` (a Traffic, DenseTraffic or PhasedTraffic).

    ``declared_tasks(cfg, topology)`` (optional): the task count the traffic will have, known cheaply before it
    is built (a file's header), so that a placement that cannot hold that many tasks is refused before a large
    file is read.

    ``declared_grid(cfg, topology)`` (optional): the task grid (row-major task ids) the traffic carries besides a
    ``beta`` or ``grid`` key of its config (a file's ``# grid:`` header), for grid-aware placements."""

    declared_tasks: Callable[..., int | None] | None = None
    declared_grid: Callable[..., list[int] | None] | None = None

    def tasks_declared(self, cfg, topology) -> int | None:
        """The task count ``build`` will give, when known without building (None: not known)."""
        return None if self.declared_tasks is None else self.declared_tasks(cfg, topology)

    def grid_declared(self, cfg, topology=None) -> list[int] | None:
        """The task grid the traffic of ``cfg`` carries, when known without building (None: none, or not known)."""
        return None if self.declared_grid is None else self.declared_grid(cfg, topology)


def tasks_or_nodes(n_tasks, topology) -> int:
    """A config's ``n_tasks``, or one task per node of ``topology`` when it is null."""
    return n_tasks if n_tasks is not None else topology.n_nodes


KERNEL_INPUTS = ("flows", "dense", "phases")
"""The values of :attr:`AbstractTraffic.kernel_input`."""


class AbstractTraffic(abc.ABC):
    """What every traffic answers: the contract of :class:`Traffic`, :class:`DenseTraffic` and :class:`PhasedTraffic`.

    Attributes every member has: ``n_tasks`` (tasks, MPI ranks), ``name``
    (short label), ``phases`` (the exchanges done one after another, each a
    single exchange: ``(self,)`` for one exchange) and ``phase_names`` (one
    label per phase). Bytes are bytes per exchange (summed over the phases
    where a method says so).
    """

    @property
    @abc.abstractmethod
    def kernel_input(self) -> str:
        """The input the kernel reads for this traffic as one point (:data:`KERNEL_INPUTS`).

        ``"flows"``: a flow list (``src``, ``dst``, ``nbytes``:
        :class:`~evaluator.kernel.PointInputs`); ``"dense"``: rank-one weights
        (``src_weight``, ``dst_weight``, ``bytes_per_pair``:
        :class:`~evaluator.kernel.DensePointInputs`); ``"phases"``: none of its
        own: each of its ``phases`` is evaluated with its own input and the
        results are combined, with per-phase results.
        """

    @property
    @abc.abstractmethod
    def n_flows(self) -> int:
        """Flows (task pairs that exchange bytes, as a flow list would count them; a phased traffic: the largest
        phase's)."""

    @property
    @abc.abstractmethod
    def total_bytes(self) -> float:
        """Bytes sent, over every flow (and phase)."""

    @abc.abstractmethod
    def sent_per_task(self) -> Float[np.ndarray, "task"]:
        """Bytes sent by every task (over every phase)."""

    @abc.abstractmethod
    def senders(self) -> Bool[np.ndarray, "task"]:
        """Tasks that send a positive number of bytes (in some phase), as the kernels count them."""

    @property
    def n_senders(self) -> int:
        """Tasks that send a positive number of bytes (in some phase): the divisor of
        ``effective_injection_bandwidth``."""
        return int(np.count_nonzero(self.senders()))

    @property
    def n_phases(self) -> int:
        """Exchanges done one after another (1 for a single exchange)."""
        return len(self.phases)

    @abc.abstractmethod
    def scaled(self, factor: float) -> AbstractTraffic:
        """The same pattern with every byte count multiplied by ``factor`` (>= 0)."""

    @abc.abstractmethod
    def to_flows(self) -> AbstractTraffic:
        """The same traffic with explicit flows: a :class:`Traffic` (a phased traffic: every phase one),
        for small cases (a dense pattern's flow list is materialised)."""

    @abc.abstractmethod
    def sample_flows(self, k: int, rng: np.random.Generator) -> Traffic:
        """``k`` flows drawn at random (e.g. to time a per-flow walk without every flow): a flow list's without
        replacement (at most ``n_flows``), a dense pattern's pairs with replacement."""

    @abc.abstractmethod
    def pair_bytes(self, task_loc: Int[np.ndarray, "task"], n_loc: int, check: Callable | None = None
                   ) -> tuple[Int[np.ndarray, "entry"], Int[np.ndarray, "entry"], Float[np.ndarray, "entry"]]:
        """``(src, dst, bytes)``: bytes between different locations when task ``i`` is on location
        ``task_loc[i]`` (locations: nodes, routers; ``n_loc`` of them), over every phase.

        A flow list gives one entry per flow with bytes whose tasks are on
        different locations (a location pair may repeat); a dense pattern one
        entry per pair of a location holding a task with source weight and a
        different one holding a task with destination weight (bytes
        ``bytes_per_pair * U[s] * V[d]``, ``U``, ``V`` the weights summed per
        location). ``check(name, n_src, n_dst, n_pairs)`` (optional) is called
        before a dense pattern's pairs are listed, with the exchange's name,
        the locations that send and receive and the exact number of pairs: it
        may refuse them.
        """

    def pair_sets(self, task_loc: Int[np.ndarray, "task"], n_loc: int
                  ) -> tuple[tuple[Int[np.ndarray, "src"], Int[np.ndarray, "dst"], bool], ...]:
        """The location pairs that exchange bytes (those of :meth:`pair_bytes`), as blocks ``(src, dst,
        product)``: ``product`` False, the pairs ``(src[i], dst[i])`` (repeats, any order); True, every pair of
        ``src x dst`` (two sorted sets) on different locations. A question about which kinds of pairs meet (a
        routing's notes) is answered from the sets without listing a dense pattern's pairs (a 16,384-node
        all-to-all: 268 million). Default: :meth:`pair_bytes`' entries, one block."""
        s, d, _ = self.pair_bytes(task_loc, n_loc)
        return ((s, d, False),)

    @abc.abstractmethod
    def location_bytes(self, task_loc: Int[np.ndarray, "task"], n_loc: int
                       ) -> tuple[Float[np.ndarray, "loc"], Float[np.ndarray, "loc"]]:
        """``(sent, received)``: bytes every location sends to, and receives from, other locations when task
        ``i`` is on location ``task_loc[i]`` (over every phase; bytes between tasks on one location excluded)."""


class _Exchange(AbstractTraffic):
    """A single exchange (not phased): its own only phase."""

    @property
    def phases(self) -> tuple:
        """``(self,)``: one exchange."""
        return (self,)

    @property
    def phase_names(self) -> tuple[str, ...]:
        """``("phase0",)``: the label of the phase axis for one exchange."""
        return ("phase0",)


@dataclasses.dataclass(frozen=True, eq=False)
class Traffic(_Exchange):
    """Sparse task-level traffic of one exchange (an explicit flow list; :attr:`kernel_input` ``"flows"``).

    Attributes
    ----------
    n_tasks
        Number of tasks.
    src, dst : int ndarray, shape [flow]
        Source and destination task of each flow.
    nbytes : float ndarray, shape [flow]
        Bytes of each flow (>= 0, finite).
    name
        Short label.
    """

    n_tasks: int
    src: FlowInts
    dst: FlowInts
    nbytes: FlowFloats
    name: str = "traffic"

    def __post_init__(self):
        """Checked when made, whoever makes it (a Traffic built directly with a task id -1, or -1 bytes, gave
        another flow's or a negative answer): equal 1-D arrays, ids in [0, n_tasks), bytes finite and >= 0."""
        n = positive_int("traffic.n_tasks", self.n_tasks)
        for field, a, kind in (("traffic.src", self.src, "i"), ("traffic.dst", self.dst, "i"),
                               ("traffic.nbytes", self.nbytes, "f")):
            if not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype.kind not in ("iu" if kind == "i" else "iuf"):
                raise ConfigError(field, type(a).__name__ if not isinstance(a, np.ndarray) else f"{a.dtype} {a.shape}",
                                  "a 1-D NumPy array of " + ("integer task ids" if kind == "i" else "byte counts"),
                                  "evaluator.traffic.from_flows(n_tasks, src, dst, nbytes) builds one from lists.")
        require(self.src.size == self.dst.size == self.nbytes.size, "traffic.nbytes", self.nbytes.size,
                f"one entry per flow: src has {self.src.size}, dst {self.dst.size}")
        for field, a in (("traffic.src", self.src), ("traffic.dst", self.dst)):
            if a.size and (int(a.min()) < 0 or int(a.max()) >= n):
                bad = int(a.min()) if int(a.min()) < 0 else int(a.max())
                raise ConfigError(field, bad, f"task ids in [0, {n - 1}] (n_tasks = {n})")
        if self.nbytes.size and not (np.isfinite(self.nbytes).all() and float(self.nbytes.min()) >= 0):
            bad = self.nbytes[~(np.isfinite(self.nbytes) & (self.nbytes >= 0))][0]
            raise ConfigError("traffic.nbytes", float(bad), "byte counts finite and >= 0")
        with np.errstate(over="ignore"):
            total = float(self.nbytes.sum(dtype=np.float64))
        require(math.isfinite(total), "traffic.nbytes", f"flows summing to {total} B",
                "byte counts with a finite total (below 1.8e308 B; every load and time would be inf or NaN)",
                f"The {self.src.size} flows' bytes come from the traffic's byte size (traffic.bytes, "
                f"traffic.bytes_per_element, ... of its kind, or a file's bytes): make it smaller.")
        for field in ("src", "dst", "nbytes"):  # read-only views: a flow set to NaN after the checks gave NaN times
            view = getattr(self, field).view()
            view.setflags(write=False)
            object.__setattr__(self, field, view)

    @property
    def kernel_input(self) -> str:
        return "flows"

    @property
    def n_flows(self) -> int:
        return int(self.src.size)

    @property
    def total_bytes(self) -> float:
        """Bytes sent in the exchange, over all flows."""
        return float(self.nbytes.sum())

    def sent_per_task(self) -> TaskFloats:
        """Bytes sent by every task, shape [task]."""
        return np.bincount(self.src, weights=self.nbytes, minlength=self.n_tasks)

    def senders(self) -> TaskBools:
        return self.sent_per_task() > 0

    def to_flows(self) -> Traffic:
        """Itself (the flows are explicit)."""
        return self

    def sample_flows(self, k: int, rng: np.random.Generator) -> Traffic:
        idx = rng.choice(self.n_flows, min(k, self.n_flows), replace=False)
        return Traffic(self.n_tasks, self.src[idx], self.dst[idx], self.nbytes[idx], self.name)

    def pair_bytes(self, task_loc, n_loc: int, check=None):
        s, d = task_loc.take(np.asarray(self.src)), task_loc.take(np.asarray(self.dst))
        b = np.asarray(self.nbytes, np.float64)
        keep = (s != d) & (b > 0)
        if keep.all():  # (no copies: 1.6 M flows in 5.6 ms instead of 12.4)
            return s, d, b
        return s[keep], d[keep], b[keep]

    def location_bytes(self, task_loc, n_loc: int):
        s, d = task_loc[self.src], task_loc[self.dst]
        off = (s != d) & (self.nbytes > 0)
        w = np.asarray(self.nbytes, np.float64)[off]
        return np.bincount(s[off], weights=w, minlength=n_loc), np.bincount(d[off], weights=w, minlength=n_loc)

    def to_dense(self) -> Float[np.ndarray, "task task"]:
        """Dense traffic matrix ``T[src, dst]`` in bytes."""
        check_memory("traffic.n_tasks", self.n_tasks, 8.0 * self.n_tasks ** 2,
                     f"the dense {self.n_tasks} x {self.n_tasks} matrix of {self.name}",
                     "Use the sparse flows (src, dst, nbytes) instead.")
        T = np.zeros((self.n_tasks, self.n_tasks))
        np.add.at(T, (self.src, self.dst), self.nbytes)
        return T

    def scaled(self, factor: float) -> Traffic:
        """The same pattern with every flow multiplied by ``factor``."""
        factor = positive_float("traffic.scale", factor, allow_zero=True)
        return dataclasses.replace(self, nbytes=self.nbytes * factor)


def _short(value, limit: int = 120):
    """``value`` itself when its repr is short, else a description (so that a message stays one short line)."""
    r = repr(value)
    if len(r) <= limit and "\n" not in r:
        return value
    if isinstance(value, np.ndarray):
        return f"<array of shape {value.shape}, dtype {value.dtype}>"
    return r[: limit - 3] + "..."


def _as_array(field: str, value, allowed: str) -> np.ndarray:
    """``np.asarray(value)`` of a numeric (bool, integer or real) array, or a :class:`ConfigError`."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):  # ragged nesting, objects NumPy cannot hold
        raise ConfigError(field, _short(value), allowed, "Nested lists must be rectangular (rows of equal length).") \
            from None
    if arr.dtype.kind not in "biuf":
        flat = arr.reshape(-1)
        first = next((x for x in flat.tolist() if not (isinstance(x, (int, float)) and not isinstance(x, bool))),
                     None) if arr.dtype.kind == "O" else (flat[0].item() if flat.size else None)
        what = {"c": "complex numbers", "U": "text", "S": "bytes"}.get(arr.dtype.kind, "non-numbers")
        raise ConfigError(field, _short(value), allowed,
                          f"It holds {what} (dtype {arr.dtype}{f', e.g. {first!r}' if first is not None else ''}).")
    return arr


def from_flows(n_tasks: int, src, dst, nbytes, name: str = "flows", field: str = "traffic") -> Traffic:
    """Traffic from flow arrays, validated.

    Raises :class:`~evaluator.errors.ConfigError` for task ids that are not
    integers or out of range, non-numeric input, mismatched lengths, NaN or
    negative bytes.
    """
    n_tasks = positive_int(f"{field}.n_tasks", n_tasks)
    ids = {}
    for nm, arr in (("src", src), ("dst", dst)):
        a = _as_array(f"{field}.{nm}", arr, "integer task ids (a list or array)")
        if a.dtype.kind == "b":
            raise ConfigError(f"{field}.{nm}", _short(arr), "integer task ids, not booleans")
        require(a.ndim <= 1, f"{field}.{nm}", f"an array of shape {a.shape}",
                "one task id per flow (a 1-D list or array)")
        ids[nm] = a.reshape(-1)
    src, dst = ids["src"], ids["dst"]
    nbytes = _as_array(f"{field}.bytes", nbytes, "byte counts (a number or one number per flow)")
    require(nbytes.ndim <= 1, f"{field}.bytes", f"an array of shape {nbytes.shape}",
            "byte counts (a number or one number per flow: a 1-D list or array)")
    nbytes = nbytes.astype(np.float64).reshape(-1)
    if nbytes.size == 1 and src.size != 1:
        nbytes = np.full(src.size, float(nbytes[0]))
    require(src.size == dst.size == nbytes.size, f"{field}.flows",
            {"src": int(src.size), "dst": int(dst.size), "bytes": int(nbytes.size)},
            "src, dst and bytes of equal length (bytes may be one number for every flow)")
    for nm, arr in (("src", src), ("dst", dst)):
        if arr.size:
            if arr.dtype.kind == "f":
                bad = ~np.isfinite(arr) | (arr != np.round(arr))
                if bad.any():
                    i = int(np.argmax(bad))
                    raise ConfigError(f"{field}.{nm}[{i}]", float(arr[i]), "integer task ids")
                arr = arr.astype(np.float64)  # (compared in float32, id 2**24 was not below n_tasks 2**24 + 1)
            bad = (arr < 0) | (arr >= n_tasks)
            if bad.any():
                i = int(np.argmax(bad))
                raise ConfigError(f"{field}.{nm}[{i}]", arr[i].item(), f"task ids in [0, {n_tasks - 1}]")
            ids[nm] = arr
    if nbytes.size:
        nan = ~np.isfinite(nbytes)
        if nan.any():
            i = int(np.argmax(nan))
            raise ConfigError(f"{field}.bytes[{i}]", float(nbytes[i]), "finite byte counts (no NaN or inf)")
        neg = nbytes < 0
        if neg.any():
            i = int(np.argmax(neg))
            raise ConfigError(f"{field}.bytes[{i}]", float(nbytes[i]), "byte counts >= 0")
    return Traffic(n_tasks, ids["src"].astype(np.int64), ids["dst"].astype(np.int64), nbytes, name)


def from_matrix(matrix, name: str = "matrix", field: str = "traffic") -> Traffic:
    """Traffic from a dense ``[src_task, dst_task]`` byte matrix."""
    allowed = "a square 2-D matrix of byte counts [src_task, dst_task]"
    M = _as_array(f"{field}.matrix", matrix, allowed)
    if not (M.ndim == 2 and M.shape[0] == M.shape[1] and M.shape[0] > 0):
        raise ConfigError(f"{field}.matrix", _short(matrix), f"{allowed}; got shape {M.shape}")
    M = M.astype(np.float64, copy=False)
    n = M.shape[0]
    for bad, what in ((~np.isfinite(M), "finite byte counts (no NaN or inf)"), (M < 0, "byte counts >= 0")):
        if bad.any():
            i = int(np.argmax(bad))
            raise ConfigError(f"{field}.matrix[{i // n}, {i % n}]", float(M.flat[i]), what)
    s, d = np.nonzero(M != 0)
    return from_flows(n, s, d, M[s, d], name=name, field=field)


@dataclasses.dataclass(frozen=True, eq=False)
class DenseTraffic(_Exchange):
    """Rank-one dense traffic of one exchange (never materialised; :attr:`kernel_input` ``"dense"``).

    Task ``s`` sends ``bytes_per_pair * src_weight[s] * dst_weight[d]`` bytes
    to every task ``d != s``.

    Attributes
    ----------
    n_tasks
        Number of tasks.
    src_weight, dst_weight : float ndarray, shape [task]
        Non-negative weights (1 for a task that sends / receives, 0 otherwise,
        in all-to-all and many-to-many).
    bytes_per_pair
        Bytes between two tasks of weight 1.
    name
        Short label.
    """

    n_tasks: int
    src_weight: TaskFloats
    dst_weight: TaskFloats
    bytes_per_pair: float
    name: str = "dense"

    def __post_init__(self):
        """Checked when made (a NaN bytes_per_pair gave a NaN time; weights of another length a broadcast error):
        weights of ``n_tasks`` entries, finite and >= 0, and ``bytes_per_pair`` finite and >= 0."""
        n = positive_int("traffic.n_tasks", self.n_tasks)
        positive_float("traffic.bytes_per_pair", self.bytes_per_pair, allow_zero=True)
        for field, w in (("traffic.src_weight", self.src_weight), ("traffic.dst_weight", self.dst_weight)):
            w = np.asarray(w)
            require(w.shape == (n,), field, w.shape, f"a vector of n_tasks = {n} weights")
            require(bool(np.isfinite(w).all() and (w >= 0).all()), field, "a weight < 0 or not finite",
                    "weights finite and >= 0")
        with np.errstate(over="ignore", invalid="ignore"):
            total = self.total_bytes
        require(math.isfinite(total), "traffic.bytes_per_pair", self.bytes_per_pair,
                "a size whose exchange's total is finite (below 1.8e308 B; every load and time would be inf or NaN)")

    @property
    def kernel_input(self) -> str:
        return "dense"

    @property
    def n_flows(self) -> int:
        """Number of task pairs that exchange bytes (as a flow list would count them)."""
        s, d = self.src_weight > 0, self.dst_weight > 0
        return int(s.sum()) * int(d.sum()) - int((s & d).sum())

    @property
    def total_bytes(self) -> float:
        """Bytes sent in the exchange."""
        ws, wd = self.src_weight, self.dst_weight
        return float(self.bytes_per_pair * (ws.sum() * wd.sum() - (ws * wd).sum()))

    def sent_per_task(self) -> TaskFloats:
        """Bytes sent by every task, shape [task]."""
        return self.bytes_per_pair * self.src_weight * (self.dst_weight.sum() - self.dst_weight)

    def senders(self) -> TaskBools:
        return (self.src_weight > 0) & (self.dst_weight.sum() - self.dst_weight > 0)

    def scaled(self, factor: float) -> DenseTraffic:
        """The same pattern with ``bytes_per_pair`` multiplied by ``factor``."""
        factor = positive_float("traffic.scale", factor, allow_zero=True)
        return dataclasses.replace(self, bytes_per_pair=self.bytes_per_pair * factor)

    def to_flows(self) -> Traffic:
        """:meth:`to_traffic`."""
        return self.to_traffic()

    def sample_flows(self, k: int, rng: np.random.Generator) -> Traffic:
        srcs = np.nonzero(self.src_weight > 0)[0]
        dsts = np.nonzero(self.dst_weight > 0)[0]
        s = rng.choice(srcs, k)
        d = rng.choice(dsts, k)
        same = s == d
        d[same] = dsts[(np.searchsorted(dsts, d[same]) + 1) % dsts.size]
        b = self.bytes_per_pair * self.src_weight[s] * self.dst_weight[d]
        return Traffic(self.n_tasks, s.astype(np.int64), d.astype(np.int64), b.astype(np.float64), self.name)

    def pair_bytes(self, task_loc, n_loc: int, check=None):
        su = np.unique(task_loc[self.src_weight > 0])
        dv = np.unique(task_loc[self.dst_weight > 0])
        if check is not None:  # exact: every (s, d) of su x dv with s != d
            check(self.name, int(su.size), int(dv.size),
                  int(su.size) * int(dv.size) - int(np.intersect1d(su, dv, assume_unique=True).size))
        s, d = np.repeat(su, dv.size), np.tile(dv, su.size)
        U = np.bincount(task_loc, weights=self.src_weight, minlength=n_loc)
        V = np.bincount(task_loc, weights=self.dst_weight, minlength=n_loc)
        b = float(self.bytes_per_pair) * U[s] * V[d]
        keep = (s != d) & (b > 0)
        return s[keep], d[keep], b[keep]

    def pair_sets(self, task_loc, n_loc: int):
        """One product block: the locations holding a task with source weight by those holding one with
        destination weight (none without bytes per pair)."""
        if not float(self.bytes_per_pair) > 0:
            return ()
        return ((np.unique(task_loc[self.src_weight > 0]), np.unique(task_loc[self.dst_weight > 0]), True),)

    def location_bytes(self, task_loc, n_loc: int):
        U = np.bincount(task_loc, weights=self.src_weight, minlength=n_loc) * float(self.bytes_per_pair)
        V = np.bincount(task_loc, weights=self.dst_weight, minlength=n_loc)
        return U * (V.sum() - V), V * (U.sum() - U)

    def to_traffic(self) -> Traffic:
        """The explicit flow list (``n_flows`` flows): for small cases only."""
        require(self.n_flows <= 50_000_000, "traffic", self.name,
                f"at most 5e7 flows to materialise; this pattern has {self.n_flows:,}",
                "Use fewer tasks (traffic.n_tasks), or evaluate the pattern as it is (eval and sweep do, without "
                "listing its flows; a mapping search needs them).")
        s = np.nonzero(self.src_weight > 0)[0]
        d = np.nonzero(self.dst_weight > 0)[0]
        S, D = np.meshgrid(s, d, indexing="ij")
        S, D = S.ravel(), D.ravel()
        keep = S != D
        S, D = S[keep], D[keep]
        nb = self.bytes_per_pair * self.src_weight[S] * self.dst_weight[D]
        return Traffic(self.n_tasks, S.astype(np.int64), D.astype(np.int64), nb.astype(np.float64), self.name)


def dense(n_tasks: int, src_weight, dst_weight, bytes_per_pair: float = 1.0, name: str = "dense") -> DenseTraffic:
    """Rank-one dense traffic from weight vectors (validated)."""
    n = positive_int("traffic.n_tasks", n_tasks)
    b = positive_float("traffic.bytes_per_pair", bytes_per_pair)
    check_memory("traffic.n_tasks", n, 2 * 16.0 * n, f"the weight vectors of {n} tasks")
    out = []
    for field, w0 in (("traffic.src_weight", src_weight), ("traffic.dst_weight", dst_weight)):
        allowed = f"one number or a list of n_tasks = {n} numbers, finite and >= 0"
        w = _as_array(field, w0, allowed)
        require(w.ndim == 0 or (w.ndim == 1 and w.size == n), field,
                _short(w0) if w.ndim <= 1 else f"<array of shape {w.shape}>", allowed,
                f"Got {w.size} numbers." if w.ndim == 1 else None)
        w = np.broadcast_to(w.astype(np.float64), (n,)).copy()
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            i = int(np.argmax(bad))
            raise ConfigError(f"{field}[{i}]" if np.ndim(w0) else field, float(w[i]), "finite weights >= 0")
        w.setflags(write=False)
        out.append(w)
    return DenseTraffic(n, out[0], out[1], b, name)


@dataclasses.dataclass(frozen=True, eq=False)
class PhasedTraffic(AbstractTraffic):
    """A communication step of several exchanges done one after another (DESIGN.md "Jobs and phases").

    Each phase is a :class:`Traffic` or a :class:`DenseTraffic` over the same
    ``n_tasks`` tasks; phase ``p + 1`` starts when phase ``p`` has finished,
    so the step's completion time is the sum of the phases' times (each the
    contention bound of its own exchange). Accepted wherever a traffic is
    (``evaluate``, ``evaluate_batch``, jobs); results carry per-phase metrics
    along a ``phase`` dimension labelled by ``phase_names``.

    Attributes
    ----------
    phases
        The exchanges, in order (at least one).
    phase_names
        One label per phase (unique).
    name
        Short label.
    """

    phases: tuple
    phase_names: tuple[str, ...]
    name: str = "phased"

    def __post_init__(self):
        """Checked when made: at least one phase, each an exchange of the same tasks, one unique name each (phases
        of 4 and 2 tasks were evaluated as one step)."""
        ph = self.phases
        require(isinstance(ph, (tuple, list)) and len(ph) >= 1 and all(isinstance(p, _Exchange) for p in ph),
                "traffic.phases", type(ph).__name__, "a tuple of at least one exchange (Traffic or DenseTraffic)")
        counts = [p.n_tasks for p in ph]
        require(len(set(counts)) == 1, "traffic.phases", counts, "phases of the same tasks (one task count)")
        names = tuple(self.phase_names)
        require(len(names) == len(ph) and len(set(names)) == len(names), "traffic.phase_names", list(names),
                f"one unique name per phase ({len(ph)})")

    @property
    def n_tasks(self) -> int:
        return self.phases[0].n_tasks

    @property
    def kernel_input(self) -> str:
        return "phases"

    @property
    def n_flows(self) -> int:
        """Flows of the largest phase (the phases are evaluated as separate points)."""
        return max(p.n_flows for p in self.phases)

    @property
    def total_bytes(self) -> float:
        """Bytes sent over every phase."""
        return float(sum(p.total_bytes for p in self.phases))

    def sent_per_task(self) -> TaskFloats:
        """Bytes sent by every task over every phase, shape [task]."""
        return np.sum([p.sent_per_task() for p in self.phases], axis=0)

    def senders(self) -> TaskBools:
        """Tasks that send a positive number of bytes in some phase (the flow-list phases' senders in one
        pass)."""
        out = np.zeros(self.n_tasks, dtype=bool)
        flows = [p for p in self.phases if p.kernel_input == "flows"]
        if flows:
            nb = np.concatenate([p.nbytes for p in flows])
            out[np.concatenate([p.src for p in flows])[nb > 0]] = True
        for p in self.phases:
            if p.kernel_input != "flows":
                out |= p.senders()
        return out

    def scaled(self, factor: float) -> PhasedTraffic:
        """Every phase with every flow multiplied by ``factor``."""
        factor = positive_float("traffic.scale", factor, allow_zero=True)
        return dataclasses.replace(self, phases=tuple(p.scaled(factor) for p in self.phases))

    def to_flows(self) -> PhasedTraffic:
        """Every phase as a flow list (same phases, same labels)."""
        return dataclasses.replace(self, phases=tuple(p.to_flows() for p in self.phases))

    def sample_flows(self, k: int, rng: np.random.Generator) -> Traffic:
        """``k`` flows drawn from every phase's flows together."""
        parts = [p.sample_flows(k, rng) for p in self.phases]
        src, dst, nb = (np.concatenate([getattr(p, f) for p in parts]) for f in ("src", "dst", "nbytes"))
        idx = rng.choice(src.size, min(k, src.size), replace=False)
        return Traffic(self.n_tasks, src[idx], dst[idx], nb[idx], self.name)

    def _merged_phases(self) -> list[AbstractTraffic]:
        """The phases, each run of flow-list phases merged into one flow list (a trace has thousands)."""
        out, run = [], []

        def flush():
            if run:
                out.append(Traffic(self.n_tasks, np.concatenate([p.src for p in run]),
                                   np.concatenate([p.dst for p in run]), np.concatenate([p.nbytes for p in run])))
                run.clear()

        for p in self.phases:
            if p.kernel_input == "flows":
                run.append(p)
                continue
            flush()
            out.append(p)
        flush()
        return out

    def pair_bytes(self, task_loc, n_loc: int, check=None):
        """Every phase's entries, phase after phase (runs of flow-list phases in one pass)."""
        parts = [p.pair_bytes(task_loc, n_loc, check) for p in self._merged_phases()]
        return tuple(np.concatenate([q[i] for q in parts]) for i in range(3))

    def pair_sets(self, task_loc, n_loc: int):
        """Every phase's blocks, phase after phase (runs of flow-list phases in one block)."""
        return tuple(b for p in self._merged_phases() for b in p.pair_sets(task_loc, n_loc))

    def location_bytes(self, task_loc, n_loc: int):
        """Summed over the phases."""
        parts = [p.location_bytes(task_loc, n_loc) for p in self.phases]
        return np.sum([q[0] for q in parts], axis=0), np.sum([q[1] for q in parts], axis=0)


def phased(phases, names=None, name: str | None = None, field: str = "traffic.phases") -> PhasedTraffic:
    """A :class:`PhasedTraffic` from a sequence of exchanges done one after another (validated).

    ``names`` labels the phases (default ``phase0``, ``phase1``, ...). Every
    phase must be a :class:`Traffic` or :class:`DenseTraffic` over the same
    number of tasks; nested phased traffics are flattened.
    """
    if isinstance(phases, AbstractTraffic):
        phases = [phases]
    # (the value's description only when it is refused: the repr of every phase's arrays cost 1.7 ms a phase)
    if not (isinstance(phases, (list, tuple)) and len(phases) > 0):
        raise ConfigError(field, _short(phases),
                          "a non-empty list of exchanges (Traffic or DenseTraffic), done one after another")
    flat, labels = [], []
    for i, p in enumerate(phases):
        if not isinstance(p, AbstractTraffic):
            raise ConfigError(f"{field}[{i}]", _short(p), "a Traffic or DenseTraffic (one exchange)",
                              f"Got a {type(p).__name__}.")
        if p.kernel_input == "phases":
            flat.extend(p.phases)
            labels.extend(f"{i}.{n}" for n in p.phase_names)
            continue
        flat.append(p)
        labels.append(f"phase{i}")
    n = flat[0].n_tasks
    for i, p in enumerate(flat):
        require(p.n_tasks == n, f"{field}[{i}].n_tasks", p.n_tasks,
                f"the task count of the first phase ({n}): every phase involves the same tasks")
    if names is not None:
        names = [str(x) for x in names]
        require(len(names) == len(flat) and len(set(names)) == len(names), "traffic.phase_names", names,
                f"{len(flat)} distinct labels, one per phase")
        labels = names
    return PhasedTraffic(tuple(flat), tuple(labels), name or "phased " + "+".join(p.name for p in flat))
