"""Audit: the same input gives the same result in every fresh process.

Python salts ``str`` hashing per process (``PYTHONHASHSEED``): code that iterates a set of strings, sorts or
seeds by ``hash()``, or depends on ``id()`` order could give another chunk order, tie-break, seed, variable or
coordinate order, search trajectory or printed line in the next process. The mapping search also splits its
device calls by the cores it may use. So one script (:data:`SCRIPT`) runs a small batch of work (single
evaluations of tori, Dragonflies and fat trees under oblivious, path-set, adaptive and hashed routings with
seeded random placements, ``evaluate_batch``, several jobs with a seeded background, a seeded mapping search
bounded by iterations, a sweep without Ray, ``evaluator eval`` as printed, and a job-trace simulation under every
allocation policy, the random one seeded) in two fresh processes, with
different hash seeds and different core counts, and the two JSON outputs must agree bit for bit (floats as
``float.hex``, arrays by SHA-256 of their bytes, names and orders as lists).

Beside the process-to-process comparison, one number is checked against an independent per-flow walk (DOR on
an odd torus: no ties), so that the script cannot agree with itself by computing nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r'''
import contextlib, hashlib, io, json, os, sys, tempfile
if os.environ.get("AUDIT_ONE_CORE"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
import numpy as np
import evaluator as ev
from evaluator import traffic as T, placement as P, routing as R
from evaluator.topology._fat_tree import fat_tree
from evaluator.jobs import Job, Background, evaluate_jobs
from evaluator.mapping import search_mapping

def dig(a):
    a = np.asarray(a)
    if a.dtype.kind in "OUS":
        return hashlib.sha256(repr(a.astype(str).tolist()).encode()).hexdigest()[:16]
    return hashlib.sha256(np.ascontiguousarray(a).tobytes() + str((a.dtype.str, a.shape)).encode()).hexdigest()[:16]

def sig(ds):
    names = list(ds.data_vars) + list(ds.coords)
    return {"vars": list(ds.data_vars), "coords": list(ds.coords), "dims": list(ds.dims),
            "values": {k: dig(ds[k].values) for k in names},
            "labels": {str(d): [str(x) for x in ds[d].values] for d in ds.dims if d != "link"}}

def flows(n, m, seed):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    return T.from_flows(n, src, (src + 1 + rng.integers(0, n - 1, m)) % n, rng.uniform(1e5, 1e6, m))

out = {}
tor = ev.torus([3, 5], nodes_per_router=2, injection_bandwidth=4e9)
tr = T.random_permutation(24, 1e6, seed=3)
pl = P.fully_random(tor, 24, seed=5)
out["torus_walk_input"] = {"task_node": pl.task_node.tolist(), "src": tr.src.tolist(), "dst": tr.dst.tolist(),
                           "bytes": [float(x).hex() for x in tr.nbytes]}
for name, rt in [("dor", "dor"), ("ksp", R.kshortest(4)), ("optiq", R.optiq_heuristic(4)),
                 ("adaptive", R.torus_adaptive())]:
    ds = ev.evaluate(tor, tr, pl, rt)
    out["torus_" + name] = sig(ds)
    out["torus_" + name + "_time"] = float(ds.completion_time).hex()
df = ev.dragonfly(2, 4, 2)
trd, pld = T.random_pairs(16, 2e6, seed=1), P.fully_random(df, 16, seed=7)
for name, rt in [("minimal", "minimal"), ("valiant", "valiant"), ("ugal", R.ugal()), ("ksp", R.kshortest(3))]:
    out["df_" + name] = sig(ev.evaluate(df, trd, pld, rt))
ft = fat_tree([4, 4], [1, 2])
trf, plf = T.random_permutation(16, 1e6, seed=2), P.fully_random(ft, 16, seed=4)
for name, rt in [("ecmp", R.ecmp(seed=11)), ("dmodk", R.dmodk()), ("ksp", R.kshortest(4)),
                 ("adaptive", R.ft_adaptive())]:
    out["ft_" + name] = sig(ev.evaluate(ft, trf, plf, rt))
b = ev.evaluate_batch(df, "minimal", [trd, T.all_to_all(16, 1e3), flows(16, 40, 9)],
                      [P.fully_random(df, 16, seed=s) for s in range(3)], keep_link_load=True)
out["batch"] = sig(b.to_dataset())
jobs = [Job(flows(8, 20, 1), P.linear(df, 8), name="a"),
        Job(T.all_to_all(8, 1e5), P.linear(df, 8, first_node=8), routing="valiant", name="b")]
out["jobs"] = sig(evaluate_jobs(df, jobs, "minimal", Background(0.2, pattern="random_permutation", seed=3)))
r = search_mapping(df, flows(24, 90, 5), "minimal", nodes=np.random.default_rng(3).permutation(36)[:16],
                   tasks_per_node=2, time_budget=600, max_iterations=10, seed=1, candidates=256, progress=False)
out["map_df"] = {"task_node": r.placement.task_node.tolist(), "time": float(r.completion_time).hex(),
                 "starts": [[k, float(v).hex()] for k, v in r.starts.items()]}
from evaluator.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    main(["eval", "topology=torus", "topology.dims=[4,4]", "routing=kshortest", "traffic=random_permutation",
          "traffic.n_tasks=16", "placement=random", "placement.seed=3", "save=false", "--draws", "1"])
out["cli_eval"] = buf.getvalue().splitlines()
from evaluator import config
from evaluator.config import RayConfig
from evaluator.query import open_results
from evaluator.sweep import plan_sweep, run_sweep
with tempfile.TemporaryDirectory() as tmp:
    small = ["topology.p=2", "topology.a=4", "topology.h=2", "traffic.alpha=[16,16,8]"]
    axes = {"traffic.beta": [[4, 2, 2], [4, 4, 2]], "placement.tasks_per_group": {"divisors": "traffic.beta",
            "total": True}, "placement.seed": {"range": [0, 2]}, "routing": ["minimal", "valiant"]}
    ov = ["sweeps=dragonfly_random_placement", *small, "sweep.chunk_size=8", f"sweep.output_dir={tmp}"]
    plan = plan_sweep(config.compose_sweep(ov, user_overrides=small, axes=axes))
    ds = open_results(run_sweep(plan, RayConfig(enabled=False), progress=False))
    out["sweep"] = sig(ds)
    out["sweep_run_id"] = plan.run_id
    out["sweep_attrs"] = list(ds.attrs)
from evaluator.workload.run import POLICY_NAMES, RunSpec, TraceSpec, run_schedule
ds = run_schedule(TraceSpec(synthetic=120, load=0.9), [RunSpec(p) for p in POLICY_NAMES], 8, 32, seed=3)
out["schedule"] = sig(ds.drop_vars("jobs_per_s"))  # (the simulator's own speed: wall time)
print("AUDIT-JSON" + json.dumps(out))
'''


def _start(hash_seed: str, one_core: bool) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "AUDIT_ONE_CORE")}
    env.update(PYTHONHASHSEED=hash_seed, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
    if one_core:
        env["AUDIT_ONE_CORE"] = "1"
    return subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def runs() -> list[dict]:
    """The script's output in two fresh processes run side by side: hash seed 0 on every core this process may
    use, hash seed 12345 on one core."""
    procs = [_start("0", False), _start("12345", True)]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr[-3000:]
        line = next(x for x in stdout.splitlines() if x.startswith("AUDIT-JSON"))
        outs.append(json.loads(line[len("AUDIT-JSON"):]))
    return outs


def _diff(a, b, path="") -> list[str]:
    """Every place where ``a`` and ``b`` differ (keys, orders, values), as readable lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [] if list(a) == list(b) else [f"{path}: keys {list(a)} != {list(b)}"]
        for k in a:
            if k in b:
                out += _diff(a[k], b[k], f"{path}.{k}")
        return out
    return [] if a == b else [f"{path}: {str(a)[:300]} != {str(b)[:300]}"]


