"""The stencil's full neighbourhood (``neighbours="full"``: faces, edges and corners, a 27-point stencil in 3-D, a
9-point one in 2-D) against an independent construction: a plain Python loop over tasks and offsets."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.errors import ConfigError
from tests.helpers import TOL
from tests.reference import reference_link_loads


def _loop(alpha, beta, bpe, periodic):
    """``{(src, dst): bytes}``: every task, every offset in {-1, 0, 1}^d but 0, with Python integers only."""
    d = len(beta)
    per = list(periodic) if isinstance(periodic, (list, tuple)) else [periodic] * d
    sub = [a // b for a, b in zip(alpha, beta)]
    out: dict[tuple[int, int], float] = {}
    for src, me in enumerate(itertools.product(*[range(b) for b in beta])):   # row-major task ids
        for off in itertools.product((-1, 0, 1), repeat=d):
            if not any(off):
                continue
            there, ok = [], True
            for k in range(d):
                x = me[k] + off[k]
                if off[k] != 0 and beta[k] == 1:      # no neighbour along a dimension of one task
                    ok = False
                elif per[k]:
                    x %= beta[k]
                elif not 0 <= x < beta[k]:            # across a non-periodic boundary
                    ok = False
                there.append(x)
            if not ok:
                continue
            dst = 0
            for k in range(d):
                dst = dst * beta[k] + there[k]
            size = bpe
            for k in range(d):
                if off[k] == 0:                       # the shared part spans the sides not crossed
                    size *= sub[k]
            out[(src, dst)] = out.get((src, dst), 0.0) + size
    return out


def _as_dict(tr):
    out = {}
    for s, t, b in zip(tr.src.tolist(), tr.dst.tolist(), tr.nbytes.tolist()):
        assert (s, t) not in out
        out[(s, t)] = b
    return out


CASES = [
    ([12, 10, 8], [3, 5, 4], True),                   # 3-D, periodic
    ([12, 10, 8], [3, 5, 4], False),                  # 3-D, not periodic
    ([12, 10, 8], [3, 5, 4], [True, False, True]),    # periodic per dimension
    ([8, 12, 6], [2, 3, 1], True),                    # beta 2 (both sides reach one task) and beta 1
    ([96, 80, 64], [2, 2, 2], False),                 # uneven faces, 2x2x2
    ([20, 12], [5, 4], True),                         # 2-D: 9-point
    ([20, 12], [5, 4], False),
    ([20, 12], [2, 3], [False, True]),
]


@pytest.mark.parametrize("alpha,beta,periodic", CASES)
def test_flows_and_dense_against_loop(alpha, beta, periodic):
    tr = T.stencil(alpha, beta, 8.0, periodic, neighbours="full")
    ref = _loop(alpha, beta, 8.0, periodic)
    assert tr.n_tasks == math.prod(beta)
    assert _as_dict(tr) == pytest.approx(ref, rel=TOL["rel"])
    dense = np.zeros((tr.n_tasks, tr.n_tasks))
    for (s, t), b in ref.items():
        dense[s, t] = b
    np.testing.assert_allclose(tr.to_dense(), dense, rtol=TOL["rel"], atol=0)


def test_interior_task_message_sizes_with_uneven_faces():
    """A 27-point interior task of 48x40x32 elements: 6 faces, 12 edges, 8 corners, sized by what they share."""
    bpe = 8.0
    tr = T.stencil([3 * 48, 3 * 40, 3 * 32], [3, 3, 3], bpe, False, neighbours="full")
    centre = 13                                        # task (1, 1, 1)
    sizes = sorted(tr.nbytes[tr.src == centre].tolist())
    expected = sorted([40 * 32] * 2 + [48 * 32] * 2 + [48 * 40] * 2      # faces: the product of the other two sides
                      + [48] * 4 + [40] * 4 + [32] * 4                      # edges: the one side left
                      + [1] * 8)                                           # corners: one element
    assert len(sizes) == 26
    np.testing.assert_allclose(sizes, bpe * np.array(expected, float), rtol=TOL["rel"])
    # a corner task of the non-periodic domain has 7 neighbours: 3 faces, 3 edges, 1 corner
    assert int(np.sum(tr.src == 0)) == 7


def test_faces_is_the_default_and_a_subset_of_full():
    alpha, beta = [12, 10, 8], [3, 5, 4]
    default, faces = T.stencil(alpha, beta, 8.0, True), T.stencil(alpha, beta, 8.0, True, neighbours="faces")
    assert _as_dict(default) == _as_dict(faces)
    full = _as_dict(T.stencil(alpha, beta, 8.0, True, neighbours="full"))
    for key, b in _as_dict(faces).items():
        assert full[key] == pytest.approx(b, rel=TOL["rel"])
    assert len(full) == 26 * math.prod(beta)


def test_loads_of_flows_and_of_the_dense_matrix_against_per_flow_walk():
    """The full stencil and the loop's matrix (``from_matrix``) give the same link loads, both the per-flow walk's."""
    alpha, beta = [96, 80, 64], [4, 2, 2]
    topo = ev.torus([2, 2, 2], link_bandwidth=[2e9, 1e9, 2e9], nodes_per_router=2, injection_bandwidth=3e9)
    tr = T.stencil(alpha, beta, 8.0, [True, False, True], neighbours="full")
    ref = _loop(alpha, beta, 8.0, [True, False, True])
    dense = np.zeros((tr.n_tasks, tr.n_tasks))
    for (s, t), b in ref.items():
        dense[s, t] = b
    pl = P.linear(topo, tr.n_tasks)
    a = ev.evaluate(topo, tr, pl, "dor")
    b = ev.evaluate(topo, T.from_matrix(dense), pl, "dor")
    walk = reference_link_loads(topo, [(s, t, x) for (s, t), x in ref.items()], pl.task_node,
                                {"kind": "dor", "order": "as_given", "tie": "split"})
    np.testing.assert_allclose(a.link_load.values, walk, rtol=TOL["rel"], atol=TOL["bytes"])
    np.testing.assert_allclose(b.link_load.values, a.link_load.values, rtol=TOL["rel"], atol=TOL["bytes"])


def test_config_builds_and_keeps_the_task_grid():
    from evaluator import config
    from evaluator.traffic.grid import task_grid
    obj = config.to_object(config.compose(["traffic=stencil", "traffic.alpha=[12,10,8]", "traffic.beta=[3,5,4]",
                                           "traffic.neighbours=full", "traffic.periodic=false", "topology=torus",
                                           "topology.dims=[4,4,4]", "routing=dor", "placement=linear"]))
    pt = config.build(obj)
    assert _as_dict(pt.traffic) == pytest.approx(_loop([12, 10, 8], [3, 5, 4], 1024.0, False), rel=TOL["rel"])
    assert task_grid(obj.traffic, 60) == [3, 5, 4]    # grid-aware mapping starts still apply


@pytest.mark.parametrize("kwargs,field,value", [
    (dict(neighbours="edges"), "traffic.neighbours", "edges"),
    (dict(neighbours=27), "traffic.neighbours", 27),
    (dict(neighbours="full", exchange="per_dimension"), "traffic.exchange", "per_dimension"),
])
def test_bad_input(kwargs, field, value):
    with pytest.raises(ConfigError) as e:
        T.stencil([12, 10, 8], [3, 5, 4], 8.0, True, **kwargs)
    assert e.value.field == field and e.value.value == value, str(e.value)
    if field == "traffic.neighbours":
        assert "faces" in e.value.allowed and "full" in e.value.allowed


def test_bad_config_value_names_the_field():
    from evaluator import config
    with pytest.raises(ConfigError) as e:
        obj = config.to_object(config.compose(["traffic=stencil", "traffic.neighbours=corners"]))
        config.build(obj)
    assert e.value.field == "traffic.neighbours" and "full" in str(e.value), str(e.value)


def test_readme_example_runs(tmp_path, monkeypatch):
    """README's example (``evaluator eval traffic.neighbours=full traffic.periodic=false``) runs."""
    from evaluator import cli
    monkeypatch.chdir(tmp_path)
    assert cli.main(["eval", "traffic.neighbours=full", "traffic.periodic=false", "save=false"]) == 0


def test_bench_heldout_stencil_is_lulesh_like():
    """The mapping bench's held-out stencil: 48x40x32 elements per task, 27 points, non-periodic, its grid given."""
    from evaluator.bench.mapping import _heldout_traffic
    from evaluator.traffic.grid import task_grid
    tr, cfg = _heldout_traffic("27-point stencil", 512)
    assert task_grid(cfg, 512) == [8, 8, 8]
    assert _as_dict(tr) == pytest.approx(_loop(cfg["alpha"], cfg["beta"], 8.0, False), rel=TOL["rel"])
    assert set(tr.nbytes.tolist()) == {8.0 * x for x in (40 * 32, 48 * 32, 48 * 40, 48, 40, 32, 1)}
