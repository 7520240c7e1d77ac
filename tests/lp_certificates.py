"""Stored LP solutions, checked and never trusted: the claim tests of LPs too slow to solve in the suite (issue 34).

Three stated results come from LPs that take HiGHS minutes to hours here:

* ``rdn-df4``: docs/rdn.md's DF(4, 8, 4, 32) table, the ideal adaptive bound of 20 random mappings with and without
  background (30 LPs of about 29,000 variables, 20-60 s each);
* ``routing-paths-optimal``: docs/routing_paths.md's optimal column on 2,048 and 4,096 nodes (Garg-Konemann's
  tightening, 5-8 restricted path LPs of 30,000-90,000 variables per point, minutes each);
* ``bounds-gk-8192``: docs/bounds.md's Garg-Konemann run on the bench's 8,192-node instance.

Checking a solution is cheap where finding it is not, so the suite checks stored solutions instead, in two ways.

``python -m tests.lp_certificates NAME`` runs the computation with HiGHS and stores what it needs in
``tests/data/lp_certificates/NAME.npz``:

* ``rdn-df4``: every LP's solution in the order the study solves them (primal ``x`` and the capacity rows' duals,
  both sparse), with each LP's shape and sums as its fingerprint (:func:`recorded`). :func:`replayed` hands them
  back in place of HiGHS (``evaluator.lp._solvers.solve_highs``); everything else is the library's own path: it
  builds each LP from the code as it is now and turns the stored solution into a *certified* interval of the
  optimum (:func:`evaluator.lp._model1.certify_path`): the stored flows, clipped and scaled by their worst link,
  are a feasible routing (the lower end of the rate), and the stored duals, as link lengths, bound the rate from
  above by weak duality, whatever the stored numbers are. It fails when an LP's shape or sums differ from the
  fingerprint, when the run asks for more or fewer LPs than are stored, or when a bound's certified interval is
  wider than :data:`GAP` (relative).
* the Garg-Konemann runs: each run's last round (:func:`gk_recorded`): the restricted LP's paths with flow and
  their flows, and its capacity duals as link lengths. Replaying would rerun the multiplicative-weight steps
  (minutes at 8,192 nodes), so :func:`gk_certified` checks the certificate instead, on the demand built now:
  every stored path must join its pair (else the lower end is 0), the flow is made feasible (lower end), and the
  lengths' dual bound is computed on the full graph by Dijkstra (upper end), exactly as the method's last round
  does. The tests require both ends to meet the stated value.

Either way a stored solution that no longer solves today's problem cannot certify a tight interval, and the
error names the command that regenerates the file: a stored certificate cannot make a wrong number pass.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data" / "lp_certificates"
GAP = 1e-6
"""Largest relative width ``z_upper / z - 1`` of a replayed LP's certified interval."""


def _fingerprint(lp) -> np.ndarray:
    return np.array([lp.n_vars, lp.A_ub.shape[0], lp.A_eq.shape[0], lp.A_ub.nnz, lp.A_eq.nnz,
                     float(np.sum(lp.b_ub)), float(np.sum(lp.b_eq)), float(np.sum(lp.c))])


def _sparse(v) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(v, dtype=np.float64)
    nz = np.nonzero(v)[0]
    return nz.astype(np.int32), v[nz]


def _save(where: Path, name: str, rows: list[dict]) -> None:
    """Store the recorded rows as ``{key}_{row}`` arrays of ``where/name.npz``, with their count ``n``."""
    where.mkdir(parents=True, exist_ok=True)
    arrays = {f"{k}_{i}": v for i, r in enumerate(rows) for k, v in r.items()}
    np.savez_compressed(where / f"{name}.npz", n=np.array(len(rows)), **arrays)


@contextlib.contextmanager
def recorded(name: str, where: Path = DATA):
    """Solve every LP with HiGHS as usual and store its solution under ``name`` (in ``where``) when the block ends
    without an error."""
    import evaluator.lp._solvers as solvers

    real = solvers.solve_highs
    rows: list[dict] = []

    def solve_highs(lp):
        t0 = time.process_time()
        sol = real(lp)
        print(f"LP {len(rows)}: {lp.n_vars:,} variables, {lp.nnz:,} nonzeros, {time.process_time() - t0:.1f} s of "
              "CPU in HiGHS", flush=True)
        xi, xv = _sparse(sol.x)
        di, dv = _sparse(sol.ub_dual if sol.ub_dual is not None else np.zeros(0))
        rows.append({"fp": _fingerprint(lp), "xi": xi, "xv": xv, "di": di, "dv": dv,
                     "meta": np.array([sol.objective, sol.gap])})
        return sol

    solvers.solve_highs = solve_highs
    try:
        yield rows
    finally:
        solvers.solve_highs = real
    _save(where, name, rows)


