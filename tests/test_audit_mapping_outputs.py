"""Audit of ``evaluator map``'s answers and outputs against references written here.

* the mapping returned or written is a valid mapping, and every time reported (the mapping found, each start)
  is the maximum link time of a per-flow walk written here (DOR on a torus with its half-ring ties split, minimal
  routes on a Dragonfly), never above the best start, with gains ``1 - found / start``;
* the bound is at most the optimum over every mapping of tiny jobs (3 and 4 tasks a node: the cluster part);
* the launcher files it writes, read by the format docs/mapping.md gives (line ``i`` of MPICH_RANK_ORDER on the
  ``i``-th node the launcher fills: ALPS's order of the listed nodes), are the mapping of its dataset and read
  back by ``--start`` as it; a traffic file (.mtx with a grid line) is read as the flows written into it;
* start files are read as the launcher would run them, and malformed ones are refused before any search.
"""

from __future__ import annotations

import functools
import itertools
import re

import numpy as np
import pytest
import xarray as xr

from evaluator import cli
from evaluator.errors import ConfigError
from evaluator.evaluation import evaluate_batch
from evaluator.mapping import mapping_bound, read_start_file, search_mapping
from evaluator.placement import alps_order, explicit
from evaluator.topology import dragonfly, fat_tree, torus
from evaluator.traffic import from_flows, phased
from helpers import TOL

REL = TOL["rel"]
SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


# ---------------------------------------------------------------- references


@functools.cache
def _end_links(topo):
    inj = {int(topo.link_node[k]): k for k in range(topo.n_router_links, topo.n_links) if topo.link_src[k] < 0}
    ej = {int(topo.link_node[k]): k for k in range(topo.n_router_links, topo.n_links) if topo.link_dst[k] < 0}
    return inj, ej


@functools.cache
def _router_links(topo):
    return {(int(topo.link_src[k]), int(topo.link_dst[k])): k for k in range(topo.n_router_links)}


@functools.cache
def _dor_routes(topo, ra, rz):
    """[(weight, [link])]: DOR from router ra to rz, dimension 0 first, a half-ring tie split in two."""
    links, rc = _router_links(topo), np.asarray(topo.router_coords)
    coords = {tuple(c): r for r, c in enumerate(rc.tolist())}
    out = []
    for k, size in enumerate(topo.dims):
        delta = (int(rc[rz][k]) - int(rc[ra][k])) % size
        if delta == 0:
            continue
        tie = 2 * delta == size and size > 2
        ways = [(+1, 0.5), (-1, 0.5)] if tie else [(+1 if (2 * delta < size or size == 2) else -1, 1.0)]
        for step, w in ways:
            c = [int(x) for x in rc[ra]]
            c[:k] = [int(x) for x in rc[rz][:k]]
            path = []
            while c[k] != rc[rz][k]:
                n = list(c)
                n[k] = (c[k] + step) % size
                path.append(links[(coords[tuple(c)], coords[tuple(n)])])
                c = n
            out.append((w, path))
    return out


@functools.cache
def _df_routes(topo, ra, rz):
    """[(1, [link])]: the minimal Dragonfly route (local hop to the group's one global link to the destination
    group, that link, local hop), read off the link list."""
    links, grp = _router_links(topo), np.asarray(topo.router_coords)[:, 0]
    if ra == rz:
        return []
    if grp[ra] == grp[rz]:
        return [(1.0, [links[(ra, rz)]])]
    glob = [(s, d) for (s, d), k in links.items() if topo.class_names[topo.link_class[k]] == "global"
            and grp[s] == grp[ra] and grp[d] == grp[rz]]
    assert len(glob) == 1
    s, d = glob[0]
    path = ([links[(ra, s)]] if ra != s else []) + [links[(s, d)]] + ([links[(d, rz)]] if d != rz else [])
    return [(1.0, path)]


def walk(topo, flows, task_node, routes=_dor_routes) -> float:
    """max over links of bytes / capacity, every flow routed on its own; ``flows``: phases of (src, dst, bytes),
    a phase's times added."""
    total = 0.0
    for src, dst, nbytes in flows:
        load = np.zeros(topo.n_links)
        for s, d, b in zip(src.tolist(), dst.tolist(), nbytes.tolist()):
            a, z = int(task_node[s]), int(task_node[d])
            if a != z:
                links, w = _unit(topo, a, z, routes)
                load[links] += w * b
        total += float(np.max(load / topo.capacity))
    return total


