"""``evaluator partitions``: torus partition analysis from the command line.

Usage::

    evaluator partitions MACHINE [--size N ...] [--compare M1 M2 ...]
                                 [--slabs] [--out DIR] [--no-plot] [--pairing [--tie T]]

Examples::

    evaluator partitions Mira                      # Oltchik Tables 1/6, Fig. 1
    evaluator partitions JUQUEEN                   # Tables 2/7, Fig. 2
    evaluator partitions JUQUEEN --compare JUQUEEN-54 JUQUEEN-48   # Table 5, Fig. 7
    evaluator partitions BlueWaters --slabs        # Fiedler's slabs
    evaluator partitions Sequoia --size 8192 24576

The entry point only parses arguments, calls :mod:`evaluator.partitions` and
prints; every number comes from the library. Bad input (any
:class:`~evaluator.errors.ConfigError`: unknown machine, bad size or shape)
prints one line ``error: ...`` to stderr and returns 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import partitions as P
from ..errors import ConfigError, MachineError
from ..machines import Machine, list_machines, load_machine

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """Argument parser of ``evaluator partitions``."""
    p = argparse.ArgumentParser(
        prog="evaluator partitions",
        description="Partition geometries of a torus machine: internal bisection (links and bytes/s per "
                    "direction), best and worst shapes, allowed vs best possible, predicted speedup of a "
                    "contention-bound job.")
    p.add_argument("machine", nargs="?", help="machine name (case-insensitive) or YAML file; "
                   "known: " + ", ".join(_known()))
    p.add_argument("--size", "-n", type=int, nargs="+", metavar="N",
                   help="partition sizes in nodes (default: the allowed-list sizes, or every feasible size)")
    p.add_argument("--compare", nargs="+", metavar="M",
                   help="compare best-case partitions of MACHINE and these machines (Oltchik Table 5)")
    p.add_argument("--slabs", action="store_true",
                   help="bisection per node of the machine's slab shapes (torus machines, Fiedler's slides)")
    p.add_argument("--out", default="results/partitions", metavar="DIR",
                   help="output directory for .nc and .png files (default: results/partitions)")
    p.add_argument("--no-plot", action="store_true", help="do not write PNG plots")
    p.add_argument("--pairing", action="store_true",
                   help="link-level confirmation: predict the bisection-pairing benchmark (furthest-node pairs, "
                        "2 GB per pair) on the allowed/worst and the best geometry of each size, with the core "
                        "evaluator, and print the time ratio next to the bisection ratio")
    p.add_argument("--tie", default="split", choices=["split", "positive"],
                   help="DOR tie rule for --pairing (default split)")
    return p


def _known() -> list[str]:
    try:
        return list_machines()
    except MachineError:  # a broken user file must not break --help
        return []


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9.-]+", "_", name.lower()).strip("_") or "machine"


def _bw(x: float) -> str:
    return f"{x:.4g}"


def _fmt(shape: Sequence[int]) -> str:
    return "x".join(str(int(s)) for s in shape)


def _print_size(m: Machine, a: P.SizeAnalysis) -> None:
    unit = "midplanes" if m.kind == "bgq" else "routers"
    print(f"\nP = {a.nodes} nodes ({a.units} {unit}): {len(a.geometries)} geometr"
          f"{'y' if len(a.geometries) == 1 else 'ies'}")
    torus = "node torus" if m.kind == "bgq" else "router prism"
    head = (f"  {'geometry':<12} {'shape':<12} {torus:<16} {'links':>7} {'bisection B/s':>14} "
            f"{'per node B/s':>13} {'best/this':>9}")
    if a.has_allowed_list:
        head += "  allowed"
    print(head)
    for g in a.geometries:
        b = g.bisection
        row = (f"  {g.label:<12} {_fmt(g.shape):<12} {_fmt(g.node_dims):<16} {b.links:>7} "
               f"{_bw(b.bandwidth):>14} {_bw(b.per_node):>13} {P.predicted_speedup(a.best.bisection, b):>8.2f}x")
        if a.has_allowed_list:
            row += "  " + ("yes" if g.allowed else "no")
        print(row)
    print(f"  best {a.best.label} ({a.best.bisection.links} links), worst {a.worst.label} "
          f"({a.worst.bisection.links} links): predicted speedup best/worst {a.speedup_best_over_worst:.2f}x")
    if a.has_allowed_list:
        if a.best_allowed is None:
            print("  allowed list: no geometry of this size")
        else:
            print(f"  allowed {a.best_allowed.label} ({a.best_allowed.bisection.links} links) -> best possible "
                  f"{a.best.label} ({a.best.bisection.links} links): predicted speedup "
                  f"{a.speedup_best_over_allowed:.2f}x")


def _print_summary(m: Machine, analyses: Sequence[P.SizeAnalysis]) -> None:
    unit = "Midplanes" if m.kind == "bgq" else "Routers"
    if m.allowed_partitions is not None:
        print(f"\n{m.name}: allowed (current) vs best possible geometry; BW = bisection links")
        print(f"  {'P':>7} {unit:>9}  {'Current':<12} {'BW':>6}  {'New':<12} {'New BW':>6}  speedup")
        for a in analyses:
            cur = a.best_allowed
            better = cur is None or a.best.bisection.bandwidth > cur.bisection.bandwidth * (1 + 1e-12)
            new, nbw = (a.best.label, str(a.best.bisection.links)) if better else ("", "")
            print(f"  {a.nodes:>7} {a.units:>9}  {cur.label if cur else '-':<12} "
                  f"{cur.bisection.links if cur else '-':>6}  {new:<12} {nbw:>6}  "
                  f"{a.speedup_best_over_allowed:.2f}x")
    else:
        print(f"\n{m.name}: worst vs best geometry; BW = bisection links")
        print(f"  {'P':>7} {unit:>9}  {'Worst':<12} {'BW':>6}  {'Best':<12} {'BW':>6}  speedup")
        for a in analyses:
            better = a.best.bisection.bandwidth > a.worst.bisection.bandwidth * (1 + 1e-12)
            new, nbw = (a.best.label, str(a.best.bisection.links)) if better else ("", "")
            print(f"  {a.nodes:>7} {a.units:>9}  {a.worst.label:<12} {a.worst.bisection.links:>6}  "
                  f"{new:<12} {nbw:>6}  {a.speedup_best_over_worst:.2f}x")


def _run_machine(m: Machine, sizes: Sequence[int] | None, out: Path, plot: bool) -> None:
    print(m.label)
    print(f"  link bandwidth {', '.join(_bw(b) for b in m.link_bandwidth)} bytes/s per direction; "
          f"{'each partition is its own torus' if m.kind == 'bgq' else 'prisms routed over the host torus'}")
    analyses = P.analyse_machine(m, sizes)
    for a in analyses:
        _print_size(m, a)
    _print_summary(m, analyses)
    ds = P.partitions_dataset(m, analyses)
    path = P.write_netcdf_atomic(ds, out / f"{_slug(m.name)}.nc")
    print(f"\nwrote {path}")
    if plot:
        print(f"wrote {P.plot_partitions(ds, out / f'{_slug(m.name)}.png')}")


def _run_compare(ms: Sequence[Machine], sizes: Sequence[int] | None, out: Path, plot: bool) -> None:
    table = P.compare_machines(ms, sizes)
    names = [m.name for m in ms]
    unit = "Midplanes" if ms[0].kind == "bgq" else "Routers"
    print("best-case partitions; BW = bisection links; speedup = per-node bisection vs " + names[0])
    head = f"  {'P':>7} {unit:>9}"
    for n in names:
        head += f"  {n:<12} {'BW':>6}"
    print(head)
    for size, row in table.items():
        line = f"  {size:>7} {size // ms[0].nodes_per_unit:>9}"
        for n in names:
            g = row[n]
            line += f"  {g.label if g else '':<12} {g.bisection.links if g else '':>6}"
        print(line)
    ds = P.comparison_dataset(ms, table)
    sp = ds["speedup_vs_first"]
    for j, n in enumerate(names[1:], start=1):
        col = sp.isel(machine=j)
        if col.notnull().any():
            i = int(np.argmax(col.fillna(-1).values))
            print(f"  {n}: max speedup over {names[0]} at equal size {float(col[i]):.2f}x "
                  f"(P = {int(ds['size'][i])})")
    stem = "compare_" + "_".join(_slug(n) for n in names)
    print(f"\nwrote {P.write_netcdf_atomic(ds, out / f'{stem}.nc')}")
    if plot:
        print(f"wrote {P.plot_comparison(ds, out / f'{stem}.png')}")


def _run_slabs(m: Machine, out: Path, plot: bool) -> None:
    res = P.slab_bisections(m)
    best = max(r.bisection.per_node for r in res)
    print(f"{m.label}: bisection of router prisms (embedded in the host torus)")
    print(f"  {'prism':<10} {'ring':<8} {'nodes':>6} {'links':>6} {'bisection B/s':>14} {'per node B/s':>13} "
          f"{'vs best':>8}  cut links per dim")
    for r in res:
        b = r.bisection
        ring = "".join("R" if w else "-" for w in r.wrap)
        print(f"  {r.label:<10} {ring:<8} {b.nodes:>6} {b.links:>6} {_bw(b.bandwidth):>14} "
              f"{_bw(b.per_node):>13} {b.per_node / best:>7.2f}x  {list(b.links_per_dim)}")
    ds = P.slabs_dataset(m, res)
    stem = f"{_slug(m.name)}_slabs"
    print(f"\nwrote {P.write_netcdf_atomic(ds, out / f'{stem}.nc')}")
    if plot:
        print(f"wrote {P.plot_slabs(ds, out / f'{stem}.png')}")


def _run_pairing(m: Machine, sizes, out: Path, tie: str) -> None:
    res = P.confirm_machine(m, sizes, tie=tie)
    print(f"{m.name}: bisection-pairing benchmark predicted at link level (2 GB per pair, DOR "
          f"{m.routing_order}, ties {tie})")
    print(f"{'nodes':>7} {'compared':<16} {'geometry A':<12} {'geometry B':<12} {'time A [s]':>10} "
          f"{'time B [s]':>10} {'time ratio':>10} {'bisection ratio':>15}")
    for r in res:
        print(f"{r.nodes:>7} {r.which:<16} {r.a.label:<12} {r.b.label:<12} {r.time_a:>10.4g} {r.time_b:>10.4g} "
              f"{r.time_ratio:>10.3f} {r.bisection_ratio:>15.3f}")
    if res:
        path = P.write_netcdf_atomic(P.pairing_dataset(res), out / f"{_slug(m.name)}_pairing.nc")
        print(f"\nwrote {path}")


def main(argv: list[str] | None = None) -> int:
    """Run ``evaluator partitions``; returns the process exit status (0 ok, 2 bad input)."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        names = ([args.machine] if args.machine else []) + list(args.compare or [])
        if not names:
            raise MachineError("no machine given; known machines: " + ", ".join(_known()))
        out = Path(args.out)
        plot = not args.no_plot
        if args.compare:
            ms: list[Machine] = []
            for n in names:
                m = load_machine(n)
                if m.key not in {x.key for x in ms}:
                    ms.append(m)
            _run_compare(ms, args.size, out, plot)
            return 0
        m = load_machine(args.machine)
        if args.pairing:
            _run_pairing(m, args.size, out, args.tie)
            return 0
        if args.slabs or (m.kind == "torus" and not args.size):
            _run_slabs(m, out, plot)
            if not args.size:
                return 0
            print()
        _run_machine(m, args.size, out, plot)
        return 0
    except ConfigError as exc:  # MachineError, UnknownMachineError, PartitionError
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