@contextlib.contextmanager
def replayed(name: str, gap: float = GAP, where: Path = DATA):
    """Stand in for HiGHS with the solutions stored under ``name`` (module docstring); yields the list of the
    certified intervals ``(z, z_upper)`` of every bound the block computes, each at most ``gap`` wide."""
    import evaluator.lp._flow as flow
    import evaluator.lp._model1 as m1
    import evaluator.lp._solvers as solvers
    from evaluator.lp._solvers import Solution

    redo = (f"regenerate with `python -m tests.lp_certificates {name}`" if name in STUDIES else
            "record them again")
    store = dict(np.load(where / f"{name}.npz"))
    n = int(store["n"])
    real_solve, real_bound = solvers.solve_highs, m1.bound_of
    served = [0]
    intervals: list[tuple[float, float]] = []

    def solve_highs(lp):
        k = served[0]
        if k >= n:
            raise AssertionError(f"{name}: the run asks for more than the {n} stored LP solutions: {redo}")
        fp = store[f"fp_{k}"]
        now = _fingerprint(lp)
        if not (np.array_equal(now[:5], fp[:5]) and np.allclose(now[5:], fp[5:], rtol=1e-9, atol=0)):
            raise AssertionError(f"{name}: LP {k} is not the one stored (shape and sums {now.tolist()} against "
                                 f"{fp.tolist()}): {redo}")
        x = np.zeros(lp.n_vars)
        x[store[f"xi_{k}"]] = store[f"xv_{k}"]
        dual = np.zeros(lp.A_ub.shape[0])
        dual[store[f"di_{k}"]] = store[f"dv_{k}"]
        objective, g = store[f"meta_{k}"]
        served[0] += 1
        return Solution(float(objective), x, float(g), "highs", "stored", 0, dual)

    def bound_of(z, z_upper, *args, **kwargs):
        intervals.append((float(z), float(z_upper)))
        width = z_upper / z - 1 if z > 0 else np.inf
        if not width <= gap:
            raise AssertionError(f"{name}: the stored solutions certify only [{z:.9g}, {z_upper:.9g}] (width "
                                 f"{width:.2e} > {gap:g}): {redo}")
        return real_bound(z, z_upper, *args, **kwargs)

    solvers.solve_highs, m1.bound_of, flow.bound_of = solve_highs, bound_of, bound_of
    try:
        yield intervals
    finally:
        solvers.solve_highs, m1.bound_of, flow.bound_of = real_solve, real_bound, real_bound
    if served[0] != n:
        raise AssertionError(f"{name}: the run solved {served[0]} LPs, {n} are stored: {redo}")


def _gk_inputs(topology, demand):
    """What Garg-Konemann derives from a demand (evaluator/lp/_flow.py): source routers, the ``[source, router]``
    bytes, the restricted LP's pairs' bytes, the router links' capacities, the fixed loads' limit."""
    from evaluator.lp._flow import _sources

    E, R = int(topology.n_router_links), int(topology.n_routers)
    src_r, inv = _sources(demand)
    D = np.zeros((src_r.size, R))
    np.add.at(D, (inv, demand.dst), demand.nbytes)
    qi, qv = np.nonzero(D)
    cap_all = np.asarray(topology.capacity, dtype=np.float64)
    return src_r, D, D[qi, qv], cap_all[:E], demand.z_fixed(cap_all)


