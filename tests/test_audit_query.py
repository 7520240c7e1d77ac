"""Audit of ``evaluator query`` (evaluator/query.py, evaluator/cli/query.py) against references written here from
the definitions in README.md and docs/sweeps.md, not from the code under test.

The references: a row is a feasible entry of the ranked variable with a value (finite; +inf for a throughput);
rows are sorted best first (smaller time, larger throughput; stable in the dataset's C order); a row shares the
rank of the first row of its block when equal within 1e-9 relative (``1=``); ``ahead_by`` is how many times better
than the next row not tied with it (with ``--over``: than the best row of its combination not tied with the best);
``--draws`` ranks each point by the mean over its draws with NumPy's 95th percentile (5th of a throughput), max and
min beside it, a point with an infeasible or valueless draw left out. Displayed numbers are read back in the
decimal SI unit of their header. The datasets are a real sweep (the CLI, a 4x4 torus) and hand-made ones with ties,
zeros, NaN and infinities.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import math
import re
import shlex
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from evaluator import cli
from evaluator.query import best

TIE = 1e-9
SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "h": 3600.0, "TB/s": 1e12, "GB/s": 1e9, "MB/s": 1e6,
         "kB/s": 1e3, "B/s": 1.0, "TB": 1e12, "GB": 1e9, "MB": 1e6, "kB": 1e3, "B": 1.0, "x": 1.0}
"""Decimal SI display units (README: 1 GB/s = 10^9 bytes/s) and their size in the base unit."""
DIMS = ("routing", "traffic.n_tasks", "placement.seed")


# ---------------------------------------------------------------- running and reading the CLI

def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    return rc, out.getvalue(), err.getvalue()


def parse(text: str) -> tuple[list[dict], list[str]]:
    """The printed table as rows of {column: cell} (plus 'rank'), and the lines under it. Cells are read by the
    header's right edges (pandas right-aligns headers and cells)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if i + 1 < len(lines) and lines[i + 1].startswith("rank"))
    header = lines[start]
    cols = [(m.group(0), m.end()) for m in re.finditer(r"[^\s\[]+(?: \[[^\]]*\])?", header)]
    rows, i = [], start + 2
    while i < len(lines) and re.match(r"^\d+=?\s", lines[i]):
        ln = lines[i]
        row = {"rank": ln.split()[0]}
        prev = None
        for name, end in cols:
            cell = ln[:end].split(maxsplit=1)[1] if prev is None else ln[prev:end]
            row[name] = cell.strip()
            prev = end
        rows.append(row)
        i += 1
    return rows, lines[i:]


def si(row: dict, name: str) -> float:
    """The cell of column ``name`` (any unit) in SI: '-' is NaN."""
    key = next(k for k in row if k == name or k.startswith(name + " ["))
    cell = row[key]
    if cell == "-":
        return math.nan
    unit = re.search(r"\[(.*)\]$", key)
    return float(cell) * (SCALE[unit.group(1)] if unit else 1.0)


def close(got: float, want: float, rel: float = 6e-4) -> bool:
    """Equal to 4 significant digits (the display's), NaN equal to NaN."""
    if math.isnan(want) or math.isinf(want) or want == 0:
        return (math.isnan(got) and math.isnan(want)) or got == want
    return abs(got - want) <= rel * abs(want)


# ---------------------------------------------------------------- the references

def is_tied(a: float, b: float) -> bool:
    return a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= TIE * max(abs(a), abs(b)))


def times_better(w: float, o: float, smaller: bool) -> float:
    if w < 0 or o < 0:
        return math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(o) / np.float64(w) if smaller else np.float64(w) / np.float64(o))


