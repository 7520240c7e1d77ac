"""``evaluator partitions``: torus partition analysis from the command line.

Usage::

    evaluator partitions MACHINE|--machine MACHINE [--size N ...] [--compare M1 M2 ...]
                                 [--slabs] [--out DIR] [--no-plot] [--pairing [--tie T]]

Examples::

    evaluator partitions Mira                      # Oltchik Tables 1/6, Fig. 1
    evaluator partitions JUQUEEN                   # Tables 2/7, Fig. 2
    evaluator partitions JUQUEEN --compare JUQUEEN-54 JUQUEEN-48   # Table 5, Fig. 7
    evaluator partitions BlueWaters --slabs        # Fiedler's slabs
    evaluator partitions Sequoia --size 8192 24576
    evaluator partitions --machine Mira            # the same as the first

Each analysis writes its dataset to ``<out>/<name>/<UTC time>-<hash>.nc``
(``<name>``: the machine, ``<machine>_slabs``, ``<machine>_pairing`` or
``compare_<machines>``; the PNG beside it), never over an earlier one;
``<out>/<name>/latest`` points at the newest (``evaluator query
partitions/mira``).

The entry point only parses arguments, calls :mod:`evaluator.partitions` and
prints; every number comes from the library. Bad input (any
:class:`~evaluator.errors.ConfigError`: unknown machine, bad size or shape)
prints one line ``error: ...`` to stderr and returns 2.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import partitions as P
from ..display import format_number, shared_unit
from ..errors import ConfigError, MachineError
from ..io import check_writable, write_dataset
from ..machines import TorusMachine, list_machines, load_machine
from .._args import ArgumentParser, given_options

__all__ = ["main", "build_parser"]

_TOOL = "evaluator partitions"


def build_parser() -> argparse.ArgumentParser:
    """Argument parser of ``evaluator partitions``."""
    p = ArgumentParser(
        prog="evaluator partitions",
        description="Partition geometries of a torus machine: internal bisection (links and bytes/s per "
                    "direction), best and worst shapes, allowed vs best possible, predicted speedup of a "
                    "contention-bound job.")
    p.add_argument("machine", nargs="?", metavar="MACHINE", help="machine name (case-insensitive) or YAML file; "
                   "known: " + ", ".join(_known()))
    p.add_argument("--machine", dest="machine_option", metavar="NAME|YAML", default=None,
                   help="the machine, as the positional MACHINE (one of the two)")
    p.add_argument("--size", type=int, nargs="+", action="extend", metavar="N",
                   help="partition sizes in nodes (default: the allowed-list sizes, or every feasible size)")
    p.add_argument("--compare", nargs="+", action="extend", metavar="M",
                   help="compare best-case partitions of MACHINE and these machines (Oltchik Table 5)")
    p.add_argument("--slabs", action="store_true",
                   help="bisection per node of the machine's slab shapes (torus machines, Fiedler's slides)")
    p.add_argument("--out", default="results/partitions", metavar="DIR",
                   help="output directory: each analysis writes DIR/<name>/<UTC time>-<hash>.nc and .png "
                        "(default: results/partitions)")
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


def _unit(si: str, *columns) -> tuple[str, float]:
    """One display unit for columns printed together (decimal SI, :func:`evaluator.display.shared_unit`)."""
    return shared_unit(si, [np.asarray(c, dtype=float) for c in columns])


def _bw(x: float, unit: tuple[str, float]) -> str:
    return format_number(x / unit[1])


def _fmt(shape: Sequence[int]) -> str:
    return "x".join(str(int(s)) for s in shape)


def _print_size(m: TorusMachine, a: P.SizeAnalysis) -> None:
    print(f"\nP = {a.nodes} nodes ({a.units} {m.units}): {len(a.geometries)} geometr"
          f"{'y' if len(a.geometries) == 1 else 'ies'}")
    torus = m.partition_noun
    bw = _unit("bytes/s", [g.bisection.bandwidth for g in a.geometries],
               [g.bisection.per_node for g in a.geometries])
    head = (f"  {'geometry':<12} {'shape':<12} {torus:<16} {'links':>7} {f'bisection [{bw[0]}]':>17} "
            f"{f'per node [{bw[0]}]':>16} {'best/this':>9}")
    if a.has_allowed_list:
        head += "  allowed"
    print(head)
    for g in a.geometries:
        b = g.bisection
        row = (f"  {g.label:<12} {_fmt(g.shape):<12} {_fmt(g.node_dims):<16} {b.links:>7} "
               f"{_bw(b.bandwidth, bw):>17} {_bw(b.per_node, bw):>16} "
               f"{P.predicted_speedup(a.best.bisection, b):>8.2f}x")
        if a.has_allowed_list:
            row += "  " + ("yes" if g.allowed else "no")
        print(row)
    cut = lambda g: _cut(m, g, bw)  # noqa: E731
    print(f"  best {a.best.label} ({cut(a.best)}), worst {a.worst.label} ({cut(a.worst)}): predicted speedup "
          f"best/worst {a.speedup_best_over_worst:.2f}x")
    if a.has_allowed_list:
        if a.best_allowed is None:
            print("  allowed list: no geometry of this size")
        else:
            print(f"  allowed {a.best_allowed.label} ({cut(a.best_allowed)}) -> best possible "
                  f"{a.best.label} ({cut(a.best)}): predicted speedup {a.speedup_best_over_allowed:.2f}x")


def _uneven(m: TorusMachine) -> bool:
    """Whether the machine's links differ in bandwidth from dimension to dimension (Gemini's Y): its bisection
    links then do not rank its geometries, their bandwidth does."""
    return len(set(np.atleast_1d(np.asarray(m.link_bandwidth, float)).tolist())) > 1


def _cut(m: TorusMachine, g, unit: tuple[str, float]) -> str:
    """A geometry's bisection in words: its links, and their bandwidth where the links differ
    (``400 links, 3750 GB/s``; the geometries are ranked by the bandwidth)."""
    links = f"{g.bisection.links} links"
    return f"{links}, {_bw(g.bisection.bandwidth, unit)} {unit[0]}" if _uneven(m) else links


def _speedup(x: float) -> str:
    return "-" if not np.isfinite(x) else f"{x:.2f}x"  # (no allowed geometry of this size: nothing to compare)


def _print_summary(m: TorusMachine, analyses: Sequence[P.SizeAnalysis]) -> None:
    unit = m.units.capitalize()
    gs = [g for a in analyses for g in (a.best, a.worst, a.best_allowed) if g is not None]
    bw = _unit("bytes/s", [g.bisection.bandwidth for g in gs])
    # BW: the bisection's links where every link has one bandwidth (the papers' tables), else its bandwidth
    what, col = (f"BW = bisection bandwidth [{bw[0]}]", lambda g: _bw(g.bisection.bandwidth, bw)) if _uneven(m) \
        else ("BW = bisection links", lambda g: str(g.bisection.links))
    if m.allowed_partitions is not None:
        print(f"\n{m.name}: allowed (current) vs best possible geometry; {what}")
        print(f"  {'P':>7} {unit:>9}  {'Current':<12} {'BW':>6}  {'New':<12} {'New BW':>6}  speedup")
        for a in analyses:
            cur = a.best_allowed
            better = cur is None or a.best.bisection.bandwidth > cur.bisection.bandwidth * (1 + 1e-12)
            new, nbw = (a.best.label, col(a.best)) if better else ("", "")
            print(f"  {a.nodes:>7} {a.units:>9}  {cur.label if cur else '-':<12} "
                  f"{col(cur) if cur else '-':>6}  {new:<12} {nbw:>6}  {_speedup(a.speedup_best_over_allowed)}")
    else:
        print(f"\n{m.name}: worst vs best geometry; {what}")
        print(f"  {'P':>7} {unit:>9}  {'Worst':<12} {'BW':>6}  {'Best':<12} {'BW':>6}  speedup")
        for a in analyses:
            better = a.best.bisection.bandwidth > a.worst.bisection.bandwidth * (1 + 1e-12)
            new, nbw = (a.best.label, col(a.best)) if better else ("", "")
            print(f"  {a.nodes:>7} {a.units:>9}  {a.worst.label:<12} {col(a.worst):>6}  "
                  f"{new:<12} {nbw:>6}  {_speedup(a.speedup_best_over_worst)}")


def _save(ds, out: Path, name: str, what: str, machines: Sequence[TorusMachine], sizes, **more) -> Path:
    """Write ``ds`` to ``out/<name>/<UTC time>-<hash>.nc`` (the hash of what was asked), never over an earlier
    result; ``out/<name>/latest`` points at it."""
    identity = json.dumps({"analysis": what, "machines": [str(m.key) for m in machines],
                           "sources": [str(getattr(m, "source", "") or "") for m in machines],
                           "sizes": sorted(int(x) for x in sizes) if sizes else None, **more}, sort_keys=True)
    return write_dataset(ds, out / name, identity=identity)


def _check_latest(d: Path, kind: str, what: str) -> None:
    """Before the analysis: its directory ``d`` (``<out>/<name>``) must hold that analysis (``kind``, as
    :func:`evaluator.runs.dataset_kind` says it) or nothing: ``--out`` given a directory under which a sweep's or
    another command's directory had the analysis's name took its ``latest`` over (until 2026-12-06); a ``latest``
    of the user's own is said on stderr (:func:`evaluator.runs.check_latest_owner`)."""
    from ..runs import check_latest_owner

    check_latest_owner(d, "evaluator partitions", "--out", str(d.parent), own=kind,
                       expected=f"a directory whose {d.name}/ holds the datasets of {kind} (results/partitions "
                                f"by default), or none",
                       new=f"this {what}'s dataset", taken_by=f"the {what} saved in {d}", instead=f"the {what}",
                       remedy="Give another --out DIR (e.g. results/partitions).")