def _gk_interval(topology, demand, pair, links, cols, x, lengths) -> tuple[float, float]:
    """Garg-Konemann's last round from its restricted LP's solution: the lower end certified from the paths with
    flow (``pair`` and ``x`` per path, path ``j``'s links ``links[cols == j]``, from the destination back; 0 unless
    every path joins its pair), the upper end the dual bound of ``lengths`` on the full graph (Dijkstra), both
    capped by the fixed loads, as the method reports them."""
    import scipy.sparse as sp

    from evaluator.lp._flow import _dual_bound
    from evaluator.lp._model1 import certify_path

    src_r, D, dq, cap, z_fix = _gk_inputs(topology, demand)
    qi, qv = np.nonzero(D)
    # every stored path must be a walk from its pair's destination router back to its source router (the order
    # Garg-Konemann stores them in): a path that does not join its pair cannot count as the pair's flow
    ls, ld = np.asarray(topology.link_src), np.asarray(topology.link_dst)
    n = np.bincount(cols, minlength=x.size)
    head = np.r_[0, np.cumsum(n)[:-1]]
    full = n > 0
    tail = head + n - 1
    joins = np.where(full, True, src_r[qi[pair]] == qv[pair])          # an empty path: source and destination meet
    joins[full] &= (ld[links[head[full]]] == qv[pair[full]]) & (ls[links[tail[full]]] == src_r[qi[pair[full]]])
    inner = np.ones(links.size, bool)
    inner[tail[full]] = False                                             # each link but a path's last ...
    chained = ls[links[:-1]][inner[:-1]] == ld[links[1:]][inner[:-1]]     # ... starts where the next one ends
    if not (np.all(joins) and np.all(chained) and np.all(np.diff(cols) >= 0)):
        return 0.0, min(_dual_bound(topology, lengths, cap, src_r, D)[0], z_fix)
    inc = sp.csr_matrix((np.ones(links.size), (links, cols)), shape=(cap.size, x.size))
    lower, _ = certify_path(inc, pair, dq, cap, None, x, None)
    upper, _ = _dual_bound(topology, lengths, cap, src_r, D)
    return min(lower, z_fix), min(upper, z_fix)


@contextlib.contextmanager
def gk_recorded(name: str, where: Path = DATA):
    """Run Garg-Konemann as usual and store, for every call, its last round's certificate: the restricted LP's
    paths with flow and their flows, and the capacity duals as link lengths (its tightening's last solve). Fails
    unless :func:`_gk_interval` of what is stored gives the interval the method returned."""
    import evaluator.lp._flow as flow

    real_gk, real_restricted = flow.garg_konemann, flow._restricted
    last: dict = {}
    rows: list[dict] = []

    def restricted(cols, dq, cap):
        lower, length = real_restricted(cols, dq, cap)
        last.update(cols=(list(cols.pair), list(cols.links)), length=length)
        return lower, length

    def solve_highs(lp):
        sol = real_solve(lp)
        last["x"] = np.asarray(sol.x, dtype=np.float64)
        return sol

    def garg_konemann(topology, demand, *args, **kwargs):
        last.clear()
        out = real_gk(topology, demand, *args, **kwargs)
        pair, paths = last["cols"]
        x = last["x"][: len(pair)]
        keep = np.nonzero(x > 0)[0]
        links = [paths[j] for j in keep]
        row = {"pair": np.asarray(pair, np.int32)[keep], "x": x[keep],
               "links": np.concatenate(links).astype(np.int32),
               "cols": np.repeat(np.arange(keep.size, dtype=np.int32), [len(v) for v in links]),
               "li": np.nonzero(last["length"])[0].astype(np.int32)}
        row["lv"] = last["length"][row["li"]]
        got = _gk_interval(topology, demand, row["pair"], row["links"], row["cols"], row["x"], _lengths(row, topology))
        if not np.allclose(got, (out.z, out.z_upper), rtol=1e-12, atol=0):
            raise AssertionError(f"{name}: the last round gives {got}, the method returned {(out.z, out.z_upper)}")
        rows.append(row)
        return out

    import evaluator.lp._solvers as solvers
    real_solve = solvers.solve_highs
    flow.garg_konemann, flow._restricted, solvers.solve_highs = garg_konemann, restricted, solve_highs
    try:
        yield rows
    finally:
        flow.garg_konemann, flow._restricted, solvers.solve_highs = real_gk, real_restricted, real_solve
    _save(where, name, rows)


def _lengths(row, topology) -> np.ndarray:
    ln = np.zeros(int(topology.n_router_links))
    ln[row["li"]] = row["lv"]
    return ln


