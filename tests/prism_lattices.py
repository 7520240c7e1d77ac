"""Lattice layouts of issue 37's held-out prism row (a measurement script; docs/mapping.md states what it prints and
tests/test_claims_prism_lattices.py reruns it).

Usage (from the repository root)::

    python -m tests.prism_lattices
    python -m tests.prism_lattices --periodic 2,4,4 --seconds 300 --seed 1

The row: the bench's 27-point stencil with uneven faces (``evaluator.bench.mapping._heldout_traffic``: 48x40x32
elements of 8 bytes a task, faces of 10,240, 12,288 and 15,360 B, edges of 256, 320 and 384 B, corners of 8 B),
four tasks a node under DOR. The mapping found there puts a 1x2x2 brick of tasks on each node, and every node's
+x link carries its four tasks' bytes into the next x plane: 45,696 B.

A *lattice layout* repeats one tile of four tasks: the tiles are the translates of the tile by a sublattice ``L`` of
index 4 of the task grid Z^3 (so they partition it), each on one node, and a basis ``v0, v1, v2`` of ``L`` is the
node axes (the tile at ``c0 v0 + c1 v1 + c2 v2`` on the node at ``(c0, c1, c2)``). On the infinite grid every link of
one direction then carries the same bytes, and a flow from one tile to the tile ``c`` away crosses ``|c_k|`` links of
axis ``k`` whatever the dimension order, so a link of axis ``k`` carries the sum over one tile's flows of their bytes
times ``max(c_k, 0)`` (or ``max(-c_k, 0)`` the other way). Enumerated: every sublattice of index 4 (35, their
Hermite normal forms), every tile made of one cell of each of its cosets within one step of the origin (the origin
one of them), and every basis of vectors with entries -2..2. The busiest link of the best such layout is printed.
The model ignores the job's edges (a finite grid on a 16x4x4 prism), which only take flows away.

``--periodic PX,PY,PZ`` searches instead (a local search, not an enumeration) the layouts that repeat with a period
of ``PX x PY x PZ`` tasks on ``PX x PY/2 x PZ/2`` nodes (any four tasks of a period on each node: several tiles a
period, not only lattices; such a layout fits the prism's 16x8x8 tasks on 16x4x4 nodes whenever the period divides
them). The links of a period are scored by walking every flow of one period of tasks in DOR order on the infinite
grid. Each round descends from a random layout by swaps of two tasks, first on the bytes times hops, then on the
busiest link plus 0.3 times the mean link, then 30 times kicks the result by a few random swaps and descends again,
keeping what is no worse; the best busiest link over the rounds is printed.
"""

from __future__ import annotations

import itertools

import numpy as np

FACE = (40 * 32 * 8, 48 * 32 * 8, 48 * 40 * 8)  # bytes of a face normal to X, Y, Z
EDGE_ALONG = (48 * 8, 40 * 8, 32 * 8)  # bytes of an edge running along X, Y, Z
CORNER = 8


def neighbours() -> tuple[np.ndarray, np.ndarray]:
    """The 26 offsets of a 27-point stencil and the bytes a task sends along each."""
    d = np.array([o for o in itertools.product((-1, 0, 1), repeat=3) if any(o)])
    nz = (d != 0).sum(axis=1)
    w = np.where(nz == 1, (np.abs(d) * FACE).sum(axis=1),
                 np.where(nz == 2, ((d == 0) * EDGE_ALONG).sum(axis=1), CORNER))
    return d, w.astype(np.float64)


def lattices(index: int = 4) -> list[np.ndarray]:
    """Every sublattice of Z^3 of ``index``, as the rows of its (upper triangular) Hermite normal form."""
    out = []
    for d in itertools.product(range(1, index + 1), repeat=3):
        if int(np.prod(d)) != index:
            continue
        for a, b, c in itertools.product(range(d[1]), range(d[2]), range(d[2])):
            out.append(np.array([[d[0], a, b], [0, d[1], c], [0, 0, d[2]]]))
    return out


