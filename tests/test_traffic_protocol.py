"""One traffic contract and routing behaviour as methods (issue 26).

* every traffic (flows, dense rank-one, phased) answers
  :class:`evaluator.traffic.AbstractTraffic`; its answers are checked against
  a brute-force walk over the explicit task pairs (built here from the
  definitions, not by the code under test);
* a routing spec answers what generic code asks of it (``needs_pairs``,
  ``bind_pairs``, ``paths_per_pair``), checked against the grouping rule of
  each kind written out by hand;
* no consumer outside ``evaluator/traffic`` asks a traffic for its type, and
  none reads routing-kind flags.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from evaluator import routing as RT
from evaluator import traffic as TR
from evaluator.routing import PairSet
from evaluator.traffic import AbstractTraffic

from helpers import TOL

N = 12


def _weights():
    rng = np.random.default_rng(7)
    ws = rng.uniform(0.5, 2.0, N)
    wd = rng.uniform(0.5, 2.0, N)
    ws[[2, 5]] = 0.0  # tasks that do not send
    wd[[5, 9]] = 0.0  # tasks that do not receive
    return ws, wd


def _flows(rng_seed=3):
    rng = np.random.default_rng(rng_seed)
    src = rng.integers(0, N, 40)
    dst = rng.integers(0, N, 40)
    nb = rng.uniform(0.0, 5.0, 40)
    nb[:4] = 0.0  # flows without bytes
    src[4] = 11
    nb[4] = 0.0  # task 11 sends only a zero-byte flow
    return TR.from_flows(N, src, dst, nb, name="flows")


def _traffics():
    ws, wd = _weights()
    dense = TR.dense.dense(N, ws, wd, 3.0, name="dense")
    flows = _flows()
    return {"flows": flows, "dense": dense, "phases": TR.phased([flows, dense, _flows(5)], names=["a", "b", "c"])}


def _pairs(t) -> list[list[tuple[int, int, float]]]:
    """Reference: every exchange's task pairs with bytes, from the definitions (per phase)."""
    out = []
    for x in (t.phases if t.kernel_input == "phases" else [t]):
        if x.kernel_input == "dense":
            out.append([(s, d, x.bytes_per_pair * x.src_weight[s] * x.dst_weight[d])
                        for s in range(N) for d in range(N) if s != d and x.src_weight[s] * x.dst_weight[d] > 0])
        else:
            out.append(list(zip(x.src.tolist(), x.dst.tolist(), x.nbytes.tolist())))
    return out


@pytest.mark.parametrize("which", ["flows", "dense", "phases"])
def test_every_traffic_answers_the_contract_as_a_walk_over_its_pairs(which):
    t = _traffics()[which]
    ref = _pairs(t)
    assert isinstance(t, AbstractTraffic)
    assert t.kernel_input == which
    assert t.n_phases == len(ref) and len(t.phases) == len(ref) and len(t.phase_names) == len(ref)
    if which != "phases":
        assert t.phases == (t,)
    sent = np.zeros(N)
    senders = np.zeros(N, bool)
    for ph in ref:
        for s, d, b in ph:
            sent[s] += b
            senders[s] |= b > 0
    assert t.n_senders == int(senders.sum())
    np.testing.assert_array_equal(t.senders(), senders)
    np.testing.assert_allclose(t.sent_per_task(), sent, rtol=TOL["rel"])
    assert t.total_bytes == pytest.approx(sent.sum(), rel=TOL["rel"])
    assert t.n_flows == max(len(ph) for ph in ref)
    # explicit flows: the same bytes per task pair, phase by phase
    f = t.to_flows()
    assert f.kernel_input == ("phases" if which == "phases" else "flows")
    for ph, x in zip(ref, f.phases):
        M = np.zeros((N, N))
        for s, d, b in ph:
            M[s, d] += b
        np.testing.assert_allclose(x.to_dense(), M, rtol=TOL["rel"])
    # scaled: every byte count times the factor
    np.testing.assert_allclose(t.scaled(2.5).sent_per_task(), 2.5 * sent, rtol=TOL["rel"])


@pytest.mark.parametrize("which", ["flows", "dense", "phases"])
def test_pair_and_location_bytes_match_a_per_pair_walk(which):
    t = _traffics()[which]
    rng = np.random.default_rng(11)
    n_loc = 5
    loc = rng.integers(0, n_loc, N)
    pair = defaultdict(float)
    sent, recv = np.zeros(n_loc), np.zeros(n_loc)
    for ph in _pairs(t):
        for s, d, b in ph:
            if loc[s] != loc[d] and b > 0:
                pair[(loc[s], loc[d])] += b
                sent[loc[s]] += b
                recv[loc[d]] += b
    calls = []
    s, d, b = t.pair_bytes(loc, n_loc, lambda *a: calls.append(a))
    assert (s != d).all()
    got = defaultdict(float)
    for i, j, x in zip(s.tolist(), d.tolist(), b.tolist()):
        got[(i, j)] += x
    assert set(got) == set(pair)
    for k in pair:
        assert got[k] == pytest.approx(pair[k], rel=TOL["rel"])
    gs, gr = t.location_bytes(loc, n_loc)
    np.testing.assert_allclose(gs, sent, rtol=TOL["rel"])
    np.testing.assert_allclose(gr, recv, rtol=TOL["rel"])
    # the check sees each dense exchange's exact pair count before its pairs are listed
    dense_phases = [x for x in t.phases if x.kernel_input == "dense"]
    assert len(calls) == len(dense_phases)
    for (name, n_src, n_dst, n_pairs), x in zip(calls, dense_phases):
        su = {loc[i] for i in range(N) if x.src_weight[i] > 0}
        dv = {loc[i] for i in range(N) if x.dst_weight[i] > 0}
        assert (name, n_src, n_dst) == (x.name, len(su), len(dv))
        assert n_pairs == sum(1 for a in su for c in dv if a != c)