def _run_machine(m: TorusMachine, sizes: Sequence[int] | None, out: Path, plot: bool) -> None:
    check_writable("--out", out / _slug(m.name))  # its own directory, first
    _check_latest(out / _slug(m.name), "evaluator partitions", "analysis")
    analyses = P.analyse_machine(m, sizes)  # (first: a size it refuses is refused before anything is printed)
    print(m.label)
    bw = _unit("bytes/s", m.link_bandwidth)
    print(f"  link bandwidth {', '.join(_bw(b, bw) for b in m.link_bandwidth)} {bw[0]} per direction; "
          f"{m.partition_text}")
    for a in analyses:
        _print_size(m, a)
    _print_summary(m, analyses)
    ds = P.partitions_dataset(m, analyses)
    path = _save(ds, out, _slug(m.name), "machine", [m], sizes)
    print(f"\nwrote {path}")
    if plot:
        print(f"wrote {P.plot_partitions(ds, path.with_suffix('.png'))}")


def _run_compare(ms: Sequence[TorusMachine], sizes: Sequence[int] | None, out: Path, plot: bool) -> None:
    check_writable("--out", out / ("compare_" + "_".join(_slug(m.name) for m in ms)))  # its own directory, first
    _check_latest(out / ("compare_" + "_".join(_slug(m.name) for m in ms)), "evaluator partitions --compare",
                  "comparison")
    table = P.compare_machines(ms, sizes)
    names = [m.name for m in ms]
    unit = ms[0].units.capitalize()
    # BW: the links where every link has one bandwidth (Oltchik's Table 5), else the bandwidth that ranks them
    gs = [g for row in table.values() for g in row.values() if g is not None]
    bw = _unit("bytes/s", [g.bisection.bandwidth for g in gs])
    uneven = any(_uneven(m) for m in ms) or len({m.link_bandwidth[0] for m in ms}) > 1
    what, col = ((f"BW = bisection bandwidth [{bw[0]}]", lambda g: _bw(g.bisection.bandwidth, bw)) if uneven
                 else ("BW = bisection links", lambda g: str(g.bisection.links)))
    print(f"best-case partitions; {what}; speedup = per-node bisection vs " + names[0])
    head = f"  {'P':>7} {unit:>9}"
    for n in names:
        head += f"  {n:<12} {'BW':>6}"
    print(head)
    for size, row in table.items():
        line = f"  {size:>7} {size // ms[0].nodes_per_unit:>9}"
        for n in names:
            g = row[n]
            line += f"  {g.label if g else '':<12} {col(g) if g else '':>6}"
        print(line)
    ds = P.comparison_dataset(ms, table)
    sp = ds["speedup_vs_first"]
    sizes_of = [int(x) for x in ds["size"].values]
    for j, n in enumerate(names[1:], start=1):
        col = sp.isel(machine=j)
        if col.notnull().any():
            i, tied = _maxima(col.values)
            print(f"  {n}: max speedup over {names[0]} at equal size {float(col[i]):.2f}x "
                  f"(P = {sizes_of[i]}{_also(sizes_of, tied)})")
        held = ds["speedup_vs_first_holding"].isel(machine=j)
        if held.notnull().any():
            i, tied = _maxima(held.values)
            print(f"  {n}: max speedup over {names[0]}'s smallest partition that holds the job "
                  f"{float(held[i]):.2f}x (P = {sizes_of[i]} on "
                  f"{int(ds['first_holding_size'][i])} of {names[0]}{_also(sizes_of, tied)}; bisection ratio)")
    path = _save(ds, out, "compare_" + "_".join(_slug(n) for n in names), "compare", ms, sizes)
    print(f"\nwrote {path}")
    if plot:
        print(f"wrote {P.plot_comparison(ds, path.with_suffix('.png'))}")


