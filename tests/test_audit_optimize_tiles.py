"""Differential audit of ``evaluator optimize`` and ``evaluator tiles`` on small jobs.

The references enumerate the configurations from the docs' definitions in plain Python (README, docs/sweeps.md,
docs/tutorial_stencil_placement.md, docs/tiles.md) and evaluate each with the single-point ``evaluator.evaluate``;
what is checked is the search around it: which configurations are considered, the times stored and printed, the
ranking, the counts, the baseline's speedups and the errors for bad options.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import math
import re

import numpy as np
import pytest
import xarray as xr

import evaluator
from evaluator import tiles as TL
from evaluator.cli import optimize as OPT
from evaluator.cli import tiles as TILES_CLI
from evaluator.errors import ConfigError
from evaluator.machines import machine_from_dict
from evaluator.placement import Placement, dragonfly_cartesian, linear
from evaluator.topology import dragonfly, torus
from evaluator.traffic import stencil

DF = ["topology.p=2", "topology.a=4", "topology.h=2"]          # DF(2,4,2,9): 72 nodes, a*p = 8 per group
ROUTINGS = ("minimal", "valiant")


# ---------------------------------------------------------------------------------- references


def ordered_factorizations(n: int, d: int) -> list[tuple[int, ...]]:
    """Every ordered d-tuple of positive integers whose product is n."""
    if d == 1:
        return [(n,)]
    return [(f,) + rest for f in range(1, n + 1) if n % f == 0 for rest in ordered_factorizations(n // f, d - 1)]


def divisor_vectors(v) -> list[tuple[int, ...]]:
    return list(itertools.product(*[[c for c in range(1, b + 1) if b % c == 0] for b in v]))


def x(v) -> str:
    return "x".join(str(int(s)) for s in v)


def run_optimize(args: list[str], out_dir) -> tuple[str, xr.Dataset]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert OPT.main(args + [f"sweep.output_dir={out_dir}", "--no-progress"]) == 0
    out = buf.getvalue()
    path = re.search(r"^dataset: (.+)$", out, re.M).group(1).strip()
    return out, xr.load_dataset(path)


def df_reference(n: int, alpha: tuple[int, ...]) -> dict:
    """Every valid (beta, gamma, routing) of the Cartesian placement on DF(2,4,2,9) and its evaluated time:
    beta an ordered factorisation of n with beta_k | alpha_k, gamma | beta, |gamma| <= a*p = 8 nodes of a group,
    |beta / gamma| <= g = 9 groups (Prisacari's placement as the tutorial states it)."""
    topo = dragonfly(2, 4, 2)
    ref = {}
    for beta in ordered_factorizations(n, len(alpha)):
        if any(a % b for a, b in zip(alpha, beta)):
            continue
        tr = stencil(list(alpha), list(beta))   # the config's defaults: 1024 B per element, periodic
        for gamma in divisor_vectors(beta):
            if math.prod(gamma) > 8 or math.prod(b // c for b, c in zip(beta, gamma)) > 9:
                continue
            pl = dragonfly_cartesian(topo, list(beta), list(gamma), seed=0)
            for r in ROUTINGS:
                ref[(x(beta), x(gamma), r)] = float(evaluator.evaluate(topo, tr, pl, r).completion_time)
    return ref


def table_rows(out: str, n_labels: int) -> list[tuple]:
    """(rank, labels..., completion_time [us]) of the printed ranked table."""
    rows = []
    for line in out.splitlines():
        m = re.match(r"^(\d+=?)\s+(.*)$", line)
        if m and not line.startswith("searched"):
            parts = m.group(2).split()
            rows.append((m.group(1), *parts[:n_labels], float(parts[n_labels])))
    return rows


def expected_ranks(values: list[float]) -> list[str]:
    """1 + the number of strictly better values, '=' where several share it (values rounded as printed)."""
    ranks = [1 + sum(w < v * (1 - 1e-9) for w in values) for v in values]
    return [f"{r}=" if ranks.count(r) > 1 else str(r) for r in ranks]


@pytest.fixture(scope="module")
def df_runs(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("optimize")
    runs = {}
    for n, alpha in ((16, (8, 4, 4)), (8, (4, 4, 2))):
        out, ds = run_optimize(["--tasks", str(n), "--alpha", ",".join(map(str, alpha)), *DF, "-n", "0"], out_dir)
        runs[(n, alpha)] = (out, ds, df_reference(n, alpha))
    return runs


def stored(ds: xr.Dataset) -> dict:
    ct = ds.completion_time.transpose("traffic.beta", "placement.gamma", "routing")
    got = {}
    for i, b in enumerate(ct["traffic.beta"].values):
        for j, g in enumerate(ct["placement.gamma"].values):
            for k, r in enumerate(ct.routing.values):
                v = float(ct.values[i, j, k])
                if np.isfinite(v):
                    got[(str(b), str(g), str(r))] = v
    return got


# ---------------------------------------------------------------------------------- optimize


def test_optimize_feasible_set_and_times_equal_reference(df_runs):
    for (n, alpha), (_, ds, ref) in df_runs.items():
        got = stored(ds)
        assert set(got) == set(ref), (n, alpha, sorted(set(got) ^ set(ref))[:6])
        for dim in ("traffic.beta", "placement.gamma", "routing"):
            labels = list(ds[dim].values)
            assert len(labels) == len(set(labels)), (dim, labels)
        bad = [(k, got[k], ref[k]) for k in ref if not math.isclose(got[k], ref[k], rel_tol=1e-12)]
        assert not bad, bad[:4]


def test_optimize_counts_printed(df_runs):
    for (n, alpha), (out, ds, ref) in df_runs.items():
        m = re.search(r"searched (\d+) configurations \((\d+) feasible\) on DF\(2,4,2,9\)", out)
        assert m, out[:300]
        betas = ordered_factorizations(n, len(alpha))
        gammas = {g for b in betas for g in divisor_vectors(b)}   # the grid of the README's 14,850 = 45 x 165 x 2
        assert int(m.group(1)) == len(betas) * len(gammas) * len(ROUTINGS)
        assert int(m.group(2)) == len(ref) == int(ds.attrs["n_feasible"])


def test_optimize_ranked_table_is_the_minimum_first(df_runs):
    for (n, alpha), (out, _, ref) in df_runs.items():
        rows = table_rows(out, 3)
        assert len(rows) == len(ref), (len(rows), len(ref))      # -n 0: every feasible configuration
        times = [r[-1] for r in rows]
        assert times == sorted(times)
        assert times[0] == pytest.approx(min(ref.values()) * 1e6, rel=5e-4)
        for rank, b, g, r, t in rows:
            assert t == pytest.approx(ref[(b, g, r)] * 1e6, rel=5e-4), (b, g, r, t)
        exact = [ref[(b, g, r)] for _, b, g, r, _ in rows]
        assert [row[0] for row in rows] == expected_ranks(exact)


def test_optimize_top_n_rows(tmp_path):
    out, _ = run_optimize(["--tasks", "8", "--alpha", "4,4,2", *DF, "-n", "3"], tmp_path)
    rows = table_rows(out, 3)
    assert len(rows) == 3 and rows[0][-1] == pytest.approx(1.229, rel=1e-3)   # 4x2x1 etc.: 12.29 kB / 10 GB/s


def test_optimize_torus_linear_placement(tmp_path):
    """A torus with the linear placement: no gamma axis; every beta of 16 dividing 8x8 is evaluated once."""
    args = ["--tasks", "16", "--alpha", "8,8", "--placement", "linear", "--routings", "dor", "topology=torus",
            "topology.dims=[4,4]", "-n", "0"]
    out, ds = run_optimize(args, tmp_path)
    topo = torus([4, 4])
    ref = {}
    for beta in ordered_factorizations(16, 2):
        if all(8 % b == 0 for b in beta):
            ref[x(beta)] = float(evaluator.evaluate(topo, stencil([8, 8], list(beta)), linear(topo, 16), "dor")
                                 .completion_time)
    ct = ds.completion_time.squeeze()
    got = {str(b): float(v) for b, v in zip(ct["traffic.beta"].values, ct.values) if np.isfinite(v)}
    assert got.keys() == ref.keys()
    assert all(math.isclose(got[k], ref[k], rel_tol=1e-12) for k in ref), (got, ref)
    rows = table_rows(out, 2)
    assert [r[1] for r in rows] == sorted(ref, key=lambda k: ref[k])
    assert re.search(rf"searched 5 configurations \({len(ref)} feasible\)", out)


OPT_ERRORS = [
    (["--tasks", "0", "--alpha", "4,4,2"], "--tasks", "0"),
    (["--tasks", "2.5", "--alpha", "4,4,2"], "--tasks", "2.5"),
    (["--tasks", "eight", "--alpha", "4,4,2"], "--tasks", "eight"),
    (["--tasks", "8", "--alpha", "4,0,2"], "--alpha", "4,0,2"),
    (["--tasks", "8", "--alpha", "4.5,4,2"], "--alpha", "4.5,4,2"),
    (["--tasks", "7", "--alpha", "4,4,2"], "--tasks", "Nearest feasible task counts: 4 and 8"),
    (["--tasks", "8", "--alpha", "4,4,2", "--routings", "minimall"], "--routings", "minimal"),
    (["--tasks", "8", "--alpha", "4,4,2", "--routings", "minimal,minimal"], "--routings", "twice"),
    (["--tasks", "8", "--alpha", "4,4,2", "--routings", "minimal,dor"], "--routings", "dor"),
    (["--tasks", "8", "--alpha", "4,4,2", "--top", "-1"], "--top", "-1"),
    (["--tasks", "128", "--alpha", "16,16,16"], "--tasks", "72 nodes"),
]


@pytest.mark.parametrize("args,option,words", OPT_ERRORS)
def test_optimize_bad_options_name_the_option(tmp_path, args, option, words):
    with pytest.raises(ConfigError) as e:
        OPT.main(args + DF + [f"sweep.output_dir={tmp_path}", "--no-progress"])
    assert e.value.field == option and words in str(e.value), str(e.value)
    assert not list(tmp_path.rglob("*.nc"))          # refused before the search


# ---------------------------------------------------------------------------------- tiles

BW = [2e9, 1e9, 2e9]
MACHINE = {"name": "T", "kind": "torus", "dims": [4, 4, 4], "link_bandwidth": BW, "nodes_per_router": 2,
           "injection_bandwidth": 3e9, "routing_order": "as_given"}


def factorizations_dividing(n: int, bounds) -> list[tuple[int, ...]]:
    return [f for f in ordered_factorizations(n, len(bounds)) if all(b % v == 0 for b, v in zip(bounds, f))]


def tile_placement(topo, beta, c, b) -> Placement:
    """docs/tiles.md: node tile c of the task grid per node, router block b of nodes per router, the prism at the
    origin with virtual dimension k along torus dimension k."""
    node = []
    for xx in itertools.product(*[range(v) for v in beta]):
        nc = [a // cc for a, cc in zip(xx, c)]
        router = np.ravel_multi_index([a // bb for a, bb in zip(nc, b)], topo.dims)
        node.append(router * topo.nodes_per_router + np.ravel_multi_index([a % bb for a, bb in zip(nc, b)], b))
    return Placement(np.array(node, np.int64), topo.n_nodes, "reference")


def tiles_reference(grid, nodes, tpn, bpp=8.0, periodic=False, inj=3e9) -> tuple[dict, int]:
    """Every candidate (decomposition, tile, pair) whose prism fits 4x4x4, with (time_all, time_seq, links_all,
    links_seq) from evaluator.evaluate; and how many were too large."""
    topo = torus([4, 4, 4], link_bandwidth=BW, nodes_per_router=2, injection_bandwidth=inj)
    ref, too_large = {}, 0
    for beta in factorizations_dividing(nodes * tpn, grid):
        for c in factorizations_dividing(tpn, beta):
            ng = [a // b for a, b in zip(beta, c)]
            for b in factorizations_dividing(2, ng):
                if any(n // bb > 4 for n, bb in zip(ng, b)):
                    too_large += 1
                    continue
                pl = tile_placement(topo, beta, c, b)
                both = evaluator.evaluate(topo, stencil(list(grid), list(beta), bpp, periodic), pl, "dor")
                phases = [evaluator.evaluate(topo, p, pl, "dor") for p in
                          stencil(list(grid), list(beta), bpp, periodic, "per_dimension").phases]

                def links(e):
                    return max(float(e[f"max_load_torus_dim{k}"]) / BW[k] for k in range(3))

                ref[(x(beta), x(c), x(b))] = (float(both.completion_time),
                                              sum(float(p.completion_time) for p in phases),
                                              links(both), sum(links(p) for p in phases))
    return ref, too_large


@pytest.fixture(scope="module")
def tiles_cases():
    m = machine_from_dict(MACHINE)
    cases = {}
    for key, kw in (("plain", {}), ("periodic_inj", {"periodic": True, "injection_bandwidth": 2.5e9}),
                    ("links_seq", {"limit": "links", "rank_by": "per_dimension"})):
        req = TL.TileRequest((8, 16, 8), 8, 2, m, max_evaluated=0, **kw)
        ref = tiles_reference((8, 16, 8), 8, 2, periodic=kw.get("periodic", False),
                              inj=kw.get("injection_bandwidth", 3e9))
        cases[key] = (req, TL.advise(req), ref)
    return cases


def rows_of(ds) -> dict:
    names = ("time_all", "time_seq", "links_all", "links_seq")
    return {(str(d), str(t), str(b)): tuple(float(ds[v].values[i]) for v in names)
            for i, (d, t, b) in enumerate(zip(ds.decomposition.values, ds.tile.values, ds.router_block.values))}


def test_tiles_candidates_and_times_equal_reference(tiles_cases):
    for key, (_, ds, (ref, too_large)) in tiles_cases.items():
        got = rows_of(ds)
        assert len(got) == ds.sizes["candidate"], key                      # no duplicates
        assert set(got) == set(ref), (key, sorted(set(got) ^ set(ref))[:6])
        assert int(ds.attrs["n_candidates"]) == len(ref) and int(ds.attrs["n_too_large"]) == too_large
        bad = [(k, got[k], ref[k]) for k in ref if not np.allclose(got[k], ref[k], rtol=1e-12, atol=0)]
        assert not bad, (key, bad[:3])


def test_tiles_ranking_follows_rank_by_and_limit(tiles_cases):
    for key, (req, ds, _) in tiles_cases.items():
        e = "all" if req.rank_by == "all_at_once" else "seq"
        other = "seq" if e == "all" else "all"
        what = "links" if req.limit == "links" else "time"
        keys = list(zip(ds[f"{what}_{e}"].values, ds[f"{what}_{other}"].values))
        assert keys == sorted(keys), key
        assert keys[0] == min(keys)


def test_tiles_closed_form_links(tiles_cases):
    """closed_links_*: one face of the router tile over bw_k (0 where the prism has one router along k)."""
    _, ds, _ = tiles_cases["plain"]
    for i in range(ds.sizes["candidate"]):
        rt = [int(s) for s in str(ds.router_tile.values[i]).split("x")]
        prism = [int(s) for s in str(ds.prism.values[i]).split("x")]
        t = [math.prod(rt) / rt[k] * 8.0 / BW[k] if prism[k] > 1 else 0.0 for k in range(3)]
        assert float(ds.closed_links_all.values[i]) == pytest.approx(max(t), rel=1e-12)
        assert float(ds.closed_links_seq.values[i]) == pytest.approx(sum(t), rel=1e-12)


def test_tiles_screening_keeps_the_best_by_closed_form():
    m = machine_from_dict(MACHINE)
    full = TL.advise(TL.TileRequest((8, 16, 8), 8, 2, m, max_evaluated=0, limit="links"))
    k = 3
    part = TL.advise(TL.TileRequest((8, 16, 8), 8, 2, m, max_evaluated=k, limit="links"))
    keep = set()
    for e in ("all", "seq"):
        vals = full[f"closed_links_{e}"].values
        cut = np.sort(vals)[k - 1]
        keep |= {i for i in range(len(vals)) if vals[i] < cut}
        assert sum(vals <= cut) >= k
    kept = set(rows_of(part))
    names = list(rows_of(full))
    assert {names[i] for i in keep} <= kept and len(kept) <= 2 * k
    assert int(part.attrs["n_evaluated"]) == len(kept) and int(part.attrs["n_candidates"]) == len(names)


def test_tiles_speedups_over_baseline(tiles_cases):
    req, ds, (ref, _) = tiles_cases["plain"]
    m = machine_from_dict(MACHINE)
    base_req = TL.TileRequest((8, 8, 8), 8, 2, m, max_evaluated=0)
    out = TL.compare(ds, TL.advise(base_req))
    base_ref, _ = tiles_reference((8, 8, 8), 8, 2)
    best = min(base_ref.values(), key=lambda v: (v[0], v[1]))         # ranked by all at once, then per dimension
    named = re.search(r": (\S+) tile (\S+) router tile", out.attrs["baseline"]).groups()
    b0 = [v for (d, t, _), v in base_ref.items() if (d, t) == named and v[:2] == best[:2]]
    assert b0, (named, best)
    for i, k in enumerate(rows_of(ds)):
        for j, name in enumerate(("speedup_time_all", "speedup_time_seq", "speedup_links_all",
                                  "speedup_links_seq")):
            assert float(out[name].values[i]) == pytest.approx(b0[0][j] / ref[k][j], rel=1e-12), (k, name)


def test_tiles_printed_table(tiles_cases):
    _, ds, (ref, too_large) = tiles_cases["plain"]
    text = TL.format_advice(ds, 4)
    assert "links 2.000, 1.000, 2.000 GB/s, injection 3.000 GB/s per node" in text
    assert f"{len(ref)} candidates fit ({too_large} too large for the machine), {len(ref)} evaluated" in text
    unit = re.search(r"all-at-once \[(\w+)\]", text).group(1)
    factor = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]
    rows = [ln.split() for ln in text.splitlines() if re.match(r"^\s+\d+=?\s+\d+x", ln)]
    assert len(rows) == 4
    times = sorted(v[0] for v in ref.values())
    for r in rows:
        t_all = ref[(r[1], r[2], r[3])][0]
        assert float(r[6]) * factor == pytest.approx(t_all, rel=5e-4)
    assert float(rows[0][6]) * factor == pytest.approx(times[0], rel=5e-4)


TILE_ERRORS = [
    (["--grid", "16,32", "--nodes", "16", "--tasks-per-node", "4"], "--grid"),
    (["--grid", "16,32,16", "--nodes", "0", "--tasks-per-node", "4"], "--nodes"),
    (["--grid", "16,32,16", "--nodes", "16", "--tasks-per-node", "2.5"], "--tasks-per-node"),
    (["--grid", "16,32,16", "--nodes", "16", "--tasks-per-node", "4", "--decomposition", "3,4,4"],
     "--decomposition"),
    (["--grid", "16,32,16", "--nodes", "16", "--tasks-per-node", "4", "--tile", "1,1,3"], "--tile"),
    (["--grid", "16,32,16", "--nodes", "16", "--tasks-per-node", "4", "--baseline-tile", "1,1,3"], "--baseline-tile"),
    (["--grid", "16,32,16", "--nodes", "16", "--tasks-per-node", "4", "--bytes-per-point", "nan"],
     "--bytes-per-point"),
    (["--grid", "16,32,16", "--nodes", "16", "--tasks-per-node", "4", "--max-evaluated", "-1"], "--max-evaluated"),
    (["--grid", "15,15,15", "--nodes", "16", "--tasks-per-node", "4"], "--nodes"),
]


@pytest.fixture(scope="module")
def machine_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("machine") / "t.yaml"
    path.write_text("name: T\nkind: torus\ndims: [4, 4, 4]\nlink_bandwidth: [2.0e+9, 1.0e+9, 2.0e+9]\n"
                    "nodes_per_router: 2\ninjection_bandwidth: 3.0e+9\nrouting_order: as_given\n")
    return str(path)


@pytest.mark.parametrize("args,option", TILE_ERRORS)
def test_tiles_bad_options_name_the_option(machine_file, args, option):
    with pytest.raises(ConfigError) as e:
        TILES_CLI.main(args + ["--machine", machine_file, "--no-save"])
    assert e.value.field == option, str(e.value)


@pytest.mark.parametrize("nodes,grid", [(1, "16,32,16"), (3, "12,12,12")])
def test_tiles_node_count_not_in_whole_routers(machine_file, nodes, grid):
    """1 or 3 nodes on two nodes per router: no node grid splits into router pairs. The refusal said 'Use fewer
    nodes' and blamed the router prism's fit, neither of which is the reason."""
    with pytest.raises(ConfigError) as e:
        TILES_CLI.main(["--grid", grid, "--nodes", str(nodes), "--tasks-per-node", "1", "--machine",
                        machine_file, "--no-save"])
    msg = str(e.value)
    assert e.value.field == "--nodes" and "multiple of 2 nodes" in msg and "fewer nodes" not in msg, msg


def test_optimize_all_infeasible_names_the_placement_setting(tmp_path):
    """dragonfly_random's default 32 tasks a group on 8 nodes a group fails every configuration: the refusal
    named --tasks = 8 ('Use fewer tasks'), which fits the network; the setting at fault is the placement's."""
    with pytest.raises(ConfigError) as e:
        OPT.main(["--tasks", "8", "--alpha", "4,4,2", "--placement", "dragonfly_random", *DF,
                  f"sweep.output_dir={tmp_path}", "--no-progress"])
    assert e.value.field == "placement.tasks_per_group" and e.value.value == 32, str(e.value)
    out, ds = run_optimize(["--tasks", "8", "--alpha", "4,4,2", "--placement", "dragonfly_random",
                            "placement.tasks_per_group=2", *DF, "-n", "0"], tmp_path)
    feasible = [b for b in ordered_factorizations(8, 3) if all(a % v == 0 for a, v in zip((4, 4, 2), b))]
    assert int(ds.attrs["n_feasible"]) == len(feasible) * len(ROUTINGS)
    assert f"searched {10 * len(ROUTINGS)} configurations ({len(feasible) * len(ROUTINGS)} feasible)" in out


@pytest.mark.parametrize("alpha,placement,dims", [("16,16", "torus_block", "3 dimensions"),
                                                  ("16,16,16,4,4", "topaware", "2 to 4 dimensions")])
def test_optimize_a_stencil_the_placement_cannot_lay_out_is_refused_naming_alpha(tmp_path, alpha, placement, dims):
    """torus_block lays the stencil's task grid on the torus one dimension a torus dimension (topaware: 2 to 4):
    a 2-D --alpha on a 3-D torus made every configuration infeasible, refused after the search naming --tasks."""
    with pytest.raises(ConfigError) as e:
        OPT.main(["--tasks", "64", "--alpha", alpha, "--placement", placement, "--routings", "dor", "topology=torus",
                  f"sweep.output_dir={tmp_path}", "--no-progress"])
    assert e.value.field == "--alpha" and dims in str(e.value) and placement in str(e.value), str(e.value)
    assert not list(tmp_path.rglob("*.nc"))          # refused before the search
