"""docs/collectives.md: the example commands' outputs, rerun (issue 34: every number the tool gives is
claim-tested)."""

from __future__ import annotations

import pytest

from evaluator import cli
from tests.claims import check_output_block, check_stated

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
