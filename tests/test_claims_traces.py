"""Numbers docs/traces.md states, rerun (tests/claims.py): the MPI library's choice for the example trace's
allreduce, and which algorithm wins at which size (docs/latency.md's table, whose batch tests/test_claims_latency.py
computes). The page's console outputs are rerun by tests/test_trace_otf2.py and tests/test_docs_run.py; its "At
scale" table is a measurement of a machine (marked)."""

from __future__ import annotations

import os
import re

from claims import ROOT, check_stated

DOC = "docs/traces.md"
AUTO = "traffic.algorithms.allreduce=auto"


def _make_trace(where) -> str:
    """The page's ``make_trace.py``, run in ``where``: the path of the halo trace it writes."""
    raw = (ROOT / DOC).read_text()
    script = next(b for b in re.findall(r"```python\n(.*?)```", raw, re.S) if b.startswith("# make_trace.py"))
    here = os.getcwd()
    os.chdir(where)
    try:
        exec(compile(script, "make_trace.py", "exec"), {"__name__": "__main__"})
    finally:
        os.chdir(here)
    return str(where / "halo")


def test_the_allreduce_mpich_picks(tmp_path):
    """MPICH's rules pick Rabenseifner for the trace's allreduce, six steps, of the size the page states."""
    from evaluator import traffic
    from evaluator.traffic import read_otf2

    path = _make_trace(tmp_path)
    records = read_otf2(path)
    (size,) = {float(c.sent.max()) / len(c.members) for c in records.collectives}  # Score-P: N x the vector
    check_stated(DOC, r"MPICH's rules pick Rabenseifner for the ([0-9]+) kB allreduce", size / 1000, command=AUTO)
    assert traffic.select_algorithm("allreduce", records.n_ranks, size)[0] == "rabenseifner"
    phased = traffic.from_trace(path, mode="phased", algorithms={"allreduce": "auto"})
    steps = [n for n in phased.phase_names if n.startswith("allreduce0.")]
    assert len(steps) == 6, phased.phase_names  # "six steps: halving, then doubling"


def test_which_algorithm_wins():
    """"on a 16-node ring, recursive doubling up to 1 kB and the ring from 4 kB on, in both tools"."""
    from test_claims_latency import SIZES, smpi_winners, winners

    ar = winners("allreduce")
    theirs = smpi_winners("allreduce")
    assert {n: ar[n] for n in theirs} == theirs  # in both tools
    rd = [n for n in SIZES if ar[n] == "recursive_doubling"]
    ring_from = min(n for n in SIZES if all(ar[m] == "ring" for m in SIZES if m >= n))
    assert rd == [n for n in SIZES if n < ring_from]
    cmd = "docs/latency.md"
    check_stated(DOC, r"on a 16-node ring, recursive doubling up to ([0-9]+) kB", max(rd) / 1024, command=cmd)
    check_stated(DOC, r"up to [0-9]+ kB and the ring from ([0-9]+) kB on, in both tools", ring_from / 1024,
                 command=cmd)
