"""``evaluator eval [overrides]``: evaluate one design point and write its dataset,
``<output_dir>/<UTC time>-<hash>.nc`` (the hash of the config; ``<output_dir>/latest`` points at the newest; an
earlier dataset is never replaced)."""

from __future__ import annotations

from pathlib import Path

from .. import config
from ..display import elapsed, summary_lines
from ..errors import StorageError
from ..evaluation import evaluate
from ..cost.dataset import check_point_budget, with_cost
from ..io import check_writable, write_dataset
from ..jobs import evaluate_jobs, job_summary_lines
from .._args import ArgumentParser

__all__ = ["main"]


def main(argv: list[str]) -> int:
    ap = ArgumentParser(prog="evaluator eval",
                                 description="evaluate one design point from the config and write a dataset "
                                             "under results/",
                                 epilog="Overrides are Hydra syntax, e.g. topology=torus topology.dims=[4,4,4] "
                                        "routing=dor traffic=all_to_all placement=linear")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides key=value / group=option")
    ap.add_argument("--show-config", action="store_true", help="print the composed config and exit")
    args = ap.parse_intermixed_args(argv)
    cfg = config.compose(args.overrides)
    if args.show_config:
        print(config.to_yaml(cfg))
        return 0
    obj = config.to_object(cfg)
    if obj.save:
        check_writable("output_dir", obj.output_dir)  # before the work, so that nothing computed is lost
    if config.has_jobs(obj):
        jp = config.build_jobs(obj)
        check_point_budget(jp.topology, obj.cost)
        with elapsed(f"evaluating {len(jp.jobs)} jobs on {jp.topology.name}"):
            ds = evaluate_jobs(jp.topology, list(jp.jobs), jp.routing, jp.background,
                               exclusive_nodes=jp.exclusive_nodes, interference=jp.interference,
                               sharing=obj.sharing, fairness=obj.fairness)
        lines = job_summary_lines(ds)
    else:
        point = config.build(obj)
        check_point_budget(point.topology, obj.cost)
        with elapsed(f"evaluating {point.traffic.name} on {point.topology.name}, routing {point.routing.kind}"):
            ds = evaluate(point.topology, point.traffic, point.placement, point.routing, bounds=obj.bounds,
                          bound_solver=obj.bound_solver, sharing=obj.sharing, fairness=obj.fairness,
                          progression=obj.progression)
        lines = summary_lines(ds)
    with_cost(ds, jp.topology if config.has_jobs(obj) else point.topology, obj.cost)
    ds.attrs["config_yaml"] = config.to_yaml(cfg)
    for line in lines:
        print(line)
    if obj.save:
        try:
            path = write_dataset(ds, Path(obj.output_dir), identity=ds.attrs["config_yaml"])
        except OSError as exc:
            raise StorageError(f"output_dir = {obj.output_dir!r} is invalid: cannot write the dataset there "
                               f"({exc.strerror or exc}). The evaluation above is not saved; pick a writable "
                               f"output_dir=DIR or save=false.", "output_dir", obj.output_dir,
                               "a writable directory") from None
        print(f"dataset: {path}")
    return 0
