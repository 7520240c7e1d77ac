"""Feature combinations of ``evaluate`` / ``evaluate_batch`` / ``evaluate_groups`` against one independent reference.

Each option (topology family, routing, traffic kind, tasks per node, latency model, sharing, fairness,
progression, bounds) has tests of its own; this module crosses them. A pairwise covering set of the axes
(:func:`_covering`) is evaluated in one ``evaluate_batch`` call per (network, latency, sharing) and compared
with a per-flow walk written here: paths derived from the topology's link arrays (dimension order on tori
and meshes, the one minimal path of a small Dragonfly, per-hop equal splitting on a two-level fat tree), the
latency formula of docs/latency.md, and an event-driven max-min fair simulation (progressive filling). Where
the routing's paths are not derived here (Valiant, k-shortest, TAGO, D-mod-k) the invariants are checked:
conservation of bytes per flow, ``completion_time = max load / capacity``, linearity in bytes, the bound
below every time beyond it. ``evaluate`` and ``evaluate_groups`` must give the batch's numbers point by point.
"""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import topology as T
from evaluator import traffic as TR
from evaluator.errors import ConfigError
from evaluator.evaluation import BankedPoints, evaluate_groups
from evaluator.latency import Latency

LAT = Latency(send_overhead=1e-6, recv_overhead=2e-6, router=1e-7, link=(("default", 5e-8), ("injection", 2e-8)),
              eager_threshold=3e5)
NETS = {  # name: (topology builder, routing, whether this module derives its paths)
    "mesh-dor": (lambda: T.torus([4, 4], wrap=False), "dor", True),
    "torus-dor": (lambda: T.torus([3, 3]), "dor", True),
    "df-minimal": (lambda: T.dragonfly(1, 2, 1), "minimal", True),
    "ft-spray": (lambda: T.fat_tree(levels=2, k=4), "ecmp_spray", True),
    "df-valiant": (lambda: T.dragonfly(1, 2, 1), "valiant", False),
    "torus-kshortest": (lambda: T.torus([3, 3]), "kshortest", False),
    "rdn-tago": (lambda: T.rdn(1, 4, 1, 4), "tago", False),
    "ft-dmodk": (lambda: T.fat_tree(levels=2, k=4), "dmodk", False),
}
KINDS = ("single", "phased", "self", "file")
_TOPS: dict = {}


def _top(net: str, lat: bool):
    key = (net.split("-")[0], lat)
    if key not in _TOPS:
        t = NETS[net][0]()
        _TOPS[key] = t.with_latency(LAT) if lat else t
    return _TOPS[key]


# ----------------------------------------------------------------------------------------------- the covering set
def _covering(axes: dict) -> list[dict]:
    """A greedy pairwise covering set: every pair of values of every two axes appears in some row."""
    names = list(axes)
    todo = {(a, va, b, vb) for a, b in itertools.combinations(names, 2) for va in axes[a] for vb in axes[b]}
    rows = []
    cands = [dict(zip(names, vals)) for vals in itertools.product(*axes.values())]
    while todo:
        best = max(cands, key=lambda r: sum((a, r[a], b, r[b]) in todo for a, b in itertools.combinations(names, 2)))
        todo -= {(a, best[a], b, best[b]) for a, b in itertools.combinations(names, 2)}
        rows.append(best)
    return rows


ROWS = _covering({"net": list(NETS), "kind": list(KINDS), "tpn": [1, 2], "lat": [False, True],
                  "sharing": ["bound", "max_min"]})


# --------------------------------------------------------------------------------------------- traffics of a row
def _flows(n: int, seed: int, self_flows: bool):
    rng = np.random.default_rng(seed)
    src = np.arange(n)
    dst = rng.permutation(n)
    if self_flows:
        dst[::3] = src[::3]  # (a third of the tasks send to themselves)
    return src, dst, rng.integers(1, 9, n) * 1e5


def _traffic(kind: str, n: int, tmp):
    if kind == "phased":
        return TR.phased([TR.from_flows(n, *_flows(n, s, False)) for s in (1, 2, 3)], name="three")
    if kind == "file":
        path = tmp / f"flows{n}.csv"
        s, d, b = _flows(n, 7, True)
        path.write_text("src,dst,bytes\n" + "".join(f"{i},{j},{int(x)}\n" for i, j, x in zip(s, d, b)))
        return TR.from_file(path, n_tasks=n)
    return TR.from_flows(n, *_flows(n, 5 if kind == "single" else 6, kind == "self"), name=kind)


def _exchanges(tr):
    """``[(src, dst, bytes)]`` per phase, read from the traffic's flow arrays."""
    return [(np.asarray(x.src), np.asarray(x.dst), np.asarray(x.nbytes, float)) for x in tr.phases]


