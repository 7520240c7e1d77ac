"""README.md "Fat trees": D-mod-k on a shift and on Frontera, D-mod-k with parallel links, hashed ECMP against the
spray on the buyer's tree (issue 34: every number the tool gives is claim-tested)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

import evaluator as ev
from evaluator import placement, routing, traffic
from evaluator.topology import fat_tree
from tests.claims import ROOT, check_stated
from tests.test_claims_readme import _run

DOC = "README.md"
SHIFT = "topology=fat_tree topology.k=4 topology.levels=3 routing=dmodk traffic=shift placement=linear"
FRONTERA = "topology.name=Frontera topology.partition=null routing=dmodk traffic=random_permutation"


def _value(out: str, key: str) -> float:
    m = re.search(rf"^{key}\s+([0-9.]+) (us|ms|MB)", out, re.M)
    assert m, out
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "MB": 1e6}[m.group(2)]


def test_dmodk_shift_and_frontera(capsys):
    out = _run(["eval", *SHIFT.split(), "save=false"], capsys)
    check_stated(DOC, r"loads every link at most once, ([0-9.]+) us", _value(out, "completion") * 1e6, command=SHIFT)
    out = _run(["eval", "topology=machine", *FRONTERA.split(), "placement=linear", "save=false"], capsys)
    check_stated(DOC, r"a random permutation puts ([0-9.]+) MB on one leaf uplink",
                 _value(out, "max_load_level1_up") / 1e6, command=FRONTERA)
    check_stated(DOC, r"on one leaf uplink, ([0-9.]+) us\)", _value(out, "completion") * 1e6, command=FRONTERA)


def test_dmodk_parallel_links_all_to_all():
    t = fat_tree(k=4, levels=3, parallel_links=2)
    cmd = "fat_tree(k=4, levels=3, parallel_links=2)"
    n, per_pair = t.n_nodes, 10e6
    a2a, pl = traffic.all_to_all(n, per_pair), placement.linear(t, n)
    dmodk = float(ev.evaluate(t, a2a, pl, routing.dmodk()).completion_time)
    spray = float(ev.evaluate(t, a2a, pl, routing.ecmp_spray()).completion_time)
    assert dmodk == pytest.approx(spray, rel=1e-9)
    check_stated(DOC, r"all-to-all of ([0-9.]+) MB per pair on the 4-ary", per_pair / 1e6, command=cmd)
    check_stated(DOC, r"parallel_links=2\)`, ([0-9.]+) GB/s links\)", float(np.max(t.capacity[: t.n_router_links])) / 1e9, command=cmd)
    check_stated(DOC, r"GB/s links\) takes ([0-9.]+) ms, the spray's time", dmodk * 1e3, command=cmd)


def test_hashed_ecmp_on_the_buyers_tree():
    """The buyer's study's fat tree and permutation (read from sweeps/network_buyer.yaml), 200 hash seeds."""
    study = yaml.safe_load((ROOT / "sweeps" / "network_buyer.yaml").read_text())["sweep"]["axes"]
    topo = next(t for t in study["network"]["zip"]["topology"] if t["kind"] == "fat_tree")
    perm = next(t for t in study["workload"]["zip"]["traffic"] if t["kind"] == "random_permutation")
    t = fat_tree(k=topo["k"], levels=topo["levels"], link_bandwidth=topo["link_bandwidth"],
                 injection_bandwidth=topo["injection_bandwidth"])
    tr = traffic.random_permutation(perm["n_tasks"], perm["bytes"], seed=perm["seed"])
    pl = placement.linear(t, perm["n_tasks"])
    cmd = "evaluator.routing.ecmp_seed_summary(times, seeds)"
    spray = float(ev.evaluate(t, tr, pl, routing.ecmp_spray()).completion_time)
    specs = routing.ecmp_seeds(200)
    summary = routing.ecmp_seed_summary([ev.evaluate_batch(t, r, tr, pl).metrics["completion_time"][0] for r in specs],
                                        [r.seed for r in specs])
    check_stated(DOC, r"8-ary 3-tree \(([0-9.]+) GB/s links\)", topo["link_bandwidth"] / 1e9, command=cmd)
    check_stated(DOC, r"a random permutation of ([0-9.]+) MB per node takes", perm["bytes"] / 1e6, command=cmd)
    check_stated(DOC, r"MB per node takes ([0-9.]+) ms sprayed", spray * 1e3, command=cmd)
    check_stated(DOC, r"ms sprayed and ([0-9.]+) ms expected hashed", float(summary.completion_time_expected) * 1e3,
                 command=cmd)
    check_stated(DOC, r"95th percentile ([0-9.]+) ms: 4 to 7 flows", float(summary.completion_time_p95) * 1e3,
                 command=cmd)
    flows = np.asarray(summary.completion_time.values) / spray
    assert (round(flows.min()), round(flows.max())) == (4, 7)  # "4 to 7 flows on the busiest link"
