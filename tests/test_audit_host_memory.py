"""Audit: host-side builders refuse sizes that would exhaust memory before allocating them.

Every probe of a size that would need far more memory than a machine has runs in a child process under
``RLIMIT_AS`` = 4 GB with a timeout, so a missing refusal shows as a MemoryError or a timeout there and never
takes this machine's memory. A refusal must come within a couple of seconds as a ResourceError naming the field
and the value. The same kinds of request at a feasible size are checked against independent references (closed
forms, a per-router walk, a per-path count).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import evaluator
from evaluator import placement as PL
from evaluator import routing as RT
from evaluator import topology as T

LIMIT_AS = 4 << 30

_HEAD = textwrap.dedent("""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (@LIMIT@, @LIMIT@))  # first, before anything is imported
    import json, sys, time
    import evaluator
    from evaluator import placement as PL, routing as RT, topology as T
    from evaluator.errors import ResourceError
    out = {}
    def probe(name, fn):
        t0 = time.perf_counter()
        try:
            fn()
            r = {"outcome": "ok"}
        except ResourceError as e:
            r = {"outcome": "refused", "field": e.field, "value": repr(e.value), "text": str(e)}
        except MemoryError as e:
            r = {"outcome": "MemoryError", "text": str(e)[:300]}
        except Exception as e:
            r = {"outcome": type(e).__name__, "text": str(e)[:300]}
        r["seconds"] = time.perf_counter() - t0
        out[name] = r
""").replace("@LIMIT@", str(LIMIT_AS))


def _run_probes(body: str, env: dict | None = None, timeout: float = 20.0) -> dict:
    """Run ``body`` (calls of ``probe(name, fn)``) in a child under RLIMIT_AS; its results by name. The child sets
the limit itself as its first statement (a ``preexec_fn`` runs between fork and exec of this process, where
JAX's threads make a fork unsafe)."""
    code = _HEAD + textwrap.dedent(body) + "\nprint('RESULT ' + json.dumps(out))\n"
    full_env = dict(os.environ, **(env or {}))
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=timeout, env=full_env)
    except subprocess.TimeoutExpired:  # a probe that worked on instead of refusing: every probe not reported
        return {"__timeout__": {"outcome": f"timeout after {timeout} s"}}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"child failed (rc {p.returncode}): {p.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT "):])


# ---------------------------------------------------------------------------------------------- huge requests
_HUGE = """
tor = T.torus([4, 4, 4])
gem = T.gemini([4, 4, 4])
B, TPN = 10 ** 11, 10 ** 10
probe("linear", lambda: PL.linear(tor, B, tasks_per_node=TPN))
probe("block", lambda: PL.block(tor, B, tasks_per_node=TPN))
probe("random_tasks", lambda: PL.fully_random(tor, B, tasks_per_node=TPN))
# threefry permutes at most 2^32 slots (more is a ConfigError naming placement.tasks_per_node:
# tests/test_audit_index_widths.py); 64 x 2^26 = 2^32 slots of 64 bytes: 275 GB
probe("random_slots", lambda: PL.fully_random(tor, 10, tasks_per_node=2 ** 26))
# NumPy permutes every slot where the tasks are 1/50 of them or more: 2 x 10^8 tasks (6.4 GB of task arrays)
# over 64 x 156,250,000 = 10^10 slots
probe("random_slots_numpy", lambda: PL.fully_random(tor, 2 * 10 ** 8, tasks_per_node=156_250_000, generator="numpy"))
probe("alps", lambda: PL.alps(gem, B, tasks_per_node=TPN))
probe("fragmented", lambda: PL.fragmented(gem, B, tasks_per_node=TPN))
probe("torus_block", lambda: PL.torus_block(tor, [10 ** 4, 10 ** 4, 10 ** 3]))
probe("topaware", lambda: PL.topaware(gem, [10 ** 4, 10 ** 4, 10 ** 3], TPN))
from evaluator.mapping import search_mapping
from evaluator.traffic import all_to_all
from evaluator.placement.rank_order import grid_order
probe("grid_order", lambda: grid_order([10 ** 4, 10 ** 4, 10 ** 3]))
probe("grid_order_tasks", lambda: grid_order([2, 2], n_tasks=10 ** 11))
probe("map", lambda: search_mapping(tor, all_to_all(8), RT.dor(), tasks_per_node=TPN, time_budget=0.5))
"""

