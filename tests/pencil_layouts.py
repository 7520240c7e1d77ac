"""Structured layouts of issue 37's held-out pencil FFT rows (a measurement script; docs/mapping.md states what it
prints and tests/test_claims_pencil_layouts.py reruns it).

Usage (from the repository root)::

    python -m tests.pencil_layouts 16,8,8
    python -m tests.pencil_layouts 8,8,8

One task per node on the whole torus under DOR, the bench's pencil FFT (``evaluator.bench.mapping._heldout_traffic``:
256^3 points of 16 bytes, a ``p_row x p_col`` grid of 32 x 32 ranks on 16x8x8, 16 x 32 on 8x8x8). Two families of
layouts, every member evaluated by the batched kernel (:func:`evaluator.evaluate_batch`):

* **bit layouts**: a rank's row and column numbers are bit fields, and each bit is one bit of one node coordinate
  (plain binary or reflected Gray code per dimension). Permuting the bits within the row field (or the column field)
  maps every row (column) onto a row (column): the same flows. So a layout is which node bits carry the row number
  (C(total bits, row bits) choices) times a code per dimension.
* **staggered bricks**: each row a brick of ``p_col`` nodes (every shape that divides the torus), the bricks tiling
  the torus with the offsets along one dimension shifted by ``(a * i + b * j) mod width`` from brick column to brick
  column (``i, j`` the brick's place in the two other dimensions; every ``a, b`` below the width), and the roles of
  rows and columns both ways.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np

PENCIL_ROWS = {(16, 8, 8): 1024, (8, 8, 8): 512}
"""Torus -> ranks of the held-out pencil rows with one task per node."""


def _bits(n: int) -> int:
    b = int(n).bit_length() - 1
    if 1 << b != n:
        raise ValueError(f"{n} is not a power of two")
    return b


def bit_layouts(dims, p_row: int, p_col: int):
    """Every bit layout (module docstring): ``(task_node, label)``; rank ``r = i * p_col + j``."""
    pos = [(d, b) for d in range(len(dims)) for b in range(_bits(dims[d]))]
    rb, cb = _bits(p_row), _bits(p_col)
    r = np.arange(p_row * p_col)
    hi, lo = r // p_col, r % p_col
    for hset in itertools.combinations(range(len(pos)), rb):
        lset = [q for q in range(len(pos)) if q not in hset]
        vals = [np.zeros(r.size, np.int64) for _ in dims]
        for k, q in enumerate(hset):
            d, b = pos[q]
            vals[d] |= ((hi >> k) & 1) << b
        for k, q in enumerate(lset[:cb]):
            d, b = pos[q]
            vals[d] |= ((lo >> k) & 1) << b
        for codes in itertools.product((0, 1), repeat=len(dims)):
            c = [v ^ (v >> 1) if g else v for v, g in zip(vals, codes)]
            yield np.ravel_multi_index(tuple(c), tuple(dims)), ("bits", hset, codes)


def staggered_bricks(dims, p_row: int, p_col: int):
    """Every staggered brick layout (module docstring): ``(task_node, label)``."""
    dims = tuple(dims)
    for shape in itertools.product(*[[w for w in (1, 2, 4, 8, 16, 32) if n % w == 0] for n in dims]):
        if int(np.prod(shape)) != p_col:
            continue
        T = np.array(list(itertools.product(*map(range, shape))))
        nk = tuple(n // w for n, w in zip(dims, shape))
        if int(np.prod(nk)) != p_row:
            continue
        for sdim in range(3):
            o1, o2 = [d for d in range(3) if d != sdim]
            for a in range(shape[sdim]):
                for b in range(shape[sdim]):
                    L = []
                    for k in itertools.product(*map(range, nk)):
                        o = [k[d] * shape[d] for d in range(3)]
                        o[sdim] += (a * k[o1] + b * k[o2]) % shape[sdim]
                        L.append(o)
                    sums = (np.array(L)[:, None, :] + T[None, :, :]) % np.array(dims)
                    for role in (0, 1) if p_row == p_col else (0,):
                        s = sums if role == 0 else sums.transpose(1, 0, 2)
                        yield np.ravel_multi_index(tuple(s.reshape(-1, 3).T), dims), ("bricks", shape, sdim, a, b, role)
                    if shape[sdim] == 1:
                        break
                if shape[sdim] == 1:
                    break


def best_layouts(dims) -> dict:
    """Per family: the number of layouts, the fastest one's time (s) and label, and the slowest time."""
    from evaluator.bench.mapping import _HELDOUT_PENCIL, _heldout_traffic
    from evaluator.evaluation import evaluate_batch
    from evaluator.placement import explicit
    from evaluator.topology import torus

    dims = tuple(int(x) for x in dims)
    n = PENCIL_ROWS[dims]
    topo = torus(dims)
    tr, _ = _heldout_traffic("pencil FFT", n)
    p_row, p_col = _HELDOUT_PENCIL[n]
    out = {}
    for family, gen in (("bits", bit_layouts), ("staggered bricks", staggered_bricks)):
        maps, labels = [], []
        for tn, lab in gen(dims, p_row, p_col):
            if np.unique(tn).size != n:
                raise AssertionError(f"{lab}: not a bijection")
            maps.append(tn)
            labels.append(lab)
        times = []
        for i in range(0, len(maps), 64):
            res = evaluate_batch(topo, "dor", tr, [explicit(topo, m) for m in maps[i:i + 64]])
            times += np.asarray(res.metrics["completion_time"], float).tolist()
        k = int(np.argmin(times))
        out[family] = {"layouts": len(maps), "best": times[k], "best_label": labels[k], "worst": max(times)}
    return out


def main(argv: list[str]) -> int:
    dims = tuple(int(x) for x in argv[0].split(","))
    for family, r in best_layouts(dims).items():
        print(f"{'x'.join(map(str, dims))} {family}: {r['layouts']} layouts, best {r['best'] * 1e6:.1f} us "
              f"({r['best_label']}), worst {r['worst'] * 1e6:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
