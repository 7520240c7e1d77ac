"""Structured moves on a torus: blocks of slots that are contiguous sub-boxes of the machine.

Where the available slots fill every router of a torus equally (``c`` slots a
router), they form a grid ``G[x_1, ..., x_d, c]`` of slot ids (:func:`slot_grid`).
A *box* is a cyclic sub-box of the routers (a cube of side 2 or 4, clipped to
the dimensions, a full line along one dimension, or a plane one router
thick) with all its routers'
slots. Four kinds of move, each a pair of slot lists ``(a, b)`` of equal
length read by :meth:`~._moves.MoveEvaluator.scores`:

* ``box swap``: two disjoint boxes of the same shape exchange their tasks,
  half of the candidates as they are, the others with the second box's
  contents reflected along a random set of dimensions (and, for a cube,
  two random dimensions exchanged): ``a`` one box's slots,
  ``b`` the other's in the transformed order (a swap of two groups);
* ``reflect``: one box's contents mirrored along one dimension;
* ``shift``: one box's contents shifted cyclically along one dimension;
* ``rotate``: one cube's contents turned by 90 degrees in one plane.

The last three are permutations of one box's slots: ``b`` is a reordering of
``a`` (the task of slot ``a[j]`` goes to ``b[j]``). The move evaluator scores
them as it scores a swap (a task of ``a`` goes to the matching slot of ``b``;
every task of ``b`` is one of ``a``'s, so none goes the other way), and the
search applies them the same way (``out[a] = in[b]; out[b] = in[a]`` leaves
``out[b[j]] = in[a[j]]``): incremental, exact, batched.

Every move keeps each slot's index inside its router (``c``), so the nodes
move whole and tasks per node are kept.
"""

from __future__ import annotations

import numpy as np

__all__ = ["slot_grid", "box_shapes", "box_moves", "GRID_KINDS"]

GRID_KINDS = ("box swap", "reflect", "shift", "rotate")
"""The structured move kinds (torus only)."""


def slot_grid(topology, slot_node: np.ndarray) -> np.ndarray | None:
    """``G[x_1, ..., x_d, c]``: the slot ids at each router coordinate of a torus (``c`` per router), or ``None``
    where the topology has no grid (not a torus) or the slots do not fill every router equally."""
    dims = tuple(int(x) for x in (getattr(topology, "dims", None) or ()))
    if not dims or not hasattr(topology, "router_coords"):
        return None
    R = int(np.prod(dims))
    rc = np.asarray(topology.router_coords)
    if rc.shape != (R, len(dims)) or not np.array_equal(np.ravel_multi_index(tuple(rc.T), dims), np.arange(R)):
        return None
    r = np.asarray(topology.node_router)[np.asarray(slot_node)]
    counts = np.bincount(r, minlength=R)
    if counts.size != R or counts.min() != counts.max() or counts[0] == 0:
        return None
    order = np.argsort(r, kind="stable")  # routers 0 .. R-1, each router's slots in slot order
    return order.reshape(*dims, int(counts[0]))


def box_shapes(dims: tuple) -> list[tuple]:
    """The box shapes: cubes of side 2 and 4 (clipped to each dimension), a full line along each dimension of
    more than 2 routers, and (3 or more dimensions) a plane one router thick; each at least 2 routers, at most half
    the machine."""
    R = int(np.prod(dims))
    out = []
    for b in (2, 4):
        s = tuple(min(b, n) for n in dims)
        if 2 <= np.prod(s) <= R // 2 and s not in out:
            out.append(s)
    for d, n in enumerate(dims):
        s = tuple(n if i == d else 1 for i in range(len(dims)))
        if n > 2 and np.prod(s) <= R // 2 and s not in out:
            out.append(s)
    if len(dims) > 2:  # planes: one router thick across every other dimension
        for d, n in enumerate(dims):
            s = tuple(1 if i == d else m for i, m in enumerate(dims))
            if n >= 2 and np.prod(s) <= R // 2 and s not in out:
                out.append(s)
    return out


