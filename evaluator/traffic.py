"""Traffic generators: task-level bytes for one exchange.

Every generator returns a :class:`Traffic`: sparse flows
``(src_task, dst_task, bytes)`` over ``n_tasks`` tasks (MPI ranks). Task ids
of grid patterns are the row-major order of the task grid (last dimension
fastest, as :func:`numpy.ravel_multi_index`).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence

import numpy as np

from .errors import ConfigError, positive_float, positive_int, require
from .topology import Topology, TorusTopology

__all__ = [
    "Traffic",
    "from_flows",
    "from_matrix",
    "stencil",
    "stencil_message_sizes",
    "all_to_all",
    "bisection_pairing",
    "random_permutation",
    "shift",
    "tornado",
    "many_to_many",
    "from_file",
]


@dataclasses.dataclass(frozen=True, eq=False)
class Traffic:
    """Sparse task-level traffic of one exchange.

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
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    name: str = "traffic"

    @property
    def n_flows(self) -> int:
        return int(self.src.size)

    @property
    def total_bytes(self) -> float:
        """Bytes sent in the exchange, over all flows."""
        return float(self.nbytes.sum())

    def sent_per_task(self) -> np.ndarray:
        """Bytes sent by every task, shape [task]."""
        return np.bincount(self.src, weights=self.nbytes, minlength=self.n_tasks)

    def to_dense(self) -> np.ndarray:
        """Dense traffic matrix ``T[src, dst]`` in bytes."""
        T = np.zeros((self.n_tasks, self.n_tasks))
        np.add.at(T, (self.src, self.dst), self.nbytes)
        return T

    def scaled(self, factor: float) -> Traffic:
        """The same pattern with every flow multiplied by ``factor``."""
        return dataclasses.replace(self, nbytes=self.nbytes * float(factor))


def from_flows(n_tasks: int, src, dst, nbytes, name: str = "flows", field: str = "traffic") -> Traffic:
    """Traffic from flow arrays, validated.

    Raises :class:`~evaluator.errors.ConfigError` for task ids out of range,
    mismatched lengths, NaN or negative bytes.
    """
    n_tasks = positive_int(f"{field}.n_tasks", n_tasks)
    src = np.asarray(src).reshape(-1)
    dst = np.asarray(dst).reshape(-1)
    nbytes = np.asarray(nbytes, dtype=np.float64).reshape(-1)
    if nbytes.size == 1 and src.size != 1:
        nbytes = np.full(src.size, float(nbytes[0]))
    require(src.size == dst.size == nbytes.size, f"{field}.flows", (src.size, dst.size, nbytes.size),
            "src, dst and bytes of equal length")
    for nm, arr in (("src", src), ("dst", dst)):
        if arr.size:
            require(np.issubdtype(arr.dtype, np.integer) or np.all(arr == np.round(arr)), f"{field}.{nm}",
                    arr[:5].tolist(), "integer task ids")
            bad = (arr < 0) | (arr >= n_tasks)
            require(not bad.any(), f"{field}.{nm}", int(arr[bad][0]) if bad.any() else None,
                    f"task ids in [0, {n_tasks - 1}]")
    if nbytes.size:
        nan = ~np.isfinite(nbytes)
        require(not nan.any(), f"{field}.bytes", float(nbytes[nan][0]) if nan.any() else None,
                "finite byte counts (no NaN or inf)")
        neg = nbytes < 0
        require(not neg.any(), f"{field}.bytes", float(nbytes[neg][0]) if neg.any() else None,
                "byte counts >= 0")
    return Traffic(n_tasks, src.astype(np.int64), dst.astype(np.int64), nbytes, name)


def from_matrix(matrix, name: str = "matrix", field: str = "traffic") -> Traffic:
    """Traffic from a dense ``[src_task, dst_task]`` byte matrix."""
    M = np.asarray(matrix, dtype=np.float64)
    require(M.ndim == 2 and M.shape[0] == M.shape[1] and M.shape[0] > 0, f"{field}.matrix", M.shape,
            "a square 2-D matrix [src_task, dst_task]")
    s, d = np.nonzero(M != 0)
    return from_flows(M.shape[0], s, d, M[s, d], name=name, field=field)


