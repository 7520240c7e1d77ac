"""Metamorphic audit: one physical scenario said two ways through the public API gives the same numbers, and a
transformation with a known effect has exactly that effect.

Every relation is also pinned to an independent reference written here (a per-flow walk of dimension-order or
Dragonfly-minimal routing, an event-driven max-min simulation, closed forms), so that two ways that agree on a
wrong answer still fail.
"""

from __future__ import annotations

import numpy as np
import pytest

import evaluator as ev
from evaluator import placement as P
from evaluator import traffic as T
from evaluator.jobs import Background, Job, evaluate_jobs
from evaluator.latency import Latency
from evaluator.topology import fat_tree

KEYS = ("completion_time", "total_bytes", "mean_hops", "throughput", "off_node_bytes",
        "effective_injection_bandwidth")
REL = 1e-12


def metrics(ds, keys=KEYS):
    return np.array([float(ds[k]) for k in keys])


def batch_metrics(res, i, keys=KEYS):
    return np.array([float(res.metrics[k][i]) for k in keys])


# ----------------------------------------------------------------------------------------------------------------
# independent references
# ----------------------------------------------------------------------------------------------------------------

def node_links(topo):
    """``(router link by (src, dst, class), injection link by node, ejection link by node)`` from the link arrays."""
    lid, inj, ej = {}, {}, {}
    for link in range(topo.n_links):
        node = int(topo.link_node[link])
        name = topo.class_names[int(topo.link_class[link])]
        if node < 0:
            lid.setdefault((int(topo.link_src[link]), int(topo.link_dst[link]), name), []).append(link)
        elif name == "injection":
            inj[node] = link
        else:
            ej[node] = link
    return lid, inj, ej


