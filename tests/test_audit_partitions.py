"""Differential audit of ``evaluator partitions`` (evaluator/partitions/, evaluator/cli/partitions.py).

Every expected value here comes from a reference written in this module, never from the code under test:

* the partition shapes of a size: every factorisation of the unit count into one side per machine dimension
  (``itertools.product`` over the machine's sides), grouped by a canonical form written here;
* bisections: the Blue Gene/Q closed form (a torus of even sides cut across its longest side ``L`` crosses
  ``2 N / L`` links) and an exhaustive minimum over every balanced router subset of small embedded prisms;
* the pairing benchmark's time: a per-flow walk of furthest-node pairs over the host torus (dimension order,
  shortest way round, ties split in half), the largest link load over its bandwidth;
* the comparison's ``first_holding_size`` and its ratio, from the enumeration and closed form above;
* the printed tables, parsed back and set against the dataset written beside them.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
import xarray as xr

from evaluator import machines as M
from evaluator import partitions as P
from evaluator.cli.partitions import main as cli_main

BYTES = 2.0e9  # the pairing benchmark's bytes per pair

# small user machines (one YAML file each, in a module-scoped directory)
YAMLS = {
    # Blue Gene/Q with an allowed list that leaves out the best 8-midplane shape
    "tinyq.yaml": "name: TinyQ\nkind: bgq\nmidplanes: [4, 2, 2, 1]\nlink_bandwidth: 2.0e+9\n"
                  "allowed_partitions: [[1, 1, 1, 1], [4, 1, 1, 1], [2, 2, 1, 1], [4, 2, 1, 1]]\n",
    "tinyq3.yaml": "name: TinyQ3\nkind: bgq\nmidplanes: [3, 3, 1, 1]\nlink_bandwidth: 2.0e+9\n",
    # Gemini-like router tori (jobs are prisms routed over the host): uniform and uneven links
    "grid88.yaml": "name: Grid88\nkind: torus\ndims: [8, 8]\nwrap: true\nlink_bandwidth: 1.0e+9\n"
                   "nodes_per_router: 1\nrouting_order: as_given\n",
    "grid66.yaml": "name: Grid66\nkind: torus\ndims: [6, 6]\nwrap: true\nlink_bandwidth: 1.0e+9\n"
                   "nodes_per_router: 1\nrouting_order: as_given\n",
    "gem84.yaml": "name: Gem84\nkind: torus\ndims: [8, 4]\nwrap: [true, false]\n"
                  "link_bandwidth: [2.0e+9, 1.0e+9]\nnodes_per_router: 2\nrouting_order: as_given\n",
}


@pytest.fixture(scope="module")
def mdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("partaudit_machines")
    for name, text in YAMLS.items():
        (d / name).write_text(text)
    return d


def machine(mdir, name):
    return M.load_machine(mdir / name)


# ----------------------------------------------------------------------------------
# references
# ----------------------------------------------------------------------------------


def my_canonical(m, shape):
    """Rotation-free form: Blue Gene/Q sorts every side; a router torus only sorts sides whose host
    dimension is alike (same size, wrap and link bandwidth)."""
    if m.kind == "bgq":
        return tuple(sorted(shape, reverse=True))
    out = list(shape)
    keys = [(m.dims[k], m.wrap[k], m.link_bandwidth[k]) for k in range(len(shape))]
    for key in set(keys):
        idx = [k for k in range(len(shape)) if keys[k] == key]
        for k, v in zip(idx, sorted((shape[k] for k in idx), reverse=True)):
            out[k] = v
    return tuple(out)


def my_shapes(m, units):
    """{canonical: every orientation} of the cuboids of ``units`` allocation units that fit the machine."""
    box = m.unit_dims
    out: dict[tuple, list] = {}
    for shp in itertools.product(*(range(1, b + 1) for b in box)):
        if math.prod(shp) == units:
            out.setdefault(my_canonical(m, shp), []).append(shp)
    return out


def bgq_links(shape):
    """Closed form: the node torus 4A x 4B x 4C x 4D x 2 has even sides, so its bisection is 2 N / L links."""
    nd = [4 * a for a in shape] + [2]
    return 2 * math.prod(nd) // max(nd)


def ring_in_host(s, H, w):
    """A prism side of s routers in a host ring of H behaves as a ring when it spans the host or the host's
    wrap-around is the short way between its two ends (the convention of docs / Fiedler's 23-of-24)."""
    return bool(w and (s == H or 2 * (s - 1) > H))


def brute_prism_bisection(dims, ring, bw):
    """Exhaustive: minimum cut bandwidth over every subset of floor(R/2) routers of the prism graph."""
    coords = list(itertools.product(*map(range, dims)))
    ids = {c: i for i, c in enumerate(coords)}
    edges = []
    for c in coords:
        for k, a in enumerate(dims):
            if c[k] + 1 < a:
                d = list(c); d[k] += 1
                edges.append((ids[c], ids[tuple(d)], bw[k]))
            elif ring[k] and a >= 3:
                d = list(c); d[k] = 0
                edges.append((ids[c], ids[tuple(d)], bw[k]))
    n = len(coords)
    best = math.inf
    for sub in itertools.combinations(range(n), n // 2):
        s = set(sub)
        best = min(best, sum(w for u, v, w in edges if (u in s) != (v in s)))
    return best


def walk_pairing_time(host, host_wrap, bw, prism):
    """Per-flow walk of the furthest-node pairing of a prism at the origin of a host torus (one node per router):
    partner +floor(s/2) in a side that behaves as a ring, the mirror node in a chain; dimension-order routing in
    the given order over the host, the shorter way round (ties: half each way). Returns max load / bandwidth."""
    ring = [ring_in_host(s, H, w) for s, H, w in zip(prism, host, host_wrap)]
    load: dict[tuple, float] = {}
    for src in itertools.product(*map(range, prism)):
        dst = tuple((x + s // 2) % s if r else s - 1 - x for x, s, r in zip(src, prism, ring))
        if dst == src:
            continue
        cur = list(src)
        for k, H in enumerate(host):
            x, y = cur[k], dst[k]
            if x == y:
                continue
            fwd, back = (y - x) % H, (x - y) % H
            if not host_wrap[k]:
                ways = [(+1 if y > x else -1, abs(y - x), 1.0)]
            elif fwd < back:
                ways = [(+1, fwd, 1.0)]
            elif back < fwd:
                ways = [(-1, back, 1.0)]
            else:
                ways = [(+1, fwd, 0.5), (-1, back, 0.5)]
            for step, hops, share in ways:
                p = list(cur)
                for _ in range(hops):
                    key = (tuple(p), k, step)
                    load[key] = load.get(key, 0.0) + share * BYTES
                    p[k] = (p[k] + step) % H
            cur[k] = y
    return max(v / bw[k] for (_, k, _), v in load.items())


# ----------------------------------------------------------------------------------
# shapes: every factorisation that fits, none missing, none extra
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Mira", "JUQUEEN", "tinyq.yaml", "gem84.yaml"])
def test_shapes_and_sizes_are_every_factorisation_that_fits(mdir, name):
    m = M.load_machine(mdir / name if name.endswith(".yaml") else name)
    every = {math.prod(s) for s in itertools.product(*(range(1, b + 1) for b in m.unit_dims))}
    assert P.feasible_sizes(m) == sorted(u * m.nodes_per_unit for u in every)
    for units in sorted(every):
        ref = my_shapes(m, units)
        geoms = P.partition_geometries(m, units * m.nodes_per_unit)
        assert sorted(g.canonical for g in geoms) == sorted(ref), units
        for g in geoms:
            assert g.shape in ref[g.canonical] and g.shape == max(ref[g.canonical])  # a fitting orientation
            assert g.nodes == units * m.nodes_per_unit
    # a unit count with no cuboid is refused, naming the feasible sizes
    missing = next(u for u in range(1, math.prod(m.unit_dims)) if u not in every)
    with pytest.raises(P.PartitionError, match=rf"no cuboid of {missing} {m.units}"):
        P.partition_geometries(m, missing * m.nodes_per_unit)


# ----------------------------------------------------------------------------------
# bisections and ranking
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Mira", "JUQUEEN", "Sequoia"])
def test_bgq_bisection_closed_form_and_ranking_every_size(name):
    m = M.load_machine(name)
    for a in P.analyse_machine(m, P.feasible_sizes(m)):
        links = {g.canonical: bgq_links(g.canonical) for g in a.geometries}
        for g in a.geometries:
            assert g.bisection.links == links[g.canonical]
            assert g.bisection.bandwidth == pytest.approx(links[g.canonical] * m.link_bandwidth[0], rel=1e-12)
            assert g.bisection.per_node == pytest.approx(g.bisection.bandwidth / a.nodes, rel=1e-12)
        bws = [g.bisection.bandwidth for g in a.geometries]
        assert bws == sorted(bws, reverse=True)  # best first
        assert a.best.bisection.links == max(links.values()) and a.worst.bisection.links == min(links.values())
        assert a.speedup_best_over_worst == pytest.approx(max(links.values()) / min(links.values()), rel=1e-12)
        if a.best_allowed is not None:
            allowed = [c for c in links if c in {tuple(sorted(s, reverse=True)) for s in m.allowed_partitions}]
            assert a.best_allowed.bisection.links == max(links[c] for c in allowed)
            assert a.speedup_best_over_allowed >= 1.0


def test_embedded_prism_bisection_exhaustive_and_ranked_by_bandwidth(mdir):
    """Gem84: 8x4 routers, X a ring of 2 GB/s links, Y a line (no wrap) of 1 GB/s links, 2 nodes per router."""
    m = machine(mdir, "gem84.yaml")
    for units in (4, 6, 8, 12, 16):
        geoms = P.partition_geometries(m, units * 2)
        for g in geoms:
            ring = [ring_in_host(s, H, w) for s, H, w in zip(g.shape, m.dims, m.wrap)]
            ref = brute_prism_bisection(g.shape, ring, m.link_bandwidth)
            assert g.bisection.bandwidth == pytest.approx(ref, rel=1e-12), (units, g.shape)
            assert g.bisection.per_node == pytest.approx(ref / (units * 2), rel=1e-12)
        bws = [g.bisection.bandwidth for g in geoms]
        assert bws == sorted(bws, reverse=True)


# ----------------------------------------------------------------------------------
# the pairing benchmark: link level, as the machine runs its jobs
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name,size,shapes", [("grid88.yaml", 4, [(4, 1), (2, 2)]),
                                              ("grid88.yaml", 12, [(4, 3), (6, 2)]),
                                              ("grid66.yaml", 12, [(4, 3), (6, 2)])])
def test_pairing_time_of_an_embedded_prism_is_its_walk_over_the_host(mdir, name, size, shapes):
    """A torus machine's job is a prism routed over its host (README: mode=embedded): the pairing ran every prism
    as a torus of its own, with wrap links a prism that does not span its host lacks (Grid88's chain 4x1 as a ring:
    2.0 s instead of the walk's 4.0 s; its 4x3 2.0 s instead of 4.0 s)."""
    m = machine(mdir, name)
    geoms = {g.shape: g for g in P.partition_geometries(m, size)}
    for shp in shapes:
        ref = walk_pairing_time(m.dims, m.wrap, m.link_bandwidth, shp)
        assert P.pairing_time(m, geoms[shp], BYTES) == pytest.approx(ref, rel=1e-9), shp


def test_pairing_of_chain_prisms_confirms_the_bisection_ratio(mdir):
    """Grid88, 4 routers: the chain 4x1 cuts 1 link, 2x2 cuts 2: the link-level times must differ by 2x (they
    came out equal, 1.000 against a bisection ratio of 2.000, the 4x1 prism having been closed into a ring)."""
    (r,) = P.confirm_machine(machine(mdir, "grid88.yaml"), [4])
    assert (r.a.label, r.b.label, r.which) == ("4x1", "2x2", "worst vs best")
    assert r.a.bisection.links == 1 and r.b.bisection.links == 2
    assert r.time_a == pytest.approx(4.0, rel=1e-9) and r.time_b == pytest.approx(2.0, rel=1e-9)
    assert r.time_ratio == pytest.approx(r.bisection_ratio, rel=1e-9) == 2.0
    ds = P.pairing_dataset([r])
    assert "host torus" in ds.attrs["benchmark"] and float(ds["time_ratio"][0]) == pytest.approx(2.0)
    assert ds["time_a"].attrs["units"] == "s"


def test_bgq_pairing_time_equals_the_closed_form(mdir):
    """Blue Gene/Q (own torus): N/2 pairs' bytes over the bisection links, each 2 GB/s (ties split)."""
    m = machine(mdir, "tinyq.yaml")
    for g in P.partition_geometries(m, 2048):  # 4x1x1x1 (256 links) and 2x2x1x1 (512 links)
        t = P.pairing_time(m, g, BYTES)
        assert t == pytest.approx((2048 / 2) * BYTES / (bgq_links(g.canonical) * 2.0e9), rel=1e-9), g.label


# ----------------------------------------------------------------------------------
# comparison of machines
# ----------------------------------------------------------------------------------


def test_compare_first_holding_and_speedups_against_enumeration(mdir, tmp_path, capsys):
    a, b = machine(mdir, "tinyq.yaml"), machine(mdir, "tinyq3.yaml")
    table = P.compare_machines([a, b])
    ds = P.comparison_dataset([a, b], table)
    units_a = {math.prod(s) for s in itertools.product(*(range(1, x + 1) for x in a.unit_dims))}
    units_b = {math.prod(s) for s in itertools.product(*(range(1, x + 1) for x in b.unit_dims))}
    assert [int(x) for x in ds["size"]] == sorted(512 * u for u in units_a | units_b)
    best = {(name, u): max(bgq_links(c) for c in my_shapes(mm, u))
            for name, mm, us in (("TinyQ", a, units_a), ("TinyQ3", b, units_b)) for u in us}
    for n in ds["size"].values:
        u = int(n) // 512
        hold = min(x for x in units_a if x >= u)
        assert int(ds["first_holding_size"].sel(size=n)) == 512 * hold
        for name in ("TinyQ", "TinyQ3"):
            got = ds["speedup_vs_first_holding"].sel(size=n, machine=name)
            if (name, u) not in best:
                assert np.isnan(got) and ds["best_geometry"].sel(size=n, machine=name) == ""
                continue
            assert float(got) == pytest.approx(best[(name, u)] / best[("TinyQ", hold)], rel=1e-12)
            if ("TinyQ", u) in best:
                assert float(ds["speedup_vs_first"].sel(size=n, machine=name)) == pytest.approx(
                    best[(name, u)] / best[("TinyQ", u)], rel=1e-12)
    # 9 midplanes: TinyQ3's 3x3x1x1 (768 links) against TinyQ's smallest holder, 12 (3x2x2x1, 1024 links)
    assert float(ds["speedup_vs_first_holding"].sel(size=4608, machine="TinyQ3")) == pytest.approx(0.75)
    assert cli_main([str(mdir / "tinyq.yaml"), "--compare", str(mdir / "tinyq3.yaml"), "--no-plot",
                     "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "TinyQ3: max speedup over TinyQ at equal size 1.00x (P = 512; tied at P = 1024, 1536, 2048 and 3072)" \
        in out


def test_compare_refuses_machines_of_different_allocation_units(capsys, tmp_path):
    """Mira (midplanes of 512 nodes) against Blue Waters (routers of 2 nodes): a 1000-node row was printed as
    "1 Midplanes" (1000 // 512) and stored so in the dataset's units."""
    with pytest.raises(P.PartitionError, match=r"machines = \['Mira', 'BlueWaters'\] is invalid; allowed: "
                                              r"machines of one allocation unit \(Mira: midplanes of 512 nodes; "
                                              r"BlueWaters: routers of 2 nodes\)"):
        P.compare_machines(["Mira", "BlueWaters"], [1000, 2048])
    assert cli_main(["Mira", "--compare", "BlueWaters", "--size", "1000", "--no-plot", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "allocation unit" in err and "Traceback" not in err


# ----------------------------------------------------------------------------------
# what is printed against what is stored
# ----------------------------------------------------------------------------------


def test_printed_tables_match_the_dataset_and_the_closed_form(mdir, tmp_path, capsys):
    m = machine(mdir, "tinyq.yaml")
    assert cli_main([str(mdir / "tinyq.yaml"), "--size", "4096", "2048", "--no-plot", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    ds = xr.open_dataset(next((tmp_path / "tinyq").glob("*.nc")), engine="h5netcdf").load()
    assert [int(x) for x in ds["size"]] == [2048, 4096]  # ascending whatever the order given
    shape = r"(\d+x\d+x\d+x\d+)"
    rows = re.findall(rf"^  {shape} +{shape} +(\S+) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+)x +(yes|no)$", out,
                      flags=re.M)
    assert len(rows) == ds.sizes["partition"] == 4
    for (label, shape, torus, links, bis, pn, sp, allowed), i in zip(rows, range(4)):
        canon = tuple(map(int, label.split("x")))
        assert ds["geometry"].values[i] == label and int(ds["bisection_links"][i]) == int(links) == bgq_links(canon)
        assert float(bis) * 1e9 == pytest.approx(float(ds["bisection_bandwidth"][i]), rel=1e-3)  # GB/s printed
        assert float(pn) * 1e9 == pytest.approx(float(ds["bisection_per_node"][i]), rel=1e-3)
        assert float(sp) == pytest.approx(float(ds["speedup_of_best"][i]), abs=5e-3)
        assert (allowed == "yes") == bool(ds["allowed"][i]) == (canon in {(1, 1, 1, 1), (4, 1, 1, 1), (2, 2, 1, 1),
                                                                        (4, 2, 1, 1)})
    # the summary: 8 midplanes, allowed 4x2x1x1 (512 links) -> best 2x2x2x1 (1024 links), 2.00x
    line = next(x for x in out.splitlines() if x.strip().startswith("4096 "))
    assert line.split() == ["4096", "8", "4x2x1x1", "512", "2x2x2x1", "1024", "2.00x"]
    assert float(ds["speedup_best_over_allowed"].sel(size=4096)) == 2.0
    assert ds["allowed_geometry"].sel(size=4096) == "4x2x1x1" and float(ds["allowed_links"].sel(size=4096)) == 512
    assert ds["bisection_bandwidth"].attrs["units"] == "bytes/s per direction" and ds["size"].attrs["units"] == "nodes"
    assert m.n_nodes == 8192


# ----------------------------------------------------------------------------------
# refusals: named field, the value given, what is allowed
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,pattern", [
    ({"wrap": "false"}, r"wrap = 'false' is invalid; allowed: one boolean"),
    ({"wrap": "no"}, r"wrap = 'no' is invalid"),
    ({"wrap": 1}, r"wrap = 1 is invalid"),
    ({"wrap": [True, "false"]}, r"wrap = \[True, 'false'\] is invalid"),
    ({"bandwidth": "2e9"}, r"bandwidth = '2e9' is invalid; allowed: finite numbers > 0"),
    ({"bandwidth": True}, r"bandwidth = True is invalid"),
    ({"wrap": "false", "embedded_in": [8, 8]}, r"wrap = 'false' is invalid"),
])
def test_bisection_refuses_flags_and_bandwidths_it_would_misread(kwargs, pattern):
    """``wrap="false"`` was read as True (bool of a non-empty string): a 4x4 mesh got a torus's 8 links."""
    with pytest.raises(P.PartitionError, match=pattern):
        P.torus_bisection([4, 4], **kwargs)
    assert P.torus_bisection([4, 4], wrap=False).links == 4 and P.torus_bisection([4, 4], wrap=True).links == 8


@pytest.mark.parametrize("call,pattern", [
    (lambda: P.analyse_machine("Mira", 512), r"sizes = 512 is invalid; allowed: a list of one or more"),
    (lambda: P.analyse_machine("Mira", "512"), r"sizes = '512' is invalid"),
    (lambda: P.analyse_machine("Mira", []), r"sizes = \[\] is invalid"),
    (lambda: P.compare_machines(["JUQUEEN", "JUQUEEN-48"], 512), r"sizes = 512 is invalid"),
    (lambda: P.confirm_machine("Mira", []), r"sizes = \[\] is invalid"),
    (lambda: P.confirm_machine("Mira", 1024), r"sizes = 1024 is invalid"),
])
def test_size_lists_are_refused_not_crashed_or_widened(call, pattern):
    """A single number crashed (TypeError: 'int' object is not iterable); an empty list ran every size."""
    with pytest.raises(P.PartitionError, match=pattern):
        call()


@pytest.mark.parametrize("size,pattern", [
    (0, r"partition size = 0 is invalid; allowed: a positive number of nodes, a multiple of 512"),
    (-512, r"partition size = -512 is invalid"),
    ("512", r"partition size = '512' is invalid"),
    (512.0, r"partition size = 512.0 is invalid"),
    (700, r"700 nodes is not a multiple of 512 nodes per midplane; nearest allowed: 512, 1024"),
    (512 * 97, r"49664 nodes is larger than the machine \(49152 nodes\)"),
    (512 * 5, r"no cuboid of 5 midplanes \(2560 nodes\) fits in midplanes 4x4x3x2; feasible sizes"),
])
def test_bad_sizes_name_the_value_and_what_is_allowed(size, pattern):
    with pytest.raises(P.PartitionError, match=pattern):
        P.partition_geometries("Mira", size)


def test_cli_bad_size_is_one_line_and_nothing_written(tmp_path, capsys):
    for argv, says in ((["Mira", "--size", "700"], "not a multiple of 512"),
                       (["Mira", "--size", "1024", "99999999"], "larger than the machine"),
                       (["Mira", "--pairing", "--size", "700"], "not a multiple of 512")):
        assert cli_main([*argv, "--no-plot", "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1, err
    assert not list(tmp_path.rglob("*.nc"))


# ----------------------------------------------------------------------------------
# uneven links (Gemini Y at half the bandwidth): what ranks is the bandwidth, not the link count
# ----------------------------------------------------------------------------------


def gemini_bw(shape, m):
    """Bisection bandwidth of a prism by cuts across one side written here: a side of s routers cut in its middle
    crosses (2 if it behaves as a ring else 1) x (routers / s) links; an odd side leaves its middle slab to be
    halved in turn (the cheapest such cut over every choice of side, minimum over the staircase)."""
    shape = tuple(shape)
    if math.prod(shape) <= 1:
        return 0.0
    best = math.inf
    for k, s in enumerate(shape):
        if s < 2:
            continue
        c = 2 if ring_in_host(s, m.dims[k], m.wrap[k]) and s >= 3 else 1
        cost = c * math.prod(shape) // s * m.link_bandwidth[k]
        if s % 2:
            cost += gemini_bw(shape[:k] + (1,) + shape[k + 1:], m)
        best = min(best, cost)
    return best


def test_partition_plot_of_uneven_links_draws_the_bandwidth_that_ranks(monkeypatch):
    """Titan, 9,600 nodes: the best geometry cuts 400 links, the worst 600 (Y links are half as fast); the plot
    drew links, so its "best possible" bar stood below its "worst" bar."""
    import evaluator.partitions.plots as plots

    figs = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figs.append(fig) or path)
    m = M.load_machine("Titan")
    a = P.analyse_size(m, 9600)
    assert a.best.bisection.links < a.worst.bisection.links  # (why links mislead here)
    best, worst = gemini_bw(a.best.shape, m), gemini_bw(a.worst.shape, m)
    assert best > worst and a.best.bisection.bandwidth == pytest.approx(best, rel=1e-12)
    plots.plot_partitions(P.partitions_dataset(m, [a]), "unused.png")
    ax = figs[-1].axes[0]
    heights = {t.get_text(): p.get_height() for t, p in zip(ax.get_legend().get_texts(), ax.patches)}
    assert heights["best possible"] > heights["worst"]
    assert heights["best possible"] / heights["worst"] == pytest.approx(best / worst, rel=1e-12)
    assert "[TB/s]" in ax.get_ylabel()
    # Blue Gene/Q (one link bandwidth): the papers' normalised links
    plots.plot_partitions(P.partitions_dataset("Mira", P.analyse_machine("Mira", [8192])), "unused.png")
    ax = figs[-1].axes[0]
    heights = sorted(p.get_height() for p in ax.patches)
    assert heights == [bgq_links((4, 4, 1, 1)), bgq_links((2, 2, 2, 2))] == [1024, 2048]
    assert "[links]" in ax.get_ylabel()


def test_compare_of_uneven_machines_prints_the_bandwidth_and_sorts_sizes(mdir, tmp_path, capsys, monkeypatch):
    """Titan against Blue Waters at 9,600 nodes: Blue Waters' best cuts more links (672 against 400) yet less
    bandwidth; a 'BW = bisection links' table said Blue Waters was better while its speedup said 0.88x. And
    sizes given out of order were printed out of order (the dataset sorts them)."""
    import evaluator.partitions.plots as plots

    figs = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figs.append(fig) or path)
    t, b = M.load_machine("Titan"), M.load_machine("BlueWaters")
    gt, gb = P.compare_machines([t, b], [9600])[9600].values()
    assert gt.bisection.links < gb.bisection.links
    assert gemini_bw(gt.shape, t) > gemini_bw(gb.shape, b)
    assert cli_main(["Titan", "--compare", "BlueWaters", "--size", "9600", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "BW = bisection bandwidth [TB/s]" in out and "BW = bisection links" not in out
    row = next(x.split() for x in out.splitlines() if x.strip().startswith("9600 "))
    assert float(row[3]) == pytest.approx(gemini_bw(gt.shape, t) / 1e12, rel=1e-3)
    assert float(row[5]) == pytest.approx(gemini_bw(gb.shape, b) / 1e12, rel=1e-3)
    assert "BlueWaters: max speedup over Titan at equal size 0.88x" in out
    ax = figs[-1].axes[0]
    assert [p.get_height() for p in ax.patches] == pytest.approx([gemini_bw(gt.shape, t) / 1e12,
                                                                  gemini_bw(gb.shape, b) / 1e12], rel=1e-12)
    assert list(P.compare_machines(["JUQUEEN", "JUQUEEN-54"], [4608, 4096, 4608])) == [4096, 4608]
    assert cli_main(["JUQUEEN", "--compare", "JUQUEEN-54", "--size", "4608", "4096", "--no-plot",
                     "--out", str(tmp_path)]) == 0
    sizes = [int(x.split()[0]) for x in capsys.readouterr().out.splitlines() if re.match(r"^ +\d+ +\d+ ", x)]
    assert sizes == [4096, 4608]
