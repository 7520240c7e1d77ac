"""docs/mapping.md's certificate for issue 37's pencil row on the 16x4x4 prism
(`python -m evaluator.bench.prism_pencil_bound`, about 30 s here): the printed block and the sentences around it,
and each step of the argument against something independent: the Gale-Ryser programme against every 0/1 matrix on
4 x 4, the y-z distance minimum against every placement of a few tasks, the per-row bounds against real rows, the
cut counts against the kernel's phase times of real mappings (the linear one, random ones and a block layout); and
the bench's use of it: the row it applies to (the traffic's flows and the links' bandwidth checked) and the verdict
it changes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.claims import check_output_block, check_stated
from tests.helpers import once
from tests.pencil_lattices import phase_groups
from evaluator.bench.prism_pencil_bound import (BOX, DIMS, FLOW_US, N, X_LINKS, YZ_LINKS, bound, gale_ryser, main,
                                                piece_bounds, report, yz_wiener)

DOC = "docs/mapping.md"
CMD = "python -m evaluator.bench.prism_pencil_bound"


@pytest.fixture(scope="module")
@once
def result():
    return bound()


def test_the_printed_block(result):
    assert check_output_block(DOC, CMD, "\n".join(report(result))) == 8  # numbers checked


def test_the_sentences(result):
    from evaluator.bench.mapping import _heldout_traffic
    from evaluator.mapping import mapping_bound
    from evaluator.topology import torus

    found = 1310.72  # the row's time found (docs/mapping.md's table: 1,311 us; the bit layouts' 1,310.7 us)
    check_stated(DOC, r"\| 32x32 ranks, 4 a node, 16x4x4 prism \| [0-9.]+ us \| [0-9.,]+ us \| ([0-9.,]+) us \|",
                 found, CMD)
    check_stated(DOC, r"The bound is above 85 % of the time found \(([0-9.]+) us\)", 0.85 * found, CMD)
    check_stated(DOC, r"The bound is above ([0-9]+) % of the time found", 85, CMD)  # issue 37's 15 %
    assert result["bound"] > 0.85 * found
    for pattern, value in ((r"four tasks a node is ([0-9]+) % faster than", 15),
                           (r"four tasks a node is 15 % faster than\s+the ([0-9.,]+) us found", found),
                           (r"us found, so issue 37's ([0-9]+) % does not apply", 15),
                           (r"A flow is ([0-9,]+) B, [0-9.]+ us on one link", 8192),
                           (r"at least ([0-9.]+) us once the rows'", result["a"]),
                           (r"64 links a cut: at least ([0-9.]+) us with the", result["b"]),
                           (r"best mapping takes between ([0-9.]+) us and", result["bound"]),
                           (r"takes between [0-9.]+ us and the ([0-9.,]+) us\s+found \(by the search", found)):
        check_stated(DOC, pattern, value, CMD)
    nodes = np.ravel_multi_index(tuple(np.indices(BOX).reshape(3, -1)), DIMS)
    b = mapping_bound(torus(DIMS), _heldout_traffic("pencil FFT", 1024)[0], "dor", nodes=nodes, tasks_per_node=4)
    check_stated(DOC, r"than the boundary part's ([0-9.,]+) us", b.value * 1e6, CMD)
    # what the bench does with it (test_the_bench_counts_it_on_that_row_alone)
    check_stated(DOC, r"prints: still\s+the boundary part's ([0-9.,]+) us here\)", b.value * 1e6, CMD)
    check_stated(DOC, r"so the bench counts no room for ([0-9]+) % on this row", 15, CMD)  # issue 37's 15 %
    check_stated(DOC, r"A flow is 8,192 B, ([0-9.]+) us on one link", FLOW_US, CMD)
    # how far each open row's 85 % lies above its boundary part (the table: found and boundary part)
    # (8x8x8: its tile layout's time, tests/test_mapping_tiles.py)
    rows = {"4x8x8 half": (786.432, 524.288), "16x8x8": (393.216, 262.144), "8x8x8": (458.752, 262.144),
            "prism": (found, b.value * 1e6)}
    need = {k: 100 * (0.85 * f / p - 1) for k, (f, p) in rows.items()}
    check_stated(DOC, r"above their boundary part: ([0-9]+) % on the 4x8x8 half", need["4x8x8 half"], CMD)
    assert round(need["16x8x8"]) == round(need["4x8x8 half"])
    check_stated(DOC, r"on 16x8x8, ([0-9]+) %\s+on 8x8x8", need["8x8x8"], CMD)
    check_stated(DOC, r"on 8x8x8, against ([0-9]+) % here", need["prism"], CMD)


def test_the_bench_counts_it_on_that_row_alone(result):
    """`evaluator bench --only mapping` computes the certificate for the prism's pencil row as its held-out case
    builds it (:func:`heldout_case`'s job: the box's routers, four a node, DOR) and for no other row; the module's
    checks refuse a job it does not bound."""
    from evaluator.bench import mapping as BM
    from evaluator.bench.prism_pencil_bound import applies, certified_seconds
    from evaluator.topology import torus
    from evaluator.traffic import pencil

    assert [c for c in BM.HELDOUT_CASES if c in BM.HELDOUT_CERTIFICATES] == [(DIMS, 4, 1024, BOX, "pencil FFT")]
    tr, _ = BM._heldout_traffic("pencil FFT", 1024)
    nodes = np.ravel_multi_index(tuple(np.indices(BOX).reshape(3, -1)), DIMS)
    got = BM._certificate((DIMS, 4, 1024, BOX, "pencil FFT"), torus(DIMS), tr, nodes, 4)
    assert got == {"certificate": result["bound"] * 1e-6, "certificate_cmd": CMD}
    assert BM._certificate((DIMS, 1, 1024, DIMS, "pencil FFT"), torus(DIMS), tr, np.arange(1024), 1) == {}
    assert certified_seconds(torus(DIMS), tr, nodes, 4, "dor") == (result["bound"] * 1e-6, "")
    refused = {
        "another torus": applies(torus((16, 8, 4)), tr, nodes, 4, "dor"),
        "slower links": applies(torus(DIMS, link_bandwidth=1e9), tr, nodes, 4, "dor"),
        "another box": applies(torus(DIMS), tr, np.arange(256), 4, "dor"),
        "one a node": applies(torus(DIMS), tr, nodes, 1, "dor"),
        "another routing": applies(torus(DIMS), tr, nodes, 4, "minimal"),
        "the stencil": applies(torus(DIMS), BM._heldout_traffic("27-point stencil", 1024)[0], nodes, 4, "dor"),
        "other bytes": applies(torus(DIMS), pencil(128, 32, 32, 16.0), nodes, 4, "dor"),
        "16 x 64 ranks": applies(torus(DIMS), pencil(256, 16, 64, 16.0), nodes, 4, "dor"),
    }
    assert all(refused.values()), refused
    assert certified_seconds(torus((16, 8, 4)), tr, nodes, 4, "dor")[1] == refused["another torus"]
    with pytest.raises(RuntimeError, match="does not apply"):
        BM._certificate((DIMS, 4, 1024, BOX, "pencil FFT"), torus(DIMS), tr, nodes, 1)


def test_bad_input_is_a_usage_error(capsys):
    assert main(["16,4,4"]) == 2
    assert "usage: python -m evaluator.bench.prism_pencil_bound" in capsys.readouterr().err


def test_gale_ryser_against_every_matrix():
    """The least column crossing for each row crossing, on 4 x 4 with 8 ones: every matrix."""
    g = gale_ryser(16, 4, 8)
    least: dict[int, int] = {}
    for ones in itertools.combinations(range(16), 8):
        a = np.zeros(16, int)
        a[list(ones)] = 1
        r, s = a.reshape(4, 4).sum(1), a.reshape(4, 4).sum(0)
        cr, cc = int((r * (4 - r)).sum()), int((s * (4 - s)).sum())
        least[cr] = min(least.get(cr, 10 ** 9), cc)
    assert least == {c: 4 * 8 - int(g[c]) for c in range(g.size) if g[c] >= 0}


def _yz_sum(pos: np.ndarray) -> int:
    """The y-z distance sum over the pairs of tasks at yz positions ``pos`` (0..15, y * 4 + z)."""
    y, z = pos // 4, pos % 4
    return int((np.abs(y[:, None] - y[None]) + np.abs(z[:, None] - z[None])).sum() // 2)


@pytest.mark.parametrize("cap", [4, 8])
def test_yz_wiener_against_every_placement(cap):
    for p in range(1, 8):
        best = min(_yz_sum(np.array(c)) for c in itertools.combinations_with_replacement(range(16), p)
                   if max(np.bincount(c)) <= cap)
        assert yz_wiener(p, cap) == best, (p, cap)


def _mappings(rng):
    """Task -> slot orders of the prism's 1,024 slots (node-major, 4 a node): linear, two random, and a block
    layout (each row on 2x2x2 nodes, each column two tasks a plane)."""
    lin = np.arange(1024)
    # block layout: row r = (a, b): planes 2a..2a+1 of the 8 pairs, yz block b of the 4 2x2 quadrants
    slot = np.empty(1024, int)
    for r in range(N):
        pair, quad = divmod(r, 4)
        qy, qz = divmod(quad, 2)
        cells = [(2 * pair + dx, 2 * qy + dy, 2 * qz + dz) for dx in range(2) for dy in range(2) for dz in range(2)]
        for c in range(N):
            x, y, z = cells[c // 4]
            slot[r * N + c] = np.ravel_multi_index((x, y, z), BOX) * 4 + c % 4
    return {"linear": lin, "random 1": rng.permutation(1024), "random 2": rng.permutation(1024), "blocks": slot}


def test_cut_counts_bound_the_kernel_and_the_rows_bounds_hold(result):
    """For real mappings: each phase's kernel time is at least its x-half crossings over 32 links and its y/z cut
    crossings over 64 links; the whole time is at least the certificate; every row's and column's x and y-z distance
    sums are at least :func:`piece_bounds` of its plane pieces."""
    from evaluator.bench.mapping import _heldout_traffic
    from evaluator.evaluation import evaluate_batch
    from evaluator.placement import explicit
    from evaluator.topology import torus

    topo, (tr, _) = torus(DIMS), _heldout_traffic("pencil FFT", 1024)
    box_nodes = np.ravel_multi_index(tuple(np.indices(BOX).reshape(3, -1)), DIMS)
    rng = np.random.default_rng(3)
    by_name = phase_groups(1024, N)  # rows (xy), columns (yz)
    groups = {k: by_name[name] for k, name in enumerate(tr.phase_names)}
    for name, slot in _mappings(rng).items():
        coords = np.stack(np.unravel_index(slot // 4, BOX), axis=1)  # task -> (x, y, z) in the box
        node = box_nodes[slot // 4]
        total = 0.0
        for k in range(2):
            t = float(evaluate_batch(topo, "dor", tr.phases[k], [explicit(topo, node)]).metrics["completion_time"][0])
            total += t
            flows = []
            for s in range(8):
                inside = ((coords[:, 0] - s) % 16) < 8
                cnt = inside[groups[k]].sum(axis=1)
                flows.append((cnt * (N - cnt)).sum() / X_LINKS)
            for d in (1, 2):
                for cut in range(3):
                    cnt = (coords[:, d] <= cut)[groups[k]].sum(axis=1)
                    flows.append((cnt * (N - cnt)).sum() / YZ_LINKS)
            assert t * 1e6 >= max(flows) * FLOW_US * (1 - 1e-9), (name, k, t, max(flows))
            if name in ("linear", "blocks"):  # structured layouts: a cut's count is the busiest link's load
                assert t * 1e6 == pytest.approx(max(flows) * FLOW_US, rel=1e-12), (name, k, t, max(flows))
            for members in groups[k]:
                c = coords[members]
                per_plane = np.bincount(c[:, 0], minlength=16)
                part = tuple(sorted((int(v) for v in per_plane[per_plane > 0]), reverse=True))
                dx = np.abs(c[:, None, 0] - c[None, :, 0])
                x_sum = int(np.minimum(dx, 16 - dx).sum() // 2)
                yz = int((np.abs(c[:, None, 1] - c[None, :, 1]) + np.abs(c[:, None, 2] - c[None, :, 2])).sum() // 2)
                xb, wb = piece_bounds(part)
                assert x_sum >= xb and yz >= wb, (name, k, part, x_sum, xb, yz, wb)
        assert total * 1e6 >= result["bound"], (name, total)
        if name == "blocks":  # the time found on the row (2 x 2 x 2 nodes a row, each column two tasks a plane)
            assert total * 1e6 == pytest.approx(1310.72, rel=1e-12)
