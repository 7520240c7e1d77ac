"""README.md's link-level confirmation table ("Partition shapes"): every row's geometries, predicted times and
ratios, rerun with the pairing benchmark (:func:`evaluator.partitions.confirm_machine`, as ``evaluator
partitions NAME --pairing`` runs it), and the closed form the text gives beside it (time = N/2 x bytes over the
bisection links x 2 GB/s, ties split)."""

from __future__ import annotations

import re

import pytest

from evaluator.partitions import confirm_machine
from tests.claims import check_stated, stated

DOC = "README.md"
COMMANDS = {"Mira": "evaluator partitions Mira --pairing",
            "JUQUEEN": "evaluator partitions JUQUEEN --size 3072 6144 12288 --pairing"}
SIZES = {"Mira": [2048, 4096, 8192, 12288], "JUQUEEN": [3072, 6144, 12288]}


@pytest.fixture(scope="module")
def rows():
    return {m: {r.nodes: r for r in confirm_machine(m, SIZES[m])} for m in SIZES}


@pytest.mark.parametrize("machine", ["Mira", "JUQUEEN"])
def test_pairing_rows(rows, machine):
    got = rows[machine]
    assert sorted(got) == SIZES[machine]
    for n, r in got.items():
        head = rf"\| {machine} \| {n} \| {re.escape(r.which)} \| {r.a.label} / {r.b.label} \| "
        cmd = COMMANDS[machine]
        check_stated(DOC, head + r"([0-9.]+) s / [0-9.]+ s \|", r.time_a, cmd)
        check_stated(DOC, head + r"[0-9.]+ s / ([0-9.]+) s \|", r.time_b, cmd)
        check_stated(DOC, head + r"[0-9.]+ s / [0-9.]+ s \| ([0-9.]+) \|", r.time_ratio, cmd)
        check_stated(DOC, head + r"[0-9.]+ s / [0-9.]+ s \| [0-9.]+ \| ([0-9.]+) \|", r.bisection_ratio, cmd)
        assert r.time_ratio == pytest.approx(r.bisection_ratio, rel=1e-12)  # "equal the bisection ratios"
        for geo, t in ((r.a, r.time_a), (r.b, r.time_b)):  # the closed form of the text, ties split
            assert t == pytest.approx((n / 2) * 2.0e9 / (geo.bisection.links * 2.0e9), rel=1e-9)
    stated(DOC, r"time = \(N/2 x bytes\) / \(bisection links x (2) GB/s\)")


def test_a_gemini_prism_where_the_ratios_differ():
    """'evaluator partitions BlueWaters --size 64 --pairing compares 2x16x1 with 4x2x4 at a time ratio of 8.000 and
    a bisection ratio of 4.000', the pairs '8 routers apart'."""
    cmd = "evaluator partitions BlueWaters --size 64 --pairing"
    (r,) = confirm_machine("BlueWaters", [64])
    assert r.embedded and (r.a.label, r.b.label) == ("2x16x1", "4x2x4"), (r.a.label, r.b.label)
    stated(DOC, r"--pairing` compares (2x16x1) with (4x2x4)")
    check_stated(DOC, r"at a time ratio of ([0-9.]+) and a bisection", r.time_ratio, cmd)
    check_stated(DOC, r"and a bisection ratio of ([0-9.]+)\. The bisection counts", r.bisection_ratio, cmd)
    check_stated(DOC, r"counts the\s+([0-9]+)-router side as a ring", r.a.shape[1], cmd)
    from evaluator.machines import load_machine

    check_stated(DOC, r"the rest of the ([0-9]+)-router host ring", load_machine("BlueWaters").dims[1], cmd)
    check_stated(DOC, r"those pairs, ([0-9]+) routers apart", r.a.shape[1] // 2, cmd)