def ref_rows(ds: xr.Dataset, name: str, smaller: bool, keep: dict | None = None) -> list[tuple[tuple, float]]:
    """(labels, value) of every feasible entry with a value, C order; ``keep``: {axis: labels} to keep."""
    da = ds[name]
    dims = list(da.dims)
    rows = []
    for idx in itertools.product(*[range(ds.sizes[d]) for d in dims]):
        sel = dict(zip(dims, idx))
        labels = tuple(str(ds[d].values[i]) for d, i in zip(dims, idx))
        if keep and any(labels[dims.index(k)] not in v for k, v in keep.items()):
            continue
        if "feasible" in ds and not bool(ds["feasible"].isel(sel)):
            continue
        v = float(da.isel(sel))
        if math.isfinite(v) or (v == math.inf and not smaller):
            rows.append((labels, v))
    return rows


def ref_rank(rows: list, smaller: bool) -> tuple[list, list[int]]:
    rows = sorted(rows, key=lambda r: r[1] if smaller else -r[1])
    ranks, start = [], 0
    for i, (_, v) in enumerate(rows):
        if i and is_tied(v, rows[start][1]):
            ranks.append(start + 1)
        else:
            start = i
            ranks.append(i + 1)
    return rows, ranks


def ref_plain(rows: list, smaller: bool) -> list[tuple]:
    """(labels, value, rank, ahead_by) best first."""
    rows, ranks = ref_rank(rows, smaller)
    out = []
    for i, (labels, v) in enumerate(rows):
        nxt = [j for j in range(len(rows)) if ranks[j] > ranks[i]]
        out.append((labels, v, ranks[i], times_better(v, rows[nxt[0]][1], smaller) if nxt else math.nan))
    return out


def ref_over(rows: list, dims: list[str], over: list[str], smaller: bool) -> list[tuple]:
    """(labels, value, rank, ahead_by, runner_up): each combination of the other axes' best rows (and ties)."""
    rows_sorted = sorted(rows, key=lambda r: r[1] if smaller else -r[1])
    keep = [i for i, d in enumerate(dims) if d not in over]
    groups: dict = {}
    for r in rows_sorted:
        groups.setdefault(tuple(r[0][i] for i in keep), []).append(r)
    chosen = []
    for rs in groups.values():
        win = [r for r in rs if is_tied(r[1], rs[0][1])]
        rest = [r for r in rs if not is_tied(r[1], rs[0][1])]
        ahead = times_better(rs[0][1], rest[0][1], smaller) if rest else math.nan
        runner = ", ".join(f"{d}={rest[0][0][dims.index(d)]}" for d in dict.fromkeys(over)) if rest else ""
        chosen += [(r, ahead, runner) for r in win]
    chosen.sort(key=lambda c: rows_sorted.index(c[0]))
    _, ranks = ref_rank([c[0] for c in chosen], smaller)
    return [(c[0][0], c[0][1], rk, c[1], c[2]) for c, rk in zip(chosen, ranks)]


def ref_draws(ds: xr.Dataset, name: str, draws: list[str], smaller: bool, keep: dict | None = None) -> list[tuple]:
    """(labels, mean, rank, tail, max, min) per point over its draws; a point with an infeasible or non-finite
    draw is left out."""
    dims = [d for d in ds[name].dims if d not in draws]
    da = ds[name].where(ds["feasible"]) if "feasible" in ds else ds[name]
    if keep:
        da = da.isel({k: [i for i, x in enumerate(da[k].values) if str(x) in v] for k, v in keep.items()})
    v = da.transpose(*dims, *draws).values
    v = v.reshape(v.shape[:len(dims)] + (-1,))
    rows, stats = [], {}
    for idx in itertools.product(*[range(s) for s in v.shape[:-1]]):
        x = v[idx]
        if np.isfinite(x).all():
            labels = tuple(str(da[d].values[i]) for d, i in zip(dims, idx))
            rows.append((labels, float(np.mean(x))))
            stats[labels] = (float(np.quantile(x, 0.95 if smaller else 0.05)), float(x.max()), float(x.min()))
    rows, ranks = ref_rank(rows, smaller)
    return [(lab, m, rk) + stats[lab] for (lab, m), rk in zip(rows, ranks)]