# path listings that ran for many seconds before failing: one child each, so that a timeout marks only its own
_KSHORTEST = """
ft = T.fat_tree([4, 4, 4], parallel_links=[32, 32])
probe("kshortest_parallel", lambda: RT.build_routing(ft, RT.kshortest(4)))
"""

_ECMP = """
ft = T.fat_tree([4, 4, 4], parallel_links=[3000, 3000])
probe("ecmp_paths", lambda: RT.ecmp_paths(ft, 0, 63))
"""

# name -> (field, value repr): what each refusal must name
_EXPECT = {
    "linear": ("placement.n_tasks", repr(10 ** 11)),
    "block": ("placement.n_tasks", repr(10 ** 11)),
    "random_tasks": ("placement.n_tasks", repr(10 ** 11)),
    "random_slots": ("placement.tasks_per_node", repr(2 ** 26)),
    "random_slots_numpy": ("placement.tasks_per_node", repr(156_250_000)),
    "alps": ("placement.n_tasks", repr(10 ** 11)),
    "fragmented": ("placement.n_tasks", repr(10 ** 11)),
    "torus_block": ("placement.task_grid", repr([10 ** 4, 10 ** 4, 10 ** 3])),
    "topaware": ("placement.grid", repr([10 ** 4, 10 ** 4, 10 ** 3])),
    "map": ("mapping.tasks_per_node", repr(10 ** 10)),
    "grid_order": ("placement.rank_order.grid", repr([10 ** 4, 10 ** 4, 10 ** 3])),
    "grid_order_tasks": ("placement.n_tasks", repr(10 ** 11)),
    "ecmp_paths": ("topology", repr("XGFT(3;4,4,4;1,4,4)x3000,3000")),
    "kshortest_parallel": ("routing", repr("kshortest-k4")),
}


@pytest.fixture(scope="module")
def huge():
    return _run_probes(_HUGE) | _run_probes(_KSHORTEST) | _run_probes(_ECMP)


@pytest.mark.parametrize("name", sorted(_EXPECT))
def test_huge_request_refused_at_once(huge, name):
    r = huge.get(name, huge.get("__timeout__"))
    assert r is not None and r["outcome"] == "refused", (name, r)
    field, value = _EXPECT[name]
    assert (r["field"], r["value"]) == (field, value), r
    assert r["seconds"] < 2.0, r
    text = r["text"]
    assert text.startswith(f"{field} = {value} is invalid"), text
    assert "a size that fits in memory" in text and "is available" in text, text


def test_huge_refusals_say_how_to_fit(huge):
    """The slot-based refusals name the task slots, and the tasks per node that would fit the tasks."""
    assert all(huge.get(name, {}).get("outcome") == "refused" for name in ("random_slots", "map",
                                                                          "kshortest_parallel")), huge
    assert "4,294,967,296 node slots" in huge["random_slots"]["text"]
    assert "placement.tasks_per_node=1" in huge["random_slots"]["text"]
    assert "--tasks-per-node 1" in huge["map"]["text"]
    # the fat tree's 4-hop paths over 32 parallel links a tier: 32^4 link-id paths per router path, counted
    # before any is listed
    assert "link-id paths" in huge["kshortest_parallel"]["text"]


# ------------------------------------------------------------------------------------- UGAL-local's tables
_UGAL = """
df = T.dragonfly(1, 16, 16, 257)
probe("ugal_local", lambda: RT.build_routing(df, RT.ugal(variant="local")))
probe("ugal_global", lambda: RT.build_routing(df, RT.ugal()))
probe("valiant", lambda: RT.build_routing(df, RT.valiant()))
"""


def test_ugal_local_counts_its_first_hop_table():
    """UGAL-local holds the minimal and Valiant tables and a first-hop entry per (router, group, copy): on DF(1,16,
    16,257) about 8.6 MB (4112 x 257 int32 entries, host and device) beside Valiant's 2 x 8 x 257 x 16 x 257 B =
    17 MB land tables; with 50 MB available (40 MB usable) each candidate's tables fit alone, all together do
    not. The original code checked each candidate alone and listed the first hops unchecked."""
    r = _run_probes(_UGAL, env={"EVALUATOR_MEMORY_LIMIT": "5e7"})
    assert r["valiant"]["outcome"] == "ok", r["valiant"]
    assert r["ugal_global"]["outcome"] == "ok", r["ugal_global"]
    loc = r["ugal_local"]
    assert loc["outcome"] == "refused", loc
    assert loc["field"] == "routing" and "ugal" in loc["value"] and "first hop" in loc["text"], loc
    assert loc["seconds"] < 2.0