def _check_combinations(args, given: dict[str, str]) -> None:
    """Refuse options the analysis chosen would ignore: --compare runs the comparison alone (not --slabs,
    --pairing), --pairing the benchmark alone (not --slabs, no plot), and --tie belongs to --pairing."""
    if args.compare and (args.slabs or args.pairing):
        raise ConfigError("--slabs" if args.slabs else "--pairing", True, "not with --compare (which compares the "
                          "machines' partitions alone)", "Run the other analysis in a command of its own.")
    if args.pairing and args.slabs:
        raise ConfigError("--slabs", True, "not with --pairing (which runs the pairing benchmark alone)",
                          "Run --slabs in a command of its own.")
    if "tie" in given and not args.pairing:
        raise ConfigError("--tie", args.tie, "--tie with --pairing only (the DOR tie rule of its benchmark)")


def _maxima(values) -> tuple[int, list[int]]:
    """The first position of the largest value (NaN: none) and the later positions tied with it (equal to 1e-9)."""
    v = np.where(np.isnan(np.asarray(values, float)), -np.inf, np.asarray(values, float))
    i = int(np.argmax(v))
    return i, [k for k in range(i + 1, v.size) if abs(v[k] - v[i]) <= 1e-9 * abs(v[i])]


def _also(sizes: list[int], tied: list[int]) -> str:
    """``", tied at P = 9216, 18432 and 24576"``: the other sizes with the same maximum (ties are ties)."""
    if not tied:
        return ""
    shown = [str(sizes[k]) for k in tied]
    if len(shown) > 4:
        listed = ", ".join(shown[:4]) + f" and {len(shown) - 4} more"
    else:
        listed = " and ".join([", ".join(shown[:-1]), shown[-1]] if len(shown) > 1 else shown)
    return f"; tied at P = {listed}"


