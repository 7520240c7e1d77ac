"""``evaluator sweep [--config-dir DIR] [sweeps=NAME|PATH] [overrides]``: run (or resume) a sweep.

* ``sweeps=NAME``: the study ``sweeps/NAME.yaml``; with ``--config-dir DIR``, ``DIR/NAME.yaml`` (the study
  file may define config groups next to it: ``DIR/routing/NAME.yaml``); ``sweeps=PATH.yaml``: that file;
* no ``sweeps=``: exactly the axes the overrides give, on ``conf/config.yaml`` (the clean base);
* nothing, or run settings only (``ray.*``, ``sweep.name``, ``--no-progress``, ...): the default study,
  :data:`~evaluator.config.hydra.studies.DEFAULT_STUDY` (the README's main job).

Axes come from the study's ``sweep.axes`` and from Hydra sweep overrides on the command line
(``routing=minimal,valiant``, ``placement.seed='range(0,8)'``; see docs/sweeps.md). A sweep with no
feasible point exits with status 2 and the counted reasons, after writing its dataset; a sweep with some infeasible
points prints theirs. Reasons are grouped by rule, the rule covering most points first.

The table printed at the end (:func:`end_table`) ranks the feasible rows: the best five, and the best row of every
value of each categorical axis (an axis whose labels are not all numbers: ``routing``, ``placement``,
``traffic.beta``), so that no routing of the sweep is hidden below the fifth row; ``rank`` is the row's place in
the whole ranking.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .. import config
from ..config.hydra import DEFAULT_STUDY, compose_sweep_config
from ..dataset import FULLER_TIMES, predicted_time
from ..display import format_table, format_timing
from ..errors import ConfigError, WordedError
from ..io import repo_dir
from ..query import best, open_results
from ..sweep import plan_sweep, run_sweep
from ..sweep.reasons import reason_counts, summarize_reasons
from .._args import ArgumentParser

__all__ = ["main"]


def _reasons(ds, n: int = 4) -> str:
    """``"12 x <reason>, 3 x <reason>, and 2 other reasons"``: the infeasible points' reasons grouped by rule, the
    one covering most points first (:func:`~evaluator.sweep.reasons.summarize_reasons`)."""
    return summarize_reasons(reason_counts(ds), n)


TOP = 5
"""Rows of the end-of-sweep table before the best of each categorical axis's values."""
MAX_VALUES = 24
"""A categorical axis with more values than this is not expanded in the end-of-sweep table (its values are
named as a count; ``evaluator query --over`` ranks them)."""


def _is_number(label) -> bool:
    try:
        float(str(label))
    except ValueError:
        return False
    return True


def end_table(ds, metric: str, top: int = TOP, max_values: int = MAX_VALUES):
    """``(table, note)``: the end-of-sweep table of ``ds`` ranked by ``metric`` (:func:`~evaluator.query.best`),
    its ``top`` best rows and, for every categorical axis (labels not all numbers, more than one value), the best
    row of each of its values; ``rank`` is the row's place in the whole ranking. ``note``: one line saying what
    is shown (empty when it is the top rows only), naming values with no feasible row."""
    ranked = best(ds, metric)
    dims = [str(d) for d in ds[metric].dims]
    ranks = list(ranked.index)
    n_top = min(top, len(ranked))
    while 0 < n_top < len(ranks) and ranks[n_top] == ranks[n_top - 1]:
        n_top += 1  # ties are ties: a row tied with the last one shown is shown too
    keep = list(range(n_top))  # positions in the ranking (rank repeats where rows tie)
    axes, notes = [], []
    for a in dims:
        if a not in ranked.columns or a not in ds.coords:
            continue
        labels = [str(v) for v in ds[a].values.tolist()]
        if len(labels) < 2 or all(_is_number(v) for v in labels):
            continue
        if len(labels) > max_values:
            notes.append(f"{a} has {len(labels)} values: evaluator query --over to rank each")
            continue
        axes.append(a)
        codes, uniques = pd.factorize(ranked[a].to_numpy())  # one code per value, in ranked order
        _, first = np.unique(codes, return_index=True)
        keep += [int(i) for i in first]  # ranked: a value's first row is its best
        seen = {str(u) for u in uniques}
        none = [v for v in labels if v not in seen]
        if none:
            notes.append(f"no feasible row for {a}={', '.join(none)}")
    table = ranked.iloc[sorted(set(keep))]
    table.attrs = dict(ranked.attrs)
    extra = len(table) - n_top
    shown = f"the best {min(top, len(ranked))} of {len(ranked)} rows"
    if n_top > min(top, len(ranked)):
        shown += f" ({n_top - min(top, len(ranked))} more tied with the last)"
        if not extra:
            notes.insert(0, shown)
    if extra:
        notes.insert(0, f"{shown} and the best of each value of {', '.join(axes)} ({extra} more)")
    return table, "; ".join(notes)