def rank_text(ranks: list[int], i: int) -> str:
    return f"{ranks[i]}=" if ranks.count(ranks[i]) > 1 else str(ranks[i])


# ---------------------------------------------------------------- datasets

def synthetic(path: Path | None, t: np.ndarray, feasible: np.ndarray | None = None) -> xr.Dataset:
    routings = ["a", "b", "c"][:t.shape[0]]
    ds = xr.Dataset(coords={"routing": routings, "traffic.n_tasks": ["8", "16"][:t.shape[1]],
                            "placement.seed": [str(i) for i in range(t.shape[2])]})
    ds["completion_time"] = (DIMS, t, {"units": "s"})
    with np.errstate(divide="ignore"):
        ds["throughput"] = (DIMS, 1e6 / t, {"units": "bytes/s"})
    ds["feasible"] = (DIMS, np.ones(t.shape, bool) if feasible is None else feasible)
    if path is not None:
        ds.to_netcdf(path, engine="h5netcdf")
    return ds


EDGE = np.array([[[1e-3, 2e-3, np.nan], [3e-3, 3e-3, 1e-3]], [[0.5e-3, 4e-3, 2e-3], [np.inf, 0.0, 1e-3]]])
"""Ties (1 ms thrice), a zero time (an infinite throughput), NaN and an infinite time (a throughput of 0)."""


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict:
    t = tmp_path_factory.mktemp("audit_query")
    rc, out, err = run(["sweep", "topology=torus", "topology.dims=[4,4]", "routing=dor,kshortest",
                        "traffic=random_permutation", "traffic.n_tasks=8,16", "placement=random",
                        "placement.seed=range(0,3)", "ray.enabled=false", "--no-progress", f"sweep.output_dir={t}"])
    assert rc == 0, err
    (sweep,) = sorted(t.rglob("*.nc"))
    edge = t / "edge dir" / "edge.nc"  # (a space in the path: printed commands must quote it)
    edge.parent.mkdir()
    synthetic(edge, EDGE)
    foo = t / "foo.nc"
    xr.Dataset({"foo": ("x", np.arange(3.0))}).to_netcdf(foo, engine="h5netcdf")
    with xr.open_dataset(sweep, engine="h5netcdf") as ds:
        real = ds.load()
    return {"dir": t, "sweep": sweep, "real": real, "edge": edge, "edge_ds": synthetic(None, EDGE), "foo": foo}


# ---------------------------------------------------------------- the printed tables against the references

def check_plain(text: str, expect: list[tuple], dims, metric: str) -> None:
    rows, _ = parse(text)
    assert len(rows) == len(expect), (text, expect)
    ranks = [e[2] for e in expect]
    printed = [int(r["rank"].rstrip("=")) for r in rows]
    assert printed == sorted(printed), text  # best first
    order = [e[0] for e in expect]  # tied rows (one rank) may come in any order: a tie names no winner
    rows.sort(key=lambda r: (int(r["rank"].rstrip("=")), order.index(tuple(r[d] for d in dims))
                             if tuple(r[d] for d in dims) in order else -1))
    for i, (row, (labels, v, _, ahead)) in enumerate(zip(rows, expect)):
        assert tuple(row[d] for d in dims) == labels, (i, row, labels)
        assert row["rank"] == rank_text(ranks, i), (i, row, ranks)
        assert close(si(row, metric), v), (i, row, v)
        assert close(si(row, "ahead_by"), ahead), (i, row, ahead)


@pytest.mark.parametrize("metric,smaller", [("completion_time", True), ("throughput", False)])
def test_real_sweep_ranking_every_row(made, metric, smaller):
    rc, out, err = run(["query", str(made["sweep"]), "--best", metric, "-n", "0"])
    assert rc == 0, err
    check_plain(out, ref_plain(ref_rows(made["real"], metric, smaller), smaller), DIMS, metric)


