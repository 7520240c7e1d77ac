"""docs/mapping.md's coset layouts of issue 37's pencil rows, rerun in full (`python -m tests.pencil_lattices 8,8,8`
and `16,8,8`: 203 + 203 and 299 + 299 subgroups, 3,296 random-order layouts, about 25 s here): the printed block,
the sentences that use it, the subgroup enumeration against brute force on small tori, the kernel's phase times
against tests/reference.py's per-flow walk, and the first dimension's ring loads the page's argument states."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.claims import check_output_block, check_stated
from tests.helpers import once
from tests.pencil_lattices import coset_layouts, coset_nodes, main, phase_groups, plane_layouts, report, subgroups

DOC = "docs/mapping.md"
CMD = "python -m tests.pencil_lattices {}"


@pytest.fixture(scope="module")
@once
def results():
    out = {}
    for dims in ((8, 8, 8), (16, 8, 8)):
        c = coset_layouts(dims)
        out[dims] = (c, plane_layouts(dims, cosets=c))
    return out


def test_the_printed_block(results):
    """The block after the commands: the script's lines (``main`` prints :func:`report` of the same results)."""
    lines = [x for dims, (c, p) in results.items() for x in report(dims, c, p)]
    assert check_output_block(DOC, CMD.format("8,8,8"), "\n".join(lines)) == 48  # numbers checked


