"""The SMPI harness (evaluator.bench.smpi): closed forms on an 8-node ring at 1 us / 1 GB/s, the mpich selector.

SMPI adds a 16-byte envelope to every message (``smpi_request.cpp``), so one message of ``n`` bytes over ``h``
links takes ``h x 1 us + (n + 16) / 1 GB/s`` when it has its links to itself.
"""

from __future__ import annotations

import pytest

from evaluator.bench import smpi

needs_smpi = pytest.mark.skipif(not smpi.available(), reason="SMPI (smpicc, smpirun) is not installed")

BW, LAT, ENV = 1.0e9, 1.0e-6, 16


@pytest.fixture(scope="module")
def ring8() -> str:
    return smpi.torus_platform([8], BW, LAT)


def test_platform_xml_units_and_dim_order():
    xml = smpi.torus_platform([2, 4], 2.0e9, 5.0e-7)
    assert 'bw="2000000000.0Bps"' in xml and 'lat="5e-07s"' in xml
    assert 'topo_parameters="4,2"' in xml and 'radical="0-7"' in xml   # reversed: host i = our node i
    ft = smpi.fat_tree_platform(2, [4, 4], [1, 2], [1, 2], 1.0e9, 1.0e-6)
    assert 'topology="FAT_TREE"' in ft and 'topo_parameters="2;4,4;1,2;1,2"' in ft and 'radical="0-15"' in ft


def test_mpich_choice_rules():
    c = smpi.mpich_choice
    assert c("allreduce", 8, 8) == "mvapich2_two_level" and c("allreduce", 8, 10**6, effective=True) == "rdb"
    assert c("allreduce", 8, 2048, smp_comm=True) == "rdb" and c("allreduce", 8, 2049, smp_comm=True) == "rab_rdb"
    assert c("broadcast", 16, 10**6) == "SMP_binomial" and c("bcast", 16, 10**6, effective=True) == "binomial_tree"
    assert c("broadcast", 8, 10**6, smp_comm=True) == "binomial_tree"
    assert c("broadcast", 16, 12288, smp_comm=True) == "scatter_rdb_allgather"
    assert c("broadcast", 15, 12288, smp_comm=True) == "scatter_LR_allgather"
    assert c("broadcast", 16, 524288, smp_comm=True) == "scatter_LR_allgather"
    assert [c("alltoall", 8, n) for n in (255, 256, 32767, 32768)] == ["bruck", "mvapich2_scatter_dest",
                                                                      "mvapich2_scatter_dest", "ring"]
    assert c("alltoall", 7, 255) == "mvapich2_scatter_dest" and c("alltoall", 7, 32768) == "pair"
    assert [c("allgather", 8, n) for n in (65535, 65536)] == ["rdb", "ring"]
    assert [c("allgather", 6, n) for n in (13653, 13654)] == ["bruck", "ring"]   # total 81918 <= 81920 < 81924
    assert smpi.smpi_algorithm("alltoall", "pairwise", 6) == "ring"
    assert smpi.smpi_algorithm("allgather", "recursive_doubling", 6) == "bruck"
    assert smpi.smpi_algorithm("allreduce", "binomial", 8) is None


@needs_smpi
def test_ring_allreduce_closed_form(ring8):
    """Ring allreduce (SMPI lr) of 8192 B on 8 ranks: 14 steps of 1 us + 1024 B / 1 GB/s, within 1%;
    exactly with SMPI's 16-byte envelope; and the same alone as after other cases (common start)."""
    st: dict = {}
    t = smpi.run_collectives(ring8, [("allreduce", "lr", 8, 8192), ("allreduce", "lr", 8, 64),
                                     ("allreduce", "lr", 8, 8192)], 8, stats=st)
    assert st["runs"] == 1
    assert t[0] == pytest.approx(14 * (LAT + 1024 / BW), rel=0.01)
    assert t[0] == pytest.approx(14 * (LAT + (1024 + ENV) / BW), rel=1e-6)
    assert t[2] == t[0]
    assert smpi.run_collective(ring8, "allreduce", "lr", 8, 8192) == t[0]


@needs_smpi
def test_point_to_point_and_tie_routing(ring8):
    """1 MB over one link (a 2-rank broadcast): 1 us + 1 ms (+16 B); recursive doubling of 8 MB on the 8-ring:
    distances 1, 2, 4 load the busiest link 1, 2, 4 times (the distance-4 ties go one way)."""
    one = smpi.run_collective(ring8, "broadcast", "binomial_tree", 2, 10**6, n_hosts=8)
    assert one == pytest.approx(LAT + 1.0e-3, rel=0.01)
    assert one == pytest.approx(LAT + (10**6 + ENV) / BW, rel=1e-6)
    n = 8 * 2**20
    rdb = smpi.run_collective(ring8, "allreduce", smpi.SMPI_ALGORITHMS["allreduce", "recursive_doubling"], 8, n)
    assert rdb == pytest.approx(7 * LAT + 7 * (n + ENV) / BW, rel=1e-6)


@needs_smpi
def test_mpich_selector_equals_explicit_algorithm(ring8):
    cases = [("allreduce", 8, 8), ("allreduce", 8, 8192), ("alltoall", 8, 64), ("alltoall", 8, 4096),
             ("alltoall", 8, 40000), ("allgather", 8, 1024), ("allgather", 8, 70000), ("broadcast", 8, 4096)]
    mpich = smpi.run_collectives(ring8, [(op, "mpich", p, n) for op, p, n in cases], 8)
    explicit = smpi.run_collectives(ring8, [(op, smpi.mpich_choice(op, p, n, effective=True), p, n)
                                            for op, p, n in cases], 8)
    for case, a, b in zip(cases, mpich, explicit):
        assert a == pytest.approx(b, rel=1e-9), case


@needs_smpi
def test_failed_run_raises_with_smpi_message(ring8):
    with pytest.raises(RuntimeError, match="no algorithm 'nonesuch'"):
        smpi.run_collectives(ring8, [("allgather", "nonesuch", 4, 10)], 8)
    with pytest.raises(ValueError):
        smpi.run_collectives(ring8, [("allgather", "ring", 9, 10)], 8)