# ------------------------------------------------------------------------------------------ paths, by this module
def _adjacency(t):
    n = t.n_router_links
    out = {}
    for l, (a, b) in enumerate(zip(t.link_src[:n].tolist(), t.link_dst[:n].tolist())):
        out.setdefault(a, []).append((b, l))
    return out


def _bfs(adj, dst: int) -> dict:
    """Hop distance of every router to ``dst`` (links reversed)."""
    rev = {}
    for a, outs in adj.items():
        for b, _ in outs:
            rev.setdefault(b, []).append(a)
    dist, q = {dst: 0}, deque([dst])
    while q:
        v = q.popleft()
        for u in rev.get(v, []):
            if u not in dist:
                dist[u] = dist[v] + 1
                q.append(u)
    return dist


def _dor(t, a: int, b: int):
    """Dimension order on a torus or mesh of odd or unwrapped rings (no ties): one path, as link ids."""
    dims, wrap = t.dims, t.wrap
    cur = list(np.unravel_index(a, dims))
    goal = list(np.unravel_index(b, dims))
    lk = {(s, d, c): l for l, (s, d, c) in enumerate(zip(t.link_src, t.link_dst, t.link_class))}
    path = []
    for k, (K, w) in enumerate(zip(dims, wrap)):
        fwd = (goal[k] - cur[k]) % K
        step = (1 if fwd <= K // 2 else -1) if w else (1 if goal[k] > cur[k] else -1)
        while cur[k] != goal[k]:
            nxt = cur.copy()
            nxt[k] = (cur[k] + step) % K
            path.append(lk[(np.ravel_multi_index(cur, dims), np.ravel_multi_index(nxt, dims), k)])
            cur = nxt
    return [(1.0, path)]


def _split(t, a: int, b: int):
    """Per-hop equal split over the next hops on shortest paths: ``[(weight, links)]``."""
    adj, dist = _adjacency(t), _bfs(_adjacency(t), b)
    out = []

    def walk(v, w, links):
        if v == b:
            out.append((w, links))
            return
        nxt = [(u, l) for u, l in adj[v] if dist.get(u, 1e9) == dist[v] - 1]
        for u, l in nxt:
            walk(u, w / len(nxt), links + [l])

    walk(a, 1.0, [])
    return out


def _df_minimal(t, a: int, b: int):
    """Dragonfly minimal: a local hop to the router holding the global link to the destination's group (one per
    group pair here), that link, a local hop to the destination: ``[(1, links)]``."""
    grp = np.asarray(t.router_coords)[:, 0]
    n = t.n_router_links
    src, dst, cls = t.link_src[:n], t.link_dst[:n], np.asarray(t.class_names)[t.link_class[:n]]
    local = {(int(x), int(y)): l for l, (x, y, c) in enumerate(zip(src, dst, cls)) if c == "local"}
    if grp[a] == grp[b]:
        return [(1.0, [local[(a, b)]])]
    (g,) = [l for l in range(n) if cls[l] == "global" and grp[src[l]] == grp[a] and grp[dst[l]] == grp[b]]
    u, v = int(src[g]), int(dst[g])
    return [(1.0, ([local[(a, u)]] if a != u else []) + [g] + ([local[(v, b)]] if v != b else []))]


def _paths(net: str, t, a: int, b: int):
    if a == b:
        return [(1.0, [])]
    if net.startswith("df"):
        return _df_minimal(t, a, b)
    return _dor(t, a, b) if net.endswith("dor") else _split(t, a, b)


def _latency(t, links) -> float:
    """sum_l (wire[class(l)] + router [l ends at a router]) of docs/latency.md, for the links of one path."""
    wire = dict(LAT.link)
    return sum(wire.get(t.class_names[t.link_class[l]], wire["default"]) + LAT.router * (t.link_dst[l] >= 0)
               for l in links)


def _walk(net: str, t, tr, pl):
    """Per phase: link loads, and per message ``(links or None, bytes, latency)`` (links None: split paths)."""
    node = np.asarray(pl.task_node)
    router = np.asarray(t.node_router)
    inj, ej = t.n_router_links, t.n_router_links + t.n_nodes
    out = []
    for src, dst, nb in _exchanges(tr):
        load, msgs = np.zeros(t.n_links), []
        for s, d, b in zip(src, dst, nb):
            if b <= 0:
                continue
            ns, nd = node[s], node[d]
            paths = [(1.0, [])] if ns == nd else [(w, [inj + ns] + p + [ej + nd])
                                                   for w, p in _paths(net, t, router[ns], router[nd])]
            for w, p in paths:
                np.add.at(load, p, w * b)
            lam = sum(w * _latency(t, p) for w, p in paths)
            lam = LAT.send_overhead + LAT.recv_overhead + lam
            if LAT.eager_threshold is not None and b > LAT.eager_threshold:
                lam *= 1 + 2 * LAT.rendezvous_round_trips
            msgs.append((paths[0][1] if len(paths) == 1 else None, b, lam))
        out.append((load, msgs))
    return out


def _max_min(cap, msgs, lat: bool) -> np.ndarray:
    """Finish times of single-path messages under flow-fair max-min sharing, each starting at its latency."""
    m = len(msgs)
    start = np.array([lam if lat else 0.0 for _, _, lam in msgs])
    left = np.array([b for _, b, _ in msgs], float)
    fin = np.full(m, np.nan)
    now = 0.0
    while np.isnan(fin).any():
        act = [i for i in range(m) if np.isnan(fin[i]) and start[i] <= now + 1e-15]
        rate = np.zeros(m)
        frozen, resid = set(), cap.astype(float).copy()
        free = [i for i in act if msgs[i][0]]
        for i in act:
            if not msgs[i][0]:
                rate[i] = np.inf  # (through memory: done as it starts)
        while free:  # progressive filling
            users = {}
            for i in free:
                for l in msgs[i][0]:
                    users.setdefault(l, []).append(i)
            inc = min(resid[l] / len(u) for l, u in users.items())
            sat = {l for l, u in users.items() if resid[l] / len(u) <= inc * (1 + 1e-12)}
            for i in free:
                rate[i] += inc
                for l in msgs[i][0]:
                    resid[l] -= inc
            frozen |= {i for i in free if any(l in sat for l in msgs[i][0])}
            free = [i for i in free if i not in frozen]
        ends = [now + left[i] / rate[i] if rate[i] < np.inf else now for i in act]
        pend = [start[i] for i in range(m) if np.isnan(fin[i]) and start[i] > now + 1e-15]
        nxt = min(ends + pend)
        for i, e in zip(act, ends):
            left[i] -= rate[i] * (nxt - now) if rate[i] < np.inf else left[i]
            if e <= nxt * (1 + 1e-12) + 1e-18:
                fin[i] = nxt
        now = nxt
    return fin


# ---------------------------------------------------------------------------------------------- the matrix itself
def _points(rows, tmp):
    out = []
    for r in rows:
        t = _top(r["net"], r["lat"])
        n = min(t.n_nodes, 8) * r["tpn"]
        out.append((_traffic(r["kind"], n, tmp), P.fully_random(t, n, tasks_per_node=r["tpn"], seed=len(out))))
    return out


def _groups():
    g = {}
    for r in ROWS:
        g.setdefault((r["net"], r["lat"], r["sharing"]), []).append(r)
    return g


def _check_point(net, t, tr, pl, m, i, flows, sharing):
    """One batch point against the walk (derived paths) or the invariants (any routing)."""
    derived = NETS[net][2]
    walk = _walk(net, t, tr, pl) if derived else None
    cap = np.asarray(t.capacity)
    total = sum(b.sum() for _, _, b in _exchanges(tr))
    assert m["total_bytes"][i] == pytest.approx(total, rel=1e-12)
    if derived:
        bounds = [float((load / cap).max()) for load, _ in walk]
        assert m["completion_time"][i] == pytest.approx(sum(bounds), rel=1e-9), (net, tr.name)
        if t.latency is not None:
            lat = sum(bd + max((lam for _, _, lam in msgs), default=0.0) for bd, (_, msgs) in zip(bounds, walk))
            assert m["time_with_latency"][i] == pytest.approx(lat, rel=1e-9), (net, tr.name)
    for key in ("time_with_latency", "time_max_min"):
        if key in m:
            assert m[key][i] >= m["completion_time"][i] * (1 - 1e-9), (net, key)
    if sharing != "max_min" or not derived or any(p is None for _, ms in walk for p, _, _ in ms):
        return
    total_t = 0.0
    for k, (_, msgs) in enumerate(walk):
        ref = _max_min(cap, msgs, t.latency is not None)
        got = np.asarray(flows[i][k], float)
        got = got[~np.isnan(got)]
        np.testing.assert_allclose(np.sort(got), np.sort(ref), rtol=1e-7, atol=1e-15, err_msg=f"{net} phase {k}")
        total_t += ref.max(initial=0.0)
    assert m["time_max_min"][i] == pytest.approx(total_t, rel=1e-7)


@pytest.mark.parametrize("key", sorted(_groups(), key=str), ids=lambda k: "-".join(map(str, k)))
def test_matrix_against_the_walk(key, tmp_path):
    net, lat, sharing = key
    rows = _groups()[key]
    t = _top(net, lat)
    pts = _points(rows, tmp_path)
    res = ev.evaluate_batch(t, NETS[net][1], [a for a, _ in pts], [b for _, b in pts], sharing=sharing)
    assert ("time_with_latency" in res.metrics) == lat
    assert ("time_max_min" in res.metrics) == (sharing == "max_min")
    for i, (tr, pl) in enumerate(pts):
        _check_point(net, t, tr, pl, res.metrics, i, res.flows, sharing)


# -------------------------------------------------------------------------- refusals of options that change nothing
@pytest.mark.parametrize("kw,field", [
    (dict(fairness="rtt"), "fairness"),  # before: accepted, the bound's numbers
    (dict(progression="rank"), "progression"),
    (dict(sharing="max_min", fairness="job"), "fairness"),  # before: accepted, the flow-fair numbers (one job)
])
def test_max_min_options_where_they_change_nothing_are_refused(kw, field):
    t = _top("mesh-dor", False)
    tr, pl = TR.from_flows(4, [0, 1], [2, 3], [1e6, 3e6]), P.linear(t, 4)
    for call in (lambda: ev.evaluate(t, tr, pl, "dor", **kw), lambda: ev.evaluate_batch(t, "dor", tr, pl, **kw),
                 lambda: ev.evaluate_draws(t, "ecmp_spray", tr, pl, **kw)):
        with pytest.raises(ConfigError) as e:
            call()
        assert e.value.field == field and repr(kw[field]) in str(e.value)


def test_jobs_fairness_is_checked_at_either_sharing():
    from evaluator.jobs import Job, evaluate_jobs

    t = _top("mesh-dor", False)
    a = Job(TR.from_flows(2, [0], [1], [4e6]), P.explicit(t, np.array([0, 3])), name="a")
    for fairness in ("rtt", "jb"):  # before: both accepted without a word under sharing="bound"
        with pytest.raises(ConfigError) as e:
            evaluate_jobs(t, [a], "dor", fairness=fairness)
        assert e.value.field == "fairness" and fairness in str(e.value)


# ----------------------------------------------------------------- one point, a batch, groups: the same numbers
def test_evaluate_batch_and_groups_agree_point_by_point_and_scale_with_bytes(tmp_path):
    t = _top("mesh-dor", True)
    rows = [dict(kind=k, tpn=p) for k, p in (("phased", 2), ("self", 1), ("file", 2), ("single", 1))]
    pts = _points([dict(net="mesh-dor", lat=True, **r) for r in rows], tmp_path)
    trs, pls = [a for a, _ in pts], [b for _, b in pts]
    res = ev.evaluate_batch(t, "dor", trs, pls)
    order = [3, 0, 2, 1]  # (groups given out of order: positions say where each point goes)
    grp = evaluate_groups(t, "dor", [BankedPoints(np.array([j]), trs[j], [pls[j]]) for j in order],
                          keep_link_load=False, chunk_size=2)
    for key in ("completion_time", "time_with_latency", "total_bytes", "mean_hops"):
        for j, pos in enumerate(grp.positions):
            assert grp.metrics[key][j] == pytest.approx(res.metrics[key][pos], rel=1e-12), key
    for i in (0, 3):
        one = ev.evaluate(t, trs[i], pls[i], "dor")
        assert float(one.completion_time) == pytest.approx(res.metrics["completion_time"][i], rel=1e-12)
        assert float(one.time_with_latency) == pytest.approx(res.metrics["time_with_latency"][i], rel=1e-12)
    s, d, b = _exchanges(trs[3])[0]
    double = ev.evaluate_batch(t, "dor", TR.from_flows(trs[3].n_tasks, s, d, 2 * b), pls[3]).metrics
    assert double["completion_time"][0] == pytest.approx(2 * res.metrics["completion_time"][3], rel=1e-12)


def test_bounds_with_phases_self_flows_and_shared_nodes_stay_below_the_routing(tmp_path):
    t = _top("mesh-dor", True)
    tr = TR.phased([TR.from_flows(16, *_flows(16, s, True)) for s in (1, 2)], name="two")
    pl = P.fully_random(t, 16, tasks_per_node=2, seed=3)
    ds = ev.evaluate(t, tr, pl, "dor", bounds=True)
    walk = _walk("mesh-dor", t, tr, pl)
    edge = slice(t.n_router_links, None)  # (injection and ejection: no routing avoids them)
    lower = sum(float((load[edge] / t.capacity[edge]).max()) for load, _ in walk)
    assert lower * (1 - 1e-9) <= float(ds.optimal_completion_time) <= float(ds.completion_time) * (1 + 1e-9)
    assert 0 < float(ds.routing_efficiency) <= 1 + 1e-9