def _run_slabs(m: TorusMachine, out: Path, plot: bool) -> None:
    check_writable("--out", out / f"{_slug(m.name)}_slabs")  # its own directory, first
    _check_latest(out / f"{_slug(m.name)}_slabs", "evaluator partitions --slabs", "slab analysis")
    res = P.slab_bisections(m)
    best = max(r.bisection.per_node for r in res)
    print(f"{m.label}: bisection of router prisms (embedded in the host torus)")
    bw = _unit("bytes/s", [r.bisection.bandwidth for r in res], [r.bisection.per_node for r in res])
    print(f"  {'prism':<10} {'ring':<8} {'nodes':>6} {'links':>6} {f'bisection [{bw[0]}]':>17} "
          f"{f'per node [{bw[0]}]':>16} {'vs best':>8}  cut links per dim")
    for r in res:
        b = r.bisection
        ring = "".join("R" if w else "-" for w in r.wrap)
        print(f"  {r.label:<10} {ring:<8} {b.nodes:>6} {b.links:>6} {_bw(b.bandwidth, bw):>17} "
              f"{_bw(b.per_node, bw):>16} {b.per_node / best:>7.2f}x  {'/'.join(map(str, b.links_per_dim))}")
    ds = P.slabs_dataset(m, res)
    path = _save(ds, out, f"{_slug(m.name)}_slabs", "slabs", [m], None)
    print(f"\nwrote {path}")
    if plot:
        print(f"wrote {P.plot_slabs(ds, path.with_suffix('.png'))}")


