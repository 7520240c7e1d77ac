"""``evaluator eval [overrides] [--draws K]``: evaluate one design point and write its dataset,
``<output_dir>/<UTC time>-<hash>.nc`` (the hash of the config; ``<output_dir>/latest`` points at the newest; an
earlier dataset is never replaced).

Under a routing where one spec is one random draw (hashed ECMP: one hash seed), the point is also evaluated under
``K`` draws (default :data:`evaluator.evaluation.DRAWS`, the configured one first;
:func:`evaluator.evaluation.evaluate_draws`): the mean, 95th percentile, largest and smallest completion time are
printed and kept in the dataset (``draw_completion_time[draw]``); ``--draws 1`` evaluates the configured draw
only."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import config
from ..display import elapsed, format_values, shared_unit, summary_lines
from ..errors import ConfigError, ResourceError, StorageError
from ..evaluation import DRAWS, as_routing, check_draws, evaluate, evaluate_draws
from ..cost.dataset import check_point_budget, with_cost
from ..io import check_writable, write_dataset
from ..jobs import evaluate_jobs, job_summary_lines
from .._args import ArgumentParser, override_key
from .sweep import one_draw_line

__all__ = ["main"]


def main(argv: list[str]) -> int:
    ap = ArgumentParser(prog="evaluator eval",
                                 description="evaluate one design point from the config and write a dataset "
                                             "under results/",
                                 epilog="Overrides are Hydra syntax, e.g. topology=torus topology.dims=[4,4,4] "
                                        "routing=dor traffic=all_to_all placement=linear")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides key=value / group=option")
    ap.add_argument("--show-config", action="store_true", help="print the composed config and exit")
    ap.add_argument("--draws", type=int, default=None, metavar="K",
                    help=f"under a random routing (hashed ECMP: one hash seed is one draw), also evaluate K draws, the "
                         f"configured one first, and print their mean, 95th percentile and range (default {DRAWS}; 1: "
                         f"the configured draw only)")
    args = ap.parse_intermixed_args(argv)
    given, args.draws = args.draws is not None, DRAWS if args.draws is None else args.draws
    check_draws("--draws", args.draws)
    for o in args.overrides:  # settings eval never reads: refused, not ignored (sweep.format=xyz ran without a word)
        key = override_key(o) or ""
        if key.split(".")[0] in ("sweep", "ray", "sweeps"):
            raise ConfigError(key, o.split("=", 1)[-1], "a setting evaluator eval reads: sweep.*, sweeps and ray.* "
                              "set evaluator sweep", f"Run evaluator sweep with {o}, or drop it.")
    cfg = config.compose(args.overrides)
    if args.show_config:
        print(config.to_yaml(cfg))
        return 0
    obj = config.to_object(cfg)
    if obj.save:
        check_writable("output_dir", obj.output_dir)  # before the work, so that nothing computed is lost
        _check_latest(obj.output_dir)
    if config.has_jobs(obj):
        jp = config.build_jobs(obj)
        check_point_budget(jp.topology, obj.cost)
        with elapsed(f"evaluating {len(jp.jobs)} jobs on {jp.topology.name}"):
            ds = evaluate_jobs(jp.topology, list(jp.jobs), jp.routing, jp.background,
                               exclusive_nodes=jp.exclusive_nodes, interference=jp.interference,
                               sharing=obj.sharing, fairness=obj.fairness)
        lines = job_summary_lines(ds) + _jobs_one_draw(jp, obj) + _one_draw_note(obj, "the times above are")
    else:
        point = config.build(obj)
        check_point_budget(point.topology, obj.cost)
        with elapsed(f"evaluating {point.traffic.name} on {point.topology.name}, routing {point.routing.kind}"):
            ds = evaluate(point.topology, point.traffic, point.placement, point.routing, bounds=obj.bounds,
                          bound_solver=obj.bound_solver, sharing=obj.sharing, fairness=obj.fairness,
                          progression=obj.progression)
        lines = summary_lines(ds) + _one_draw_note(obj, "the time above is")
    with_cost(ds, jp.topology if config.has_jobs(obj) else point.topology, obj.cost)
    ds.attrs["config_yaml"] = config.to_yaml(cfg)
    drawn = config.drawn_choices(obj)
    if drawn:  # as a sweep's dataset says it (query and plot read it): the point is one draw of these choices
        ds.attrs["one_draw"] = "; ".join(drawn.values())
    for line in lines:
        print(line, flush=True)
    interrupted = False
    if not config.has_jobs(obj):  # after the point's own lines: its draws may take a while, and a Ctrl-C keeps them
        lines, interrupted = _draws(ds, point, args.draws, dict(sharing=obj.sharing, fairness=obj.fairness,
                                                                progression=obj.progression))
        for line in lines:
            print(line)
    if given and args.draws > 1 and (config.has_jobs(obj) or not point.routing.draws(1)):
        print(f"draws       --draws {args.draws} does nothing here: "
              + ("with several jobs each job's random routing is named in the note above (sweep its seed axis)"
                 if config.has_jobs(obj) else
                 f"routing {point.routing.kind} is no random draw (its spec gives its paths)"))
    if obj.save:
        try:
            path = write_dataset(ds, Path(obj.output_dir), identity=ds.attrs["config_yaml"] + f"\n# --draws {args.draws}")
        except OSError as exc:
            raise StorageError(f"output_dir = {obj.output_dir!r} is invalid: cannot write the dataset there "
                               f"({exc.strerror or exc}). The evaluation above is not saved; pick a writable "
                               f"output_dir=DIR or save=false.", "output_dir", obj.output_dir,
                               "a writable directory") from None
        print(f"dataset: {path}")
    return 130 if interrupted else 0  # (the shell's code for a Ctrl-C: the command did not finish what it was asked)


def _check_latest(output_dir: str) -> None:
    """Before the work: refuse an ``output_dir`` whose latest dataset (what ``evaluator query DIR`` reads) another
    command wrote, a sweep's or a study's: the eval's dataset would take its ``latest`` link over, and the next
    query of the study read the one point (until 2026-12-06). Where ``latest`` is a file or directory of the
    user's own, which is left as it is, say so on stderr (it was silent). :func:`evaluator.runs.check_latest_owner`,
    as every saving command."""
    from ..runs import check_latest_owner

    check_latest_owner(output_dir, "evaluator eval", "output_dir", own="evaluator eval",
                       expected="a directory of evaluator eval's own datasets (results/eval by default), or one "
                                "holding none",
                       new="this evaluation's dataset", taken_by="an eval saved there", instead="the one point",
                       remedy="Give another output_dir=DIR (e.g. results/eval), or save=false.")


def _draws(ds, point, k: int, options: dict) -> tuple[list[str], bool]:
    """Where the point's routing is one random draw (:meth:`~evaluator.routing.Routing.draws`) and ``k > 1``: the
    lines that say what ``k`` draws give (kept in ``ds`` as ``draw_completion_time[draw]``), one per time the
    point has (the bandwidth bound, and with a latency model or max-min sharing, ``options``, those times too:
    ``draw_time_with_latency[draw]``, ...); none otherwise. A progress bar counts the draws on a terminal. Draws
    too large for memory, or interrupted by Ctrl-C, leave the point's own result as it is, with a line that says
    why the draws are missing."""
    if k < 2 or not point.routing.draws(1):
        return [], False
    try:
        d = evaluate_draws(point.topology, point.routing, point.traffic, point.placement, k,
                           progress=sys.stderr.isatty(), **options)
    except ResourceError as exc:
        return [f"draws       not evaluated: {exc}"], False
    except KeyboardInterrupt:
        return [f"draws       interrupted (Ctrl-C) before the {k} draws were evaluated: none summarised; the point's "
                f"result above is kept (--draws 1 skips them)"], True
    draw = [str(v) for v in d["draw"].values]
    lines = []
    for v, what in (("completion_time", "completion"), ("time_with_latency", "time with latency"),
                    ("time_max_min", "max-min time")):
        if v not in d:
            continue
        ds[f"draw_{v}"] = d[v].isel(point=0, drop=True).assign_attrs(
            units="s", long_name=f"{v} under each of {k} draws of the routing (the first: this point's)")
        mean, p95, hi, lo = (float(d[f"{v}_{s}"][0]) for s in ("mean", "p95", "max", "min"))
        times = d[v][0].values
        rank = 1 + int((times < times[0]).sum())  # of the configured draw, the one above: 1 the fastest (ties share)
        unit = shared_unit("s", [[mean], [p95], [lo], [hi]])  # the line's times in one unit
        t_mean, t_p95, t_lo, t_hi = (f"{x} {unit[0]}" for x in format_values([mean, p95, lo, hi], "s", unit)[0])
        lines.append(f"{'draws' if not lines else '':<12}{what} over {k} draws of the routing ({draw[0]} .. "
                     f"{draw[-1]}): mean {t_mean}, 95th percentile {t_p95}, range {t_lo} to {t_hi}; {draw[0]}, "
                     f"above, ranks {rank} of {k} (1: the fastest)")
    return lines, False


def _one_draw_note(obj, subject: str) -> list[str]:
    """The line that names the point's random choices drawn once (:func:`evaluator.config.drawn_choices`; several
    jobs: each job's), but its routings: their draws have their own lines (:func:`_draws`, :func:`_jobs_one_draw`)."""
    drawn = {g: w for g, w in config.drawn_choices(obj).items() if g.rsplit(".", 1)[-1] != "routing"}
    return ["note        " + one_draw_line(drawn, subject, "sweep the same overrides over")] if drawn else []


def _jobs_one_draw(jp, obj) -> list[str]:
    """Several jobs under a routing of which one spec is one random draw (hashed ECMP), the top-level one where a
    job routes by it or a job's own (:func:`evaluator.config.drawn_choices`): a line that says the times are that
    draw's, with the way to their mean over draws (a sweep's ``routing.seed`` axis, ``jobs.<i>.routing.seed``
    for a job's own, ``background.routing.seed`` for the background's own)."""
    keys = [g for g in config.drawn_choices(obj) if g.rsplit(".", 1)[-1] == "routing"]
    if not keys:
        return []
    labels = [as_routing(jp.routing if k == "routing" else jp.background.routing if k == "background.routing"
                         else jp.jobs[int(k.split(".")[1])].routing).label for k in keys]
    axes = [f"{k}.seed" for k in keys]
    return [f"note        {', '.join(dict.fromkeys(labels))}: one draw of a random routing; the times above are that "
            f"draw's, not what the routing gives on average: evaluator sweep with the same overrides and the "
            f"{'axis' if len(axes) == 1 else 'axes'} {' '.join(a + '=' + repr('range(0,16)') for a in axes)}, then "
            f"evaluator query RUN --draws {' '.join(axes)} --best makespan"]