def _boxes(G: np.ndarray, origin: np.ndarray, shape: tuple) -> np.ndarray:
    """The slots of the boxes of ``shape`` at ``origin`` ([n, d], cyclic): ``[n, *shape, c]``."""
    dims = G.shape[:-1]
    d = len(dims)
    n = origin.shape[0]
    idx = []
    for i in range(d):
        x = (origin[:, i, None] + np.arange(shape[i])[None, :]) % dims[i]  # [n, s_i]
        idx.append(x.reshape((n,) + tuple(shape[i] if j == i else 1 for j in range(d))))
    return G[tuple(idx)]  # [n, *shape, c]


def _flip(box: np.ndarray, flips: np.ndarray) -> np.ndarray:
    """Each box reflected along the dimensions where ``flips[n, d]``."""
    out = box.copy()
    for i in range(flips.shape[1]):
        sel = flips[:, i]
        if sel.any():
            out[sel] = np.flip(out[sel], axis=1 + i)
    return out


def _distinct(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row: whether the slots of ``a`` and ``b`` are disjoint (``a``'s and ``b``'s own slots are distinct)."""
    s = np.sort(np.concatenate([a, b], axis=1), axis=1)
    return ~(s[:, 1:] == s[:, :-1]).any(axis=1)


def box_moves(kind: str, G: np.ndarray, shape: tuple, n: int, rng: np.random.Generator
              ) -> tuple[np.ndarray, np.ndarray]:
    """``n`` candidate moves of ``kind`` (one of :data:`GRID_KINDS`) on boxes of ``shape``: ``(a, b)`` of
    ``[m, k]`` slots (``m <= n``: swaps of overlapping boxes and moves that change nothing are dropped)."""
    dims = np.asarray(G.shape[:-1])
    d = dims.size
    shp = np.asarray(shape)
    full = shp >= dims  # a box across a whole dimension starts at 0 there (a shift is its own kind)
    origin = np.where(full, 0, rng.integers(0, dims, size=(n, d)))
    box = _boxes(G, origin, shape)
    a = box.reshape(n, -1)
    if kind == "box swap":
        other = _boxes(G, np.where(full, 0, rng.integers(0, dims, size=(n, d))), shape)
        turn = rng.random(n) < 0.5  # half the moves: the contents as they are; the others reflected or turned
        other = _flip(other, (rng.random((n, d)) < 0.5) & turn[:, None])
        cube = [i for i in range(d) if shp[i] > 1]
        if len(cube) >= 2 and len({shape[i] for i in cube}) == 1:  # a cube: two dimensions exchanged
            i, j = rng.choice(cube, 2, replace=False)
            sel = turn & (rng.random(n) < 0.5)
            other[sel] = np.swapaxes(other[sel], 1 + i, 1 + j)
        b = other.reshape(n, -1)
        keep = _distinct(a, b)
    else:
        axes = [i for i in range(d) if shp[i] > 1]
        if kind == "reflect":
            i = int(rng.choice(axes))
            b = np.flip(box, axis=1 + i).reshape(n, -1)
        elif kind == "shift":
            i = int(rng.choice(axes))
            s = rng.integers(1, shp[i], size=n)
            idx = (np.arange(shp[i])[None, :] - s[:, None]) % shp[i]  # [n, s_i]
            idx = idx.reshape((n,) + tuple(shp[i] if j == i else 1 for j in range(d)) + (1,))
            b = np.take_along_axis(box, np.broadcast_to(idx, box.shape), axis=1 + i).reshape(n, -1)
        elif kind == "rotate":
            sq = [(i, j) for i in axes for j in axes if i < j and shp[i] == shp[j]]
            if not sq:
                return a[:0], a[:0]
            i, j = sq[int(rng.integers(len(sq)))]
            b = np.rot90(box, k=int(rng.integers(1, 4)), axes=(1 + i, 1 + j)).reshape(n, -1)
        else:
            raise ValueError(kind)
        keep = (a != b).any(axis=1)
    return a[keep], b[keep]
