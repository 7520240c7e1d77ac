"""``evaluator schedule``: simulate a job trace under allocation policies (FCFS + EASY backfilling).

Usage::

    evaluator schedule [--swf PATH | --synthetic N] [--groups G --nodes-per-group P]
                       [--baseline POLICY] [--policy POLICY] [--speedups SPEEDUP.nc] [workload options]
    evaluator schedule --study sweeps/workload/policies.yaml [--no-ray]

Examples::

    evaluator schedule --synthetic 20000 --groups 36 --nodes-per-group 288 --policy unrestricted
    evaluator schedule --swf mira-2019.swf --baseline slurm_round_robin --policy grap --speedups speedup.nc
    evaluator schedule --study sweeps/workload/policies.yaml

A speedup table must record the machine scheduled (``--groups`` x
``--nodes-per-group``); one from another machine, or recording none, is
refused unless ``--allow-foreign-speedups`` (``workload.allow_foreign_speedups``
in a study). The dataset records the table each run used.

A thin entry point: it parses arguments into :mod:`evaluator.workload` specs,
checks that it can write ``--out`` (made, probed with a temporary file)
before anything is computed, calls :func:`evaluator.workload.run.run_schedule`
(or :func:`evaluator.sweep.schedule.run_study`), writes the dataset with
:func:`evaluator.io.write_dataset` and the Fig. 5 plot next to it, and prints
one line per run. ``--study`` prints the study's table (wait reduction and
utilisation per machine, mix and run, :func:`evaluator.sweep.schedule.study_table`),
writes its plot (:func:`evaluator.workload.plots.plot_study`) next to the
dataset and prints both paths.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from ..display import format_table
from ..errors import ConfigError
from ..io import write_dataset
from .._args import ArgumentParser, given_options, named_as_options

__all__ = ["main", "build_parser", "parse_mix", "parse_fractions"]


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="evaluator schedule",
                                description="simulate a job trace (SWF or synthetic) under allocation policies: "
                                            "FCFS with EASY backfilling; per-job dataset, wait-time reduction per "
                                            "month, utilisation per minute, Feng et al. Fig. 5")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--swf", metavar="PATH", help="a Standard Workload Format trace (Parallel Workloads Archive)")
    src.add_argument("--synthetic", type=int, metavar="N", default=10000,
                     help="N synthetic jobs, capability-machine mix (default 10000; used when --swf is absent)")
    src.add_argument("--study", metavar="YAML", help="run a grid of policies x mode mixes x machines on Ray "
                                                     "(see sweeps/workload/)")
    p.add_argument("--procs-per-node", type=int, default=1,
                   help="SWF sizes are processors; nodes = ceil(procs / N) (only with --swf)")
    p.add_argument("--load", type=float, default=0.9,
                   help="offered load of the synthetic trace (default 0.9; refused with --swf)")
    p.add_argument("--limit", type=int, default=None, help="simulate only the first N jobs")
    p.add_argument("--machine", default=None, metavar="DF(P,A,H,G)",
                   help="the Dragonfly, named as `evaluator study rdn --machine` and its datasets name it: "
                        "P,A,H,G or DF(P,A,H,G) (G groups of A*P nodes); or give --groups and --nodes-per-group")
    p.add_argument("--groups", type=int, default=None, help="groups of the machine (default 288, the paper's)")
    p.add_argument("--nodes-per-group", type=int, default=None, help="nodes per group (default 288)")
    p.add_argument("--policy", default="grap", help="allocation policy of the main run (default grap; "
                                                    "'unrestricted': any idle nodes)")
    p.add_argument("--speedups", metavar="NC", nargs="+", action="extend", default=None,
                   help="netCDF speedup table (dims mode, groups) applied to the main run's MPI time; it must "
                        "record this machine (--groups x --nodes-per-group), e.g. evaluator study rdn "
                        "--machine 12,24,12,288 --speedup-out NC for 288 x 288. Several tables (e.g. against the "
                        "three TDN baselines: adaptive, ugal, oblivious) run the main policy once with each, side "
                        "by side, each labelled by its table's baseline")
    p.add_argument("--allow-foreign-speedups", action="store_true",
                   help="apply a speedup table computed on another machine, or recording none "
                        "(workload.allow_foreign_speedups=true); refused otherwise")
    p.add_argument("--baseline", default=None, help="a policy simulated first without speedups "
                                                    "(e.g. slurm_round_robin): wait reductions are against it")
    p.add_argument("--enlarge", type=float, default=2.0, help="job-size factor (Sec. 5.1.4: 2), clamped to the machine")
    p.add_argument("--mode-range", default="576,65536", metavar="LO,HI",
                   help="sizes (nodes) that draw a mode from --mode-mix (default 576,65536)")
    p.add_argument("--mode-mix", default="minimal_balance=0.4,adaptive=0.4,custom_balance=0.1,custom=0.1",
                   metavar="MODE=SHARE,...", help="mode shares of jobs in --mode-range (default: the paper's)")
    p.add_argument("--mpi-fraction", default="0.3", metavar="F|NODES:F,...",
                   help="fraction of run time in MPI: one number, or per size bin 'max_nodes:fraction,...' "
                        "('inf' for the last); default 0.3 (an assumption: Mira's per-size fractions are not bundled)")
    p.add_argument("--speedup-rule", default="time_ratio", choices=["time_ratio", "excess"],
                   help="MPI time saved by a speedup ratio S: 1-1/S (default) or S-1")
    p.add_argument("--backfill-depth", type=int, default=500,
                   help="queued jobs tried for backfilling per pass (Slurm's bf_max_job_test; -1: all)")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic trace, mode draws and policies")
    p.add_argument("--out", default="results/schedule", metavar="DIR", help="output directory")
    p.add_argument("--no-plot", action="store_true", help="do not write the PNG")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-ray", action="store_true", help="--study: run the grid in this process")
    return p


def parse_mix(text: str) -> dict[str, float]:
    """``"minimal_balance=0.4,adaptive=0.6"`` -> dict."""
    out = {}
    for part in str(text).split(","):
        k, sep, v = part.partition("=")
        try:
            out[k.strip()] = float(v)
        except ValueError:
            raise ConfigError("--mode-mix", text, "MODE=SHARE pairs separated by commas") from None
        if not sep:
            raise ConfigError("--mode-mix", text, "MODE=SHARE pairs separated by commas")
    return out


def parse_fractions(text: str):
    """``"0.3"`` -> 0.3; ``"1024:0.2,inf:0.4"`` -> {1024: 0.2, inf: 0.4}."""
    try:
        if ":" not in text:
            return float(text)
        return {float(k): float(v) for k, v in (part.split(":") for part in text.split(","))}
    except ValueError:
        raise ConfigError("--mpi-fraction", text, "a fraction, or 'max_nodes:fraction,...' size bins") from None


def _machine_size(args) -> tuple[int, int]:
    """``(groups, nodes per group)`` from ``--machine DF(P,A,H,G)`` (the name the RDN study and its speedup
    tables use) or from ``--groups`` and ``--nodes-per-group`` (defaults: the paper's 288 x 288)."""
    if args.machine is None:
        return (288 if args.groups is None else args.groups,
                288 if args.nodes_per_group is None else args.nodes_per_group)
    from ..studies.rdn import parse_machine

    m = parse_machine(args.machine, "--machine")
    for flag, given, implied in (("--groups", args.groups, m.g), ("--nodes-per-group", args.nodes_per_group,
                                                                   m.a * m.p)):
        if given is not None and given != implied:
            raise ConfigError(flag, given, f"{implied} (what --machine {args.machine} implies) or no {flag}",
                              "Name the machine one way.")
    return m.g, m.a * m.p


_STUDY_OWN = ("study", "out")  # the options --study reads; the study file gives everything else


def _check_combinations(args, given: dict[str, str]) -> None:
    """Refuse options the run would ignore: with --study, every option but --out (the study file gives the trace,
    machines, runs, model and seed); --load with --swf (an SWF trace's arrivals are its own); --procs-per-node
    without --swf (a synthetic trace's sizes are nodes); a --backfill-depth below -1."""
    if args.study:
        ignored = [(opt, getattr(args, dest)) for dest, opt in given.items() if dest not in _STUDY_OWN]
        ignored += [("--allow-foreign-speedups", True)] if args.allow_foreign_speedups else []
        if ignored:
            raise ConfigError(ignored[0][0], ignored[0][1],
                              "no such option with --study: the study file gives the trace, machines, runs, model "
                              "and seed (its keys trace, machines, mode_mixes, runs, workload, backfill_depth, "
                              "seed); --study takes --out, --no-ray, --no-plot and --no-progress",
                              f"Given with --study: {', '.join(o for o, _ in ignored)}.")
    if args.swf and "load" in given:
        raise ConfigError(given["load"], args.load, "no --load with --swf: an SWF trace's submit times are its own "
                          "(--load sets a synthetic trace's offered load)")
    if not args.swf and "procs_per_node" in given:
        raise ConfigError(given["procs_per_node"], args.procs_per_node, "--procs-per-node only with --swf (SWF sizes "
                          "are processors); a synthetic trace's sizes are nodes")
    if args.backfill_depth < -1:
        raise ConfigError("--backfill-depth", args.backfill_depth, "an integer >= 0 (queued jobs tried per pass), "
                          "or -1 for every queued job")


_OPTIONS = {"trace.swf": "--swf", "trace.procs_per_node": "--procs-per-node", "trace.synthetic": "--synthetic",
            "trace.load": "--load", "trace.seed": "--seed", "trace.limit": "--limit", "workload.enlarge": "--enlarge",
            "workload.mode_lo": "--mode-range", "workload.mode_hi": "--mode-range", "workload.mode_mix": "--mode-mix",
            "workload.mpi_fraction": "--mpi-fraction", "workload.speedup_rule": "--speedup-rule",
            "workload.seed": "--seed", "seed": "--seed", "machine.groups": "--groups",
            "machine.nodes_per_group": "--nodes-per-group", "run.policy": "--policy", "speedups": "--speedups"}
"""The library's fields that a schedule's options set, named by the option in the errors."""


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_combinations(args, given_options(parser, args))
    args.groups, args.nodes_per_group = _machine_size(args)
    from ..workload import WorkloadModel
    from ..workload.run import RunSpec, TraceSpec, run_schedule

    from ..io import check_writable

    if args.study:   # a grid of runs (its own file of settings)
        return _run_study(args)
    check_writable("--out", args.out)
    from ..runs import check_latest_owner  # (a schedule saved into a sweep's or study's directory took its latest)

    check_latest_owner(args.out, "evaluator schedule", "--out", own="evaluator schedule",
                       expected="a directory of evaluator schedule's own datasets (results/schedule by default), or "
                                "one holding none",
                       new="this schedule's dataset", taken_by="a schedule saved there", instead="the schedule",
                       remedy="Give another --out DIR (e.g. results/schedule).")
    lo, _, hi = args.mode_range.partition(",")
    try:
        mode_lo, mode_hi = int(lo), int(hi)
    except ValueError:
        raise ConfigError("--mode-range", args.mode_range, "LO,HI in nodes, e.g. 576,65536") from None
    with named_as_options(_OPTIONS):   # errors name the options the user wrote, not the library's fields
        model = WorkloadModel(enlarge=args.enlarge, mode_lo=mode_lo, mode_hi=mode_hi,
                              mode_mix=parse_mix(args.mode_mix), mpi_fraction=parse_fractions(args.mpi_fraction),
                              speedup_rule=args.speedup_rule, seed=args.seed,
                              allow_foreign_speedups=args.allow_foreign_speedups)
        trace = TraceSpec(swf=args.swf, procs_per_node=args.procs_per_node, synthetic=args.synthetic, load=args.load,
                          seed=args.seed, limit=args.limit)
        with named_as_options({"run.policy": "--baseline"}):
            runs = [RunSpec(args.baseline)] if args.baseline else []
        runs += _main_runs(args.policy, args.speedups)
        depth = None if args.backfill_depth < 0 else args.backfill_depth
        ds = run_schedule(trace, runs, args.groups, args.nodes_per_group, model, depth, args.seed,
                          progress=not args.no_progress)
    path = write_dataset(ds, args.out, identity=" ".join(argv))  # <UTC time>-<hash>.nc, never replacing one
    table = pd.DataFrame({"run": [str(r) for r in ds.run.values], "jobs": ds.sizes["job"],
                          **{k: ds[k].values for k in ("mean_wait", "p95_wait", "mean_utilisation", "mean_speedup",
                                                       "backfilled_share", "jobs_per_s")}}).set_index("run")
    print(format_table(table))
    kept = _trace_changes(ds)
    if kept:
        print(kept)
    for r, tab, mach, base in zip(ds.run.values, ds.speedup_table.values, ds.speedup_table_machine.values,
                                  ds.speedup_table_baseline.values):
        if tab:
            print(f"{str(r)}: speedup table {tab} (machine {mach}; baseline {base})")
    if "wait_reduction" in ds:
        mw = ds.mean_wait_month.values
        base_wait = float(ds.wait.isel(run=0).mean())
        pct = lambda x: "n/a" if not math.isfinite(x) else f"{100 * x:.1f}%"  # noqa: E731
        for k in range(1, ds.sizes["run"]):  # every run against the baseline, side by side
            red = ds.wait_reduction.isel(run=k).values
            overall = 1.0 - float(ds.wait.isel(run=k).mean()) / base_wait if base_wait > 0 else math.nan
            print(f"wait-time reduction of {ds.run.values[k]} vs {ds.run.values[0]}: {pct(overall)} overall; "
                  f"per month {', '.join(pct(float(x)) for x in red)} ({mw.shape[1]} months)"
                  + ("; n/a: no job of the baseline waited (nothing to reduce)" if not math.isfinite(overall)
                     else ""))
    if ds.sizes["run"] > 1:
        print(_one_draw(args.seed, bool(args.swf), "rerun with --seed S for others, or evaluator schedule --study "
                                                   "with seeds: K for the mean and range"))
    print(path)
    if not args.no_plot:
        print(_plot(ds, Path(path)))
    return 0


def _run_study(args) -> int:
    """``--study YAML``: a grid of policies x mode mixes x machines (on Ray unless --no-ray), its table and plot."""
    from ..io import check_writable
    from ..sweep.schedule import load_study, run_study, study_table

    study = load_study(args.study)                # the whole file, before anything runs
    out = args.out if args.out != "results/schedule" else None
    check_writable("--out", out if out is not None else Path("results") / str(study["name"]))
    path = run_study(study, use_ray=not args.no_ray, progress=not args.no_progress, out_dir=out)
    import xarray as xr

    with xr.open_dataset(path, engine="h5netcdf") as ds:
        ds = ds.load()
    print(f"{ds.attrs.get('study', '')}: {ds.sizes['machine']} machines x {ds.sizes['mix']} mode mixes x "
          f"{ds.sizes['run']} runs; wait reduction against run {str(ds.run.values[0])!r} of the same machine "
          "and mix")
    print(study_table(ds))
    if "seed" not in ds.dims:
        print(_one_draw(int(study.get("seed", 0)), bool((study.get("trace") or {}).get("swf")),
                        "add seeds: K to the study for the mean and range over K seeds"))
    print(path)
    if not args.no_plot:
        from ..workload.plots import plot_study

        print(plot_study(ds, Path(path).with_name(Path(path).stem + "-study.png")))
    return 0


def _one_draw(seed: int, swf: bool, how: str) -> str:
    """The line that says a schedule at ``seed`` is one draw of its random parts, with ``how`` to get more."""
    return (f"seed {seed}: one draw of the trace{'' if swf else ' (synthetic)'}, the mode draws and the policies' "
            f"choices, and a queue's mean wait moves a lot with them; {how}")


def _trace_changes(ds) -> str:
    """One line saying which of the trace's jobs are not simulated as written (empty when every one is): those the
    SWF reader drops (unknown or zero run time or size) and those whose enlarged size the machine clamps."""
    dropped, clamped = int(ds.attrs.get("dropped", 0)), int(ds.attrs.get("clamped", 0))
    parts = []
    if dropped:
        parts.append(f"{dropped:,} dropped (an unknown (-1) or zero run time or size: not simulated)")
    if clamped:
        parts.append(f"{clamped:,} larger than the machine's {int(ds.attrs['total_nodes']):,} nodes once enlarged "
                     f"x{float(ds.attrs['enlarge']):g}, clamped to it (--enlarge)")
    if not parts:
        return ""
    return (f"trace {ds.attrs.get('source', ds.attrs.get('trace', ''))}: {ds.sizes['job']:,} jobs simulated; "
            + "; ".join(parts))


def _main_runs(policy: str, tables: list[str] | None) -> list:
    """The main policy once per speedup table (none: once without): with several, each run is labelled by its
    table's baseline, ``grap+speedup(adaptive)``, ``grap+speedup(ugal)``, ...; one table keeps ``grap+speedup``."""
    from ..workload.run import RunSpec, load_speedups

    if not tables:
        return [RunSpec(policy, None)]
    if len(tables) == 1:
        return [RunSpec(policy, tables[0])]
    out = []
    for path in tables:
        base = (load_speedups(path).baseline or "table").split(" (", 1)[0]  # the baseline's name, not its text
        out.append(RunSpec(policy, path, label=f"{policy}+speedup({base})"))
    return out


def _plot(ds, path: Path) -> Path:
    from ..workload.plots import plot_fig5_from_study

    return plot_fig5_from_study(ds, path.with_name(path.stem + "-fig5.png"))
