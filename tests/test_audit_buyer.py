"""Differential audit of the buyer's study (evaluator/studies/buyer.py, docs/buyer.md, docs/cost.md).

The study is run once, through its command line, at 16 nodes with two seeds at equal cost and equal power. Every
network is rebuilt here from the documented rules with the public builders, priced with docs/cost.md's counting
rules and price table written out below (not evaluator.cost), every point is evaluated with evaluator.evaluate,
and every number of the datasets and of the printout is compared with that reference.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import xarray as xr

import evaluator as ev
from evaluator.errors import ConfigError, WordedError
from evaluator.latency import Latency
from evaluator.placement import linear
from evaluator.routing import ecmp
from evaluator.studies.buyer import buyer_study, main
from evaluator.topology import dragonfly, fat_tree, torus
from evaluator.traffic import collective, from_flows, pencil, random_permutation, stencil

N = 16
SEEDS = 2
WORKLOADS = ("permutation", "allreduce_8B", "mix")
LINK = 25e9
ROUTINGS = {"fat_tree": ("dmodk", "ecmp", "ft_adaptive"), "dragonfly": ("minimal", "valiant", "ugal"),
            "torus": ("dor", "torus_adaptive")}
ADAPTIVE = ("ft_adaptive", "ugal", "torus_adaptive")
# docs/cost.md, "The default prices and power": (price relative, power W) per counted part
PRICE = {"switch": (5, 50), "port": (1, 5), "nic": (2, 20), "cu_short": (0.3, 0), "cu_long": (0.8, 2),
         "opt_short": (0.1, 0), "opt_long": (0.2, 0), "xcvr": (1.5, 12)}


# ------------------------------------------------------------------------------------------- references
def cubic(n: int, k: int = 3) -> list[int]:
    """``k`` factors of ``n`` (largest first) with the smallest largest/smallest ratio (then lexicographic)."""
    def splits(m, k):
        if k == 1:
            yield [m]
            return
        for a in range(1, m + 1):
            if m % a == 0:
                for rest in splits(m // a, k - 1):
                    yield [a, *rest]
    return min((sorted(f, reverse=True) for f in splits(n, k)), key=lambda f: (f[0] / f[-1], f))


def price(counts: dict) -> tuple[float, float]:
    return (sum(c * PRICE[k][0] for k, c in counts.items()), sum(c * PRICE[k][1] for k, c in counts.items()))


def df_counts(p, a, h, g):
    m = a * h // (g - 1)
    glob = g * a * h / 2 if g == a * h + 1 else g * (g - 1) * m / 2
    return {"switch": g * a, "port": g * a * (p + a - 1 + h), "nic": g * a * p,
            "cu_short": g * a * p + g * a * (a - 1) / 2, "opt_long": glob, "xcvr": 2 * glob}


def torus_counts(dims, c):
    R = math.prod(dims)
    short = sum(R * (n - 1) / n for n in dims if n >= 2)
    long_ = sum(R / n for n in dims if n >= 3)
    return {"switch": R, "port": R * (2 * len(dims) + c), "nic": R * c, "cu_short": short, "cu_long": long_}


def xgft_counts(m, w):
    sw = [m[1] * m[2] * w[0], m[2] * w[0] * w[1], w[0] * w[1] * w[2]]
    radix = max(m[0] + w[1], m[1] + w[2], m[2])
    return {"switch": sum(sw), "port": sum(sw) * radix, "nic": math.prod(m), "cu_short": math.prod(m),
            "opt_short": sw[0] * w[1], "opt_long": sw[1] * w[2], "xcvr": 2 * (sw[0] * w[1] + sw[1] * w[2])}


def reference_networks(n: int, equal: str) -> dict:
    """docs/buyer.md's three networks: {family: (topology, cost, power, within)} and the budget."""
    k = 0 if equal == "cost" else 1
    best = None
    for p in range(1, n + 1):
        g = max(2, -(-n // (2 * p * p)))
        if g <= 2 * p * p + 1 and (best is None or g * 2 * p * p < best[0]):
            best = (g * 2 * p * p, p, g)
    _, p, g = best
    dcp = price(df_counts(p, 2 * p, p, g))
    out = {"budget": dcp[k], "dragonfly": (dragonfly(p, 2 * p, p, g, bandwidth_p=LINK, bandwidth_l=LINK,
                                                     bandwidth_r=LINK), *dcp, True)}
    m, cands, seen = cubic(n), [], set()
    for j in range(m[0], 0, -1):
        w = (1, max(1, round(j / m[0] * m[0])), max(1, round(j / m[0] * m[1])))
        if w not in seen:
            seen.add(w)
            cands.append((lambda m=m, w=w: fat_tree(m, list(w), link_bandwidth=LINK, injection_bandwidth=LINK),
                          price(xgft_counts(m, w))))
    out["fat_tree"] = _nearest(cands, out["budget"], k)
    cands = [(lambda c=c: torus(cubic(n // c), link_bandwidth=LINK, nodes_per_router=c, injection_bandwidth=LINK),
              price(torus_counts(cubic(n // c), c))) for c in range(1, 65) if n % c == 0 and n // c >= 8]
    out["torus"] = _nearest(cands, out["budget"], k)
    return out


def _nearest(cands, budget, k):
    build, cp = min(cands, key=lambda x: abs(x[1][k] / budget - 1))     # min keeps the first of equals
    return build(), cp[0], cp[1], abs(cp[k] / budget - 1) <= 0.1


def workload(name: str, n: int, seed: int):
    if name == "permutation":
        return random_permutation(n, 32e6, seed=seed)
    if name == "allreduce_8B":
        return collective("allreduce", "recursive_doubling", n_tasks=n, nbytes=8.0)
    if name == "halo3d":
        b = cubic(n)   # docs/buyer.md: 31 x 31 elements of 1,024 bytes per face (984,064 bytes, nearest 1 MB)
        return stencil([31 * x for x in b], b, bytes_per_element=1024.0)
    if name == "fft_pencil":
        pr, pc = sorted(cubic(n, 2))
        return pencil(16 * pc, pr, pc)
    assert name == "mix"
    src, dst, nb, off = [], [], [], 0
    for job, d in (("halo3d", 2), ("fft_pencil", 4), ("permutation", 4)):
        tr = workload(job, n // d, seed)
        for ph in getattr(tr, "phases", (tr,)):
            f = ph.to_flows()
            src += list(np.asarray(f.src) + off)
            dst += list(np.asarray(f.dst) + off)
            nb += list(np.asarray(f.nbytes, float))
        off += n // d
    return from_flows(n, np.array(src), np.array(dst), np.array(nb))


def reference_point(topo, wl: str, routing: str, n: int, seed: int) -> tuple[float, float]:
    """(time, throughput) of one point; NaN where evaluate refuses it."""
    tr = workload(wl, n, seed)
    lat = wl == "allreduce_8B"
    if lat:   # docs/buyer.md: 0.255 us of overhead at each end, 90 ns per switch crossed, no wire time
        topo = topo.with_latency(Latency(send_overhead=0.255e-6, recv_overhead=0.255e-6, router=90e-9))
    try:
        ds = ev.evaluate(topo, tr, linear(topo, n), ecmp(seed) if routing == "ecmp" else routing)
    except ConfigError:
        return math.nan, math.nan
    t = float(ds["time_with_latency" if lat else "completion_time"])
    return t, float(ds["total_bytes"]) / t


# ------------------------------------------------------------------------------------------- the study, once
@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("buyer")
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["--nodes", str(N), "--seeds", str(SEEDS), "--equal", "cost,power", "--workloads", ",".join(WORKLOADS),
              "--out", str(out)])
    text = buf.getvalue()
    dss = {}
    for eq in ("cost", "power"):
        (nc,) = sorted(out.glob(f"buyer-{eq}-*.nc"))
        with xr.open_dataset(nc) as ds:
            dss[eq] = ds.load()
    return dss, text


@pytest.fixture(scope="module")
def reference(study):
    nets = {eq: reference_networks(N, eq) for eq in ("cost", "power")}
    times = {}
    for eq in nets:
        for fam in ROUTINGS:
            topo = nets[eq][fam][0]
            for r in ROUTINGS[fam]:
                for wl in WORKLOADS:
                    for s in range(SEEDS):
                        key = (topo.name, r, wl, s)
                        if key not in times:
                            seeded = wl in ("permutation", "mix") or r == "ecmp"
                            times[key] = (reference_point(topo, wl, r, N, s) if seeded or s == 0
                                          else times[(topo.name, r, wl, 0)])
    return nets, times


EQUALS = ("cost", "power")


@pytest.mark.parametrize("equal", EQUALS)
def test_networks_and_prices(study, reference, equal):
    ds, (nets, _) = study[0][equal], reference
    assert float(ds["budget"].sel(size=N)) == pytest.approx(nets[equal]["budget"], rel=1e-12)
    for fam in ROUTINGS:
        topo, cost, power, within = nets[equal][fam]
        sel = ds.sel(size=N, network=fam)
        assert str(sel["topology"].values) == topo.name, fam
        assert int(sel["nodes"]) == topo.n_nodes
        assert float(sel["cost"]) == pytest.approx(cost, rel=1e-12), fam
        assert float(sel["power"]) == pytest.approx(power, rel=1e-12), fam
        assert bool(sel["within_tolerance"]) == within, fam


@pytest.mark.parametrize("equal", EQUALS)
def test_times_and_throughputs_are_evaluate(study, reference, equal):
    ds, (nets, times) = study[0][equal], reference
    for fam, rs in ROUTINGS.items():
        name = nets[equal][fam][0].name
        for r in ds["routing"].values:
            for wl in WORKLOADS:
                got = ds["time"].sel(size=N, network=fam, routing=r, workload=wl).values
                thr = ds["throughput"].sel(size=N, network=fam, routing=r, workload=wl).values
                why = str(ds["refused"].sel(size=N, network=fam, routing=r, workload=wl).values)
                if r not in rs:
                    assert np.isnan(got).all() and why
                    continue
                want = np.array([times[(name, r, wl, s)] for s in range(SEEDS)])
                np.testing.assert_allclose(got, want[:, 0], rtol=1e-9, err_msg=f"{fam}/{r} {wl}")
                np.testing.assert_allclose(thr, want[:, 1], rtol=1e-9, err_msg=f"{fam}/{r} {wl}")
                assert bool(why) == bool(np.isnan(want[:, 0]).any()), (fam, r, wl, why)


@pytest.mark.parametrize("equal", EQUALS)
def test_statistics_over_seeds(study, equal):
    ds = study[0][equal]
    t = ds["time"].values
    with np.errstate(all="ignore"):
        ref = {"time_mean": t.mean(-1), "time_min": t.min(-1), "time_max": t.max(-1),
               "time_std": np.sqrt(((t - t.mean(-1, keepdims=True)) ** 2).mean(-1)),
               "time_p95": np.percentile(t, 95, axis=-1)}
        tpc = ds["throughput"].values.mean(-1) / ds["cost"].values[:, :, None, None]
    for k, v in ref.items():
        np.testing.assert_allclose(ds[k].values, v, rtol=1e-12, atol=0, equal_nan=True, err_msg=k)
    np.testing.assert_allclose(ds["throughput_per_cost"].values, tpc, rtol=1e-12, equal_nan=True)


def _best(ds, fam, wl):
    t = {r: float(np.mean(ds["time"].sel(size=N, network=fam, routing=r, workload=wl).values))
         for r in ROUTINGS[fam]}
    ok = {r: v for r, v in t.items() if math.isfinite(v)}
    lo = min(ok.values())
    return [r for r, v in ok.items() if v <= lo * (1 + 1e-9)], lo


@pytest.mark.parametrize("equal", EQUALS)
def test_printed_table(study, equal):
    ds, text = study[0][equal], study[1]
    block = text.split(f"equal {equal} (tolerance")[1].split("total ")[0]
    budget = float(ds["budget"].sel(size=N))
    watts = {"W": 1.0, "kW": 1e3, "MW": 1e6}
    if equal == "cost":
        assert f"budget {budget:.1f} (relative)" in block
    else:  # decimal SI (DESIGN.md): the budget in W, kW or MW, 4 significant digits
        value, unit = re.search(r"budget (\S+) (W|kW|MW)\n", block).groups()
        assert float(value) * watts[unit] == pytest.approx(budget, rel=5e-4) and 1 <= float(value) < 1000
    shown = []
    for fam in ROUTINGS:
        sel = ds.sel(size=N, network=fam)
        line = next(x for x in block.splitlines() if x.strip().startswith(fam + " ") and "cost" in x)
        assert f"cost {float(sel['cost']):10.1f}" in line
        value, unit = re.search(r"power +(\S+) (W|kW|MW)\b", line).groups()
        assert float(value) * watts[unit] == pytest.approx(float(sel["power"]), rel=5e-4), line
        shown.append(unit)
        assert ("OUTSIDE TOLERANCE" in line) == (not bool(sel["within_tolerance"]))
    assert len(set(shown)) == 1  # one unit for the block's power column
    best_block, every_block = block.split("best routing per network")[1].split("every routing")
    units = dict(re.findall(r"(\S+) \[(h|s|ms|us|ns)\]", best_block.splitlines()[1]))
    assert sorted(units) == sorted(WORKLOADS), best_block.splitlines()[1]  # one unit per workload column
    assert all(f"{wl} [{units[wl]}]" in every_block.splitlines()[1] for wl in WORKLOADS)  # the same in both tables
    rows = [x.split() for x in best_block.splitlines()]
    for fam in ROUTINGS:
        row = next(r for r in rows if r and r[0] == fam)[1:]
        for k, wl in enumerate(WORKLOADS):
            best, lo = _best(ds, fam, wl)
            assert row[2 * k] == "=".join(best), (fam, wl, row)
            assert _shows(row[2 * k + 1], lo, units[wl]), (fam, wl, row)
    for fam, rs in ROUTINGS.items():
        for r in rs:
            line = next(x for x in block.splitlines() if x.strip().startswith(f"{fam}/{r} "))
            cells = [c.strip() for c in line.strip()[len(f"{fam}/{r}"):].split("|")]
            for wl, cell in zip(WORKLOADS, cells):
                t = ds["time"].sel(size=N, network=fam, routing=r, workload=wl).values
                want = [float(t.mean())]
                if np.isfinite(t).all() and t.min() != t.max():
                    want += [float(t.min()), float(t.max())]
                got = cell.replace("[", " ").replace("]", " ").replace(",", " ").split()
                assert len(got) == len(want) and all(_shows(g, w, units[wl]) for g, w in zip(got, want)), \
                    (fam, r, wl, cell)


_FACTOR = {"h": 3600.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def _shows(text: str, t: float, unit: str) -> bool:
    """Whether ``text`` shows the time ``t`` in ``unit`` to four significant digits (or at least to the unit's
    last printed decimal, for values well below the column's typical one)."""
    if not math.isfinite(t):
        return text == "NaN"
    v = float(text) * _FACTOR[unit]
    decimals = len(text.split(".")[1]) if "." in text else 0
    return abs(v - t) <= max(5e-4 * abs(t), 0.5 * 10.0 ** -decimals * _FACTOR[unit]) * (1 + 1e-9) and \
        (decimals == 0 or len(text.replace("-", "").replace(".", "").lstrip("0")) == 4)


def test_seed_zero_permutation_differs_by_seed(study):
    """Two seeds are two permutations: the study's seed axis is not one point copied."""
    t = study[0]["cost"]["time"].sel(size=N, network="fat_tree", routing="dmodk", workload="permutation").values
    assert np.isfinite(t).all()
    a, b = (random_permutation(N, 32e6, seed=s).to_flows() for s in range(2))
    assert not np.array_equal(np.asarray(a.dst), np.asarray(b.dst))


# ------------------------------------------------------------------------------------------- bad options
@pytest.mark.parametrize("argv,field,value", [
    (["--nodes", "0"], "--nodes", "0"), (["--nodes", "1.5"], "--nodes", "1.5"), (["--nodes", "3_2"], "--nodes", "3_2"),
    (["--nodes", "\u0663\u0662"], "--nodes", "\u0663\u0662"), (["--nodes", "32,32"], "--nodes", "32,32"),
    (["--seeds", "0"], "--seeds", "0"), (["--seeds", "2.5"], "--seeds", "2.5"), (["--seeds", "1_0"], "--seeds", "1_0"),
    (["--equal", "speed"], "--equal", "speed"), (["--equal", "cost,cost"], "--equal", "cost,cost"),
    (["--workloads", "permutation,permutation"], "--workloads", "permutation,permutation"),
    (["--workloads", "perm"], "--workloads", "perm"), (["--tolerance", "1"], "--tolerance", "1"),
    (["--nodes", "48"], "--nodes", "48"), (["--nodes", "512,60", "--workloads", "mix"], "--nodes", "512,60"),
])
def test_bad_options_refused_before_work(argv, field, value, tmp_path, monkeypatch):
    import evaluator.studies.buyer as mod

    def no_work(*a, **k):
        raise AssertionError("the study started on a bad option")
    monkeypatch.setattr(mod, "buyer_study", no_work)
    with pytest.raises(ConfigError) as exc:
        main([*argv, "--out", str(tmp_path / "o")])
    msg = str(exc.value)
    assert field in msg and repr(value) in msg and "allowed" in msg, msg


def test_python_api_refuses_repeated_workloads():
    with pytest.raises(ConfigError, match="workloads"):
        buyer_study([N], 1, workloads=("allreduce_8B", "allreduce_8B"))
    with pytest.raises(ConfigError, match="workloads"):
        buyer_study([N], 1, workloads=("nope",))


def test_unknown_option_names_it(tmp_path):
    with pytest.raises(WordedError, match="--bogus"):
        main(["--bogus", "1", "--out", str(tmp_path)])


def test_halo_face_bytes_as_documented():
    """docs/buyer.md: 31 x 31 elements of 1,024 bytes per face (the code's comment once said 32 x 32)."""
    from pathlib import Path

    from evaluator.studies.buyer import build_workload

    f = build_workload("halo3d", 64).to_flows()
    assert set(np.asarray(f.nbytes, float).tolist()) == {31 * 31 * 1024.0}
    assert len(f.nbytes) == 64 * 6
    doc = Path(__file__).resolve().parents[1] / "docs" / "buyer.md"
    assert "31 x 31 elements of 1,024 bytes (984,064 bytes" in doc.read_text()


class Started(Exception):
    pass


def _fft_builds(m: int) -> bool:
    """The FFT of ``m`` tasks: squarest p_row <= p_col, grid 16 p_col, which p_row and p_col must divide."""
    pr, pc = sorted(cubic(m, 2))
    return (16 * pc) % pr == 0 and (16 * pc) % pc == 0


@pytest.mark.parametrize("wl", ["fft_pencil", "mix"])
def test_sizes_whose_fft_cannot_be_built_are_refused_before_work(wl, tmp_path, monkeypatch):
    """48 nodes passed every check, then the study stopped at its first FFT point with traffic.p_row's error
    (after every size before it had been computed)."""
    import evaluator.studies.buyer as mod

    def started(*a, **k):
        raise Started()
    monkeypatch.setattr(mod, "buyer_study", started)
    refused = []
    for n in range(16, 132, 4):
        try:
            mod._check_sizes(str(n))
        except ConfigError:
            continue
        with pytest.raises((ConfigError, Started)) as exc:
            main(["--nodes", str(n), "--workloads", wl, "--out", str(tmp_path / "o")])
        ok = _fft_builds(n if wl == "fft_pencil" else n // 4)
        assert isinstance(exc.value, Started) == ok, (n, wl, str(exc.value))
        if not ok:
            refused.append(n)
            assert "--nodes" in str(exc.value) and f"At {n} nodes {wl}" in str(exc.value)
    assert 48 in refused or wl == "mix"
    assert 60 in refused or wl == "fft_pencil"
    with pytest.raises(ConfigError, match="sizes"):
        buyer_study([48], 1, workloads=("fft_pencil",))


def test_network_buyer_sweep_arithmetic():
    """sweeps/network_buyer.yaml: its three networks have 50 GB/s of switch-to-switch bandwidth per node, the
    directed router links it counts, and the link speed ratios its comment states (it said 2.2x for the
    Dragonfly's links: 18.6 / 12.5 is 1.49; 2.2 is the Dragonfly's over the torus's)."""
    from pathlib import Path

    import yaml

    path = Path(__file__).resolve().parents[1] / "sweeps" / "network_buyer.yaml"
    text = path.read_text()
    topos = yaml.safe_load(text)["sweep"]["axes"]["network"]["zip"]["topology"]
    built, bw = [], {}
    for spec in topos[1:]:
        s = {k: v for k, v in spec.items() if k != "kind"}
        kind = spec["kind"]
        t = {"fat_tree": fat_tree, "dragonfly": dragonfly, "torus": torus}[kind](**s)
        built.append(t)
        bw[kind] = float(s.get("link_bandwidth", s.get("bandwidth_l", 0)))
    for t, links in zip(built, (2048, 1376, 3072)):
        n_router = len(t.link_src) - 2 * t.n_nodes                 # less each node's injection and ejection link
        assert n_router == links, t.name
        per_node = (float(np.sum(t.capacity)) - 2 * t.n_nodes * 12.5e9) / t.n_nodes
        assert per_node == pytest.approx(50e9, rel=1e-6), t.name
    m = re.search(r"makes the Dragonfly's links ([\d.]+)x and the\s*#?\s*torus's ([\d.]+)x", text)
    assert m, "the ratio sentence"
    assert float(m.group(1)) == pytest.approx(bw["dragonfly"] / bw["fat_tree"], abs=0.006)
    assert float(m.group(2)) == pytest.approx(bw["torus"] / bw["fat_tree"], abs=0.006)