# --------------------------------------------------------------------------------------
# Nearest-neighbour stencil (Prisacari Sec. 3.2)
# --------------------------------------------------------------------------------------


def _check_grid(alpha, beta, field="traffic"):
    require(isinstance(alpha, (list, tuple, np.ndarray)) and len(alpha) >= 1, f"{field}.alpha", alpha,
            "a non-empty list of positive integers (elements per dimension)")
    require(isinstance(beta, (list, tuple, np.ndarray)) and len(beta) == len(alpha), f"{field}.beta", beta,
            f"a list of {len(alpha)} positive integers (tasks per dimension), as many as alpha")
    al = tuple(positive_int(f"{field}.alpha[{k}]", v) for k, v in enumerate(alpha))
    be = tuple(positive_int(f"{field}.beta[{k}]", v) for k, v in enumerate(beta))
    for k, (x, y) in enumerate(zip(al, be)):
        require(x % y == 0, f"{field}.beta[{k}]", y, f"a divisor of alpha[{k}] = {x}",
                "Each task must hold a whole number of elements.")
    return al, be


def stencil_message_sizes(alpha: Sequence[int], beta: Sequence[int], bytes_per_element: float) -> np.ndarray:
    """Message size per dimension, Prisacari Eq. (8): the shared face in bytes.

    ``mu_k = bytes_per_element * prod_{i != k} alpha_i / beta_i``.
    """
    al, be = _check_grid(alpha, beta)
    sub = np.array(al) // np.array(be)
    return np.array([bytes_per_element * math.prod(int(s) for i, s in enumerate(sub) if i != k)
                     for k in range(len(al))], dtype=np.float64)