def coset(H: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The coset of every row of ``u`` (integer vectors) in ``Z^3 / L``, ``L`` spanned by the rows of ``H``."""
    u = np.array(u, np.int64)
    for k in range(3):
        n = np.floor_divide(u[..., k], H[k, k])
        u = u - n[..., None] * H[k]
    return (u[..., 0] * H[1, 1] + u[..., 1]) * H[2, 2] + u[..., 2]


def tiles(H: np.ndarray) -> np.ndarray:
    """[tile, coset, 3]: every choice of one cell of each coset within one step of the origin, the origin the
    cell of its own."""
    win = np.array(list(itertools.product((-1, 0, 1), repeat=3)))
    cid = coset(H, win)
    n = int(np.prod(np.diag(H)))
    choices = [[np.zeros(3, np.int64)] if k == coset(H, np.zeros((1, 3)))[0] else list(win[cid == k])
               for k in range(n)]
    out = [np.stack(p) for p in itertools.product(*choices)]
    return np.array(out) if out else np.zeros((0, n, 3), np.int64)


def bases(H: np.ndarray, span: int = 2) -> np.ndarray:
    """[basis, 3, 3]: every basis (rows) of the lattice of ``H`` whose vectors have entries in ``-span..span``, one
    per set of three vectors (their order and signs are immaterial on the infinite grid)."""
    vecs = np.array([v for v in itertools.product(range(-span, span + 1), repeat=3) if any(v)])
    lv = vecs[coset(H, vecs) == 0]
    idx = np.array(list(itertools.combinations(range(len(lv)), 3)))
    M = lv[idx]
    det = np.rint(np.linalg.det(M.astype(np.float64))).astype(np.int64)
    return M[np.abs(det) == int(np.prod(np.diag(H)))]


def layout_loads(H: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(tiles, bases, loads)`` of the lattice of ``H``: ``loads[basis, tile, axis, sign]`` the bytes on one link
    of that axis and direction."""
    d, w = neighbours()
    T = tiles(H)  # [tile, 4, 3]
    B = bases(H)
    if not len(T) or not len(B):  # a coset with no cell within one step, or no basis of short vectors
        return T, B, np.zeros((len(B), len(T), 3, 2))
    u = T[:, :, None, :] + d[None, None, :, :]  # [tile, cell, nbr, 3]
    cid = coset(H, u)
    lam = u - T[np.arange(len(T))[:, None, None], cid]  # [tile, cell, nbr, 3]: the tile translation of each flow
    lam = lam.reshape(-1, 3)
    wf = np.tile(np.tile(w, T.shape[1]), len(T))  # bytes of each flow, in lam's order
    tile_of = np.repeat(np.arange(len(T)), T.shape[1] * len(w))
    # the few distinct translations: bytes of each tile to each, then the links a translation crosses per basis
    uniq, which = np.unique(lam, axis=0, return_inverse=True)
    W = np.zeros((len(T), len(uniq)))
    np.add.at(W, (tile_of, which.ravel()), wf)
    inv = np.linalg.inv(np.transpose(B, (0, 2, 1)).astype(np.float64))  # c = B^-T lam
    c = np.rint(np.einsum("bij,lj->bli", inv, uniq.astype(np.float64)))  # [basis, translation, axis]
    flat = np.concatenate([np.clip(c, 0, None), np.clip(-c, 0, None)], axis=2)  # [basis, translation, 6]
    out = (W @ flat.transpose(1, 0, 2).reshape(len(uniq), -1)).reshape(len(T), len(B), 2, 3)
    out = out.transpose(1, 0, 3, 2)  # [basis, tile, axis, sign]
    return T, B, out


def best_layouts() -> dict:
    """The enumeration's counts and its best layout (the smallest busiest link)."""
    best, n_layouts, n_bases, at_best, used = None, 0, 0, 0, 0
    for H in lattices():
        T, B, loads = layout_loads(H)
        if not loads.size:
            continue
        used += 1
        busiest = loads.max(axis=(2, 3))  # [basis, tile]
        n_layouts += busiest.size
        n_bases += len(B)
        m = float(busiest.min())
        if best is None or m < best["busiest"] - 1e-9:
            b, t = np.unravel_index(int(busiest.argmin()), busiest.shape)
            best = {"busiest": m, "hnf": H.tolist(), "basis": B[b].tolist(), "tile": T[t].tolist(),
                    "axis_loads": loads[b, t].max(axis=1).tolist()}
            at_best = 0
        at_best += int(np.sum(np.abs(busiest - best["busiest"]) <= 1e-9))
    return {"lattices": len(lattices()), "with_layouts": used, "layouts": n_layouts, "bases": n_bases, "at_best": at_best, **best}


class Periodic:
    """The layouts of period ``P`` tasks on ``Q = (P0, P1 / 2, P2 / 2)`` nodes: a layout is the node (within one
    period of nodes) of each task of one period; task ``t + P s`` is on node ``node[t] + Q s``."""

    def __init__(self, P):
        self.P = tuple(int(p) for p in P)
        if len(self.P) != 3 or self.P[1] % 2 or self.P[2] % 2 or min(self.P) < 1:
            raise ValueError(f"--periodic: {P!r}; three positive sizes, the last two even")
        self.Q = np.array([self.P[0], self.P[1] // 2, self.P[2] // 2])
        if self.Q.prod() < 2:  # one node a period: no swap changes a layout (the search would never stop)
            raise ValueError(f"--periodic: {P!r}; a period of at least two nodes")
        self.tasks = np.array(list(itertools.product(*map(range, self.P))))
        d, w = neighbours()
        u = self.tasks[:, None, :] + d[None, :, :]
        shift = np.floor_divide(u, self.P)
        r = u - shift * np.array(self.P)
        self.src = np.repeat(np.arange(len(self.tasks)), len(d))
        self.dst = np.ravel_multi_index(tuple(r.reshape(-1, 3).T), self.P)
        self.shift = shift.reshape(-1, 3)
        self.w = np.tile(w, len(self.tasks))
        self.nodes = np.array(list(itertools.product(*map(range, self.Q))))

    def bricks(self) -> np.ndarray:
        """The 1x2x2 bricks: task (X, Y, Z) on node (X, Y // 2, Z // 2)."""
        t = self.tasks
        return np.stack([t[:, 0], t[:, 1] // 2, t[:, 2] // 2], 1)

    def loads(self, node: np.ndarray) -> np.ndarray:
        """[axis, sign, *Q]: the bytes on each link of one period of nodes (DOR, axes in order)."""
        pos = node[self.src].copy()
        disp = node[self.dst] + self.shift * self.Q - pos
        out = np.zeros((3, 2, *self.Q))
        for k in range(3):
            sg, m = np.sign(disp[:, k]), np.abs(disp[:, k])
            for j in range(int(m.max(initial=0))):
                on = m > j
                p = pos[on].copy()
                p[:, k] += sg[on] * j
                p = np.mod(p, self.Q)
                np.add.at(out[k], (np.where(sg[on] > 0, 0, 1), p[:, 0], p[:, 1], p[:, 2]), self.w[on])
            pos[:, k] += disp[:, k]
        return out

    def search(self, seconds: float, seed: int = 0, alpha: float = 0.3, kicks: int = 30, kick: int = 4):
        """``(best busiest link, its layout, rounds)`` of the local search (see the module's text)."""
        import time

        rng = np.random.default_rng(seed)
        n = len(self.tasks)

        def descend(node, f, patience):
            cur, stall = f(self.loads(node)), 0
            while stall < patience:
                a, b = rng.integers(n, size=2)
                if np.array_equal(node[a], node[b]):
                    continue
                node[[a, b]] = node[[b, a]]
                c = f(self.loads(node))
                if c <= cur:
                    stall = 0 if c < cur else stall + 1
                    cur = c
                else:
                    node[[a, b]] = node[[b, a]]
                    stall += 1
            return node, cur

        def hop_bytes(L):
            return L.sum()

        def busiest(L):
            return L.max() + alpha * L.mean()

        best, best_node, rounds, t0 = np.inf, None, 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            node = self.nodes[rng.permutation(np.repeat(np.arange(len(self.nodes)), 4))]
            node, _ = descend(node, hop_bytes, 4 * n * n)
            node, cur = descend(node, busiest, 2 * n * n)
            for _ in range(kicks):
                trial = node.copy()
                for _ in range(kick):
                    a, b = rng.integers(n, size=2)
                    trial[[a, b]] = trial[[b, a]]
                trial, _ = descend(trial, hop_bytes, 2 * n * n)
                trial, c = descend(trial, busiest, 2 * n * n)
                if c <= cur:
                    node, cur = trial, c
            m = float(self.loads(node).max())
            rounds += 1
            if m < best:
                best, best_node = m, node.copy()
        return best, best_node, rounds


def main(argv=None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tests.prism_lattices", description=__doc__.split("\n\n")[0])
    ap.add_argument("--periodic", help="PX,PY,PZ: search the layouts of this period instead of the lattices")
    ap.add_argument("--seconds", type=float, default=300.0, help="the search's time (with --periodic): rounds start until then, and the last one started finishes")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.periodic:
        try:
            per = Periodic([int(x) for x in args.periodic.split(",")])
        except ValueError:
            ap.error(f"--periodic: {args.periodic!r}; three positive integers PX,PY,PZ, the last two even "
                     f"and PX * PY * PZ at least 8 (a period of tasks on two nodes or more; e.g. 2,4,4)")
        if not args.seconds > 0:
            ap.error(f"--seconds: {args.seconds}; a positive number of seconds")
        import time

        t0 = time.perf_counter()
        best, _, rounds = per.search(args.seconds, args.seed)
        took = time.perf_counter() - t0
        print(f"period {per.P} tasks on {tuple(per.Q.tolist())} nodes, {rounds} rounds started within "
              f"{args.seconds:.0f} s (all done in {took:.0f} s): "
              f"best busiest link {best:,.0f} B ({best / 2e9 * 1e6:.2f} us at 2 GB/s); the bricks "
              f"{per.loads(per.bricks()).max():,.0f} B")
        return
    r = best_layouts()
    print(f"{r['lattices']} sublattices of index 4 ({r['with_layouts']} with a tile and a basis), {r['bases']:,} bases, {r['layouts']:,} layouts (tile x basis)")
    print(f"best busiest link: {r['busiest']:,.0f} B ({r['busiest'] / 2e9 * 1e6:.2f} us at 2 GB/s), "
          f"{r['at_best']:,} layouts at it")
    print(f"  one of them: lattice {r['hnf']}, basis {r['basis']}, tile {r['tile']}, "
          f"links of the three axes {[round(x) for x in r['axis_loads']]} B")


if __name__ == "__main__":
    main()
