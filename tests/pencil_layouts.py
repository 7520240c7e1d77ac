"""Structured layouts of issue 37's held-out pencil FFT rows (a measurement script; docs/mapping.md states what it
prints and tests/test_claims_pencil_layouts.py reruns it).

Usage (from the repository root)::

    python -m tests.pencil_layouts 16,8,8
    python -m tests.pencil_layouts 8,8,8
    python -m tests.pencil_layouts 8,8,8 --box 4,8,8
    python -m tests.pencil_layouts 16,8,8 --box 16,4,4

One task per node on the whole torus under DOR, the bench's pencil FFT (``evaluator.bench.mapping._heldout_traffic``:
256^3 points of 16 bytes, a ``p_row x p_col`` grid of 32 x 32 ranks on 16x8x8, 16 x 32 on 8x8x8). Two families of
layouts, every member evaluated by the batched kernel (:func:`evaluator.evaluate_batch`):

* **bit layouts**: a rank's row and column numbers are bit fields, and each bit is one bit of one node coordinate
  (plain binary or reflected Gray code per dimension). Permuting the bits within the row field (or the column field)
  maps every row (column) onto a row (column): the same flows. So a layout is which node bits carry the row number
  (C(total bits, row bits) choices) times a code per dimension.
  With ``--box`` (the rows with four tasks a node on a box of the torus's nodes at its origin: the 4x8x8 half of
  8x8x8, the 16x4x4 prism of 16x8x8) the node coordinates are the box's, and the task's slot on its node is two
  more bit positions (bit layouts only).
* **staggered bricks**: each row a brick of ``p_col`` nodes (every shape that divides the torus), the bricks tiling
  the torus with the offsets along one dimension shifted by ``(a * i + b * j) mod width`` from brick column to brick
  column (``i, j`` the brick's place in the two other dimensions; every ``a, b`` below the width), and the roles of
  rows and columns both ways.
"""

from __future__ import annotations

import functools
import itertools
import sys

import numpy as np

PENCIL_ROWS = {(16, 8, 8): 1024, (8, 8, 8): 512}
"""Torus -> ranks of the held-out pencil rows with one task per node."""

FOUR_A_NODE = {((8, 8, 8), (4, 8, 8)): 1024, ((16, 8, 8), (16, 4, 4)): 1024}
"""(torus, box of the job's nodes) -> ranks of the held-out pencil rows with four tasks a node (bit layouts only,
the task's slot on its node two more bit positions)."""


def _bits(n: int) -> int:
    b = int(n).bit_length() - 1
    if 1 << b != n:
        raise ValueError(f"{n} is not a power of two")
    return b


def bit_layouts(dims, p_row: int, p_col: int, box=None, tasks_per_node: int = 1):
    """Every bit layout (module docstring): ``(task_node, label)``; rank ``r = i * p_col + j``. ``box``: the job's
    nodes are the box of these sizes at the torus's origin (default: the whole torus); ``tasks_per_node``: a
    power of two, whose bits (the task's slot on its node) come first among the positions a rank bit can take."""
    box = tuple(int(x) for x in (dims if box is None else box))
    pos = [(-1, b) for b in range(_bits(tasks_per_node))] + [(d, b) for d in range(len(box)) for b in range(_bits(box[d]))]
    rb, cb = _bits(p_row), _bits(p_col)
    r = np.arange(p_row * p_col)
    hi, lo = r // p_col, r % p_col
    nodes = np.ravel_multi_index(tuple(np.indices(box).reshape(len(box), -1)), tuple(dims))
    for hset in itertools.combinations(range(len(pos)), rb):
        lset = [q for q in range(len(pos)) if q not in hset]
        vals = [np.zeros(r.size, np.int64) for _ in box]
        for k, q in enumerate(hset):
            d, b = pos[q]
            if d >= 0:
                vals[d] |= ((hi >> k) & 1) << b
        for k, q in enumerate(lset[:cb]):
            d, b = pos[q]
            if d >= 0:
                vals[d] |= ((lo >> k) & 1) << b
        for codes in itertools.product((0, 1), repeat=len(box)):
            c = [v ^ (v >> 1) if g else v for v, g in zip(vals, codes)]
            yield nodes[np.ravel_multi_index(tuple(c), box)], ("bits", hset, codes)


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


def layout_times(topo, traffic, maps) -> np.ndarray:
    """Completion time (s) of ``traffic`` under DOR for every task -> node array of ``maps``, by the batched kernel,
    64 layouts a call."""
    from evaluator.evaluation import evaluate_batch
    from evaluator.placement import explicit

    out = []
    for i in range(0, len(maps), 64):
        res = evaluate_batch(topo, "dor", traffic, [explicit(topo, m) for m in maps[i:i + 64]])
        out += np.asarray(res.metrics["completion_time"], float).tolist()
    return np.array(out)


def best_layouts(dims, box=None) -> dict:
    """Per family: the number of layouts, the fastest one's time (s) and label, and the slowest time. ``box``: a
    held-out row with four tasks a node (:data:`FOUR_A_NODE`), bit layouts only."""
    from evaluator.bench.mapping import _HELDOUT_PENCIL, _heldout_traffic
    from evaluator.topology import torus

    dims = tuple(int(x) for x in dims)
    tpn = 1 if box is None else 4
    n = PENCIL_ROWS[dims] if box is None else FOUR_A_NODE[(dims, tuple(int(x) for x in box))]
    topo = torus(dims)
    tr, _ = _heldout_traffic("pencil FFT", n)
    p_row, p_col = _HELDOUT_PENCIL[n]
    out = {}
    families = (("bits", functools.partial(bit_layouts, box=box, tasks_per_node=tpn)),) if box is not None else \
        (("bits", bit_layouts), ("staggered bricks", staggered_bricks))
    for family, gen in families:
        maps, labels = [], []
        for tn, lab in gen(dims, p_row, p_col):
            if np.bincount(tn).max() != tpn or np.unique(tn).size != n // tpn:
                raise AssertionError(f"{lab}: not {tpn} tasks on each node")
            maps.append(tn)
            labels.append(lab)
        times = layout_times(topo, tr, maps).tolist()
        k = int(np.argmin(times))
        out[family] = {"layouts": len(maps), "best": times[k], "best_label": labels[k], "worst": max(times)}
    return out


def parse_dims(text: str):
    """``"8,8,8"`` -> ``(8, 8, 8)``; None where it is not a comma-separated list of integers."""
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        return None


def main(argv: list[str]) -> int:
    dims = parse_dims(argv[0]) if argv else None
    box = parse_dims(argv[2]) if len(argv) == 3 and argv[1] == "--box" else None
    ok = (len(argv) == 1 and dims in PENCIL_ROWS) or (len(argv) == 3 and (dims, box) in FOUR_A_NODE)
    if not ok:
        rows = [",".join(map(str, d)) for d in PENCIL_ROWS]
        rows += [f"{','.join(map(str, d))} --box {','.join(map(str, b))}" for d, b in FOUR_A_NODE]
        print(f"usage: python -m tests.pencil_layouts DIMS [--box BOX] (one of: {'; '.join(rows)}; given: "
              f"{' '.join(argv) or 'nothing'})", file=sys.stderr)
        return 2
    label = "x".join(map(str, dims)) + ("" if box is None else f", 4 a node on {'x'.join(map(str, box))}")
    for family, r in best_layouts(dims, box).items():
        print(f"{label} {family}: {r['layouts']} layouts, best {r['best'] * 1e6:.1f} us "
              f"({r['best_label']}), worst {r['worst'] * 1e6:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
