"""``evaluator tiles --grid X,Y,Z --nodes N --tasks-per-node T [--machine M] [...]``: the tile-size advisor.

Parses the arguments into a :class:`evaluator.tiles.TileRequest` (and one
for ``--baseline-*``), calls :func:`evaluator.tiles.advise` (and
:func:`~evaluator.tiles.compare`), prints :func:`~evaluator.tiles.format_advice`
and writes the dataset (netCDF, ``<out>/<UTC time>-<hash>.nc``: a rerun never
replaces an earlier one; ``<out>/latest`` points at the newest) and a plot next
to it. Every number comes from the library.

Examples::

    evaluator tiles --grid 1000,1000,1000 --nodes 1000 --tasks-per-node 32 --machine BlueWaters
    evaluator tiles --grid 1000,1000,1000 --nodes 1000 --tasks-per-node 32 --limit links \\
        --baseline-grid 1024,1024,1024 --baseline-nodes 1024 --baseline-decomposition 32,32,32 \\
        --baseline-tile 4,4,2          # Fiedler's 40x20x40 against 32^3: up to 1.6x
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from .. import tiles as TL
from ..errors import ConfigError
from ..io import check_writable, write_dataset
from .._args import ArgumentParser, given_options, named_as_options

__all__ = ["main", "build_parser"]


def _ints(option: str, text: str | None, what: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    parts = [p.strip() for p in str(text).replace("x", ",").split(",")]
    if not parts or any(not re.fullmatch(r"\d+", p) for p in parts):
        raise ConfigError(option, text, f"comma-separated positive integers ({what}), e.g. 40,20,40")
    return tuple(int(p) for p in parts)


def _int(option: str, text: str, minimum: int = 1) -> int:
    if not re.fullmatch(r"\s*[+-]?\d+\s*", str(text)) or int(text) < minimum:
        raise ConfigError(option, text, f"an integer >= {minimum}")
    return int(text)


def _float(option: str, text: str | None) -> float | None:
    if text is None or str(text).lower() == "machine":
        return None
    try:
        v = float(text)
    except ValueError:
        raise ConfigError(option, text, "a positive number (bytes/s per direction) or 'machine'") from None
    return v


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="evaluator tiles",
        description="Tile-size advisor: enumerate decompositions and per-node tiles of a stencil job on a torus "
                    "machine, evaluate the halo exchange with the link model (all dimensions at once and one "
                    "at a time) and rank them.")
    p.add_argument("--grid", required=True, help="global grid points per dimension, e.g. 1000,1000,1000")
    p.add_argument("--nodes", required=True, help="number of nodes")
    p.add_argument("--tasks-per-node", required=True, help="tasks (ranks) per node")
    p.add_argument("--machine", default="BlueWaters", help="catalogue machine or YAML file (default BlueWaters)")
    p.add_argument("--decomposition", help="only this task grid, e.g. 40,20,40")
    p.add_argument("--tile", help="only this node tile (tasks per node along each dimension), e.g. 4,2,4")
    p.add_argument("--bytes-per-point", default="8", help="bytes per halo point (default 8: one double)")
    p.add_argument("--periodic", action="store_true", help="periodic boundaries (default: none)")
    p.add_argument("--injection-bandwidth", default=None,
                   help="node injection bytes/s per direction (default: the machine's)")
    p.add_argument("--limit", default="all", choices=list(TL.LIMITS),
                   help="rank by every link (all, default) or the router links only (links: the slides' argument)")
    p.add_argument("--rank-by", default="all_at_once", choices=list(TL.EXCHANGES))
    p.add_argument("--max-evaluated", default="64",
                   help="evaluate the best N candidates of each exchange by the closed form (0: all; default 64)")
    p.add_argument("--baseline-grid", help="compare against the best candidate of another job: its grid")
    p.add_argument("--baseline-nodes", help="the baseline's nodes (default --nodes)")
    p.add_argument("--baseline-decomposition", help="the baseline's task grid")
    p.add_argument("--baseline-tile", help="the baseline's node tile")
    p.add_argument("-n", "--top", dest="top", default="10", metavar="N", help="rows to print (0: all; default 10)")
    p.add_argument("--out", default="results/tiles", metavar="DIR",
                   help="directory of the dataset (<UTC time>-<hash>.nc) and plot (default results/tiles)")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--no-save", action="store_true", help="write nothing")
    return p


_BASELINE_FLAGS = {"--grid": "--baseline-grid", "--nodes": "--baseline-nodes",
                   "--decomposition": "--baseline-decomposition", "--tile": "--baseline-tile"}


def _as_baseline() -> named_as_options:
    """The baseline's errors name the baseline's flags (``--baseline-tile``, not ``--tile``)."""
    return named_as_options(_BASELINE_FLAGS)


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    out_given = "out" in given_options(parser, args)
    if args.no_save and (out_given or args.no_plot):  # both say where to write
        raise ConfigError("--out" if out_given else "--no-plot", args.out if out_given else True,
                          "not with --no-save (which writes nothing: no dataset, no plot)",
                          "Drop --no-save to write, or the other option.")
    grid = _ints("--grid", args.grid, "points per dimension")
    req = TL.TileRequest(
        grid=grid, nodes=_int("--nodes", args.nodes), tasks_per_node=_int("--tasks-per-node", args.tasks_per_node),
        machine=args.machine, bytes_per_point=_float("--bytes-per-point", args.bytes_per_point),
        periodic=args.periodic, decomposition=_ints("--decomposition", args.decomposition, "tasks per dimension"),
        tile=_ints("--tile", args.tile, "tasks per node along each dimension"),
        injection_bandwidth=_float("--injection-bandwidth", args.injection_bandwidth), limit=args.limit,
        rank_by=args.rank_by, max_evaluated=_int("--max-evaluated", args.max_evaluated, 0))
    if req.bytes_per_point is None:
        raise ConfigError("--bytes-per-point", args.bytes_per_point, "a positive number of bytes")
    top = _int("--top", args.top, 0)
    TL.check_request(req)
    base = None
    if any(v is not None for v in (args.baseline_grid, args.baseline_nodes, args.baseline_decomposition,
                                   args.baseline_tile)):
        base = TL.TileRequest(
            grid=_ints("--baseline-grid", args.baseline_grid, "points per dimension") or grid,
            nodes=_int("--baseline-nodes", args.baseline_nodes) if args.baseline_nodes else req.nodes,
            tasks_per_node=req.tasks_per_node, machine=req.machine, bytes_per_point=req.bytes_per_point,
            periodic=req.periodic,
            decomposition=_ints("--baseline-decomposition", args.baseline_decomposition, "tasks per dimension"),
            tile=_ints("--baseline-tile", args.baseline_tile, "tasks per node along each dimension"),
            injection_bandwidth=req.injection_bandwidth, limit=req.limit, rank_by=req.rank_by,
            max_evaluated=req.max_evaluated)
        with _as_baseline():
            TL.check_request(base)
    if not args.no_save:
        check_writable("--out", args.out)  # before the work, so that nothing computed is lost
        from ..runs import check_latest_owner  # (tiles saved into a sweep's or study's directory took its latest)

        check_latest_owner(args.out, "evaluator tiles", "--out", own="evaluator tiles",
                           expected="a directory of the datasets evaluator tiles writes (results/tiles by default), "
                                    "or one holding none",
                           new="this advice's dataset", taken_by="the advice saved there", instead="the advice",
                           remedy="Give another --out DIR (e.g. results/tiles), or --no-save.")
    ds = TL.advise(req, progress=True)
    if base is not None:
        with _as_baseline():
            ds = TL.compare(ds, TL.advise(base, progress=True))
    print(TL.format_advice(ds, top))
    if not args.no_save:
        identity = json.dumps({k: v for k, v in sorted(vars(args).items()) if k not in ("out", "no_plot", "no_save",
                                                                                       "top")})
        path = write_dataset(ds, Path(args.out), identity=identity)
        print(f"dataset: {path}")
        if not args.no_plot:
            print(f"plot: {TL.plot_advice(ds, Path(path).with_suffix('.png'))}")
    return 0