def gk_certified(name: str, k: int, topology, demand, where: Path = DATA) -> tuple[float, float]:
    """The certified interval ``(z, z_upper)`` of the maximum concurrent flow of ``demand`` on ``topology`` from the
    ``k``-th Garg-Konemann certificate stored under ``name`` (:func:`gk_recorded`): a feasible flow over the stored
    paths and the dual bound of the stored lengths, both computed here (:func:`_gk_interval`). Valid whatever is
    stored; tight only if the stored certificate still solves this demand."""
    store = np.load(where / f"{name}.npz")
    row = {key: store[f"{key}_{k}"] for key in ("pair", "x", "links", "cols", "li", "lv")}
    return _gk_interval(topology, demand, row["pair"], row["links"], row["cols"], row["x"], _lengths(row, topology))


def rdn_df4_study(**kwargs):
    """docs/rdn.md's DF(4, 8, 4, 32) study (``evaluator study rdn --machine 4,8,4,32 --groups 16 --patterns
    stencil``) without UGAL-G, whose columns the page does not state: the stencil at 16 and 32 groups, 10 seeds,
    26% background, the adaptive bound."""
    from evaluator.studies.rdn import RdnMachine, allocation_mode_study

    return allocation_mode_study(RdnMachine(4, 8, 4, 32), groups=(16,), patterns=("stencil",), background=0.26,
                                 bounds=("adaptive",), n_seeds=10, adaptive=(), **kwargs)


def routing_paths_instances():
    """docs/routing_paths.md's constant-ratio points on 2,048 and 4,096 nodes, disjoint and overlapping destinations,
    in the sweep's order: ``(nodes, mode, topology, router demand)``."""
    from evaluator import config
    from evaluator.lp.bounds import router_demand
    from tests.test_claims_routing_paths import METHODS, NODES, points

    for c in points("bgq_m2n_constant_ratio", METHODS):
        nodes = NODES[tuple(c.topology.midplanes)]
        if nodes in (2048, 4096) and c.routing.kind == "dor":
            p = config.build(c)
            yield nodes, c.traffic.mode, p.topology, router_demand(p.topology, p.traffic, p.placement)


def routing_paths_optimal(**_):
    """The optimal column on 2,048 and 4,096 nodes (``bounds=garg_konemann``: the bound depends on the placement
    only): ``{(nodes, mode): completion time in s}``."""
    from evaluator.lp import _flow

    out = {}
    for nodes, mode, topo, demand in routing_paths_instances():
        t0 = time.process_time()
        out[nodes, mode] = _flow.garg_konemann(topo, demand).completion_time
        print(f"{nodes} nodes, {mode}: {out[nodes, mode] * 1e3:.6g} ms, {time.process_time() - t0:.1f} s of CPU",
              flush=True)
    return out


def bounds_gk_8192_instance():
    """The bench's 8,192-node instance (BG/Q 8x8x8x8x2, 512 sources, 4,096 pairs: ``evaluator bench --only lp``'s
    ``default_rng(1)`` draw) as ``(topology, router demand)``."""
    from evaluator.topology import bgq_partition
    from tests.test_claims_bounds_gk import _demand

    big = bgq_partition([2, 2, 2, 2])
    return big, _demand(big, np.random.default_rng(1))


def bounds_gk_8192(**_):
    """docs/bounds.md's Garg-Konemann run on the bench's 8,192-node instance, with its tightening (the default)."""
    from evaluator.lp import _flow

    t0 = time.process_time()
    out = _flow.garg_konemann(*bounds_gk_8192_instance())
    print(f"{out.z:.9g} to {out.z_upper:.9g} /s, {out.steps} steps, {out.rounds} rounds, "
          f"{time.process_time() - t0:.1f} s of CPU", flush=True)
    return out


STUDIES = {"rdn-df4": (rdn_df4_study, recorded), "routing-paths-optimal": (routing_paths_optimal, gk_recorded),
           "bounds-gk-8192": (bounds_gk_8192, gk_recorded)}
"""What ``python -m tests.lp_certificates NAME`` runs, and how it stores: every LP's solution (:func:`recorded`,
replayed by :func:`replayed`) or Garg-Konemann's last round (:func:`gk_recorded`, checked by :func:`gk_certified`)."""


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in STUDIES:
        print(f"usage: python -m tests.lp_certificates {{{' | '.join(STUDIES)}}}", file=sys.stderr)
        return 2
    name = argv[0]
    run, record = STUDIES[name]
    with record(name) as rows:
        run(progress=lambda p, q, s: print(f"{p} at {q} groups: {s:.1f} s", flush=True))
    print(f"{len(rows)} certificates stored in {DATA / (name + '.npz')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