def dor_walk(topo, task_node, src, dst, nbytes, order=None):
    """Per-flow dimension-order walk on a torus/mesh: a tie at exactly half a ring split half each way.

    Returns ``(link loads, mean router hops per off-node byte, off-node bytes, per-flow paths)`` where a path is a
    list of ``(weight, links)`` (injection and ejection included)."""
    dims, npr = topo.dims, topo.nodes_per_router
    order = list(range(len(dims))) if order is None else list(order)
    lid, inj, ej = node_links(topo)
    load = np.zeros(topo.n_links)
    hops = off = 0.0
    paths = []
    for s, d, b in zip(src, dst, nbytes):
        na, nb = int(task_node[s]), int(task_node[d])
        if na == nb:
            paths.append([])
            continue
        off += b
        cur = [(1.0, list(np.unravel_index(na // npr, dims)), [inj[na]])]
        goal = list(np.unravel_index(nb // npr, dims))
        for k in order:
            nxt = []
            for w, c, links in cur:
                D, fwd = dims[k], (goal[k] - c[k]) % dims[k]
                if fwd == 0:
                    nxt.append((w, c, links))
                    continue
                if not topo.wrap[k]:
                    opts = [(1 if goal[k] > c[k] else -1, abs(goal[k] - c[k]))]
                elif 2 * fwd != D:
                    opts = [(1, fwd)] if 2 * fwd < D else [(-1, D - fwd)]
                else:
                    opts = [(1, fwd), (-1, D - fwd)]
                for sign, steps in opts:
                    cc, ll = list(c), list(links)
                    for _ in range(steps):
                        n2 = list(cc)
                        n2[k] = (cc[k] + sign) % D
                        ll.append(lid[(int(np.ravel_multi_index(cc, dims)), int(np.ravel_multi_index(n2, dims)),
                                       f"torus-dim{k}")][0])
                        cc = n2
                    nxt.append((w / len(opts), cc, ll))
            cur = nxt
        path = [(w, links + [ej[nb]]) for w, _, links in cur]
        for w, links in path:
            load[links] += w * b
            hops += w * b * (len(links) - 2)
        paths.append(path)
    return load, (hops / off if off else 0.0), off, paths


def dragonfly_minimal_walk(df, task_node, src, dst, nbytes):
    """Per-flow minimal Dragonfly walk from the link arrays: local hop to the router holding a global link to the
    destination group, that link, local hop on; a pair of groups joined by m links splits evenly over them."""
    p, a = df.nodes_per_router, df.a
    lid, inj, ej = node_links(df)
    glob = {}
    for (s, d, name), links in lid.items():
        if name == "global":
            for link in links:
                glob.setdefault((s // a, d // a), []).append((s, d, link))
    load = np.zeros(df.n_links)
    hops = off = 0.0
    for s, d, b in zip(src, dst, nbytes):
        na, nb = int(task_node[s]), int(task_node[d])
        if na == nb:
            continue
        off += b
        load[inj[na]] += b
        load[ej[nb]] += b
        ra, rb = na // p, nb // p
        if ra == rb:
            continue
        if ra // a == rb // a:
            load[lid[(ra, rb, "local")][0]] += b
            hops += b
            continue
        copies = glob[(ra // a, rb // a)]
        for gs, gd, link in copies:
            w = b / len(copies)
            for u, v in ((ra, gs), (gd, rb)):
                if u != v:
                    load[lid[(u, v, "local")][0]] += w
                    hops += w
            load[link] += w
            hops += w
    return load, hops / off, off


def max_min_reference(capacity, flows):
    """Event-driven flow-level max-min fair sharing: ``flows`` are ``(start, bytes, links)``; the last arrival."""
    t, rem = 0.0, [f[1] for f in flows]
    done = [None] * len(flows)
    while any(x is None for x in done):
        act = [i for i, f in enumerate(flows) if done[i] is None and f[0] <= t * (1 + 1e-15)]
        rate, left, todo = {}, np.array(capacity, dtype=float), set(act)
        while todo:  # progressive filling
            count = {}
            for i in todo:
                for link in flows[i][2]:
                    count[link] = count.get(link, 0) + 1
            level = min(left[link] / c for link, c in count.items())
            full = {link for link, c in count.items() if np.isclose(left[link] / c, level, rtol=1e-12)}
            for i in [i for i in todo if full & set(flows[i][2])]:
                rate[i] = level
                left[flows[i][2]] -= level
                todo.discard(i)
        t_start = min([f[0] for i, f in enumerate(flows) if done[i] is None and f[0] > t * (1 + 1e-15)],
                      default=np.inf)
        t_end = min([t + rem[i] / rate[i] for i in act], default=np.inf)
        t_next = min(t_start, t_end)
        for i in act:
            rem[i] -= rate[i] * (t_next - t)
            if rem[i] <= 1e-9 * flows[i][1]:
                done[i] = t_next
        t = t_next
    return max(done)


def random_flows(rng, n, k, lo=1, hi=1000):
    return rng.integers(0, n, k), rng.integers(0, n, k), rng.integers(lo, hi, k).astype(float)


# ----------------------------------------------------------------------------------------------------------------
# one traffic, many spellings
# ----------------------------------------------------------------------------------------------------------------

def test_dense_sparse_matrix_phased_batch_and_job_agree_with_a_walk():
    """A rank-one dense traffic, its flow list, its matrix, a one-phase PhasedTraffic of it, the same points inside a
    batch of mixed points and a one-job jobs evaluation: equal numbers, and equal to a per-flow DOR walk (two
    tasks per node, two nodes per router: on-node pairs load nothing, same-router pairs only the node links)."""
    topo = ev.torus([4, 4], nodes_per_router=2, link_bandwidth=[1e9, 2e9], injection_bandwidth=3e9)
    rng = np.random.default_rng(0)
    n = 24
    tn = rng.choice(topo.n_nodes, n // 2, replace=False)
    tn = np.concatenate([tn, tn])
    rng.shuffle(tn)
    pl = P.explicit(topo, tn)
    sw, dw = rng.integers(0, 3, n).astype(float), rng.integers(0, 3, n).astype(float)
    dense = T.base.dense(n, sw, dw, 100.0)
    matrix = np.outer(sw, dw) * 100.0
    np.fill_diagonal(matrix, 0.0)
    s, d = np.nonzero(matrix)
    load, hops, off, _ = dor_walk(topo, tn, s, d, matrix[s, d])
    ref_ct = float((load / topo.capacity).max())
    total = float(matrix.sum())
    sent = matrix.sum(axis=1)
    ref = np.array([ref_ct, total, hops, total / ref_ct, off, sent[sent > 0].mean() / ref_ct])
    spellings = [dense, dense.to_traffic(), T.from_matrix(matrix), T.phased([dense]), T.phased([T.from_matrix(matrix)])]
    for tr in spellings:
        ds = ev.evaluate(topo, tr, pl, "dor")
        np.testing.assert_allclose(metrics(ds), ref, rtol=REL, err_msg=tr.name)
        np.testing.assert_allclose(ds.link_load.values, load, rtol=REL, atol=1e-9)
    other = T.shift(n, 5, 77.0)
    res = ev.evaluate_batch(topo, "dor", [other, spellings[1], dense, other.scaled(2.0), spellings[3]], pl,
                            block_size=2)
    for i in (1, 2, 4):
        np.testing.assert_allclose(batch_metrics(res, i), ref, rtol=REL)
    np.testing.assert_allclose(res.metrics["completion_time"][3], 2 * res.metrics["completion_time"][0], rtol=REL)
    job = evaluate_jobs(topo, [Job(dense, pl, "dor", "only")])
    assert float(job.completion_time[0]) == pytest.approx(ref_ct, rel=REL)
    assert float(job.completion_time_alone[0]) == pytest.approx(ref_ct, rel=REL)
    assert float(job.total_bytes[0]) == pytest.approx(total, rel=REL)


@pytest.mark.parametrize("dims,wrap,npr,order", [((4, 4, 2), True, 1, [2, 0, 1]), ((3, 4), True, 2, None),
                                                 ((4, 1, 2), True, 1, None), ((4, 3), [True, False], 1, None)])
def test_dor_loads_equal_a_per_flow_walk(dims, wrap, npr, order):
    """Rings of 2 (one link each way), a dimension of 1 (no links), a mesh dimension, odd rings and a dimension
    order other than as given: the kernel's loads, time and mean hops are the walk's."""
    topo = ev.torus(list(dims), wrap=wrap, nodes_per_router=npr,
                    link_bandwidth=[1e9 * (k + 1) for k in range(len(dims))])
    rng = np.random.default_rng(sum(dims))
    n = 20
    tn = rng.integers(0, topo.n_nodes, n)
    s, d, b = random_flows(rng, n, 40)
    ds = ev.evaluate(topo, T.from_flows(n, s, d, b), P.explicit(topo, tn), ev.dor(order=order or "as_given"))
    load, hops, off, _ = dor_walk(topo, tn, s, d, b, order)
    np.testing.assert_allclose(ds.link_load.values, load, rtol=REL, atol=1e-9)
    assert float(ds.completion_time) == pytest.approx(float((load / topo.capacity).max()), rel=REL)
    assert float(ds.mean_hops) == pytest.approx(hops, rel=REL)
    assert float(ds.off_node_bytes) == pytest.approx(off, rel=REL)


# ----------------------------------------------------------------------------------------------------------------
# transformations with a known effect
# ----------------------------------------------------------------------------------------------------------------

def _moved(node, npr, dims_from, dims_to, perm, offset):
    router, port = divmod(int(node), npr)
    c = np.array(np.unravel_index(router, dims_from))
    c = (c + offset) % np.array(dims_from)
    return int(np.ravel_multi_index(tuple(int(c[p]) for p in perm), dims_to)) * npr + port


def test_torus_relabelling_translation_and_scaling():
    """Dimensions permuted with the placement and DOR order permuted to match; the job moved by a wrap-around
    translation; every byte x3 (times x3, loads x3, hops unchanged); every capacity x4 (times / 4)."""
    dims, bw, npr = (4, 3, 2), (1e9, 2e9, 3e9), 2
    perm = (2, 0, 1)  # new dimension k is old dimension perm[k]
    dims_b = tuple(dims[p] for p in perm)
    A = ev.torus(list(dims), link_bandwidth=list(bw), nodes_per_router=npr, injection_bandwidth=5e9)
    B = ev.torus(list(dims_b), link_bandwidth=[bw[p] for p in perm], nodes_per_router=npr, injection_bandwidth=5e9)
    A4 = ev.torus(list(dims), link_bandwidth=[4 * x for x in bw], nodes_per_router=npr, injection_bandwidth=20e9)
    rng = np.random.default_rng(1)
    n = 20
    s, d, b = random_flows(rng, n, 60)
    tr = T.from_flows(n, s, d, b)
    tn = rng.choice(A.n_nodes, n, replace=False)
    load, hops, _, _ = dor_walk(A, tn, s, d, b)
    base = ev.evaluate(A, tr, P.explicit(A, tn), "dor")
    assert float(base.completion_time) == pytest.approx(float((load / A.capacity).max()), rel=REL)
    assert float(base.mean_hops) == pytest.approx(hops, rel=REL)
    tn_b = np.array([_moved(x, npr, dims, dims_b, perm, (0, 0, 0)) for x in tn])
    relabelled = ev.evaluate(B, tr, P.explicit(B, tn_b), ev.dor(order=[perm.index(k) for k in range(3)]))
    np.testing.assert_allclose(metrics(relabelled), metrics(base), rtol=REL)
    np.testing.assert_allclose(np.sort(relabelled.link_load.values), np.sort(load), rtol=REL)
    tn_c = np.array([_moved(x, npr, dims, dims, (0, 1, 2), (1, 2, 1)) for x in tn])
    moved = ev.evaluate(A, tr, P.explicit(A, tn_c), "dor")
    np.testing.assert_allclose(metrics(moved), metrics(base), rtol=REL)
    np.testing.assert_allclose(np.sort(moved.link_load.values), np.sort(load), rtol=REL)
    tripled = ev.evaluate(A, tr.scaled(3.0), P.explicit(A, tn), "dor")
    np.testing.assert_allclose(tripled.link_load.values, 3 * load, rtol=REL)
    assert float(tripled.completion_time) == pytest.approx(3 * float(base.completion_time), rel=REL)
    assert float(tripled.mean_hops) == pytest.approx(hops, rel=REL)
    assert float(tripled.throughput) == pytest.approx(float(base.throughput), rel=REL)
    fast = ev.evaluate(A4, tr, P.explicit(A4, tn), "dor")
    assert float(fast.completion_time) == pytest.approx(float(base.completion_time) / 4, rel=REL)
    assert float(fast.throughput) == pytest.approx(4 * float(base.throughput), rel=REL)
    assert float(fast.mean_hops) == pytest.approx(hops, rel=REL)


@pytest.mark.parametrize("g", [9, 5])
def test_dragonfly_minimal_walk_and_group_rotation(g):
    """DF(2,4,2) with the relative arrangement (group G's slot t leads to G+t+1 mod g) is symmetric under a
    rotation of the groups: moving the job by whole groups changes neither minimal's nor Valiant's numbers, and
    minimal's loads are the per-flow walk's (g=5: two global links per group pair, split evenly)."""
    df = ev.dragonfly(p=2, a=4, h=2, g=g, arrangement="relative", bandwidth_l=3e9, bandwidth_r=2e9,
                      bandwidth_p=50e9)
    rng = np.random.default_rng(g)
    n = 16
    tn = rng.integers(0, df.n_nodes, n)
    s, d, b = random_flows(rng, n, 50)
    tr = T.from_flows(n, s, d, b)
    load, hops, off = dragonfly_minimal_walk(df, tn, s, d, b)
    for routing in ("minimal", "valiant"):
        first = None
        for shift in (0, df.p * df.a, 3 * df.p * df.a):
            ds = ev.evaluate(df, tr, P.explicit(df, (tn + shift) % df.n_nodes), routing)
            if first is None:
                first = ds
                if routing == "minimal":
                    np.testing.assert_allclose(ds.link_load.values, load, rtol=REL, atol=1e-9)
                    assert float(ds.completion_time) == pytest.approx(float((load / df.capacity).max()), rel=REL)
                    assert float(ds.mean_hops) == pytest.approx(hops, rel=REL)
                    assert float(ds.off_node_bytes) == pytest.approx(off, rel=REL)
                continue
            np.testing.assert_allclose(metrics(ds), metrics(first), rtol=1e-9, err_msg=f"{routing} +{shift}")


def test_fat_tree_parallel_links_are_one_link_of_their_summed_bandwidth_under_spraying():
    """Under the even per-packet split, k parallel links of bandwidth B carry what one link of k*B carries: equal
    times, mean hops and per-class bytes; D-mod-k moves the same bytes per class whichever copies it picks."""
    A = fat_tree(children=[4, 4, 2], parents=[1, 2, 2], parallel_links=[2, 3], link_bandwidth=[1e9, 2e9],
                 injection_bandwidth=1e15)
    B = fat_tree(children=[4, 4, 2], parents=[1, 2, 2], parallel_links=1, link_bandwidth=[2e9, 6e9],
                 injection_bandwidth=1e15)
    rng = np.random.default_rng(11)
    n = 32
    tn = rng.permutation(A.n_nodes)[:n]
    s, d, b = random_flows(rng, n, 120)
    tr = T.from_flows(n, s, d, b)
    for routing in ("ecmp_spray", "dmodk"):
        a = ev.evaluate(A, tr, P.explicit(A, tn), routing)
        bb = ev.evaluate(B, tr, P.explicit(B, tn), routing)
        if routing == "ecmp_spray":
            assert float(a.completion_time) == pytest.approx(float(bb.completion_time), rel=REL)
        assert float(a.mean_hops) == pytest.approx(float(bb.mean_hops), rel=REL)
        for c in A.class_names:
            la = a.link_load.values[A.link_class == A.class_names.index(c)].sum()
            lb = bb.link_load.values[B.link_class == B.class_names.index(c)].sum()
            assert la == pytest.approx(lb, rel=1e-12), (routing, c)


# ----------------------------------------------------------------------------------------------------------------
# times beyond the bound, and jobs
# ----------------------------------------------------------------------------------------------------------------

WIRE = {"torus-dim0": 3e-8, "torus-dim1": 2e-8, "injection": 7e-9, "ejection": 1.1e-8}


def test_latency_and_max_min_against_a_walk_and_an_event_simulation():
    """On a mesh (one DOR path per pair): each message's latency from its walked path (overheads, wires, one
    router per router link + 1, rendezvous x3 above the threshold), time_with_latency = bound + slowest latency
    per phase, phases summed; zero latency gives the bound; time_max_min = an event-driven max-min simulation."""
    dims, npr = (4, 3), 2
    base = ev.torus(list(dims), wrap=False, nodes_per_router=npr, link_bandwidth=[1e9, 2e9],
                    injection_bandwidth=3e9)
    lat = Latency(send_overhead=2e-7, recv_overhead=1e-7, router=5e-8, link=WIRE, eager_threshold=500)
    topo = base.with_latency(lat)
    names = topo.link_class_names()
    rng = np.random.default_rng(5)
    n = 10
    tn = rng.choice(topo.n_nodes, n, replace=False)
    pl = P.explicit(topo, tn)

    def message_latency(links, nbytes):
        x = 3e-7 + sum(WIRE[str(names[link])] for link in links) + 5e-8 * (len(links) - 1)
        return 3 * x if nbytes > 500 else x

    phases, bound, slowest = [], [], []
    for _ in range(3):
        s = rng.integers(0, n, 6)
        d = (s + rng.integers(1, n, 6)) % n
        b = rng.integers(100, 1500, 6).astype(float)
        load, _, _, paths = dor_walk(topo, tn, s, d, b)
        flows = [(message_latency(path[0][1], x), x, path[0][1]) for path, x in zip(paths, b)]
        ds = ev.evaluate(topo, T.from_flows(n, s, d, b), pl, "dor", sharing="max_min")
        bound.append(float((load / topo.capacity).max()))
        slowest.append(max(f[0] for f in flows))
        assert float(ds.completion_time) == pytest.approx(bound[-1], rel=REL)
        assert float(ds.time_with_latency) == pytest.approx(bound[-1] + slowest[-1], rel=1e-9)
        assert float(ds.time_max_min) == pytest.approx(max_min_reference(topo.capacity, flows), rel=1e-9)
        phases.append(T.from_flows(n, s, d, b))
    both = ev.evaluate(topo, T.phased(phases), pl, "dor")
    assert float(both.completion_time) == pytest.approx(sum(bound), rel=REL)
    assert float(both.time_with_latency) == pytest.approx(sum(bound) + sum(slowest), rel=1e-9)
    np.testing.assert_allclose(both.phase_time_with_latency.values, np.add(bound, slowest), rtol=1e-9)
    zero = ev.evaluate(base.with_latency(Latency()), phases[0], pl, "dor")
    assert float(zero.time_with_latency) == pytest.approx(bound[0], rel=REL)
    assert float(zero.completion_time) == pytest.approx(bound[0], rel=REL)


def test_jobs_closed_forms():
    """On a line of 8 routers: job A (phases a1 on link 1->2, then a2 elsewhere) and job B (b on link 1->2)
    share that link half and half until A's first phase ends; alone each is its bytes / capacity; one job alone
    equals evaluate; a uniform background at fraction f between the two nodes in the middle leaves
    c - f * 2c of the link the job crosses."""
    c = 1e9
    line = ev.torus([8], wrap=False, link_bandwidth=c, injection_bandwidth=1e12)
    a1, a2, b = 300.0, 500.0, 700.0
    job_a = Job(T.phased([T.from_flows(4, [0], [1], [a1]), T.from_flows(4, [2], [3], [a2])]),
                P.explicit(line, np.array([0, 2, 5, 6])), "dor", "A")
    job_b = Job(T.from_flows(2, [0], [1], [b]), P.explicit(line, np.array([1, 3])), "dor", "B")
    ds = evaluate_jobs(line, [job_a, job_b])
    np.testing.assert_allclose(ds.completion_time.values, [(2 * a1 + a2) / c, (a1 + b) / c], rtol=REL)
    np.testing.assert_allclose(ds.completion_time_alone.values, [(a1 + a2) / c, b / c], rtol=REL)
    assert float(ds.makespan) == pytest.approx((2 * a1 + a2) / c, rel=REL)
    alone = evaluate_jobs(line, [job_a])
    direct = ev.evaluate(line, job_a.traffic, job_a.placement, "dor")
    assert float(alone.completion_time[0]) == pytest.approx(float(direct.completion_time), rel=REL)
    four = ev.torus([4], wrap=False, link_bandwidth=c)  # injection: the router's outgoing links (2c inside)
    job = Job(T.from_flows(2, [0], [1], [1000.0]), P.explicit(four, np.array([0, 3])), "dor", "j")
    for f in (0.0, 0.25, 0.4):
        ds = evaluate_jobs(four, [job], background=Background(f))
        assert float(ds.completion_time[0]) == pytest.approx(1000.0 / (c - f * 2 * c), rel=REL), f
