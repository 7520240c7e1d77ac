"""README.md: the settings and small examples it states (issue 34: every number is claim-tested or marked): the
Python it needs, Ray's connect timeout, the memory budget, the group tornado's closed form, the catalogue's
Blue Waters NIC, the slides' closed form and a split DOR tie."""

from __future__ import annotations

import inspect
import re
import tomllib

import evaluator as ev
from evaluator import placement, traffic
from evaluator import tiles as TL
from evaluator.config.schemas import RayConfig
from evaluator.errors import check_memory
from evaluator.machines import load_machine
from tests.claims import ROOT, check_stated
from tests.test_claims_readme import _run

DOC = "README.md"


def test_python_timeout_and_memory_budget():
    req = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    check_stated(DOC, r"with Python >= ([0-9.]+) and", float(re.search(r">=\s*([0-9.]+)", req).group(1)),
                 command="make run")
    check_stated(DOC, r"`ray.connect_timeout_s` \(([0-9.]+) s\)", RayConfig().connect_timeout_s,
                 command="ray.connect_timeout_s")
    fraction = inspect.signature(check_memory).parameters["fraction"].default
    check_stated(DOC, r"when they exceed ([0-9.]+)% of the memory available", 100 * fraction,
                 command="EVALUATOR_MEMORY_LIMIT=<bytes>")


def test_group_tornado_closed_form():
    df = ev.dragonfly(4, 8, 4)
    per_node = 1e6
    tr = traffic.group_tornado(df, per_node)
    ds = ev.evaluate(df, tr, placement.linear(df, df.n_nodes), "minimal")
    group_bytes = per_node * df.p * df.a
    assert ds.bottleneck.item() == "global"
    cmd = "tests/test_group_tornado.py"
    check_stated(DOC, r"under minimal routing, ([0-9.]+) MB over one", group_bytes / 1e6, command=cmd)
    glob = float(df.capacity[df.link_class_names() == "global"].max())
    check_stated(DOC, r"MB over one ([0-9.]+) GB/s global link", glob / 1e9, command=cmd)
    check_stated(DOC, r"GB/s global link: ([0-9.]+) ms;", float(ds.completion_time) * 1e3, command=cmd)


def test_tiles_nic_and_closed_form():
    inj = load_machine("BlueWaters").injection_bandwidth
    check_stated(DOC, r"with the ([0-9.]+) GB/s NIC counted on", inj / 1e9,
                 command="--baseline-decomposition 32,32,32 --baseline-tile 4,4,2")
    conc, seq = TL.ideal_ratios([2.0, 1.0, 2.0])
    check_stated(DOC, r"closed form \(([0-9.]+) and [0-9.]+ of a cubic tile's time", conc, command="docs/tiles.md")
    check_stated(DOC, r"closed form \([0-9.]+ and ([0-9.]+) of a cubic tile's time", seq, command="docs/tiles.md")


def test_split_tie_on_a_ring(capsys):
    cmd = "topology=torus topology.dims=[8] routing=dor traffic=shift traffic.n_tasks=8 traffic.offset=4 placement=linear"
    times = {}
    for tie in ("split", "positive"):
        out = _run(["eval", *cmd.split(), f"routing.tie={tie}", "save=false"], capsys)
        m = re.search(r"^completion\s+([0-9.]+) (ms|us|s)\b", out, re.M)
        times[tie] = float(m.group(1)) * {"ms": 1e-3, "us": 1e-6, "s": 1.0}[m.group(2)]
    check_stated(DOC, r"a shift by 4 on a ring of 8 takes ([0-9.]+) ms split", times["split"] * 1e3, command=cmd)
    check_stated(DOC, r"ms split, ([0-9.]+) ms either way alone", times["positive"] * 1e3, command=cmd)