@pytest.mark.parametrize("metric,smaller", [("completion_time", True), ("throughput", False)])
def test_edge_values_ranking_and_unranked_note(made, metric, smaller):
    """A zero time ranks first (ahead by inf), NaN and an infinite time are not ranked and named under the table;
    a throughput of +inf is the best and 0 the worst (ranked)."""
    rc, out, err = run(["query", str(made["edge"]), "--best", metric, "-n", "0"])
    assert rc == 0, err
    ds = made["edge_ds"]
    check_plain(out, ref_plain(ref_rows(ds, metric, smaller), smaller), DIMS, metric)
    every = ref_rows(ds.assign(feasible=ds.feasible & False | True), metric, smaller)
    lacking = ds.feasible.sum().item() - len(every)
    note = [ln for ln in parse(out)[1] if ln.startswith("not ranked")]
    assert note and f"not ranked: {lacking} feasible row" in note[0], out


@pytest.mark.parametrize("over", [["routing"], ["placement.seed"], ["routing", "traffic.n_tasks"], list(DIMS)])
@pytest.mark.parametrize("metric,smaller", [("completion_time", True), ("throughput", False)])
def test_over_best_per_group_with_runner_up(made, over, metric, smaller):
    for key in ("real", "edge_ds"):
        ds = made[key]
        path = made["sweep"] if key == "real" else made["edge"]
        rc, out, err = run(["query", str(path), "--best", metric, "--over", *over, "-n", "0"])
        assert rc == 0, err
        expect = ref_over(ref_rows(ds, metric, smaller), list(DIMS), over, smaller)
        rows, _ = parse(out)
        assert len(rows) == len(expect), (out, expect)
        ranks = [e[2] for e in expect]
        for i, (row, (labels, v, _, ahead, runner)) in enumerate(zip(rows, expect)):
            assert tuple(row[d] for d in DIMS) == labels and row["rank"] == rank_text(ranks, i), (row, labels)
            assert close(si(row, metric), v) and close(si(row, "ahead_by"), ahead), (row, v, ahead)
            assert row.get("runner_up", "") == runner, (row, runner)


def test_over_an_axis_given_twice_names_the_runner_up_once(made):
    rc, out, err = run(["query", str(made["sweep"]), "--over", "routing", "--over", "routing", "-n", "0"])
    assert rc == 0, err
    expect = ref_over(ref_rows(made["real"], "completion_time", True), list(DIMS), ["routing"], True)
    rows, _ = parse(out)
    assert [r.get("runner_up", "") for r in rows] == [e[4] for e in expect], out
    t = best(made["real"], "completion_time", over=["routing", "routing"])
    assert [str(x) for x in t.get("runner_up", [""] * len(t))] == [e[4] for e in expect]


@pytest.mark.parametrize("where", [{"routing": ["dor"]}, {"traffic.n_tasks": ["16"], "placement.seed": ["0", "2"]},
                                   {"routing": ["kshortest", "dor"], "placement.seed": ["1"]}])
def test_where_keeps_only_those_labels(made, where):
    argv = ["query", str(made["sweep"]), "-n", "0"]
    for k, v in where.items():
        argv += ["--where", f"{k}={','.join(v)}"]
    rc, out, err = run(argv)
    assert rc == 0, err
    check_plain(out, ref_plain(ref_rows(made["real"], "completion_time", True, where), True), DIMS,
                "completion_time")


@pytest.mark.parametrize("n", [1, 3, 5, 7])
def test_n_cuts_the_ranking_and_its_note_reprints_everything(made, n):
    path = str(made["sweep"])
    rc, out, err = run(["query", path, "--best", "throughput", "-n", str(n)])
    assert rc == 0, err
    full = ref_plain(ref_rows(made["real"], "throughput", False), False)
    rows, notes = parse(out)
    assert [tuple(r[d] for d in DIMS) for r in rows] == [e[0] for e in full[:n]]
    ranks = [e[2] for e in full]
    assert [r["rank"] for r in rows] == [rank_text(ranks, i) for i in range(n)]  # a tie cut off is still a tie
    tied_cut = sum(1 for r in ranks[n:] if r == ranks[n - 1])
    more = f" ({tied_cut} more tied with the last)" if tied_cut else ""
    note = next(ln for ln in notes if ln.startswith("shown:"))
    assert note.startswith(f"shown: the first {n} of {len(full)} rows{more}; every row: evaluator query "), note
    again = shlex.split(note.split("every row: evaluator ", 1)[1])
    rc, out_all, _ = run(again)
    assert rc == 0 and len(parse(out_all)[0]) == len(full)