def test_bad_input_is_a_usage_error(capsys):
    for argv in ([], ["4,4,4"], ["eight"], ["8,8,8", "16,8,8"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "usage: python -m tests.pencil_lattices DIMS" in err and "8,8,8" in err, (argv, err)


def test_the_sentences(results):
    (c8, p8), (c16, p16) = results[(8, 8, 8)], results[(16, 8, 8)]
    both8 = p8["whole"] * 1e6
    check_stated(DOC, r"On 8x8x8 every coset layout of either phase takes exactly ([0-9.]+) us",
                 c8["xy"]["least"] * 1e6, CMD.format("8,8,8"))
    for name in ("xy", "yz"):
        assert c8[name]["least"] == pytest.approx(c8[name]["largest"], rel=1e-12)
    assert c8["xy"]["least"] == pytest.approx(c8["yz"]["least"], rel=1e-12)
    check_stated(DOC, r"cosets is 15 % below the ([0-9.]+) us found", both8, CMD.format("8,8,8"))
    check_stated(DOC, r"if its other phase takes under ([0-9.]+) us\.", 0.85 * both8 - c8["xy"]["least"] * 1e6,
                 CMD.format("8,8,8"))
    # the linear mapping: its columns are cosets (of the nodes numbered a multiple of p_row), each phase 262.1 us
    from evaluator.bench.mapping import _HELDOUT_PENCIL, _heldout_traffic
    from evaluator.evaluation import evaluate_batch
    from evaluator.placement import explicit
    from evaluator.topology import torus

    topo, (tr, _) = torus((8, 8, 8)), _heldout_traffic("pencil FFT", 512)
    cols = phase_groups(512, _HELDOUT_PENCIL[512][0])["yz"]
    assert any(sorted(map(tuple, coset_nodes((8, 8, 8), s).tolist())) == sorted(map(tuple, cols.tolist()))
               for s in subgroups((8, 8, 8), 32))
    for k in range(2):
        t = float(evaluate_batch(topo, "dor", tr.phases[k], [explicit(topo, np.arange(512))]).metrics["completion_time"][0])
        assert t == pytest.approx(c8["xy"]["least"], rel=1e-12), tr.phase_names[k]
    # the times found by the search (the table above) are the coset layouts' best
    check_stated(DOC, r"\| 16x32 ranks, 8x8x8 torus \| [0-9.]+ us \| [0-9.]+ us \| ([0-9.]+) us \|", both8,
                 CMD.format("8,8,8"))
    check_stated(DOC, r"\| 32x32 ranks, 16x8x8 torus \| [0-9.]+ us \| [0-9.]+ us \| ([0-9.]+) us \|",
                 p16["whole"] * 1e6, CMD.format("16,8,8"))

    # 16x8x8: the least only on subgroups inside one plane of the first dimension; every other subgroup at the largest
    check_stated(DOC, r"On 16x8x8 the rows reach ([0-9.]+) us only", c16["xy"]["least"] * 1e6, CMD.format("16,8,8"))
    assert all(np.all(s[:, 0] == 0) for s in p16["subgroups"]), "a subgroup at the least time leaves the plane x = 0"
    times = c16["xy"]["times"]
    assert set(np.round(times * 1e9).tolist()) == {round(c16["xy"]["least"] * 1e9), round(c16["xy"]["largest"] * 1e9)}
    assert (times <= c16["xy"]["least"] * (1 + 1e-12)).sum() == len(p16["subgroups"])
    planes = {int(x) for s in p16["subgroups"] for x in np.unravel_index(coset_nodes((16, 8, 8), s)[:, 0],
                                                                           (16, 8, 8))[0]}
    check_stated(DOC, r"one plane of the first dimension \(([0-9]+) planes, two cosets each\)", len(planes),
                 CMD.format("16,8,8"))
    for s in p16["subgroups"]:  # two cosets on each plane
        x = np.unravel_index(coset_nodes((16, 8, 8), s)[:, 0], (16, 8, 8))[0]
        assert np.bincount(x, minlength=16).tolist() == [2] * 16
    assert p16["column_per_plane"] == (2, 2)
    check_stated(DOC, r"([0-9.]+) us for the `yz` phase whatever the ranks' order", p16["least"]["yz"] * 1e6,
                 CMD.format("16,8,8"))
    check_stated(DOC, r"([0-9.]+) us in all, the time found", p16["whole"] * 1e6, CMD.format("16,8,8"))
    check_stated(DOC, r"With the rows on any other subgroup the `xy` phase takes ([0-9.]+) us",
                 c16["xy"]["largest"] * 1e6, CMD.format("16,8,8"))
    check_stated(DOC, r"the layout is 15 % below ([0-9.]+) us", p16["whole"] * 1e6, CMD.format("16,8,8"))
    check_stated(DOC, r"only if `yz` takes under ([0-9.]+) us", 0.85 * p16["whole"] * 1e6 - c16["xy"]["largest"] * 1e6,
                 CMD.format("16,8,8"))
    # the bound of one phase alone is below the time the other phase would need, on both tori
    from evaluator.mapping import mapping_bound

    for dims, n, need in (((8, 8, 8), 512, 0.85 * both8 - c8["xy"]["least"] * 1e6),
                          ((16, 8, 8), 1024, 0.85 * p16["whole"] * 1e6 - c16["xy"]["largest"] * 1e6)):
        tr_n, _ = _heldout_traffic("pencil FFT", n)
        for k in range(2):
            assert mapping_bound(torus(dims), tr_n.phases[k], "dor").value * 1e6 < need, (dims, k)
    # rows and columns swapped: the same times
    assert sorted(c16["yz"]["times"].tolist()) == pytest.approx(sorted(times.tolist()), rel=1e-12)


def _brute_subgroups(dims) -> dict[int, set[bytes]]:
    """Every subgroup of the small group, as the closure of every triple of its elements (its rank is at most 3)."""
    dims = np.asarray(dims)
    elems = np.array(list(itertools.product(*map(range, dims))))
    out: dict[int, set[bytes]] = {}
    for trip in itertools.combinations_with_replacement(range(len(elems)), 3):
        pts = np.zeros((1, 3), np.int64)
        for g in elems[list(trip)]:
            mult = np.unique((np.arange(int(dims.max()) * 2)[:, None] * g[None, :]) % dims, axis=0)
            pts = np.unique((pts[:, None, :] + mult[None, :, :]).reshape(-1, 3) % dims, axis=0)
        out.setdefault(len(pts), set()).add(pts.tobytes())
    return out


@pytest.mark.parametrize("dims", [(4, 4, 2), (4, 2, 2), (2, 4, 4)])
def test_the_subgroups_are_all_of_them(dims):
    brute = _brute_subgroups(dims)
    for order, want in brute.items():
        got = {s.astype(np.int64).tobytes() for s in subgroups(dims, order)}
        assert got == want, (dims, order, len(got), len(want))
    assert sum(len(v) for v in brute.values()) > 10


def _phase_flows(groups, pair_bytes):
    """``(src_task, dst_task, bytes)`` of an all-to-all inside every group."""
    return [(int(a), int(b), pair_bytes) for g in groups for a in g for b in g if a != b]


def _walk(topo, groups, task_node, pair_bytes) -> np.ndarray:
    """Bytes on every router link by tests/reference.py's per-flow walk (DOR, a tie split)."""
    from tests.reference import reference_link_loads

    loads = reference_link_loads(topo, _phase_flows(groups, pair_bytes), task_node,
                                 {"kind": "dor", "order": "as_given", "tie": "split"})
    return loads[: topo.n_router_links]


def test_phase_times_are_a_per_flow_walk():
    """The kernel's time of a phase on cosets (the script's scoring) equals the busiest link of a per-flow DOR walk
    over the link bandwidth, for subgroups of both tori; and on 16x8x8, with the rows on a subgroup inside one plane
    and their ranks in a random order, every link of the first dimension carries 524,288 B in the `yz` phase."""
    from evaluator.bench.mapping import _HELDOUT_PENCIL, _heldout_traffic
    from evaluator.evaluation import evaluate_batch
    from evaluator.placement import explicit
    from evaluator.topology import torus

    from tests.pencil_lattices import _layout

    for dims, n in (((8, 8, 8), 512), ((16, 8, 8), 1024)):
        topo = torus(dims)
        cap = np.unique(np.asarray(topo.capacity)[: topo.n_router_links])
        assert cap.size == 1
        tr, _ = _heldout_traffic("pencil FFT", n)
        groups = phase_groups(n, _HELDOUT_PENCIL[n][0])
        for k, name in enumerate(tr.phase_names):
            g = groups[name]
            subs = subgroups(dims, g.shape[1])
            for s in (subs[0], subs[len(subs) // 2], subs[-1]):
                tn = _layout(g, coset_nodes(dims, s))
                got = float(evaluate_batch(topo, "dor", tr.phases[k], [explicit(topo, tn)]).metrics["completion_time"][0])
                walk = _walk(topo, g, tn, float(tr.phases[k].nbytes[0]))
                assert got == pytest.approx(walk.max() / float(cap[0]), rel=1e-12), (dims, name)

    # the ring argument on 16x8x8
    dims, n = (16, 8, 8), 1024
    tr, _ = _heldout_traffic("pencil FFT", n)
    groups = phase_groups(n, _HELDOUT_PENCIL[n][0])
    s = plane_layouts(dims, n_random=1)["subgroups"][0]
    rng = np.random.default_rng(3)
    tn = _layout(groups["xy"], np.array([rng.permutation(c) for c in coset_nodes(dims, s)]))
    topo = torus(dims)
    walk = _walk(topo, groups["yz"], tn, float(tr.phases[1].nbytes[0]))
    x_links = walk[np.asarray(topo.link_class)[: topo.n_router_links] == topo.class_names.index("torus-dim0")]
    assert x_links.size == 2 * n
    check_stated(DOC, r"all-to-all: ([0-9,]+) B on each of its links", float(x_links.min()), CMD.format("16,8,8"))
    assert x_links.min() == x_links.max()
