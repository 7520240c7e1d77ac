"""docs/collectives.md: the example commands' outputs, rerun (issue 34: every number the tool gives is
claim-tested)."""

from __future__ import annotations

import re

import pytest

from evaluator import cli
from tests.claims import ROOT, check_output_block, check_stated, stated

DOC = "docs/collectives.md"
RING = ("evaluator eval traffic=collective traffic.op=allreduce traffic.algorithm=ring traffic.bytes=8e6 "
        "topology=torus topology.dims=[8] routing=dor placement=linear save=false")
RABEN = ("evaluator eval traffic=collective traffic.op=allreduce traffic.algorithm=rabenseifner traffic.bytes=8e6 "
         "topology=torus topology.dims=[6] routing=dor placement=linear save=false")
AUTO = ("evaluator eval traffic=collective traffic.op=allreduce traffic.algorithm=auto traffic.bytes=8e6 "
        "topology=torus topology.dims=[8] routing=dor placement=linear save=false")
PIPE = ("evaluator eval traffic=collective traffic.op=broadcast traffic.algorithm=pipelined_ring traffic.n_segments=null "
        "traffic.bytes=8e6 topology=torus topology.dims=[8] topology.latency.wire=1e-6 routing=dor placement=linear "
        "save=false")


def _run(command: str, capsys) -> str:
    assert cli.main(command.split()[1:]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", [RING, RABEN, AUTO, PIPE], ids=["ring", "rabenseifner", "auto", "pipelined"])
def test_example_outputs(command, capsys):
    assert check_output_block(DOC, command, _run(command, capsys)) >= 2


def test_the_example_prose(capsys):
    import re

    import evaluator as ev
    from evaluator import placement, traffic

    t = ev.torus([8], link_bandwidth=2e9)
    ring = ev.evaluate(t, traffic.collective("allreduce", "ring", n_tasks=8, nbytes=8e6), placement.linear(t, 8),
                       ev.dor())
    check_stated(DOC, r"neighbour, ([0-9.]+) ms each", float(ring.phase_completion_time.values[0]) * 1e3,
                 command=RING)
    pipe = ev.evaluate(t, traffic.collective("broadcast", "pipelined_ring", n_tasks=8, nbytes=8e6, n_segments=4),
                       placement.linear(t, 8), ev.dor())
    check_stated(DOC, r"= 10` steps of ([0-9.]+) ms", float(pipe.phase_completion_time.values.max()) * 1e3,
                 command="traffic.n_segments=4")
    check_stated(DOC, r"segments\), ([0-9.]+) ms in all", float(pipe.completion_time) * 1e3,
                 command="traffic.n_segments=4")
    out = _run(PIPE.replace("traffic.n_segments=null", "traffic.n_segments=8"), capsys)
    m = re.search(r"^latency\s+([0-9.]+) (ms|us)", out, re.M)
    eight = float(m.group(1)) * {"ms": 1e-3, "us": 1e-6}[m.group(2)]
    assert eight == __import__("pytest").approx(14 * (0.5e-3 + 3e-6), rel=1e-6)  # the formula the page gives
    check_stated(DOC, r"the default 8 segments take ([0-9.]+) ms there", eight * 1e3, command=PIPE)
    # lam, the latency of one step's message: the latency the 14 steps add, per step
    bound = re.search(r"^completion\s+([0-9.]+) ms", out, re.M)
    steps = len(re.findall(r"^phase ", out, re.M))
    assert steps == 14 and m.group(2) == "ms"
    lam = (float(m.group(1)) - float(bound.group(1))) * 1e-3 / steps
    check_stated(DOC, r"`lam` = ([0-9.]+) us: injection, one link, ejection", lam * 1e6, command=PIPE)
    # the pipelined example's segments
    seg = max(float(b.max()) for _, _, b in traffic.collective_steps("broadcast", "pipelined_ring", 8, 8e6,
                                                                     n_segments=4))
    check_stated(DOC, r"steps of [0-9.]+ ms \(([0-9.]+) MB segments\)", seg / 1e6, command="traffic.n_segments=4")


def test_mpich_chunks_and_empty_messages():
    """The scatter broadcasts' chunks (97 bytes over 16 ranks) and the zero-byte allgather messages."""
    import re

    import numpy as np

    from evaluator import traffic
    from evaluator.traffic._collective_algorithms import _chunks

    n = float(stated(DOC, r"\(([0-9]+) bytes over 16 ranks: 13 chunks of 7, one of 6, two of 0\)")[0])
    counts = re.search(r"over ([0-9]+) ranks: ([0-9]+) chunks of ([0-9]+), one of ([0-9]+), two of ([0-9]+)\)",
                       " ".join((ROOT / DOC).read_text().split()))
    p, k, c, last, zero = (int(x) for x in counts.groups())
    _, chunks = _chunks(p, n)
    assert list(chunks) == [c] * k + [last] + [zero] * 2, chunks
    steps = traffic.collective_steps("broadcast", "scatter_ring_allgather", p, n)
    scatter, allgather = steps[: len(steps) - (p - 1)], steps[len(steps) - (p - 1):]
    assert all(np.all(b > 0) for _, _, b in scatter)  # a scatter message of no byte is not sent
    check_stated(DOC, r"an allgather message of an empty chunk is sent with ([0-9]+) bytes",
                 min(float(b.min()) for _, _, b in allgather), command="collective_steps")


def test_mpich_thresholds():
    """MPICH's switches the selection tables state (the `mpich` rules the library transcribes)."""
    from evaluator import traffic

    sel = traffic.select_algorithm
    rd = max(n for n in range(1, 4097) if sel("allreduce", 8, n)[0] == "recursive_doubling")
    assert sel("allreduce", 8, rd + 1)[0] == "rabenseifner"
    check_stated(DOC, r"MPICH switches to Rabenseifner above ([0-9]+) bytes", rd, command=AUTO)
    check_stated(DOC, r"MPICH's rules \([0-9]+ MB > ([0-9]+) bytes: Rabenseifner", rd, command=AUTO)
    check_stated(DOC, r"MPICH's rules \(([0-9]+) MB > [0-9]+ bytes: Rabenseifner",
                 float(AUTO.split("traffic.bytes=")[1].split()[0]) / 1e6, command=AUTO)
    assert sel("allreduce", 8, 8e6)[0] == "rabenseifner"
    scatter = min(n for n in range(1, 20000) if sel("broadcast", 8, n)[0].startswith("scatter"))
    check_stated(DOC, r"MPICH uses the scatter broadcasts from ([0-9]+) bytes and", scatter, command=AUTO)
    ranks = min(p for p in range(2, 65) if sel("broadcast", p, scatter)[0].startswith("scatter"))
    check_stated(DOC, r"scatter broadcasts from [0-9]+ bytes and ([0-9]+) ranks", ranks, command=AUTO)


def test_ompi_refusal():
    """The refusal the page shows (Open MPI's broadcast tree at p = 6), word for word."""
    from evaluator import traffic

    n = float(stated(DOC, r"for p = 6 ranks and ([0-9]+) bytes, which this module does not model")[0])
    with pytest.raises(Exception) as err:
        traffic.collective("broadcast", "auto", n_tasks=6, nbytes=n, selection="ompi")
    assert " ".join(str(err.value).split()) in " ".join((ROOT / DOC).read_text().split())


def test_python_section():
    import evaluator as ev
    from evaluator import placement, traffic

    cmd = "ds = ev.evaluate(t, tr, placement.linear(t, 6), ev.dor())"
    t = ev.torus([6])
    tr = traffic.collective("allgather", "recursive_doubling", n_tasks=6, nbytes=1e6)
    ds = ev.evaluate(t, tr, placement.linear(t, 6), ev.dor())
    values = ds["phase_completion_time"].values
    assert len(values) == 3
    for k in range(3):
        pattern = r"# \[" + r"[0-9.]+ " * k + r"([0-9.]+)" + r" [0-9.]+" * (2 - k) + r" \]"
        check_stated(DOC, pattern, float(values[k]), command=cmd)


def test_fastest_against_smpi():
    """"Which one is fastest, against SMPI": the winners of docs/latency.md's table, computed (its claims'
    batch: the 16-ring, the SMPI-like latency model, max-min sharing with rank progression)."""
    from test_claims_latency import SIZES, smpi_winners, winner_table, winners

    from evaluator import traffic

    cmd, kb = "docs/latency.md", 1024
    ar, bc = winners("allreduce"), winners("broadcast")
    for op, ours in (("allreduce", ar), ("broadcast", bc)):  # "in the evaluator and in SMPI alike"
        theirs = smpi_winners(op)
        assert {n: ours[n] for n in theirs} == theirs, (op, ours, theirs)
    rd = [n for n in SIZES if ar[n] == "recursive_doubling"]
    ring_from = min(n for n in SIZES if all(ar[m] == "ring" for m in SIZES if m >= n))
    assert rd == [n for n in SIZES if n < ring_from] and "rabenseifner" not in ar.values()
    check_stated(DOC, r"recursive doubling is the fastest allreduce up to ([0-9]+) kB", max(rd) / kb, command=cmd)
    check_stated(DOC, r"and the ring from ([0-9]+) kB on, in the evaluator", ring_from / kb, command=cmd)
    switch = min(n for n in range(1, 1 << 13) if traffic.select_algorithm("allreduce", 16, n)[0] == "rabenseifner")
    check_stated(DOC, r"Rabenseifner, MPICH's choice above ([0-9]+) kB, never wins", (switch - 1) / kb, command=cmd)
    at = int(float(stated(DOC, r"never wins there \(at ([0-9]+) kB it takes")[0]) * kb)
    t = winner_table()["max_min"]
    pattern = r"kB it takes ([0-9.]+)x the ring's time in both tools"
    check_stated(DOC, pattern, t[("allreduce", "rabenseifner")][at] / t[("allreduce", "ring")][at], command=cmd)
    latency_doc = " ".join((ROOT / "docs/latency.md").read_text().split())  # SMPI's (cited) side of that ratio
    smpi = [float(x) for x in re.search(rf"\| {at:,} \| [^/]+ / ([0-9.]+) \| [^/]+ / [0-9.]+ \| [^/]+ / ([0-9.]+) \|",
                                        latency_doc).groups()]
    check_stated(DOC, pattern, smpi[1] / smpi[0], command=cmd)
    scatter = [n for n in SIZES if bc[n] == "scatter_ring_allgather"]
    binomial = [n for n in SIZES if bc[n] == "binomial"]
    assert sorted(scatter + binomial) == SIZES
    scatter_from = min(n for n in scatter if all(bc[m] == "scatter_ring_allgather" for m in SIZES if m >= n))
    below = [n for n in binomial if n < scatter[0]]
    check_stated(DOC, r"The binomial broadcast wins up to ([0-9]+) kB and at", max(below) / kb, command=cmd)
    (dip,) = [n for n in binomial if n > scatter[0]]
    check_stated(DOC, r"wins up to [0-9]+ kB and at ([0-9]+) kB, the scatter", dip / kb, command=cmd)
    early = [n for n in scatter if n < scatter_from]
    assert len(early) == 2
    check_stated(DOC, r"the scatter \+ ring broadcast at ([0-9]+) kB, [0-9]+ kB and from", early[0] / kb, command=cmd)
    check_stated(DOC, r"the scatter \+ ring broadcast at [0-9]+ kB, ([0-9]+) kB and from", early[1] / kb, command=cmd)
    check_stated(DOC, r"kB and from ([0-9]+) kB on\. The whole table", scatter_from / kb, command=cmd)