def stencil(
    alpha: Sequence[int],
    beta: Sequence[int],
    bytes_per_element: float = 1024.0,
    periodic: bool | Sequence[bool] = True,
) -> Traffic:
    """d-dimensional nearest-neighbour exchange (Prisacari Sec. 3.2).

    The domain of ``alpha`` elements is split over a ``beta`` task grid. Every
    task sends to each neighbour along every dimension ``k`` with
    ``beta_k > 1`` a message of the shared face, ``mu_k`` bytes (Eq. 8), once
    in the ``+k`` and once in the ``-k`` direction. ``beta_k = 1`` means no
    exchange in dimension ``k``; ``beta_k = 2`` (periodic) sends both faces
    to the same neighbour (``2 mu_k`` bytes). Non-periodic dimensions send
    nothing across the domain boundary.
    """
    al, be = _check_grid(alpha, beta)
    bpe = positive_float("traffic.bytes_per_element", bytes_per_element)
    nd = len(be)
    if isinstance(periodic, (list, tuple, np.ndarray)):
        require(len(periodic) == nd, "traffic.periodic", list(periodic), f"a bool or a list of {nd} bools")
        per = tuple(bool(p) for p in periodic)
    else:
        per = (bool(periodic),) * nd
    mu = stencil_message_sizes(al, be, bpe)
    n = math.prod(be)
    coords = np.stack(np.unravel_index(np.arange(n), be), axis=1)
    srcs, dsts, bys = [], [], []
    for k in range(nd):
        if be[k] == 1:
            continue
        for step in (+1, -1):
            c = coords.copy()
            c[:, k] += step
            if per[k]:
                c[:, k] %= be[k]
                ok = np.ones(n, dtype=bool)
            else:
                ok = (c[:, k] >= 0) & (c[:, k] < be[k])
            tgt = np.ravel_multi_index(tuple(np.clip(c[ok], 0, np.array(be) - 1).T), be)
            srcs.append(np.arange(n)[ok])
            dsts.append(tgt)
            bys.append(np.full(int(ok.sum()), mu[k]))
    if not srcs:
        return Traffic(n, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), "stencil")
    src, dst, b = np.concatenate(srcs), np.concatenate(dsts), np.concatenate(bys)
    # Merge duplicate flows (beta_k = 2: both faces to one neighbour).
    key = src * n + dst
    uniq, inv = np.unique(key, return_inverse=True)
    merged = np.zeros(uniq.size)
    np.add.at(merged, inv, b)
    label = "stencil " + "x".join(map(str, be))
    return Traffic(n, (uniq // n).astype(np.int64), (uniq % n).astype(np.int64), merged, label)


# --------------------------------------------------------------------------------------
# Dense and permutation patterns
# --------------------------------------------------------------------------------------


def all_to_all(n_tasks: int, bytes_per_pair: float = 1.0) -> Traffic:
    """Uniform all-to-all: every task sends ``bytes_per_pair`` to every other task."""
    n = positive_int("traffic.n_tasks", n_tasks)
    b = positive_float("traffic.bytes_per_pair", bytes_per_pair)
    s, d = np.divmod(np.arange(n * n, dtype=np.int64), n)
    keep = s != d
    return Traffic(n, s[keep], d[keep], np.full(int(keep.sum()), b), "all-to-all")


def random_permutation(n_tasks: int, bytes_per_task: float = 1.0, seed: int = 0) -> Traffic:
    """Each task sends ``bytes_per_task`` to ``perm[task]`` of a seeded random permutation.

    Fixed points (a task sending to itself) are kept; they carry no link load.
    """
    n = positive_int("traffic.n_tasks", n_tasks)
    b = positive_float("traffic.bytes_per_task", bytes_per_task)
    perm = np.random.default_rng(seed).permutation(n)
    return Traffic(n, np.arange(n, dtype=np.int64), perm.astype(np.int64), np.full(n, b), f"permutation(seed={seed})")


def shift(n_tasks: int | None = None, offset: int | Sequence[int] = 1, bytes_per_task: float = 1.0,
          grid: Sequence[int] | None = None) -> Traffic:
    """Shift pattern: task ``x`` sends to ``(x + offset) mod size`` (per grid dimension).

    With ``grid`` the tasks form a row-major grid and ``offset`` is one shift
    per dimension; otherwise tasks form a line of ``n_tasks``.
    """
    b = positive_float("traffic.bytes_per_task", bytes_per_task)
    if grid is None:
        n = positive_int("traffic.n_tasks", n_tasks)
        grid_t = (n,)
    else:
        grid_t = tuple(positive_int(f"traffic.grid[{k}]", v) for k, v in enumerate(grid))
    off = np.atleast_1d(np.asarray(offset, dtype=np.int64))
    if off.size == 1:
        off = np.full(len(grid_t), int(off[0]))
    require(off.size == len(grid_t), "traffic.offset", off.tolist(), f"a scalar or {len(grid_t)} offsets")
    n = math.prod(grid_t)
    coords = np.stack(np.unravel_index(np.arange(n), grid_t), axis=1)
    tgt = np.ravel_multi_index(tuple(((coords + off) % np.array(grid_t)).T), grid_t)
    return Traffic(n, np.arange(n, dtype=np.int64), tgt.astype(np.int64), np.full(n, b),
                   "shift " + ",".join(map(str, off.tolist())))


def tornado(grid: Sequence[int], bytes_per_task: float = 1.0) -> Traffic:
    """Tornado: shift by ``ceil(k/2) - 1`` in every dimension of size ``k`` (Dally & Towles)."""
    grid_t = tuple(positive_int(f"traffic.grid[{k}]", v) for k, v in enumerate(grid))
    t = shift(grid=grid_t, offset=[math.ceil(k / 2) - 1 for k in grid_t], bytes_per_task=bytes_per_task)
    return dataclasses.replace(t, name="tornado")


MANY_TO_MANY_MODES = ("disjoint", "overlap", "subset", "superset")


def many_to_many_layout(n_sources: int, n_destinations: int, mode: str = "disjoint", overlap: int | None = None,
                        n_tasks: int | None = None) -> tuple[int, int, int, int]:
    """Validated ``(m, n, first_destination, n_tasks)`` of a many-to-many pattern (see :func:`many_to_many`)."""
    m = positive_int("traffic.n_sources", n_sources)
    n = positive_int("traffic.n_destinations", n_destinations)
    require(mode in MANY_TO_MANY_MODES, "traffic.mode", mode, f"one of {list(MANY_TO_MANY_MODES)}")
    if mode == "disjoint":
        start = m
    elif mode == "overlap":
        ov = min(m, n) // 2 if overlap is None else int(overlap)
        require(0 <= ov <= min(m, n), "traffic.overlap", overlap, f"an integer in [0, {min(m, n)}]")
        start = m - ov
    elif mode == "subset":
        require(n <= m, "traffic.n_destinations", n, f"<= n_sources = {m} for mode 'subset'")
        start = 0
    else:
        require(m <= n, "traffic.n_sources", m, f"<= n_destinations = {n} for mode 'superset'")
        start = 0
    needed = max(m, start + n)
    nt = needed if n_tasks is None else int(n_tasks)
    require(nt >= needed, "traffic.n_tasks", n_tasks, f">= {needed} (sources and destinations)")
    return m, n, start, nt


def many_to_many(n_sources: int, n_destinations: int, bytes_per_pair: float = 1.0, mode: str = "disjoint",
                 overlap: int | None = None, n_tasks: int | None = None) -> Traffic:
    """Many-to-many (Bui et al.): every source sends ``bytes_per_pair`` to every destination.

    Sources are tasks ``0 .. m-1``. Destinations are ``n`` tasks that are

    * ``disjoint``: ``m .. m+n-1``;
    * ``overlap``: share ``overlap`` tasks with the sources (default ``min(m, n) // 2``):
      ``m-overlap .. m-overlap+n-1``;
    * ``subset``: the destinations are a subset of the sources (``n <= m``): ``0 .. n-1``;
    * ``superset``: the sources are a subset of the destinations (``m <= n``): ``0 .. n-1``.

    A task never sends to itself.
    """
    b = positive_float("traffic.bytes_per_pair", bytes_per_pair)
    m, n, start, nt = many_to_many_layout(n_sources, n_destinations, mode, overlap, n_tasks)
    srcs = np.arange(m)
    dsts = np.arange(start, start + n)
    s, d = np.meshgrid(srcs, dsts, indexing="ij")
    s, d = s.ravel(), d.ravel()
    keep = s != d
    return Traffic(nt, s[keep].astype(np.int64), d[keep].astype(np.int64), np.full(int(keep.sum()), b),
                   f"many-to-many {m}->{n} ({mode})")


# --------------------------------------------------------------------------------------
# Topology-aware patterns
# --------------------------------------------------------------------------------------


def _router_distances(topology: Topology) -> np.ndarray:
    """All-pairs router hop distance by BFS (SciPy), shape [router, router]."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    n = topology.n_router_links
    A = csr_matrix((np.ones(n), (topology.link_src[:n], topology.link_dst[:n])),
                   shape=(topology.n_routers, topology.n_routers))
    return shortest_path(A, unweighted=True, directed=True)


def furthest_partner(topology: Topology) -> np.ndarray:
    """Partner node of every node, at the largest hop distance (shape [node]).

    Torus: the coordinate ``x_k + floor(n_k/2) mod n_k`` in every wrapped
    dimension and the mirror ``n_k - 1 - x_k`` in every mesh dimension (the
    furthest-node scheme; a pairing when all wrapped sizes are even), same
    port. Other topologies (Dragonfly): the router permutation that maximises the
    total BFS hop distance (``scipy.optimize.linear_sum_assignment``), no router
    mapped to itself; node ``(router, port)`` goes to ``(partner, port)``.
    On Dragonflies every router then reaches a router at its eccentricity.
    """
    p = topology.nodes_per_router
    if isinstance(topology, TorusTopology):
        dims = np.array(topology.dims)
        c = topology.router_coords
        wrap = np.array(topology.wrap)
        pc = np.where(wrap, (c + dims // 2) % dims, dims - 1 - c)
        pr = np.ravel_multi_index(tuple(pc.T), topology.dims)
        return (np.repeat(pr, p) * p + np.tile(np.arange(p), topology.n_routers)).astype(np.int64)
    from scipy.optimize import linear_sum_assignment

    dist = _router_distances(topology)
    np.fill_diagonal(dist, -1.0)
    _, pr = linear_sum_assignment(dist, maximize=True)
    return (np.repeat(pr, p) * p + np.tile(np.arange(p), topology.n_routers)).astype(np.int64)


def bisection_pairing(topology: Topology, bytes_per_pair: float = 1.0) -> Traffic:
    """Bisection pairing: every node sends ``bytes_per_pair`` to its furthest partner.

    One task per node: task ``t`` is meant to run on node ``t`` (linear
    placement). See :func:`furthest_partner` for the pairing.
    """
    b = positive_float("traffic.bytes_per_pair", bytes_per_pair)
    partner = furthest_partner(topology)
    n = topology.n_nodes
    keep = partner != np.arange(n)
    src = np.arange(n, dtype=np.int64)[keep]
    return Traffic(n, src, partner[keep], np.full(src.size, b), "bisection-pairing")


# --------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------


def from_file(path: str | os.PathLike, n_tasks: int | None = None) -> Traffic:
    """User traffic from a file.

    * ``.npz`` with a dense ``matrix`` array ``[src_task, dst_task]``, or sparse
      COO arrays ``row``, ``col``, ``data`` (and optionally ``shape``);
    * ``.csv`` with ``src,dst,bytes`` triples per line (a header line is allowed).

    ``n_tasks``, when given, must match the file's task count.
    """
    p = os.fspath(path)
    require(os.path.exists(p), "traffic.path", p, "an existing .npz or .csv file")
    ext = os.path.splitext(p)[1].lower()
    if ext == ".npz":
        with np.load(p) as z:
            keys = set(z.files)
            if "matrix" in keys:
                M = np.asarray(z["matrix"], dtype=np.float64)
                require(M.ndim == 2 and M.shape[0] == M.shape[1], "traffic.path", p,
                        f"a square 'matrix' array; got shape {M.shape}")
                if n_tasks is not None:
                    require(M.shape[0] == n_tasks, "traffic.n_tasks", n_tasks,
                            f"the file's task count {M.shape[0]} (matrix shape {M.shape})")
                return dataclasses.replace(from_matrix(M, field="traffic"), name=os.path.basename(p))
            require({"row", "col", "data"} <= keys, "traffic.path", p,
                    f"an .npz holding 'matrix' or 'row','col','data'; found {sorted(keys)}")
            row, col, data = z["row"], z["col"], z["data"]
            shape = tuple(int(v) for v in z["shape"]) if "shape" in keys else None
    elif ext == ".csv":
        try:
            arr = np.loadtxt(p, delimiter=",", ndmin=2)
        except ValueError:
            arr = np.loadtxt(p, delimiter=",", ndmin=2, skiprows=1)
        require(arr.shape[1] == 3, "traffic.path", p, f"CSV rows of 3 columns src,dst,bytes; got {arr.shape[1]}")
        row, col, data = arr[:, 0], arr[:, 1], arr[:, 2]
        shape = None
    else:
        raise ConfigError("traffic.path", p, "a file ending in .npz or .csv")
    inferred = int(max(row.max(initial=-1), col.max(initial=-1))) + 1
    if shape is not None:
        require(len(shape) == 2 and shape[0] == shape[1], "traffic.path", p, f"a square shape; got {shape}")
        require(inferred <= shape[0], "traffic.path", p,
                f"task ids below the declared shape {shape}; found id {inferred - 1}")
        inferred = shape[0]
    if n_tasks is not None:
        require(inferred <= n_tasks if shape is None else inferred == n_tasks, "traffic.n_tasks", n_tasks,
                f"the file's task count {inferred}")
        inferred = n_tasks
    return from_flows(inferred, row, col, data, name=os.path.basename(p))
