"""Differential audit of ``evaluator study rdn`` (evaluator/studies/rdn.py, _rdn_points.py, _rdn_report.py).

Every expected number here comes from code written in this module, not from the study: a per-flow walk of the
documented routings (Dragonfly minimal local-global-local over the ``m`` parallel links of the ``consecutive``
arrangement; Valiant through a uniform intermediate group among the ``g - 2`` others; router-level Valiant through a
uniform router of the machine; TAGO on the RDN, every direct link between two groups equally, a third router inside
groups for ``valiant``), the documented background (every node outside the job on the TDN, the free nodes of the
job's groups inside their group on the RDN, each sending ``fraction`` of its injection bandwidth uniformly), the
documented mapping seed ``default_rng((seed, k, q, s))``, and the documented gain ``T_TDN / T_RDN``.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from evaluator import errors
from evaluator.studies.rdn import RdnMachine, allocation_mode_study, format_speedup_table, format_study, speedup_table
from tests.helpers import once

B = 1.0e9
M = RdnMachine(p=2, a=4, h=2, g=5, bandwidth=B)      # 40 nodes, m = floor(8/4) = 2 links per group pair
FRACTION = 0.26
PATTERN_K = {"stencil": 0, "neighbouring": 1, "all_to_all": 2}
REL = 1e-9


@pytest.fixture(scope="module")
@once
def study():
    return allocation_mode_study(M, groups=(2, 3), patterns=("stencil", "neighbouring", "all_to_all"),
                                 background=FRACTION, seed=7, bounds=(), adaptive=(), n_seeds=2)


# ----------------------------------------------------------------------------------------------- the walk
class Loads:
    """Link loads keyed by ``("inj", node)``, ``("ej", node)``, ``("l", r, r')`` and ``("g", ...)``."""

    def __init__(self):
        self.d: dict = {}

    def add(self, key, w):
        self.d[key] = self.d.get(key, 0.0) + w

    def router_bytes(self):
        return sum(v for k, v in self.d.items() if k[0] in ("l", "g"))


def _time(job: Loads, bg: Loads | None, router_only=False):
    """max over the links the job loads of load / (B - background rate)."""
    worst = 0.0
    for k, v in job.d.items():
        if v <= 0 or (router_only and k[0] in ("inj", "ej")):
            continue
        left = B - (bg.d.get(k, 0.0) if bg is not None else 0.0)
        if left <= 0:
            return float("inf")
        worst = max(worst, v / left)
    return worst


class Dragonfly:
    """DF(p, a, h, g), consecutive arrangement (the docstring of evaluator.topology.dragonfly)."""

    def __init__(self, p, a, h, g):
        self.p, self.a, self.h, self.g = p, a, h, g
        self.m = (a * h) // (g - 1)

    def owner(self, G, H, c):
        t = H if H < G else H - 1
        return G * self.a + (c * (self.g - 1) + t) // self.h

    def local(self, out, u, v, w):
        if u != v:
            out.add(("l", u, v), w)

    def to_group(self, out, r, H, w):
        """Minimal from router r to group H: yields (landing router, weight) after adding the first two hops."""
        G = r // self.a
        for c in range(self.m):
            o, land = self.owner(G, H, c), self.owner(H, G, c)
            self.local(out, r, o, w / self.m)
            out.add(("g", G, H, c), w / self.m)
            yield land, w / self.m

    def minimal(self, out, r, d, w):
        if r // self.a == d // self.a:
            self.local(out, r, d, w)
            return
        for land, wc in self.to_group(out, r, d // self.a, w):
            self.local(out, land, d, wc)

    def route(self, out, routing, r, d, w):
        S, D, g = r // self.a, d // self.a, self.g
        if S == D or routing == "minimal":
            self.minimal(out, r, d, w)
        elif routing == "valiant":
            for I in range(g):
                if I in (S, D):
                    continue
                for land, wc in self.to_group(out, r, I, w / (g - 2)):
                    self.minimal(out, land, d, wc)
        elif routing == "valiant_router":
            R = g * self.a
            for x in range(R):
                if x // self.a == S:
                    self.minimal(out, r, d, w / R)
                else:
                    self.minimal(out, r, x, w / R)
                    self.minimal(out, x, d, w / R)
        else:
            raise AssertionError(routing)


class Tago:
    """TAGO on an RDN given by its port table (``port_peer_group/port``: port j of a group on router j // h)."""

    def __init__(self, p, a, h, peer_group, peer_port, intra):
        self.p, self.a, self.h, self.intra = p, a, h, intra
        self.links = {}
        for G, j in zip(*np.nonzero(peer_group >= 0)):
            H, jj = int(peer_group[G, j]), int(peer_port[G, j])
            self.links.setdefault((int(G), H), []).append((G * a + j // h, H * a + jj // h, int(j)))

    def local(self, out, u, v, w):
        if u == v:
            return
        if self.intra == "minimal":
            out.add(("l", u, v), w)
            return
        G = u // self.a
        third = [G * self.a + i for i in range(self.a) if G * self.a + i not in (u, v)]
        for t in third:
            out.add(("l", u, t), w / len(third))
            out.add(("l", t, v), w / len(third))

    def route(self, out, r, d, w):
        S, D = r // self.a, d // self.a
        if S == D:
            self.local(out, r, d, w)
            return
        cables = self.links[(S, D)]                    # KeyError: an unconnected pair (the study says none)
        for o, land, j in cables:
            self.local(out, r, o, w / len(cables))
            out.add(("g", S, j), w / len(cables))
            self.local(out, land, d, w / len(cables))


def _walk(route, flows, node_of_task, p):
    """Job loads of (src_task, dst_task, bytes) flows (``route(loads, router, router, bytes)`` between routers);
    and the bytes that leave their node."""
    out, off = Loads(), 0.0
    for s, d, w in flows:
        ns, nd = int(node_of_task[s]), int(node_of_task[d])
        if ns == nd:
            continue
        off += w
        out.add(("inj", ns), w)
        out.add(("ej", nd), w)
        if ns // p != nd // p:
            route(out, ns // p, nd // p, w)
    return out, off


def _uniform_background(route, groups_of_nodes, p, fraction=FRACTION):
    """Every node of each list sends ``fraction * B`` spread evenly over the other nodes of its list (bytes/s)."""
    out = Loads()
    for nodes in groups_of_nodes:
        k = len(nodes)
        if k < 2:
            continue
        for s, d in itertools.permutations(nodes, 2):
            w = fraction * B / (k - 1)
            out.add(("inj", s), w)
            out.add(("ej", d), w)
            if s // p != d // p:
                route(out, s // p, d // p, w)
    return out


# ----------------------------------------------------------------------------------------- the jobs, rebuilt
def _stencil_flows(q, x, y):
    """Task grid (q, x, y), row-major, periodic, 4^3 elements of 256 bytes each: faces of 4096 bytes."""
    flows = []
    shape = (q, x, y)
    for t in range(q * x * y):
        c = np.unravel_index(t, shape)
        for k in range(3):
            if shape[k] == 1:
                continue
            for step in (1, -1):
                n = list(c)
                n[k] = (n[k] + step) % shape[k]
                flows.append((t, int(np.ravel_multi_index(n, shape)), 4 * 4 * 256.0))
    return flows


def _merged(flows):
    """{(src, dst): bytes} of a flow list (a pair's flows summed)."""
    out: dict = {}
    for s, d, w in flows:
        out[(s, d)] = out.get((s, d), 0.0) + w
    return out


def _job_flows(study_job):
    tr = study_job.to_flows()
    return list(zip(tr.src.tolist(), tr.dst.tolist(), tr.nbytes.tolist()))


def _grap_nodes(pattern, q):
    """GRAP's node sets on an empty machine, by the documented rules (docs/rdn.md)."""
    npg = M.nodes_per_group
    if pattern == "stencil":            # whole groups, lowest ids first
        return np.arange(q * npg)
    if pattern == "all_to_all":         # `adaptive_nodes` = 8/9 of a group (7 of 8) in each of q groups, lowest ids
        per = (8 * npg) // 9
        return np.concatenate([G * npg + np.arange(per) for G in range(q)])
    # custom: requirements alternating a group and 3/4 of one, sorted ascending, first fitting group each
    req = sorted(npg if i % 2 == 0 else (3 * npg) // 4 for i in range(q))
    return np.concatenate([G * npg + np.arange(r) for G, r in enumerate(req)])


def _tdn_nodes(seed, pattern, q, s, n_tasks):
    rng = np.random.default_rng([seed, PATTERN_K[pattern], q, s])
    chosen = np.sort(rng.choice(M.g * M.nodes_per_group, size=n_tasks, replace=False))
    return chosen[rng.permutation(n_tasks)]


def _expected_point(pattern, q, seed_index, base_seed=7):
    """Every time and hop count of one point and draw, from the walk."""
    from evaluator.studies._rdn_points import _job   # (the job's traffic: the input, checked below for the stencil)
    from evaluator.topology import rdn

    tr, _, nodes = _job(M, pattern, q)
    flows = _job_flows(tr)
    if pattern == "stencil":
        assert _merged(flows) == _merged(_stencil_flows(q, 2, 4))
    assert sorted(nodes.tolist()) == sorted(_grap_nodes(pattern, q).tolist())
    p, npg = M.p, M.nodes_per_group
    exp = {}
    # TDN
    df = Dragonfly(M.p, M.a, M.h, M.g)
    place = _tdn_nodes(base_seed, pattern, q, seed_index, len(nodes))
    others = sorted(set(range(M.g * npg)) - set(place.tolist()))
    for rt in ("minimal", "valiant", "valiant_router"):
        job, off = _walk(lambda o, r, d, w, rt=rt: df.route(o, rt, r, d, w), flows, place, p)
        bg = _uniform_background(lambda o, r, d, w, rt=rt: df.route(o, rt, r, d, w), [others], p) \
            if others else Loads()
        exp[f"tdn_{rt}_time"] = _time(job, None)
        exp[f"tdn_{rt}_time_bg"] = _time(job, bg)
        exp[f"tdn_{rt}_net_time_bg"] = _time(job, bg, router_only=True)
        exp[f"tdn_{rt}_hops"] = job.router_bytes() / off
    # RDN: the job's q groups renumbered 0..q-1 in id order, the configuration the docs name
    groups = np.unique(nodes // npg)
    local = np.searchsorted(groups, nodes // npg) * npg + nodes % npg
    demand = np.zeros((q, q))
    for s, d, w in flows:
        demand[local[s] // npg, local[d] // npg] += w
    np.fill_diagonal(demand, 0)
    if pattern == "all_to_all" or q == 2:
        topo = rdn(M.p, M.a, M.h, q, configuration="jobs", jobs=[list(range(q))])
    else:
        topo = rdn(M.p, M.a, M.h, q, configuration="traffic", jobs=[list(range(q))], demand=[demand])
    pg, pp = np.asarray(topo.port_peer_group), np.asarray(topo.port_peer_port)
    # the configuration is a union of matchings on the switches (k = 1: port j joins port j) that joins every
    # demanded pair; two groups: all P ports between them
    for G, j in zip(*np.nonzero(pg >= 0)):
        assert pp[G, j] == j and pg[pg[G, j], j] == G and pg[G, j] != G
    assert all((pg[S] == D).any() for S, D in zip(*np.nonzero(demand)))
    if q == 2:
        assert (pg == np.array([[1], [0]])).all()
    free = sorted(set(range(q * npg)) - set(local.tolist()))
    free_by_group = [[n for n in free if n // npg == G] for G in range(q)]
    for intra in ("minimal", "valiant"):
        net = Tago(M.p, M.a, M.h, pg, pp, intra)
        job, off = _walk(lambda o, r, d, w, net=net: net.route(o, r, d, w), flows, local, p)
        bg = _uniform_background(lambda o, r, d, w, net=net: net.route(o, r, d, w), free_by_group, p)
        exp[f"rdn_{intra}_time"] = _time(job, None)
        exp[f"rdn_{intra}_time_bg"] = _time(job, bg)
        exp[f"rdn_{intra}_net_time_bg"] = _time(job, bg, router_only=True)
        exp[f"rdn_{intra}_hops"] = job.router_bytes() / off
    return exp


POINTS = [(pat, q) for pat in ("stencil", "neighbouring", "all_to_all") for q in (2, 3, 5)]


@pytest.fixture(scope="module")
def expected():
    return {(pat, q, s): _expected_point(pat, q, s) for pat, q in POINTS for s in range(2)}


@pytest.mark.parametrize("pattern,q", POINTS)
def test_times_and_hops_match_a_per_flow_walk(study, expected, pattern, q):
    """Both networks' raw times (with, without background, router links only) and hops, every routing, every draw."""
    assert list(study.groups.values) == [2, 3, 5]
    assert study.refused.sel(pattern=pattern, groups=q).item() == ""
    for s in range(2):
        exp = expected[(pattern, q, s)]
        for name, want in exp.items():
            got = study[name].sel(pattern=pattern, groups=q)
            if "seed" in got.dims:
                got = got.sel(seed=s)
            assert float(got) == pytest.approx(want, rel=REL, abs=1e-18), (name, s)


@pytest.mark.parametrize("pattern,q", POINTS)
def test_gains_are_tdn_over_rdn_from_the_walk(study, expected, pattern, q):
    """gain_oblivious (with and without background) = the fastest TDN routing's time over RDN-GRAP's time (the
    faster of minimal/valiant inside groups): > 1 means the RDN is faster; the fastest routing's name too."""
    for s in range(2):
        e = expected[(pattern, q, s)]
        rdn_bg = min(e["rdn_minimal_time_bg"], e["rdn_valiant_time_bg"])
        rdn0 = min(e["rdn_minimal_time"], e["rdn_valiant_time"])
        tdn = {rt: e[f"tdn_{rt}_time_bg"] for rt in ("minimal", "valiant", "valiant_router")}
        tdn0 = min(e[f"tdn_{rt}_time"] for rt in ("minimal", "valiant", "valiant_router"))
        pt = dict(pattern=pattern, groups=q, seed=s)
        assert float(study.gain_oblivious.sel(**pt)) == pytest.approx(min(tdn.values()) / rdn_bg, rel=1e-9)
        assert float(study.gain_oblivious_no_bg.sel(**pt)) == pytest.approx(tdn0 / rdn0, rel=1e-9)
        fastest = min(tdn.values())
        tied = "=".join(rt for rt, t in tdn.items() if t <= fastest * (1 + 1e-9))   # ties are ties (DESIGN.md)
        assert str(study.tdn_oblivious_routing.sel(**pt).item()) == tied, (pattern, q, s)
        assert float(study.rdn_time_bg.sel(pattern=pattern, groups=q)) == pytest.approx(rdn_bg, rel=1e-9)


def test_the_walk_sees_the_rdn_win_somewhere(study, expected):
    """A guard that the comparisons above are not all trivially 1: the stencil on the whole machine is faster on
    the RDN (gain > 1) in the walk and in the study."""
    e = expected[("stencil", 5, 0)]
    t = min(e[f"tdn_{rt}_time_bg"] for rt in ("minimal", "valiant", "valiant_router"))
    assert t / min(e["rdn_minimal_time_bg"], e["rdn_valiant_time_bg"]) > 1.05
    assert float(study.gain_oblivious_mean.sel(pattern="stencil", groups=5)) > 1.05


def test_a_tie_between_routings_is_named_as_one(expected):
    """Guard for the tie rule above: on this machine the neighbouring job on 2 groups is bound by its nodes' own
    links under minimal and Valiant alike (the walk), so the study must not name minimal alone as the faster."""
    e = expected[("neighbouring", 2, 0)]
    assert e["tdn_minimal_time_bg"] == pytest.approx(e["tdn_valiant_time_bg"], rel=1e-12)


# ------------------------------------------------------------------------------------------------ the report
def _table_rows(text):
    """The first table of format_study: {(pattern, groups): [cells]} and its header."""
    lines = text.splitlines()
    header = lines[1]
    rows, pat = {}, None
    for line in lines[3:]:
        if not line.strip():
            break
        m = re.match(r"^(\S+)?\s+(\d+)\s{2,}(.*)$", line)
        pat = m.group(1) or pat
        rows[(pat, int(m.group(2)))] = re.split(r"\s{2,}", m.group(3).strip())
    return header, rows


def test_printed_times_are_the_walks_in_one_unit_per_column(study, expected):
    """Each time column has one decimal SI unit in its header; every cell, read back in that unit, is the walk's
    time (RDN) or the mean over the seeds (TDN, then [min, max]); the columns of a bound not asked for are absent."""
    text = format_study(study)
    header, rows = _table_rows(text)
    units = re.findall(r"(rdn_time_bg|tdn_oblivious_time_bg) \[(\w+)\]", header)
    assert [u[0] for u in units] == ["rdn_time_bg", "tdn_oblivious_time_bg"]
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    assert "vs adaptive" not in header            # bounds=(): no adaptive bound, so no column of it
    for (pat, q), cells in rows.items():
        e = [expected[(pat, q, s)] for s in range(2)]
        rdn_t = min(e[0]["rdn_minimal_time_bg"], e[0]["rdn_valiant_time_bg"])
        tdn_t = [min(x[f"tdn_{rt}_time_bg"] for rt in ("minimal", "valiant", "valiant_router")) for x in e]
        got_rdn = float(cells[0]) * scale[units[0][1]]
        m = re.fullmatch(r"(\S+) \[(\S+), (\S+)\]", cells[1])
        got = [float(v) * scale[units[1][1]] for v in m.groups()]
        assert got_rdn == pytest.approx(rdn_t, rel=5e-4), (pat, q)
        assert got == pytest.approx([np.mean(tdn_t), min(tdn_t), max(tdn_t)], rel=5e-4), (pat, q)
        gain = [t / rdn_t for t in tdn_t]
        assert f"{np.mean(gain):.2f}x [{min(gain):.2f}x, {max(gain):.2f}x]" in cells, (pat, q)


def test_a_saturated_link_is_inf_not_not_computed():
    """A background that leaves a link of the job no capacity (99% on DF(2,4,2,5): Valiant doubles the global
    load) gives an infinite time, computed, not missing: the walk agrees, and the printed table says inf, not n/a."""
    ds = allocation_mode_study(M, groups=(3,), patterns=("stencil",), background=0.99, seed=7, bounds=(),
                               adaptive=(), n_seeds=1)
    from evaluator.studies._rdn_points import _job
    tr, _, nodes = _job(M, "stencil", 3)
    place = _tdn_nodes(7, "stencil", 3, 0, len(nodes))
    df = Dragonfly(M.p, M.a, M.h, M.g)
    flows = _job_flows(tr)
    job, _ = _walk(lambda o, r, d, w: df.route(o, "valiant", r, d, w), flows, place, M.p)
    others = sorted(set(range(M.g * M.nodes_per_group)) - set(place.tolist()))
    bg = _uniform_background(lambda o, r, d, w: df.route(o, "valiant", r, d, w), [others], M.p, 0.99)
    assert _time(job, bg) == float("inf")
    assert float(ds.tdn_valiant_time_bg.sel(pattern="stencil", groups=3, seed=0)) == float("inf")
    text = format_study(ds)
    slow = text.split("TDN slowdown from the background")[1].splitlines()[3]
    assert "inf" in slow and "n/a" not in slow, slow


# -------------------------------------------------------------------------------------------- refused input
@pytest.mark.parametrize("kw,field", [
    (dict(patterns=("stencil", "stencil")), "patterns"),
    (dict(patterns=()), "patterns"),
    (dict(bounds=("optimal", "optimal")), "bounds"),
    (dict(adaptive=("ugal", "ugal")), "adaptive"),
    (dict(solver="simplex"), "solver"),
    (dict(background=float("nan")), "background"),
    (dict(background=1.0), "background"),
    (dict(groups=(1,)), "groups"),
    (dict(groups=(True,)), "groups"),
    (dict(seed=-1), "seed"),
    (dict(n_seeds=0), "n_seeds"),
    (dict(bounds=("ugal",)), "bounds"),
])
def test_bad_study_arguments_are_refused_before_any_work(monkeypatch, kw, field):
    """Refused with a ConfigError naming the field and the value, before the first point (a duplicated pattern
    used to run and then break format_study and speedup_table on the duplicated coordinate; a bad solver ran
    every point and left each bound NaN)."""
    import evaluator.studies.rdn as R

    monkeypatch.setattr(R, "_run_points", lambda *a, **k: pytest.fail("work started"))
    args = dict(groups=(2,), patterns=("stencil",), bounds=("optimal",), adaptive=(), n_seeds=1) | kw
    with pytest.raises(errors.ConfigError) as info:
        allocation_mode_study(M, **args)
    assert info.value.field == field
    assert "allowed" in str(info.value)


@pytest.mark.parametrize("argv,field", [
    (["--machine", "2,4,2,10"], "--machine"),
    (["--machine", "2,4,2"], "--machine"),
    (["--machine", "0,4,2,5"], "--machine"),
    (["--machine", "1,2,1,2"], "--machine"),
    (["--groups", "1,4"], "--groups"),
    (["--groups", "2.5"], "--groups"),
    (["--patterns", "stencil,ring"], "--patterns"),
    (["--bounds", "adaptive,adaptive"], "--bounds"),
    (["--background", "1"], "--background"),
    (["--background", "nan"], "--background"),
    (["--seed", "-3"], "--seed"),
    (["--seeds", "0"], "--seeds"),
    (["--max-lp-nnz", "0"], "--max-lp-nnz"),
    (["--speedup-out", "table.txt", "--baseline", "oblivious"], "--speedup-out"),
    (["--speedup-out", "foreign.nc", "--baseline", "oblivious"], "--speedup-out"),
    (["--speedup-out", "t.nc", "--bounds", "none"], "--baseline"),
])
def test_bad_command_lines_are_refused_before_any_work(monkeypatch, tmp_path, argv, field):
    import evaluator.studies.rdn as R

    monkeypatch.chdir(tmp_path)
    (tmp_path / "foreign.nc").write_text("a user's file")
    monkeypatch.setattr(R, "allocation_mode_study", lambda *a, **k: pytest.fail("work started"))
    with pytest.raises(errors.ConfigError) as info:
        R.main(["--machine", "2,4,2,5", "--out", "out"] + argv)
    assert info.value.field == field and "allowed" in str(info.value)
    assert (tmp_path / "foreign.nc").read_text() == "a user's file"
    assert not (tmp_path / "out").exists() and not (tmp_path / "t.nc").exists()


def test_speedup_out_file_is_the_walks_gain(monkeypatch, tmp_path, expected, capsys):
    """`--speedup-out` writes the table (mode x groups) whose speedup is the mean over the seeds of the walk's
    T_TDN / T_RDN (oblivious baseline; > 1: RDN-GRAP faster), printed as such; a second run may replace its own
    table, never the study's dataset."""
    import xarray as xr

    import evaluator.studies.rdn as R

    monkeypatch.chdir(tmp_path)
    argv = ["--machine", "2,4,2,5", "--groups", "3", "--patterns", "stencil", "--seed", "7", "--seeds", "2",
            "--bounds", "none", "--adaptive", "none", "--baseline", "oblivious", "--out", "o.nc",
            "--speedup-out", "sp.nc"]
    assert R.main(argv) == 0
    printed = capsys.readouterr().out
    with xr.open_dataset(tmp_path / "sp.nc") as tab:
        assert tab.attrs["baseline"] == "oblivious" and list(tab.groups.values) == [3, 5]
        for q in (3, 5):
            gains = []
            for s in range(2):
                e = expected[("stencil", q, s)]
                t = min(e[f"tdn_{rt}_time_bg"] for rt in ("minimal", "valiant", "valiant_router"))
                gains.append(t / min(e["rdn_minimal_time_bg"], e["rdn_valiant_time_bg"]))
            assert min(gains) > 1                     # the stencil: RDN-GRAP faster here, a ratio above 1
            for mode in ("minimal_balance", "custom_balance"):
                got = tab.sel(mode=mode, groups=q)
                assert float(got.speedup) == pytest.approx(np.mean(gains), rel=1e-9)
                assert float(got.speedup_min) == pytest.approx(min(gains), rel=1e-9)
                assert float(got.time_saved) == pytest.approx(1 - 1 / np.mean(gains), rel=1e-9)
                assert f"{np.mean(gains):.2f}x [{min(gains):.2f}x, {max(gains):.2f}x]" in printed
    # a rerun replaces its own table (the check a second run makes before any work passes), a foreign file not
    R.check_output_file("--speedup-out", "sp.nc", tmp_path / "sp.nc", R._is_speedup_table)
    with pytest.raises(errors.ConfigError, match="--speedup-out"):
        R.check_output_file("--speedup-out", "o.nc", tmp_path / "o.nc", R._is_speedup_table)


def test_network_gain_compares_the_routings_each_side_takes(study, expected):
    """network_gain_oblivious = the TDN's router-link time / the RDN's, each of the routing its side takes by its
    whole time with background (the TDN: the fastest oblivious routing of the seed; the RDN: the faster inside
    groups, Valiant only where strictly faster). The RDN's side was the faster on the router links alone: two
    different choices in one ratio."""
    for pattern, q in POINTS:
        for s in range(2):
            exp = expected[(pattern, q, s)]
            tdn = min(("minimal", "valiant", "valiant_router"), key=lambda rt: exp[f"tdn_{rt}_time_bg"])
            rdn_rt = "valiant" if exp["rdn_valiant_time_bg"] < exp["rdn_minimal_time_bg"] else "minimal"
            want = exp[f"tdn_{tdn}_net_time_bg"] / exp[f"rdn_{rdn_rt}_net_time_bg"]
            got = float(study["network_gain_oblivious"].sel(pattern=pattern, groups=q, seed=s))
            assert got == pytest.approx(want, rel=REL), (pattern, q, s, tdn, rdn_rt)


@pytest.mark.parametrize("kw, field", [
    (dict(p=1.5), "machine.p"), (dict(p="2"), "machine.p"), (dict(a=True), "machine.a"), (dict(h=0), "machine.h"),
    (dict(g=1), "machine.g"), (dict(g=10), "machine.g"), (dict(bandwidth=-1.0), "machine.bandwidth"),
    (dict(bandwidth=float("inf")), "machine.bandwidth"), (dict(ports_per_switch=0), "machine.ports_per_switch"),
    (dict(nodes_per_adaptive=0), "machine.nodes_per_adaptive"), (dict(nodes_per_adaptive=9),
                                                                   "machine.nodes_per_adaptive")])
def test_a_bad_machine_field_is_refused_as_the_machines(kw, field):
    """A machine's bad field was refused as the topology's (``topology.p``), text crashed in a comparison
    (TypeError), and ``nodes_per_adaptive=0`` was accepted; each is refused when the machine is made, naming
    ``machine.FIELD``. (DF(2,4,2,g): A*H+1 = 9 groups at most; A*P = 8 nodes a group.)"""
    base = dict(p=2, a=4, h=2, g=5)
    with pytest.raises(errors.ConfigError) as e:
        RdnMachine(**{**base, **kw})
    assert e.value.field == field