def _dor_walk_time(inp: dict, dims=(3, 5), npr=2, link_bw=2e9, inj_bw=4e9) -> float:
    """Completion time of DOR (dimension 0 first, the shorter way round: odd sizes, no ties) by walking every
    flow hop by hop; injection and ejection at ``inj_bw``."""
    tn = np.asarray(inp["task_node"])
    load: dict = {}
    out_b = np.zeros(dims[0] * dims[1] * npr)
    in_b = np.zeros_like(out_b)
    for s, d, h in zip(inp["src"], inp["dst"], inp["bytes"]):
        nb = float.fromhex(h)
        a, z = int(tn[s]), int(tn[d])
        if a == z:
            continue
        out_b[a] += nb
        in_b[z] += nb
        cur = list(np.unravel_index(a // npr, dims))
        tgt = list(np.unravel_index(z // npr, dims))
        for k, size in enumerate(dims):
            while cur[k] != tgt[k]:
                fwd = (tgt[k] - cur[k]) % size
                step = 1 if fwd <= size // 2 else -1
                nxt = list(cur)
                nxt[k] = (cur[k] + step) % size
                key = (int(np.ravel_multi_index(cur, dims)), int(np.ravel_multi_index(nxt, dims)))
                load[key] = load.get(key, 0.0) + nb
                cur = nxt
    return max(max(load.values(), default=0.0) / link_bw, out_b.max() / inj_bw, in_b.max() / inj_bw)


def test_the_script_computes_what_a_per_flow_walk_gives(runs):
    """The DOR time the script reports equals an independent per-flow walk of the same flows and placement."""
    got = float.fromhex(runs[0]["torus_dor_time"])
    want = _dor_walk_time(runs[0]["torus_walk_input"])
    assert want > 0
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("part", ["torus", "df_", "ft_", "batch", "jobs", "schedule"])
def test_evaluations_are_bit_identical_across_processes(runs, part):
    """Single evaluations (every routing family, seeded random placements and traffics), a batch and several
    jobs with a seeded background, a job-trace simulation: the same variables, coordinates and orders, the same
    bytes."""
    keys = [k for k in runs[0] if k.startswith(part)]
    assert keys and sorted(keys) == sorted(k for k in runs[1] if k.startswith(part))
    diffs = [d for k in keys for d in _diff(runs[0][k], runs[1][k], k)]
    assert not diffs, "\n".join(diffs)


def test_a_seeded_mapping_search_is_the_same_whatever_the_hash_seed_and_cores(runs):
    """A search bounded by iterations, with a seed: the same mapping, time and starts' times, on two cores or one
    (the search splits its device calls by cores) and under another hash seed."""
    key = "map_df"
    a, b = runs[0][key], runs[1][key]
    assert sorted(a["task_node"]) == sorted(b["task_node"])  # (a mapping of the same slots at all)
    assert not _diff(a, b, key), "\n".join(_diff(a, b, key))


def test_the_cli_prints_the_same_lines(runs):
    """``evaluator eval ... save=false``: every printed line the same (the time, the bottleneck, the note)."""
    a, b = runs[0]["cli_eval"], runs[1]["cli_eval"]
    assert any(line.startswith("completion") for line in a)
    assert a == b


def test_a_sweep_without_ray_is_the_same_dataset_and_run_id(runs):
    """A sweep in the command's own process (threads as many as cores): the same run id (the file names),
    variable and coordinate order, axis labels and values."""
    a, b = runs[0], runs[1]
    assert a["sweep"]["vars"] and "placement.seed" in a["sweep"]["labels"]
    assert a["sweep_run_id"] == b["sweep_run_id"]
    assert a["sweep_attrs"] == b["sweep_attrs"]
    diffs = _diff(a["sweep"], b["sweep"], "sweep")
    assert not diffs, "\n".join(diffs)
