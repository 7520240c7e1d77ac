"""Numbers docs/workload.md states about which machine a speedup table belongs to (issue 34): the 3-D stencil on
8 groups of the 64-node DF(2, 4, 2, 8), against both ends (docs/rdn.md's table commands).

Rerun through the same study and table functions, for the one point the sentence names (a point's draws depend on
the point and the draw only, ``mapping_seed``: a study of one pattern and size gives the same numbers as the whole
one for what they share; 8 groups is the whole machine), without UGAL-G (``adaptive=()``: neither end reads it, and
it changes no other variable, tests/test_rdn_study.py). One study gives both ends: the oblivious routings are
computed whatever the bounds. About a second.

The paper machine's own table, DF(12, 24, 12, 288) against the fastest oblivious routing, and the 50,000-job
schedules that apply it and the paper's typed-in table are rerun by tests/test_claims_workload_paper.py (minutes)."""

from __future__ import annotations

from tests.claims import check_stated

DOC = "docs/workload.md"
UPPER = "evaluator study rdn --machine 2,4,2,8 --groups 2,4,8 --baseline oblivious"


def test_the_stencil_on_8_groups_of_the_64_node_machine():
    """'the 3-D stencil on 8 groups gains 1.96 against the TDN's fastest oblivious routing on the 64-node
    DF(2, 4, 2, 8) (the upper end; 1.30 against the ideal adaptive bound, the conservative end; means over 10
    random mappings, ...)': the ``speedup`` of the tables `evaluator study rdn --machine 2,4,2,8 --groups 2,4,8`
    writes with ``--baseline oblivious`` and without (``adaptive``), mode ``minimal_balance`` (the stencil's)."""
    from evaluator.studies.rdn import RdnMachine, allocation_mode_study, speedup_table

    ds = allocation_mode_study(RdnMachine(2, 4, 2, 8), groups=(8,), patterns=("stencil",), background=0.26,
                               bounds=("adaptive",), adaptive=())  # the command's 10 seeds
    gain = {b: float(speedup_table(study=ds, baseline=b).speedup.sel(mode="minimal_balance", groups=8))
            for b in ("oblivious", "adaptive")}
    check_stated(DOC, r"the 3-D stencil on 8 groups gains ([0-9.]+) against the TDN's fastest oblivious",
                 gain["oblivious"], UPPER)
    check_stated(DOC, r"\(the upper end; ([0-9.]+) against the ideal adaptive bound, the conservative end",
                 gain["adaptive"], UPPER)