_EVAL_KEYS = {"output_dir": ("sweep.output_dir=DIR (where a sweep writes; output_dir is evaluator eval's)"),
              "save": "a sweep always writes its dataset (save is evaluator eval's); sweep.output_dir=DIR says where"}


def _refuse_eval_keys(overrides) -> None:
    """``output_dir=`` and ``save=`` are eval's keys: a sweep read neither and wrote under results/ (until
    2026-12-06, in silence)."""
    for o in overrides:
        key, _, value = str(o).partition("=")
        if key.lstrip("+~") in _EVAL_KEYS:
            raise ConfigError(key.lstrip("+~"), value, _EVAL_KEYS[key.lstrip("+~")])


def main(argv: list[str]) -> int:
    studies = ", ".join(sorted(p.stem for p in (repo_dir() / "sweeps").glob("*.yaml")))
    ap = ArgumentParser(prog="evaluator sweep",
                                 description="run (or resume) a sweep: a study (sweeps=NAME, or your own file), or "
                                             "exactly the axes your overrides give; writes results/<sweep>/",
                                 epilog="e.g. evaluator sweep sweeps=dragonfly_nne_placement topology.p=8; "
                                        "evaluator sweep --config-dir ~/studies sweeps=mystudy; evaluator sweep "
                                        "topology=torus routing=dor placement=linear traffic=all_to_all "
                                        "traffic.n_tasks=4,8,16. Hydra sweep overrides add axes: "
                                        "routing=minimal,valiant placement.seed='range(0,8)' "
                                        "traffic.beta='choice([8,8,4],[16,8,8])'. Without sweeps=, the sweep has "
                                        "exactly the axes given; with no overrides (or run settings only), the "
                                        f"default study {DEFAULT_STUDY}. No feasible point: exit status 2. "
                                        f"Tables show ms, GB/s, MB; the dataset keeps SI units. docs/sweeps.md. "
                                        f"Named sweeps: {studies}")
    ap.add_argument("overrides", nargs="*",
                    help="Hydra overrides (sweeps=NAME or sweeps=PATH.yaml picks the study; key=a,b / range(..) / "
                         "choice(..) add axes)")
    ap.add_argument("--config-dir", "-cd", default=None, metavar="DIR",
                    help="a directory of your own studies (DIR/NAME.yaml: sweeps=NAME) and config groups "
                         "(DIR/routing/NAME.yaml: routing=NAME), as Hydra's --config-dir")
    ap.add_argument("--show-config", action="store_true", help="print the composed config and exit")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_intermixed_args(argv)
    if args.show_config:
        print(config.to_yaml(compose_sweep_config(args.overrides, config_name="sweep",
                                                  config_dir=args.config_dir)[0]))
        return 0
    _refuse_eval_keys(args.overrides)
    request = config.compose_sweep(args.overrides, config_dir=args.config_dir)
    plan = plan_sweep(request)
    print(f"sweep {plan.name}: {_points(plan.n_points)} on axes "
          + ", ".join(f"{a.name}[{a.size}]" for a in plan.axes) + f"; run id {plan.run_id}")
    shown: list = []
    # the summary and table of the dataset just assembled, printed while its file is written (not read back)
    path = run_sweep(plan, request.config.ray, progress=not args.no_progress,
                     on_dataset=lambda ds, path: shown.append(_summary(plan, ds, path)))
    if not shown:  # a run that had finished before: its file
        # the summary reads the reasons' counts the sweep recorded, not the 10^6 strings (1.7 s of a 2.4 s read)
        ds = open_results(path, drop_variables=["reason"])
        if "reason_counts_json" not in ds.attrs:  # (a dataset that does not record them: a several-jobs sweep)
            ds = open_results(path)
        _summary(plan, ds, path)
    print(f"dataset: {path}")
    return 0