def test_si_marks_a_tie_cut_off_and_prints_no_nan(made):
    """--si prints the values as stored, with the same rank marks as without it (3= where -n cut its ties) and
    '-' for the last row's ahead_by (README: '-' where there is none)."""
    ds, path = made["edge_ds"], str(made["edge"])
    full = ref_plain(ref_rows(ds, "completion_time", True), True)
    ranks = [e[2] for e in full]
    rc, out, err = run(["query", path, "--si", "-n", "3"])
    assert rc == 0, err
    rows, _ = parse(out)
    assert [r["rank"] for r in rows] == [rank_text(ranks, i) for i in range(3)] == ["1", "2", "3="], out
    assert [float(r["completion_time [s]"]) for r in rows] == [e[1] for e in full[:3]]
    rc, out, err = run(["query", path, "--si", "-n", "0"])
    rows, _ = parse(out)
    assert rows[-1]["ahead_by [x]"] == "-" and not [r for r in rows if "NaN" in r.values()], out
    assert [float(r["completion_time [s]"]) for r in rows] == [e[1] for e in full]


# ---------------------------------------------------------------- --draws

def check_draws(text: str, expect: list[tuple], dims, metric: str, smaller: bool) -> None:
    rows, _ = parse(text)
    assert len(rows) == len(expect), (text, expect)
    tail = f"{metric}_p95" if smaller else f"{metric}_p05"
    ranks = [e[2] for e in expect]
    for i, (row, (labels, mean, _, q, hi, lo)) in enumerate(zip(rows, expect)):
        assert tuple(row[d] for d in dims) == labels and row["rank"] == rank_text(ranks, i), (row, labels)
        got = [si(row, f"{metric}_mean"), si(row, tail), si(row, f"{metric}_max"), si(row, f"{metric}_min")]
        assert all(close(g, w) for g, w in zip(got, [mean, q, hi, lo])), (row, mean, q, hi, lo)