@pytest.mark.parametrize("which", ["flows", "dense", "phases"])
def test_sampled_flows_are_flows_of_the_traffic(which):
    t = _traffics()[which]
    ref = {}
    for ph in _pairs(t):
        for s, d, b in ph:
            ref.setdefault((s, d), set()).add(round(b, 9))
    f = t.sample_flows(7, np.random.default_rng(0))
    assert f.kernel_input == "flows" and f.n_flows == 7
    for s, d, b in zip(f.src.tolist(), f.dst.tolist(), f.nbytes.tolist()):
        assert round(b, 9) in ref[(s, d)]


def _point_pairs():
    R = 6
    a = (np.array([1, 8, 1, 20]), np.array([1.0, 2.0, 3.0, 4.0]))  # keys 1, 8, 20 (1 twice)
    b = (np.array([20, 8, 1]), np.array([4.0, 2.0, 4.0]))  # the same pairs as a, the same bytes per pair
    c = (np.array([20, 8, 1]), np.array([1.0, 2.0, 4.0]))  # the same pairs, other bytes
    d = (np.array([13]), np.array([5.0]))
    return R, [a, b, c, d]


def test_routing_specs_bind_points_by_their_own_rule():
    R, pts = _point_pairs()
    # kshortest: one operator for the union of every point's pairs
    ks = RT.kshortest(2)
    assert ks.needs_pairs
    [(bound, idx)] = ks.bind_pairs(pts, R)
    assert idx == [0, 1, 2, 3] and bound.pairs == PairSet([1, 8, 20, 13], R) and not bound.needs_pairs
    assert bound.k == ks.k and bound.kind == "kshortest"
    # optiq_heuristic: one operator per distinct pair set
    oh = RT.optiq_heuristic(k=3)
    groups = oh.bind_pairs(pts, R)
    assert [idx for _, idx in groups] == [[0, 1, 2], [3]]
    assert [g.pairs for g, _ in groups] == [PairSet([1, 8, 20], R), PairSet([13], R)]
    assert all(g.kind == "optiq_heuristic" and g.maxload == oh.maxload for g, _ in groups)
    # optiq_lp: one operator per distinct demand (pair set and bytes per pair)
    lp = RT.optiq_lp(k=2)
    groups = lp.bind_pairs(pts, R)
    assert [idx for _, idx in groups] == [[0, 1], [2], [3]]
    np.testing.assert_array_equal(groups[0][0].pairs.demand, [4.0, 2.0, 4.0])  # keys 1, 8, 20
    np.testing.assert_array_equal(groups[1][0].pairs.demand, [4.0, 2.0, 1.0])
    # routings that do not depend on the pairs: themselves, for every point
    for r in (RT.dor(), RT.minimal(), RT.valiant(), RT.tago()):
        assert not r.needs_pairs
        assert r.bind_pairs(pts, R) == [(r, [0, 1, 2, 3])]


def test_paths_per_pair_is_the_routings_answer():
    np.testing.assert_array_equal(RT.dor().paths_per_pair(3), [1.0, 1.0, 1.0])
    for r in (RT.minimal(), RT.valiant(), RT.valiant_router(), RT.tago()):
        assert np.isnan(r.paths_per_pair(2)).all()
    # a path set without an operator that counts paths: NaN, and the keys are not asked for
    asked = []
    assert np.isnan(RT.kshortest(2).paths_per_pair(2, None, lambda: asked.append(1))).all() and not asked


_TYPE_CHECK = re.compile(r"isinstance\(.*(Phased|Exchange|Dense|Traffic)|type\((t|tr|traffic|[a-z_.]*\.traffic)\)|"
                         r"hasattr\(.*(src_weight|phases|nbytes)")
_FLAG = re.compile(r"\.bind\b(?!\()|joint_pairs|pair_demand|single_path|KINDS\[[^]]*\]\.(bind|operator\b)")


def test_no_consumer_checks_a_traffic_type_or_reads_routing_flags():
    root = Path(__file__).resolve().parents[1] / "evaluator"
    hits = []
    for p in root.rglob("*.py"):
        rel = p.relative_to(root).as_posix()
        for i, line in enumerate(p.read_text().splitlines(), 1):
            if not rel.startswith("traffic/") and _TYPE_CHECK.search(line):
                hits.append(f"{rel}:{i}: {line.strip()}")
            if (rel in ("evaluation.py", "sweep/worker.py") or rel.startswith("_batch/")) and _FLAG.search(line):
                hits.append(f"{rel}:{i}: {line.strip()}")
    assert hits == []