@functools.cache
def _unit(topo, a, z, routes):
    """(links, weights) a unit flow from node a to node z loads: its node links and its routes' links (a link
    crossed by several routes listed once per route: the ``+=`` of one link index is applied once, so summed)."""
    inj, ej = _end_links(topo)
    npr = topo.nodes_per_router
    acc = {inj[a]: 1.0, ej[z]: 1.0}
    for w, path in routes(topo, a // npr, z // npr):
        for k in path:
            acc[k] = acc.get(k, 0.0) + w
    return np.array(list(acc), np.int64), np.array(list(acc.values()))


def random_flows(n, m, seed, lo=1e5, hi=1e6):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = (src + 1 + rng.integers(0, n - 1, m)) % n
    return src, dst, rng.uniform(lo, hi, m)


def every_mapping(nodes, n, tpn):
    nodes = np.asarray(nodes)
    idx = np.array(list(itertools.product(range(nodes.size), repeat=n)))
    counts = np.stack([(idx == k).sum(1) for k in range(nodes.size)], 1)
    return nodes[idx[(counts <= tpn).all(1)]]


def launched(directory, topo, tpn) -> np.ndarray:
    """The node of every rank as docs/mapping.md says the launcher runs the two files: MPICH's ranks in file order,
    ``tpn`` a node, on the node_list's nodes in ALPS's order (``# fill: alps``) or ascending id."""
    text = (directory / "MPICH_RANK_ORDER").read_text()
    body = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    ranks = [int(x) for ln in body if ln for x in ln.split(",")]
    nodes = sorted({int(x) for part in (directory / "node_list").read_text().split(",") for x in
                    range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)})
    if re.search(r"^# fill: alps$", text, re.M):
        pos = np.empty(topo.n_nodes, np.int64)
        pos[alps_order(topo)] = np.arange(topo.n_nodes)
        nodes = sorted(nodes, key=lambda v: pos[v])
    out = np.full(len(ranks), -1, np.int64)
    for slot, r in enumerate(ranks):
        out[r] = nodes[slot // tpn]
    return out


def check_valid(task_node, n, nodes, tpn):
    tn = np.asarray(task_node)
    assert tn.shape == (n,) and set(tn.tolist()) <= set(np.asarray(nodes).tolist())
    assert np.bincount(tn).max() <= tpn


# ---------------------------------------------------------------- the search's answer


def test_dragonfly_search_times_are_per_flow_walks_and_never_above_a_start():
    """DF(2,4,2) minimal, 12 ranks one a node on 16 nodes of 4 groups: the mapping is valid, its time and every
    start's is the walk's, the search is at or below every start, the gains are ``1 - found / start``, the
    bound is below the mapping found, and the dataset holds the same."""
    topo = dragonfly(2, 4, 2)
    flows = [random_flows(12, 40, 5)]
    tr = from_flows(12, *flows[0])
    nodes = np.array([0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 24, 25, 32, 33, 40, 41])
    res = search_mapping(topo, tr, "minimal", nodes=nodes, time_budget=60, max_iterations=1, candidates=128,
                         progress=False)
    check_valid(res.task_node, 12, nodes, 1)
    t = walk(topo, flows, res.task_node, _df_routes)
    assert res.completion_time == pytest.approx(t, rel=REL)
    for name, ts in res.starts.items():
        check_valid(res.start_nodes[name], 12, nodes, 1)
        assert ts == pytest.approx(walk(topo, flows, res.start_nodes[name], _df_routes), rel=REL), name
        assert res.completion_time <= ts * (1 + REL), name
        assert res.gain(name) == pytest.approx(1 - t / ts, rel=1e-9, abs=1e-12) and res.gain(name) >= -REL
    assert res.lower_bound <= t * (1 + REL)
    ds = res.to_dataset()
    assert ds["task_node"].values.tolist() == np.asarray(res.task_node).tolist()
    assert float(ds["completion_time"]) == pytest.approx(t, rel=REL)
    got = dict(zip(ds["start"].values.tolist(), ds["gain"].values.tolist()))
    for name, ts in res.starts.items():
        assert got[name] == pytest.approx(1 - t / ts, rel=1e-9, abs=1e-12)
    best = ds["best_completion_time"].values
    assert (np.diff(best) <= best[:-1] * REL).all() and best[0] <= min(res.starts.values()) * (1 + REL)


def _printed_time(text: str) -> float:
    v, unit = text.split()
    return float(v.replace(",", "")) * SECONDS[unit]


def test_cli_answer_files_and_dataset_on_a_torus(tmp_path, capsys):
    """``evaluator map`` of a Matrix Market file (with a task grid) on 16 nodes of the 4x4x2 torus, 2 ranks a node:
    every printed time is the DOR walk of the flows written into the file (to the 4 digits printed), the printed
    gains are against their starts, the launcher files (read as docs/mapping.md says aprun + MPICH run them) and
    ``--start`` of them give the dataset's mapping, which is valid and whose time the walk gives."""
    topo, n, tpn = torus((4, 4, 2)), 24, 2
    src, dst, nbytes = random_flows(n, 70, 3, 1, 100)
    nbytes = np.round(nbytes) * 1000
    lines = ["%%MatrixMarket matrix coordinate integer general", "% grid: 4x3x2", f"{n} {n} {src.size}"]
    (tmp_path / "t.mtx").write_text("\n".join(lines + [f"{s + 1} {d + 1} {int(b)}" for s, d, b in
                                                       zip(src, dst, nbytes)]) + "\n")
    flows = [(src, dst, nbytes)]
    rc = cli.main(["map", "topology=torus", "topology.dims=[4,4,2]", "routing=dor", "traffic=file",
                   f"traffic.path={tmp_path / 't.mtx'}", f"output_dir={tmp_path / 'out'}", "--tasks-per-node", "2",
                   "--nodes", "0-15", "--iterations", "1", "--candidates", "128", "--no-progress", "--verbose",
                   "--write-rank-order", str(tmp_path / "launch")])
    out = capsys.readouterr().out
    assert rc == 0, out
    ds = xr.open_dataset(next((tmp_path / "out").glob("*.nc")))
    tn = ds["task_node"].values
    check_valid(tn, n, range(16), tpn)
    t = walk(topo, flows, tn)
    assert float(ds["completion_time"]) == pytest.approx(t, rel=REL)
    starts = dict(zip(ds["start"].values.tolist(), ds["start_completion_time"].values.tolist()))
    assert any(k.startswith("grid_order") for k in starts)  # the file's grid was read
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(.+?)\s+([\d.,]+ [mun]?s)\s+(-?[\d.]+) %$", line)
        if m and m.group(1).strip() in starts:
            rows[m.group(1).strip()] = (_printed_time(m.group(2)), float(m.group(3)))
    assert set(rows) == set(starts)
    for name, (printed, gain) in rows.items():
        assert printed == pytest.approx(starts[name], rel=5e-4), name
        assert gain == pytest.approx(100 * (1 - t / starts[name]), abs=0.051), name
        assert t <= starts[name] * (1 + REL)
    m = re.search(r"^mapping found: ([\d.,]+ [mun]?s) \(([\d.]+) % below the best start, (.+?)[;)]", out, re.M)
    assert _printed_time(m.group(1)) == pytest.approx(t, rel=5e-4)
    assert float(m.group(2)) == pytest.approx(100 * (1 - t / min(starts.values())), abs=0.051)
    assert float(ds["lower_bound"]) <= t * (1 + REL)
    assert launched(tmp_path / "launch", topo, tpn).tolist() == tn.tolist()
    back = read_start_file(tmp_path / "launch" / "MPICH_RANK_ORDER", topo, n, np.arange(16), tpn)
    assert back.task_node.tolist() == tn.tolist()


# ---------------------------------------------------------------- the bound


BOUND_CASES = {  # (topology, routing, nodes, tasks, tasks per node, reference): 3 and 4 tasks a node
    "torus 4x4, 3 a node on 2 nodes": (lambda: torus((4, 4)), "dor", [5, 15], 6, 3, "walk"),
    "torus 4x4x2 fast node links, 3 a node on 3 nodes": (lambda: torus((4, 4, 2), injection_bandwidth=1e12), "dor",
                                                         [0, 9, 30], 7, 3, "walk"),
    "DF(2,4,2) minimal, 2 a node on 4 nodes": (lambda: dragonfly(2, 4, 2, bandwidth_p=1e12), "minimal",
                                               [0, 2, 9, 18], 6, 2, "df walk"),
    "fat tree k=4, 4 a node on 2 leaves": (lambda: fat_tree(k=4, levels=2, injection_bandwidth=1e12), "dmodk",
                                           [0, 14], 8, 4, "kernel"),
}


@pytest.mark.parametrize("case", list(BOUND_CASES))
def test_bound_at_most_the_exhaustive_optimum(case):
    """Two phases (a ring, then an all-to-all), where the cluster part binds on the tight cases: the bound and
    each of its parts are at most the least time over every mapping (the walk's, or the kernel's on the fat
    tree), and the tight ones are met."""
    make, routing, nodes, n, tpn, ref = BOUND_CASES[case]
    topo = make()
    s = np.arange(n)
    pairs = np.array([(i, j) for i in range(n) for j in range(n) if i != j])
    flows = [(s, (s + 1) % n, np.full(n, 1e6)), (pairs[:, 0], pairs[:, 1], np.full(len(pairs), 1e5))]
    tr = phased([from_flows(n, *f) for f in flows])
    maps = every_mapping(nodes, n, tpn)
    if ref == "kernel":
        best = float(np.min(evaluate_batch(topo, routing, tr, [explicit(topo, m, "m") for m in maps])
                            .metrics["completion_time"]))
    else:
        routes = _dor_routes if ref == "walk" else _df_routes
        best = min(walk(topo, flows, m, routes) for m in maps)
    bd = mapping_bound(topo, tr, routing, nodes=np.asarray(nodes), tasks_per_node=tpn)
    assert 0 < bd.value <= best * (1 + REL), (bd.parts, best)
    assert all(v <= best * (1 + REL) for v in bd.parts.values()), (bd.parts, best)


# ---------------------------------------------------------------- start files


def _write_launch(d, topo, task_node, tpn, listed, fill=None):
    """MPICH_RANK_ORDER of ``task_node`` (one line a node, in the launcher's order of ``listed``'s nodes) and
    ``listed`` as the node_list, in the order given."""
    d.mkdir()
    order = sorted(set(listed))
    if fill == "alps":
        pos = np.empty(topo.n_nodes, np.int64)
        pos[alps_order(topo)] = np.arange(topo.n_nodes)
        order = sorted(order, key=lambda v: pos[v])
    lines = [",".join(str(r) for r in np.flatnonzero(task_node == v)) for v in order]
    head = "# written by hand\n" + (f"# fill: {fill}\n" if fill else "")
    (d / "MPICH_RANK_ORDER").write_text(head + "\n".join(ln for ln in lines if ln) + "\n")
    (d / "node_list").write_text(",".join(map(str, listed)) + "\n")
    return d / "MPICH_RANK_ORDER"


@pytest.mark.parametrize("dims, fill", [((4, 4), None), ((4, 4, 2), "id"), ((4, 4, 2), "alps")])
def test_a_rank_order_is_read_as_the_launcher_runs_it_whatever_the_node_list_order(dims, fill, tmp_path):
    """A node_list is a set to ``aprun -L``: the lines fill its nodes in ascending id (or ALPS's order); one listed
    in descending order was read in its listed order, another mapping (until 2026-12-07)."""
    topo, tpn = torus(dims), 2
    rng = np.random.default_rng(1)
    used = rng.choice(topo.n_nodes, 6, replace=False)
    tn = np.repeat(used, tpn)[rng.permutation(12)][:11]  # 11 ranks: the last node filled holds 1
    pos = np.arange(topo.n_nodes)
    if fill == "alps":
        pos = np.empty(topo.n_nodes, np.int64)
        pos[alps_order(topo)] = np.arange(topo.n_nodes)
    last = used[np.argmax(pos[used])]
    counts = np.bincount(tn, minlength=topo.n_nodes)
    short = int(np.flatnonzero((counts > 0) & (counts < tpn))[0])
    tn[tn == short], tn[tn == last] = last, short  # the partly filled node is the one filled last
    f = _write_launch(tmp_path / "l", topo, tn, tpn, sorted(used.tolist(), reverse=True), fill)
    assert launched(tmp_path / "l", topo, tpn).tolist() == tn.tolist()  # the reference reads the files so
    got = read_start_file(f, topo, 11, np.arange(topo.n_nodes), tpn)
    assert got.task_node.tolist() == tn.tolist()
    # a node list (one id per rank, ranges and commas) of the same mapping
    (tmp_path / "ids").write_text(",".join(map(str, tn.tolist())) + "\n")
    assert read_start_file(tmp_path / "ids", topo, 11, np.arange(topo.n_nodes), tpn,
                           kind="node_list").task_node.tolist() == tn.tolist()


BAD = {  # name: (file name, text, node_list beside or None, what the error says)
    "non-integer node": ("ids", "0 1 2 3 4 5 6 7.5\n", None, ("'7.5'", "node ids and ascending ranges")),
    "negative node": ("ids", "0,1,2,3,4,5,6,-7\n", None, ("'-7'", "node ids and ascending ranges")),
    "word": ("ids", "0 1 2 3 4 5 six 7\n", None, ("'six'", "node ids and ascending ranges")),
    "too few ids": ("ids", "0-6\n", None, ("8 ids for the job's 8 ranks", "It lists 7")),
    "node out of range": ("ids", "0-6,32\n", None, ("integers in [0, 31]", "Node 32 is out of range")),
    "two ranks a node at 1": ("ids", "0,0,1,2,3,4,5,6\n", None, ("at most 1 rank(s) per node", "Node 0 holds 2")),
    "not a text file": ("ids", b"\xff\xfe\x00", None, ("a readable text file",)),
    "empty": ("ids", "# nothing\n", None, ("at least one node id",)),
    "rank twice": ("MPICH_RANK_ORDER", "0\n1\n2\n3\n4\n5\n6\n6\n", None, ("each of 0..7 once",)),
    "rank beyond the job": ("MPICH_RANK_ORDER", "0,1\n2,3\n4,5\n6,8\n", None, ("each of 0..7 once", "rank 8")),
    "non-integer rank": ("MPICH_RANK_ORDER", "0,1\n2,3\n4,5\n6,7.0\n", None, ("'7.0'",)),
    "node listed twice": ("MPICH_RANK_ORDER", "0\n1\n2\n3\n4\n5\n6\n7\n", "0-6,3\n",
                          ("node_list", "distinct node ids", "node 3 2 times")),
    "node_list short": ("MPICH_RANK_ORDER", "0\n1\n2\n3\n4\n5\n6\n7\n", "0-6\n",
                        ("at most one line per node of the 7 nodes",)),
    "node_list out of range": ("MPICH_RANK_ORDER", "0\n1\n2\n3\n4\n5\n6\n7\n", "0-6,40\n",
                               ("'40'", "integers in [0, 31]")),
    "node_list not a number": ("MPICH_RANK_ORDER", "0\n1\n2\n3\n4\n5\n6\n7\n", "0-6,x\n", ("'x'",)),
    "unknown fill": ("MPICH_RANK_ORDER", "# fill: hilbert\n0\n1\n2\n3\n4\n5\n6\n7\n", "0-7\n",
                     ("'# fill:' line says alps or id", "'hilbert'")),
}


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_start_files_are_refused_naming_the_file_value_and_what_is_allowed(case, tmp_path):
    name, text, beside, says = BAD[case]
    f = tmp_path / name
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    if beside is not None:
        (tmp_path / "node_list").write_text(beside)
    with pytest.raises(ConfigError) as e:
        read_start_file(f, torus((4, 4, 2)), 8, np.arange(32), 1)
    msg = str(e.value)
    assert e.value.field.startswith("--start") and str(tmp_path) in msg, msg
    for s in says:
        assert s in msg, (case, msg)


def test_a_malformed_start_is_refused_by_the_command_before_any_search(tmp_path, capsys, monkeypatch):
    import evaluator.cli.mapping as cm

    def no_search(*a, **k):
        raise AssertionError("the search ran")

    monkeypatch.setattr(cm, "search_mapping", no_search)
    d = tmp_path / "l"
    d.mkdir()
    (d / "MPICH_RANK_ORDER").write_text("0,1\n2,3\n4,5\n6,7\n")
    (d / "node_list").write_text("0,1,1,2\n")
    rc = cli.main(["map", "topology=torus", "topology.dims=[4,4,2]", "routing=dor", "traffic=random_pairs",
                   "traffic.n_tasks=8", "save=false", "--tasks-per-node", "2", "--start", str(d / "MPICH_RANK_ORDER"),
                   "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and f"--start = '{d / 'node_list'}' is invalid" in err and "node 1 2 times" in err, err
