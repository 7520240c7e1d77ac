"""Tile-size advisor (``evaluator tiles``): ratios against the slides' closed form, the enumeration against a
brute force, the placement's blocks, the injection-limited verdict, and bad input."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
import xarray as xr
import yaml

from evaluator import cli
from evaluator import tiles as TL
from evaluator.errors import ConfigError
from evaluator.machines import machine_from_dict
from tests.helpers import TOL


def _machine(injection=1.0e12, dims=(4, 4, 4), name="HalfY"):
    """A small Gemini-like torus: 2 nodes per router, Y links at half the X/Z bandwidth."""
    return machine_from_dict({"name": name, "kind": "torus", "dims": list(dims), "link_bandwidth": [2e9, 1e9, 2e9],
                              "nodes_per_router": 2, "injection_bandwidth": injection, "routing_order": "as_given"})


LINK_LIMITED = _machine()


def _only(grid, nodes, tpn, beta, tile, block, machine=LINK_LIMITED, **kw):
    """Advise on exactly one candidate (the given router block picked out of the enumerated ones)."""
    ds = TL.advise(TL.TileRequest(grid, nodes, tpn, machine, decomposition=beta, tile=tile, **kw))
    row = ds.where(ds.router_block == "x".join(map(str, block)), drop=True)
    assert row.sizes["candidate"] == 1
    return row.isel(candidate=0)


def test_ideal_ratios_are_the_slides_numbers():
    conc, seq = TL.ideal_ratios([2e9, 1e9, 2e9])
    assert conc == pytest.approx(2 ** (1 / 3) / 2, rel=TOL["rel"]) and round(conc, 2) == 0.63
    assert seq == pytest.approx(3 * 2 ** (1 / 3) / 4, rel=TOL["rel"]) and round(seq, 3) == 0.945
    assert TL.ideal_ratios([1.0, 1.0, 1.0]) == pytest.approx((1.0, 1.0), rel=TOL["rel"])


def test_link_model_ratio_against_closed_form():
    """Cubic 8x8x8 router tiles against 6x12x6 (twice as long in Y), link-limited (huge injection).

    The slides' closed form for the same volume is 2^(1/3)/2 concurrently and 3*2^(1/3)/4 in sequence; for
    volumes V_e and V_c it scales by (V_e/V_c)^(2/3): 36/64 and 108/128 here.
    """
    cubic = _only((32, 32, 32), 128, 1, (4, 4, 8), (1, 1, 1), (1, 1, 2))     # node tile 8x8x4, pair along Z
    elong = _only((24, 48, 24), 128, 1, (4, 8, 4), (1, 1, 1), (1, 2, 1))     # node tile 6x6x6, pair along Y
    assert cubic.router_tile.item() == "8x8x8" and elong.router_tile.item() == "6x12x6"
    for r in (cubic, elong):
        assert r.limit_all.item() == "links" and r.limit_seq.item() == "links"
    scale = (6 * 12 * 6 / 8 ** 3) ** (2 / 3)
    conc, seq = TL.ideal_ratios([2e9, 1e9, 2e9])
    assert float(elong.time_all / cubic.time_all) == pytest.approx(conc * scale, rel=TOL["rel"])
    assert float(elong.time_seq / cubic.time_seq) == pytest.approx(seq * scale, rel=TOL["rel"])
    assert float(elong.time_all / cubic.time_all) == pytest.approx(36 / 64, rel=TOL["rel"])
    assert float(elong.time_seq / cubic.time_seq) == pytest.approx(108 / 128, rel=TOL["rel"])
    # absolute: one face of the router tile over the link bandwidth (8 bytes per point)
    assert float(cubic.time_all) == pytest.approx(64 * 8 / 1e9, rel=TOL["rel"])
    assert float(cubic.time_seq) == pytest.approx(64 * 8 * (1 / 2e9 + 1 / 1e9 + 1 / 2e9), rel=TOL["rel"])


def test_every_candidate_matches_the_closed_form_on_interior_links():
    ds = TL.advise(TL.TileRequest((16, 16, 16), 64, 2, LINK_LIMITED, max_evaluated=0))
    assert ds.attrs["n_evaluated"] == ds.attrs["n_candidates"] == ds.sizes["candidate"] > 10
    np.testing.assert_allclose(ds.links_all, ds.closed_links_all, rtol=TOL["rel"])
    np.testing.assert_allclose(ds.links_seq, ds.closed_links_seq, rtol=TOL["rel"])
    np.testing.assert_allclose(ds.time_all, ds.closed_all, rtol=TOL["rel"])
    np.testing.assert_allclose(ds.time_seq, ds.closed_seq, rtol=TOL["rel"])
    assert (np.diff(ds.time_all.values) >= 0).all()          # ranked, best first


def test_slides_example_closed_form():
    """1000^3 as 40x20x40 (4x2x4 per node, pair along Y) against 1024^3 as 32^3 (4x4x2, pair along Z)."""
    bw = [9.375e9, 4.6875e9, 9.375e9]
    c = TL.closed_form(TL.Candidate((32, 32, 32), (4, 4, 2), (1, 1, 2)), (1024,) * 3, bw, 1e30, 8.0)
    e = TL.closed_form(TL.Candidate((40, 20, 40), (4, 2, 4), (1, 2, 1)), (1000,) * 3, bw, 1e30, 8.0)
    scale = (100 * 200 * 100 / 128 ** 3) ** (2 / 3)
    conc, seq = TL.ideal_ratios(bw)
    assert c["all_links"] / e["all_links"] == pytest.approx(1 / (conc * scale), rel=TOL["rel"])
    assert c["seq_links"] / e["seq_links"] == pytest.approx(1 / (seq * scale), rel=TOL["rel"])
    assert round(c["all_links"] / e["all_links"], 1) == 1.6                   # "up to 1.6x faster"
    assert round(1 / seq, 2) == 1.06                                          # "only 6%" at equal volume


def test_injection_limited_is_said_plainly(capsys):
    cubic = _only((32, 32, 32), 128, 1, (4, 4, 8), (1, 1, 1), (1, 1, 2), injection_bandwidth=1e9)
    elong = _only((24, 48, 24), 128, 1, (4, 8, 4), (1, 1, 1), (1, 2, 1), injection_bandwidth=1e9)
    for r in (cubic, elong):
        assert r.limit_all.item() == "injection"
        assert float(r.time_all) == pytest.approx(float(r.injection_all), rel=TOL["rel"])
    # the node's halo surface sets the time: node tiles 8x8x4 and 6x6x6, all six faces leave the node
    surf_c, surf_e = 2 * (32 + 32 + 64), 2 * (36 + 36 + 36)
    assert float(elong.time_all / cubic.time_all) == pytest.approx(surf_e / surf_c, rel=TOL["rel"])
    ds = TL.advise(TL.TileRequest((24, 48, 24), 128, 1, LINK_LIMITED, decomposition=(4, 8, 4), tile=(1, 1, 1),
                                  injection_bandwidth=1e9))
    text = TL.format_advice(ds)
    assert "NOTE: node injection, not the links, limits" in text and "matters little" in text
    text = TL.format_advice(TL.advise(TL.TileRequest((24, 48, 24), 128, 1, LINK_LIMITED,
                                                     decomposition=(4, 8, 4), tile=(1, 1, 1))))
    assert "NOTE: node injection" not in text


def test_enumeration_against_brute_force():
    m = _machine(dims=(4, 2, 4))
    grid, nodes, tpn = (12, 8, 8), 16, 2
    got, _ = TL.candidates(TL.TileRequest(grid, nodes, tpn, m))
    want = set()
    rng = [range(1, 33)] * 3
    for beta in itertools.product(*rng):
        if math.prod(beta) != nodes * tpn or any(g % b for g, b in zip(grid, beta)):
            continue
        for c in itertools.product(*rng):
            if math.prod(c) != tpn or any(b % x for b, x in zip(beta, c)):
                continue
            for blk in itertools.product(*rng):
                ng = [b // x for b, x in zip(beta, c)]
                if math.prod(blk) != 2 or any(n % k for n, k in zip(ng, blk)):
                    continue
                if all(n // k <= d for n, k, d in zip(ng, blk, m.dims)):
                    want.add((beta, c, blk))
    assert {(x.decomposition, x.tile, x.router_block) for x in got} == want and len(want) > 5


def test_placement_keeps_tiles_on_nodes_and_blocks_on_routers():
    topo = TL._topology(LINK_LIMITED)
    cand = TL.Candidate((4, 8, 4), (2, 2, 1), (1, 1, 2))
    pl = TL.placement_for(topo, cand)
    x = np.stack(np.unravel_index(np.arange(128), (4, 8, 4)), axis=1)
    node_of = {}
    for t, n in enumerate(pl.task_node.tolist()):
        node_of.setdefault(n, []).append(x[t])
    assert len(node_of) == 32 and all(len(v) == 4 for v in node_of.values())
    for v in node_of.values():                       # a 2x2x1 block of the task grid
        v = np.array(v)
        assert (v.max(0) - v.min(0) + 1).tolist() == [2, 2, 1] and (v.min(0) % [2, 2, 1] == 0).all()
    routers = {n // 2 for n in node_of}
    coords = topo.router_coords[sorted(routers)]
    assert (coords.max(0) + 1).tolist() == list(cand.prism) and len(routers) == math.prod(cand.prism)
    for r in routers:                                 # the router's two nodes: neighbours along Z
        zs = sorted({int(np.array(node_of[n])[:, 2].min()) for n in (2 * r, 2 * r + 1)})
        assert zs[1] - zs[0] == 1


@pytest.mark.parametrize("kwargs,field", [
    (dict(decomposition=(3, 4, 2)), "--decomposition"),      # 3 does not divide 16
    (dict(decomposition=(8, 4, 4)), "--decomposition"),      # 128 tasks, not 32 x 2
    (dict(decomposition=(4, 4, 4), tile=(1, 1, 1), nodes=32, tasks_per_node=2), "--tile"),   # 1 task, not 2
    (dict(decomposition=(8, 4, 2), tile=(1, 1, 2), nodes=16, tasks_per_node=4), "--tile"),
    (dict(decomposition=(8, 2, 4), tile=(1, 4, 1), nodes=16, tasks_per_node=4), "--tile"),   # 4 does not divide 2
    (dict(nodes=129), "--nodes"),                             # more than the machine's 128 nodes
    (dict(nodes=3), "--nodes"),                               # 6 tasks do not divide 16^3
    (dict(grid=(16, 16)), "--grid"),
    (dict(grid=(16, 0, 16)), "--grid"),
    (dict(tasks_per_node=0), "--tasks-per-node"),
    (dict(machine="NoSuchMachine"), "--machine"),
    (dict(limit="bisection"), "--limit"),
    (dict(rank_by="fastest"), "--rank-by"),
    (dict(bytes_per_point=-8), "--bytes-per-point"),
])
def test_bad_input(kwargs, field):
    args = dict(grid=(16, 16, 16), nodes=32, tasks_per_node=2, machine=LINK_LIMITED)
    args.update(kwargs)
    with pytest.raises(ConfigError) as e:
        TL.advise(TL.TileRequest(**args))
    assert e.value.field == field, str(e.value)


def test_no_prism_fits():
    """64 nodes that fit the machine's 128, but a 64x1x1 grid needs a line of 32 routers on an 8x8x1 torus."""
    m = machine_from_dict({"name": "Flat", "kind": "torus", "dims": [8, 8, 1], "link_bandwidth": 1e9,
                           "nodes_per_router": 2})
    with pytest.raises(ConfigError) as e:
        TL.advise(TL.TileRequest((64, 1, 1), 64, 1, m))
    assert e.value.field == "--nodes" and "fits" in str(e.value)