def _run_pairing(m: TorusMachine, sizes, out: Path, tie: str) -> None:
    check_writable("--out", out / f"{_slug(m.name)}_pairing")  # its own directory, first
    _check_latest(out / f"{_slug(m.name)}_pairing", "evaluator partitions --pairing", "pairing benchmark")
    try:
        res = P.confirm_machine(m, sizes, tie=tie, progress=True)
    except KeyboardInterrupt as stopped:  # (Ctrl-C: the sizes finished are printed and written, then it stops)
        if getattr(stopped, "partial", None) is None:
            raise
        res, done, asked = stopped.partial
        note = f"interrupted after {done:,} of {asked:,} sizes"
        _print_pairing(m, res, out, sizes, tie, note)
        print(f"{note}: the rows above are the sizes finished", file=sys.stderr, flush=True)
        raise
    _print_pairing(m, res, out, sizes, tie)


def _print_pairing(m: TorusMachine, res, out: Path, sizes, tie: str, interrupted: str | None = None) -> None:
    """The pairing table and its dataset (``interrupted``: the run stopped early, recorded in the dataset)."""
    print(f"{m.name}: bisection-pairing benchmark predicted at link level (2 GB per pair, DOR "
          f"{m.routing_order}, ties {tie})")
    tu = _unit("s", [r.time_a for r in res], [r.time_b for r in res])
    print(f"{'nodes':>7} {'compared':<16} {'geometry A':<12} {'geometry B':<12} {f'time A [{tu[0]}]':>11} "
          f"{f'time B [{tu[0]}]':>11} {'time ratio':>10} {'bisection ratio':>15}")
    for r in res:
        print(f"{r.nodes:>7} {r.which:<16} {r.a.label:<12} {r.b.label:<12} {_bw(r.time_a, tu):>11} "
              f"{_bw(r.time_b, tu):>11} "
              f"{r.time_ratio:>10.3f} {r.bisection_ratio:>15.3f}")
    if res:
        ds = P.pairing_dataset(res)
        if interrupted:
            ds.attrs["interrupted"] = interrupted
        path = _save(ds, out, f"{_slug(m.name)}_pairing", "pairing", [m], sizes, tie=tie,
                     **({"interrupted": interrupted} if interrupted else {}))
        print(f"\nwrote {path}")
    elif interrupted:
        print("no size with two geometries to compare finished: no dataset written")
    if sizes and not interrupted:
        same = sorted(set(int(x) for x in sizes) - {r.nodes for r in res})
        if same:
            print(f"nothing to compare at {', '.join(map(str, same))} nodes: the geometries compared there have "
                  f"the same bisection bandwidth" + ("" if res else "; no dataset written"))


def main(argv: list[str] | None = None) -> int:
    """Run ``evaluator partitions``; returns the process exit status (0 ok, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        _check_combinations(args, given_options(parser, args))
        if args.machine_option is not None:
            if args.machine is not None and args.machine != args.machine_option:
                raise ConfigError("--machine", args.machine_option, "one machine",
                                  f"The positional MACHINE names another ({args.machine!r}); give one of the two.")
            args.machine = args.machine_option
        names = ([args.machine] if args.machine else []) + list(args.compare or [])
        if not names:
            raise MachineError("no machine given; known machines: " + ", ".join(_known()))
        out = check_writable("--out", args.out)  # before the work, so that nothing computed is lost
        plot = not args.no_plot
        if args.compare:
            ms: list[TorusMachine] = []
            for n in names:
                m = load_machine(n).torus(_TOOL)
                if m.key not in {x.key for x in ms}:
                    ms.append(m)
            _run_compare(ms, args.size, out, plot)
            return 0
        m = load_machine(args.machine).torus(_TOOL)
        if args.pairing:
            _run_pairing(m, args.size, out, args.tie)
            return 0
        if not args.slabs and not m.enumerates_sizes and not args.size and not m.slabs:
            raise ConfigError("--size", None, f"the partition sizes (nodes) to analyse on {m.name}: it has too many "
                              "to list them all, and no slab shapes to show instead",
                              f"e.g. evaluator partitions {args.machine} --size {m.nodes_per_unit * 2}")
        if args.slabs or (not m.enumerates_sizes and not args.size):  # thousands of sizes: the slabs instead
            if args.size:  # the sizes' directory too, before the slabs are computed
                _check_latest(out / _slug(m.name), "evaluator partitions", "analysis")
            _run_slabs(m, out, plot)
            if not args.size:
                return 0
            print()
        _run_machine(m, args.size, out, plot)
        return 0
    except ConfigError as exc:  # MachineError, UnknownMachineError, PartitionError
        print(f"evaluator partitions: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