@pytest.mark.parametrize("metric,smaller", [("completion_time", True), ("throughput", False)])
@pytest.mark.parametrize("key", ["real", "edge_ds"])
def test_draws_mean_tail_and_range(made, metric, smaller, key):
    path = made["sweep"] if key == "real" else made["edge"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc, out, err = run(["query", str(path), "--best", metric, "--draws", "placement.seed", "-n", "0"])
    assert rc == 0, err
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    expect = ref_draws(made[key], metric, ["placement.seed"], smaller)
    check_draws(out, expect, ("routing", "traffic.n_tasks"), metric, smaller)


def test_draws_over_the_draws_where_keeps(made):
    rc, out, err = run(["query", str(made["sweep"]), "--draws", "placement.seed", "--where", "placement.seed=0,2",
                        "-n", "0"])
    assert rc == 0, err
    assert "placement.seed (2 of its 3 values, as --where asks: 0, 2)" in out
    expect = ref_draws(made["real"], "completion_time", ["placement.seed"], True, {"placement.seed": ["0", "2"]})
    check_draws(out, expect, ("routing", "traffic.n_tasks"), "completion_time", True)


def ref_left_out(ds: xr.Dataset, name: str, draw: str) -> list[tuple]:
    """The points with a feasible finite draw and another draw that is not: left out of a --draws table."""
    dims = [d for d in ds[name].dims if d != draw]
    out = []
    for idx in itertools.product(*[range(ds.sizes[d]) for d in dims]):
        sel = dict(zip(dims, idx))
        ok = [bool(ds["feasible"].isel(sel).values[k]) and math.isfinite(float(ds[name].isel(sel).values[k]))
              for k in range(ds.sizes[draw])]
        if any(ok) and not all(ok):
            out.append(tuple(str(ds[d].values[i]) for d, i in zip(dims, idx)))
    return out


@pytest.mark.parametrize("metric", ["completion_time", "throughput"])
def test_draws_say_which_points_they_leave_out(made, metric):
    """A point with one infeasible or valueless draw is left out of the means (docs/sweeps.md), and a line under
    the table says how many and which: before, the point was gone without a word."""
    rc, out, err = run(["query", str(made["edge"]), "--best", metric, "--draws", "placement.seed"])
    assert rc == 0, err
    expect = ref_left_out(made["edge_ds"], metric, "placement.seed")
    note = [ln for ln in parse(out)[1] if ln.startswith("left out:")]
    assert len(expect) == 2 and len(note) == 1, out
    assert note[0].startswith(f"left out: {len(expect)} points with an infeasible draw"), note
    assert all(f"routing={a}, traffic.n_tasks={b}" in note[0] for a, b in expect), (note, expect)
    for s in range(10):
        ds = random_dataset(200 + s)
        t = best(ds, metric, draws=["placement.seed"])
        got = t.attrs["left_out"]
        want = ref_left_out(ds, metric, "placement.seed")
        assert got[0] == len(want), (s, got, want)
        assert got[1] == [f"routing={a}, traffic.n_tasks={b}" for a, b in want[:3]], (s, got, want)


def random_dataset(seed: int) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    shape = (3, 2, 3)
    t = rng.choice([1e-3, 2e-3, 3e-3, 0.0], size=shape, p=[0.4, 0.3, 0.25, 0.05])
    t = t * (1 + rng.choice([0, 4e-10, -4e-10, 7e-10, 3e-9], size=shape))  # ties within 1e-9, chains, non-ties
    u = rng.random(shape)
    t[u < 0.07] = np.nan
    t[(u > 0.07) & (u < 0.12)] = np.inf
    return synthetic(None, t, rng.random(shape) > 0.1)


def test_random_datasets_library_rankings(made):
    """``best`` (the library) on 25 random datasets with near-ties, zeros, NaN, inf and infeasible points."""
    for s in range(25):
        ds = random_dataset(s)
        for metric, smaller in (("completion_time", True), ("throughput", False)):
            rows = ref_rows(ds, metric, smaller)
            t = best(ds, metric)
            got = [(tuple(str(r[d]) for d in DIMS), float(r[metric]), int(k)) for k, r in t.iterrows()]
            expect = ref_plain(rows, smaller)
            assert got == [e[:3] for e in expect], (s, metric)
            assert all(close(float(a), e[3], 1e-12) for a, e in zip(t["ahead_by"], expect)), (s, metric)
            for over in (["routing"], ["placement.seed", "routing"]):
                t = best(ds, metric, over=over)
                got = [(tuple(str(r[d]) for d in DIMS), float(r[metric]), int(k), str(r.get("runner_up", "")))
                       for k, r in t.iterrows()]
                expect = ref_over(rows, list(DIMS), over, smaller)
                assert got == [e[:3] + (e[4],) for e in expect], (s, metric, over)


def test_random_datasets_library_draws(made):
    for s in range(15):
        ds = random_dataset(100 + s)
        for metric, smaller in (("completion_time", True), ("throughput", False)):
            t = best(ds, metric, draws=["placement.seed"])
            expect = ref_draws(ds, metric, ["placement.seed"], smaller)
            tail = f"{metric}_p95" if smaller else f"{metric}_p05"
            got = [(tuple(str(r[d]) for d in ("routing", "traffic.n_tasks")), int(k)) for k, r in t.iterrows()]
            assert got == [(e[0], e[2]) for e in expect], (s, metric)
            if not expect:
                continue
            for col, j in ((f"{metric}_mean", 1), (tail, 3), (f"{metric}_max", 4), (f"{metric}_min", 5)):
                assert np.allclose(t[col].to_numpy(float), [e[j] for e in expect], rtol=1e-12), (s, col)


# ---------------------------------------------------------------- the printed --draws command

def draws_command(out: str) -> list[str] | None:
    line = next((ln for ln in out.splitlines() if ": random draws, " in ln), None)
    return None if line is None else shlex.split(line.split("tail and range: evaluator ", 1)[1])


def test_draws_line_reproduces_the_study_results_and_where(made, monkeypatch, tmp_path):
    """The command printed under a ranking of single draws ranks the same rows' means: it keeps --results (a study
    name is looked up there, not in ./results) and --where."""
    monkeypatch.chdir(tmp_path)  # (no ./results here: a command without --results finds no study)
    rc, out, err = run(["query", "sweep", "--results", str(made["dir"]), "--where", "routing=kshortest"])
    assert rc == 0, err
    again = draws_command(out)
    assert again is not None, out
    rc, out2, err2 = run(again)
    assert rc == 0, (again, err2)
    expect = ref_draws(made["real"], "completion_time", ["placement.seed"], True, {"routing": ["kshortest"]})
    check_draws(out2, expect, ("routing", "traffic.n_tasks"), "completion_time", True)


def test_draws_line_quotes_the_path_and_drops_a_seed_where_keeps_one(made):
    rc, out, err = run(["query", str(made["edge"])])
    assert rc == 0, err
    again = draws_command(out)
    assert again is not None and again[1] == str(made["edge"]), out  # one word, though it has a space
    rc, out, err = run(["query", str(made["edge"]), "--where", "placement.seed=1"])
    assert rc == 0, err
    assert draws_command(out) is None, out  # every row is the same draw: no 'one per row, the luckiest' claim


# ---------------------------------------------------------------- refusals

BAD = [
    (["--best", "nosuch"], ["--best", "'nosuch'", "completion_time", "throughput"]),
    (["--best", "routing"], ["--best", "'routing'", "coordinate"]),
    (["--over", "nosuch"], ["--over", "nosuch", "placement.seed"]),
    (["--where", "nosuch=1"], ["--where", "nosuch", "routing"]),
    (["--where", "routing=zz"], ["--where routing", "zz", "'a'", "'b'"]),
    (["--where", "routing"], ["--where", "'routing'", "AXIS=LABEL"]),
    (["--draws", "routing"], ["--draws", "routing", "placement.seed"]),
    (["--draws", "nosuch"], ["--draws", "nosuch", "placement.seed"]),
    (["--draws", "placement.seed", "--best", "completion_time_p05"], ["--best", "completion_time_p05",
                                                                      "completion_time_p95"]),
    (["--draws", "placement.seed", "--over", "placement.seed"], ["--over", "placement.seed", "routing"]),
    (["--draws", "placement.seed", "--where", "placement.seed=1"], ["--where", "placement.seed=1", "two draws"]),
    (["-n", "-1"], ["-n", "-1", ">= 0"]),
    (["--over"], ["--over", "AXIS"]),
]


@pytest.mark.parametrize("extra,words", BAD)
def test_bad_options_are_refused_naming_them(made, extra, words):
    rc, out, err = run(["query", str(made["edge"]), *extra])
    assert rc == 2 and "Traceback" not in err and "error:" in err, (rc, out, err)
    assert all(w in err for w in words), (words, err)


def test_files_that_are_not_datasets_are_refused_naming_the_path(made, tmp_path):
    text = tmp_path / "x.nc"
    text.write_text("hello")
    for path, words in ((text, ["not a netCDF-4"]), (tmp_path / "none.nc", ["No such file"]),
                        (made["foo"], ["PATH", "'foo'", "metric table"])):
        rc, out, err = run(["query", str(path)])
        assert rc == 2 and str(path) in err and "Traceback" not in err, err
        assert all(w in err for w in words) and "None" not in err, (words, err)