def _first_links_reference(topo):
    """Per-router walk: the first link from router s towards group D over copy c of the global link G(s) -> D."""
    a, g, m = topo.a, topo.g, topo.links_per_pair
    src, dst = np.asarray(topo.link_src), np.asarray(topo.link_dst)
    n_rl = topo.n_router_links
    by_pair: dict = {}
    for lid in range(n_rl):
        by_pair.setdefault((int(src[lid]), int(dst[lid])), []).append(lid)
    out = np.zeros((g * a * g, m), np.int64)
    for s in range(g * a):
        S = s // a
        for D in range(g):
            if D == S:
                continue
            # the global links of group S towards group D, in copy order (ids ascending)
            glob = sorted(lid for (u, v), ls in by_pair.items() for lid in ls
                          if u // a == S and v // a == D)
            assert len(glob) == m
            for c, lid in enumerate(glob):
                owner = int(src[lid])
                out[s * g + D, c] = lid if owner == s else by_pair[(s, owner)][0]
    return out


@pytest.mark.parametrize("args", [(2, 4, 2, None), (1, 4, 2, 5), (2, 6, 3, 7)])
def test_ugal_first_hop_table_matches_walk(args):
    from evaluator.routing._ugal import _df_first_links

    topo = T.dragonfly(*args)
    got = _df_first_links(topo)
    assert got.shape == (topo.g * topo.a * topo.g, topo.links_per_pair)
    np.testing.assert_array_equal(got, _first_links_reference(topo))


# ------------------------------------------------------------------------------------ feasible sizes still work
def test_linear_placement_feasible_closed_form():
    tor = T.torus([4, 4, 4])
    pl = PL.linear(tor, 130, tasks_per_node=3)
    np.testing.assert_array_equal(pl.task_node, np.arange(130) // 3)


def test_alps_and_block_feasible_counts():
    gem = T.gemini([4, 4, 4])
    pl = PL.alps(gem, 100, tasks_per_node=3)
    counts = np.bincount(pl.task_node, minlength=gem.n_nodes)
    assert pl.n_tasks == 100 and counts.max() <= 3 and np.count_nonzero(counts) == math.ceil(100 / 3)
    tor = T.torus([4, 4, 4])
    bl = PL.block(tor, 100, tasks_per_node=2)
    assert bl.n_tasks == 100 and np.bincount(bl.task_node).max() <= 2


@pytest.mark.parametrize("generator", ["threefry", "numpy"])
def test_random_placement_feasible(generator):
    tor = T.torus([2, 2, 2])
    pl = PL.fully_random(tor, 10, tasks_per_node=2, seed=3, generator=generator)
    counts = np.bincount(pl.task_node, minlength=8)
    assert pl.n_tasks == 10 and counts.sum() == 10 and counts.max() <= 2
    again = PL.fully_random(tor, 10, tasks_per_node=2, seed=3, generator=generator)
    np.testing.assert_array_equal(pl.task_node, again.task_node)
    # many tasks per node, few tasks: the threefry draw permutes 8 x 1000 slots, NumPy's picks 10 of them
    big = PL.fully_random(tor, 10, tasks_per_node=1000, seed=1, generator=generator)
    assert big.n_tasks == 10 and big.task_node.min() >= 0 and big.task_node.max() < 8


def test_torus_block_feasible_closed_form():
    tor = T.torus([4, 4])
    pl = PL.torus_block(tor, [4, 4])
    np.testing.assert_array_equal(pl.task_node, np.arange(16))  # task (x, y) on router x*4 + y
    pl2 = PL.torus_block(tor, [8, 4])  # blocks of 2 tasks along x share a router, dealt to its one node
    x, y = np.divmod(np.arange(32), 4)
    np.testing.assert_array_equal(pl2.task_node, (x // 2) * 4 + y)


def test_mapping_job_check_feasible():
    from evaluator.mapping._partition import check_job, check_slots
    from evaluator.traffic import all_to_all

    tor = T.torus([4, 4, 4])
    nodes, tpn = check_job(tor, all_to_all(100), np.arange(64), 2)
    assert tpn == 2 and nodes.tolist() == list(range(64))
    check_slots(nodes, 100, 2)  # 128 slots: nothing to refuse


def test_kshortest_parallel_links_feasible_counts():
    """XGFT(2; 4,4; 1,4) with 2 parallel links: leaf-to-leaf router paths go up to one of 4 top switches and
    down (2 hops), each hop over 2 parallel links: 4 link-id paths per router path, k of them per pair."""
    from evaluator.routing import PairSet, path_table

    ft = T.fat_tree([4, 4], [1, 4], parallel_links=2)
    leaves = np.arange(4)
    s, d = np.meshgrid(leaves, leaves, indexing="ij")
    keep = s != d
    pairs = PairSet.of(s[keep], d[keep], ft.n_routers)
    k = 3
    tab = path_table(ft, RT.kshortest(k).bind(pairs), pairs)
    n_pairs = int(keep.sum())
    assert tab.path_links.shape[0] == n_pairs * k * 2 ** 2
    w = np.bincount(np.asarray(tab.path_pair), weights=np.asarray(tab.path_weight), minlength=n_pairs)
    np.testing.assert_allclose(w, 1.0)
    src, dst = np.asarray(ft.link_src), np.asarray(ft.link_dst)
    for row, h in zip(np.asarray(tab.path_links), np.asarray(tab.path_hops)):
        assert h == 2 and dst[row[0]] == src[row[1]] and dst[row[0]] >= 4  # up to a top switch, then down


# ------------------------------------------------------------------- RDN: a parameter refusal before the build
def test_rdn_odd_groups_refused_before_the_dragonfly_is_built():
    """RDN(4,64,32,2049) standard with one port a switch: 2,049 groups (odd) need 2,049 port rounds of
    near-perfect matchings, a group has 2,048 ports. That follows from the parameters; it was found after building
    the 1.7 GB Dragonfly and listing 2 x 10^6 matchings (11-19 s)."""
    r = _run_probes('probe("rdn", lambda: T.rdn(4, 64, 32, 2049))')
    assert r["rdn"]["outcome"] == "ConfigError", r
    assert r["rdn"]["text"].startswith("topology.configuration = 'standard' is invalid"), r
    assert "2049 port rounds" in r["rdn"]["text"] and r["rdn"]["seconds"] < 2.0, r


@pytest.mark.parametrize("g,k", [(8, 1), (9, 2), (5, 2)])
def test_rdn_standard_feasible_link_count(g, k):
    """A standard RDN of a = 4 routers, h = 2 global ports each: m = floor(a*h / (g-1)) links per group pair, so
    g (g-1) m directed global links beside g a (a-1) local ones."""
    a, h = 4, 2
    topo = T.rdn(1, a, h, g, ports_per_switch=k)
    m = (a * h) // (g - 1)
    assert topo.n_router_links == g * a * (a - 1) + g * (g - 1) * m
    pl = np.asarray(topo.pair_links)
    off = ~np.eye(g, dtype=bool)
    assert (pl[off] == m).all() and (np.diag(pl) == 0).all()


def test_grid_order_feasible_closed_form():
    """Cray's ``grid_order -R -c 2,1 -g 2,2``: cell 0 holds ranks (0,0), (1,0) = 0, 2; cell 1 ranks 1, 3; ranks past
    the grid take the last slots."""
    from evaluator.placement.rank_order import grid_order

    np.testing.assert_array_equal(grid_order([2, 2], [2, 1]), [0, 2, 1, 3])
    np.testing.assert_array_equal(grid_order([2, 2], [2, 1], n_tasks=6), [0, 2, 1, 3, 4, 5])


def test_ecmp_paths_feasible_count():
    """XGFT(3; 4,4,4; 1,4,4) with 2 parallel links a tier, nodes 0 -> 63 meet at the top: per tier every one of the
    4 x 2 up ports times the 2 parallel copies down, (4*2*2)^2 = 256 paths of 4 hops, probabilities summing to 1."""
    ft = T.fat_tree([4, 4, 4], parallel_links=[2, 2])
    paths = RT.ecmp_paths(ft, 0, 63)
    assert len(paths) == (4 * 2 * 2) ** 2
    assert all(len(links) == 4 for _, links in paths)
    assert math.isclose(sum(p for p, _ in paths), 1.0)
    assert len({tuple(links) for _, links in paths}) == len(paths)
