"""``evaluator placement [overrides] [--write-rank-order DIR] [--write-hostfile FILE --hostnames FORMAT|FILE]
[--force]``: build one placement, describe it, write the launcher's files (``MPICH_RANK_ORDER`` and ``node_list``
for aprun; Slurm's hostfile for ``srun --distribution=arbitrary``; files already there are replaced only with
``--force``).

``DIR`` is taken as given (relative to the working directory). The docs' ``launch/`` is in the checkout's
``.gitignore``; a directory inside the checkout that git does not ignore gets a note saying so, since ``git
status`` will list the files (:func:`checkout_note`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from .. import config
from ..errors import ConfigError
from ..io import check_writable, repo_dir
from ..placement import compute_mask, launch_fill_order, write_launch_files
from ..placement.hostfile import write_hostfile
from . import _hostfile
from ..topology import TorusTopology
from .._args import ArgumentParser

__all__ = ["main", "checkout_note"]


def checkout_note(written: Path, root: Path | None = None) -> str | None:
    """A note when the file ``written`` lies inside the git checkout ``root`` (default: this checkout,
    :func:`~evaluator.io.repo_dir`) and git does not ignore it; None otherwise, or when git cannot tell."""
    root = Path(repo_dir() if root is None else root).resolve()
    try:
        rel = Path(written).resolve().relative_to(root)
    except ValueError:
        return None
    if not (root / ".git").exists():
        return None
    try:
        rc = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", str(rel)], capture_output=True,
                            timeout=10, check=False).returncode
    except (OSError, subprocess.SubprocessError):
        return None
    if rc != 1:  # 0: ignored; 128: git could not tell
        return None
    return (f"note: {rel.parent}/ is inside the checkout {root} and git does not ignore it (git status lists it); "
            f"write the launcher's files outside the checkout, or into launch/ (ignored)")


def main(argv: list[str]) -> int:
    ap = ArgumentParser(
        prog="evaluator placement",
        description="build the placement of a config (topology, traffic, placement groups), print where it "
                    "puts the tasks, and optionally write MPICH_RANK_ORDER and node_list for aprun",
        epilog="e.g. evaluator placement topology=machine topology.name=BlueWaters topology.partition=null "
               "routing=dor traffic=stencil traffic.alpha=[96,96,96] traffic.beta=[12,8,8] placement=topaware "
               "placement.tasks_per_node=4 placement.prism=[8,6,8] --write-rank-order launch/")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides key=value / group=option")
    ap.add_argument("--write-rank-order", metavar="DIR", default=None,
                    help="write DIR/MPICH_RANK_ORDER (MPICH_RANK_REORDER_METHOD=3) and DIR/node_list (aprun -L)")
    _hostfile.add_options(ap)
    ap.add_argument("--force", action="store_true",
                    help="replace MPICH_RANK_ORDER and node_list already in DIR, or the hostfile (default: refuse)")
    ap.add_argument("--fill", choices=("alps", "id"), default=None,
                    help="order in which the launcher fills the listed nodes: alps (the ALPS-like order; default "
                         "on 3-D tori) or id (ascending node id; default elsewhere)")
    args = ap.parse_intermixed_args(argv)
    if args.write_rank_order is None and (args.force and args.write_hostfile is None or args.fill is not None):
        raise ConfigError("--force" if args.force else "--fill", True if args.force else args.fill,  # files alone
                          "with --write-rank-order" + (" or --write-hostfile" if args.force else "") + " only (it "
                          "says how the launcher's files are written)", "Add --write-rank-order DIR, or drop it.")
    _hostfile.check_options(args)
    there = [str(Path(args.write_rank_order) / n) for n in ("MPICH_RANK_ORDER", "node_list")
             if args.write_rank_order is not None and (Path(args.write_rank_order) / n).exists()]
    if there and not args.force:  # refused before anything is built
        raise ConfigError("--write-rank-order", args.write_rank_order,
                          "a directory without MPICH_RANK_ORDER or node_list",
                          f"It holds {' and '.join(there)} already; choose another directory, or add --force "
                          f"to replace them.")
    if args.write_rank_order is not None:
        check_writable("--write-rank-order", args.write_rank_order)
    cfg = config.compose(args.overrides)
    obj = config.to_object(cfg)
    point = config.build(obj)
    topo, pl = point.topology, point.placement
    names = _hostfile.names_of(args, topo.n_nodes)
    nodes, counts = np.unique(pl.task_node, return_counts=True)
    routers = np.unique(topo.node_router[nodes])
    bad = int((~compute_mask(topo)[nodes]).sum())
    print(f"placement: {pl.name} on {topo.name}")
    print(f"tasks {pl.n_tasks}, nodes {nodes.size} ({int(counts.min())}-{int(counts.max())} tasks each), "
          f"routers {routers.size}, service or down nodes used {bad}")
    if isinstance(topo, TorusTopology):
        c = topo.router_coords[routers]
        span = [f"{int(lo)}..{int(hi)}" for lo, hi in zip(c.min(axis=0), c.max(axis=0))]
        print("router coordinates span " + " x ".join(span))
    if args.write_rank_order is not None:
        fill, order = launch_fill_order(topo, args.fill)
        ro, nl = write_launch_files(pl, args.write_rank_order, fill_order=order,
                                    header="evaluator placement " + " ".join(args.overrides), fill=fill)
        print(f"rank order: {ro}  (export MPICH_RANK_REORDER_METHOD=3)")
        print(f"node list: {nl}  (aprun -L `cat {nl}` -N {int(counts.max())} ...; nodes filled in {fill} order)")
        note = checkout_note(Path(ro))
        if note:
            print(note)
    if names is not None:
        hf = write_hostfile(pl, args.write_hostfile, names, header="evaluator placement " + " ".join(args.overrides))
        print(f"hostfile: {hf}  (SLURM_HOSTFILE={hf} srun --distribution=arbitrary -n {pl.n_tasks} ...)")
        note = checkout_note(Path(hf))
        if note:
            print(note)
    return 0