def test_cli_table_and_errors(tmp_path, capsys):
    path = tmp_path / "halfy.yaml"
    path.write_text("name: HalfY\nkind: torus\ndims: [4, 4, 4]\nlink_bandwidth: [2.0e+9, 1.0e+9, 2.0e+9]\n"
                    "nodes_per_router: 2\ninjection_bandwidth: 1.0e+12\nrouting_order: as_given\n")
    rc = cli.main(["tiles", "--grid", "24,48,24", "--nodes", "128", "--tasks-per-node", "1", "--machine", str(path),
                   "--decomposition", "4,8,4", "--limit", "links", "--injection-bandwidth", "1e9",
                   "--baseline-grid", "32,32,32", "--baseline-nodes", "128",
                   "--baseline-decomposition", "4,4,8", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "speedup links" in out and "speedup w/ NIC" in out and "NOTE: ranked by the router links alone" in out
    assert "dataset:" in out
    assert list((tmp_path / "out").glob("*.nc")) and list((tmp_path / "out").glob("*.png"))
    # each speedup is named by what it compares (issue 34): links only on both sides, or the NIC on both sides
    ds = xr.open_dataset(next((tmp_path / "out").glob("*.nc")))
    assert "speedup_all" not in ds and "speedup_seq" not in ds
    m = machine_from_dict(yaml.safe_load(path.read_text()))
    base = TL.advise(TL.TileRequest((32, 32, 32), 128, 1, m, decomposition=(4, 4, 8), limit="links",
                                    injection_bandwidth=1e9)).isel(candidate=0)
    for what in ("links", "time"):
        for e in ("all", "seq"):
            np.testing.assert_allclose(ds[f"speedup_{what}_{e}"].values,
                                       float(base[f"{what}_{e}"]) / ds[f"{what}_{e}"].values, rtol=1e-12)
    # here the NIC (1 GB/s) limits: the speedup with the NIC is not the links-only one
    assert ds.limit_all.values[0] == "injection"
    assert abs(float(ds.speedup_time_all[0]) - float(ds.speedup_links_all[0])) > 0.01
    rc = cli.main(["tiles", "--grid", "24,24,24", "--nodes", "64", "--tasks-per-node", "1", "--machine", str(path),
                   "--tile", "5,1,1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--tile" in err


def test_candidates_equal_in_every_time_share_a_rank():
    """The table ranked candidates equal in every time 1, 2, 3 (enumeration order broke the tie): they share the
    first one's rank, marked '=', and the next candidate's rank counts them."""
    import xarray as xr

    from evaluator.tiles import _rank_labels

    t = {"links_all": [1.0, 1.0, 1.0, 2.0, 3.0, 3.0], "links_seq": [1.0, 1.0, 1.0, 2.0, 3.0, 3.0],
         "time_all": [5.0, 5.0, 5.0, 5.0, 6.0, 6.0], "time_seq": [5.0, 5.0, 5.0, 5.0, 6.0, 6.5]}
    ds = xr.Dataset({k: ("candidate", v) for k, v in t.items()})
    assert _rank_labels(ds) == ["1=", "1=", "1=", "4", "5", "6"]


def test_large_jobs_are_chunked_by_memory_and_refused_when_one_candidate_does_not_fit(monkeypatch):
    """A chunk holds as many candidates as fit (here 3 of the default 16) and the ranking is the one-chunk run's;
    a job of which one candidate does not fit is refused naming --nodes before anything is evaluated (a 4,096-node
    job of 32 tasks per node held 3.5 GB at 16 candidates a chunk, whatever the memory, and 8,192 nodes 7.3 GB)."""
    from evaluator.errors import MEMORY_ENV, ResourceError

    req = TL.TileRequest((16, 16, 16), 32, 2, LINK_LIMITED)
    whole = TL.advise(req)
    per_cand = TL._candidate_bytes(req)
    assert per_cand == 4 * (6 * 64) * TL._BYTES_PER_FLOW_SLOT + 8 * 64
    sizes = []
    real = TL.evaluate_batch

    def counted(topo, routing, traffics, placements, **kw):
        sizes.append(len(traffics) // 4)
        return real(topo, routing, traffics, placements, **kw)

    monkeypatch.setattr(TL, "evaluate_batch", counted)
    monkeypatch.setattr(TL, "available_memory", lambda: int(7 * per_cand))   # half of it: 3.5 candidates
    chunked = TL.advise(req)
    assert whole.sizes["candidate"] > 3 and sizes == [3] * (len(sizes) - 1) + [sizes[-1]] and sum(sizes) == \
        whole.sizes["candidate"]
    xr.testing.assert_identical(chunked, whole)

    def never(*a, **kw):
        raise AssertionError("evaluated a job it should have refused")

    monkeypatch.setattr(TL, "evaluate_batch", never)
    monkeypatch.setenv(MEMORY_ENV, str(int(per_cand)))     # 80% of it is less than one candidate
    with pytest.raises(ResourceError) as e:
        TL.advise(req)
    assert e.value.field == "--nodes" and e.value.value == 32 and "one candidate decomposition of 64 tasks" in \
        str(e.value)


def test_long_shapes_keep_their_columns_apart():
    """Shapes longer than a column's usual width (a 5-D grid's tile 1x1x1x1x32 in the 10 of tile/node) ran into
    the next column; every column is now at least one character wider than its longest shown value."""
    ds = TL.advise(TL.TileRequest((16, 16, 16), 32, 2, LINK_LIMITED)).isel(candidate=slice(0, 3))
    long = {"decomposition": "1024x1024x1024", "tile": "1x1x1x1x32", "router_block": "1x1x1x1x1",
            "prism": "2x2x2x2x2", "router_tile": "32x32x32x32x32"}
    for k, v in long.items():
        ds[k] = ("candidate", np.array([v] * 3))
    rows = TL.format_advice(ds).splitlines()
    head = next(i for i, line in enumerate(rows) if line.startswith("rank"))
    for line in rows[head + 1: head + 4]:
        assert line.split()[1:6] == list(long.values()), line


def test_speedups_of_candidates_that_cross_no_router_link_are_shown_as_no_ratio_or_inf():
    """On one router (2 nodes, 2 a router) no candidate crosses a router link: its links-only time is 0 s. Against
    a baseline on the same router the links-only speedup is 0 s over 0 s, which the table printed as 'nan/nan'; it
    now prints '-' (no ratio; the dataset keeps NaN). Against a baseline on 8 nodes (4 routers, links crossed)
    it is 'inf'. The speedups with the NIC are finite: injection time over injection time."""
    one = TL.advise(TL.TileRequest((8, 8, 8), 2, 4, LINK_LIMITED, max_evaluated=0))
    assert np.all(one["links_all"].values == 0.0) and np.all(one["time_all"].values > 0.0)
    same = TL.compare(one, one)
    text = TL.format_advice(same, 3)
    assert "nan" not in text
    rows = [ln.split() for ln in text.splitlines() if re.match(r"^\s+\d+=?\s+\d+x", ln)]
    assert len(rows) == 3 and all(r[-2] == "-/-" for r in rows)
    assert np.all(np.isnan(same["speedup_links_all"].values))
    expect = float(one["time_all"].values[0]) / one["time_all"].values[:3]
    assert [float(r[-1].split("/")[0]) for r in rows] == pytest.approx(expect, rel=1e-3)
    base = TL.advise(TL.TileRequest((8, 8, 8), 8, 4, LINK_LIMITED, max_evaluated=0))
    assert float(base["links_all"].values[0]) > 0.0
    text = TL.format_advice(TL.compare(one, base), 3)
    rows = [ln.split() for ln in text.splitlines() if re.match(r"^\s+\d+=?\s+\d+x", ln)]
    assert all(r[-2] == "inf/inf" for r in rows) and "'inf' a candidate that crosses none" in text