def _points(n: int) -> str:
    """``n`` points, "1 point" for one (a sweep of one point said "1 points")."""
    return f"{n} point" if n == 1 else f"{n} points"


def _summary(plan, ds, path) -> bool:
    """Print a sweep's summary (points, timing, infeasible reasons) and its end table; refuse a sweep with no
    feasible point (naming the dataset ``path``)."""
    n_feasible, n_points = int(ds.attrs["n_feasible"]), int(ds.attrs["n_points"])
    print(f"{n_feasible} feasible of {_points(n_points)}; timing: {format_timing(json.loads(ds.attrs['timing_json']))}")
    if 0 < n_feasible < n_points:
        print(f"{n_points - n_feasible} infeasible: {_reasons(ds)}")
    if n_feasible == 0:
        raise WordedError(f"0 feasible of {_points(n_points)}: {_reasons(ds)}. Nothing to rank; the dataset "
                          f"(every point with its reason) is {path}", "sweep", plan.name,
                          "a sweep with at least one feasible point")
    metric = "makespan" if "makespan" in ds else predicted_time(ds)
    table, note = end_table(ds, metric)
    if metric in FULLER_TIMES:
        print(f"ranked by {metric}, {FULLER_TIMES[metric]} (completion_time is the bandwidth bound alone: "
              f"evaluator query --best completion_time)")
    print(format_table(table))
    if note:
        print(f"shown: {note}; every row: evaluator query {path}")
    line = draws_line(ds[metric], path)
    if line:
        print(line)
    drawn = plan.one_draw_choices()  # random choices at one seed each: every row above is those draws' time
    if drawn:
        print(one_draw_line(drawn, "every row above is", "add"))
    return True


def draws_line(values, path, over=(), best: str | None = None) -> str:
    """Where ``values`` (a ranked variable) has axes of random draws (``*.seed``, a schedule study's ``seed``) of
    several values: the line that says each row is one draw (with ``over`` naming one: the best draw of its
    point), the best the luckiest, with the query that ranks each point's mean over them (``best``: the metric
    the user ranked by, kept in it); else ''."""
    seeds = [str(d) for d in values.dims if (str(d).endswith(".seed") or str(d) == "seed") and values.sizes[d] > 1]
    if not seeds:  # the rows above are single draws: the best of them is the luckiest draw, not what the point gives
        return ""
    rows = ("each row above the luckiest of its point's draws" if set(seeds) & set(over or ()) else
            "one per row above (the best row is the luckiest draw)")
    return (f"{', '.join(seeds)}: random draws, {rows}; each point's mean over them with its tail and range: "
            f"evaluator query {path}{f' --best {best}' if best else ''} --draws {' '.join(seeds)}")


def one_draw_line(drawn: dict[str, str], subject: str, verb: str) -> str:
    """The line that says the choices ``drawn`` (:func:`evaluator.config.drawn_choices`) are one random draw each,
    so ``subject`` (``"every row above is"``) their time, with the seed axes to ``verb`` (add to the sweep, or
    sweep) and the ``query --draws`` that summarises them."""
    axes = [f"{g}.seed" for g in drawn]
    one = len(drawn) == 1
    whose = "that draw's" if one else "those draws'"
    return (f"{'; '.join(drawn.values())} {'is one random draw' if one else 'are one random draw each'}, so "
            f"{subject} {whose}, not what the point gives on average: {verb} "
            f"the {'axis' if one else 'axes'} {' '.join(a + '=' + repr('range(0,16)') for a in axes)} and rank with "
            f"evaluator query RUN --draws {' '.join(axes)}")
