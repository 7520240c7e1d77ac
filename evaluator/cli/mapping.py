"""``evaluator map [overrides] [--budget S] [--nodes all|placement|FILE|IDS] [--start FILE|NAME ...]
[--write-rank-order DIR] [--write-hostfile FILE --hostnames FORMAT|FILE] [--verbose]``: search the task-to-node mapping of one job that minimises its predicted
completion time (:mod:`evaluator.mapping`).

This module parses the command line and builds what it names: the available nodes, the user's starts
(``--start``: a file read by :func:`evaluator.mapping.read_start_file`, or a placement of the ``placement``
group built as ``evaluator eval`` or a sweep would build it for this job) and the named placements as
configured; :func:`evaluator.mapping.search_mapping` takes them as arguments."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .. import config
from ..display import format_value, format_values, shared_unit
from ..errors import ConfigError, StorageError, check_seed, positive_float, positive_int, require
from ..io import check_writable, write_dataset
from ..mapping import (DRAWS, FILE_KINDS, FOUND, MAX_CANDIDATES, Start, available_nodes, best_over_draws, check_job,
                       check_start, is_embedding, over_draws, parse_node_ids, read_start_file, search_mapping)
from .._args import ArgumentParser, override_key
from ..placement.hostfile import write_hostfile
from . import _hostfile

__all__ = ["main", "parse_node_ids", "skipped_summary"]

_NODES_HELP = ("the nodes available to the job: 'all' (every compute node of the topology, or of its partition; "
               "default), 'placement' (the nodes the config's placement allocates, in its order: e.g. "
               "placement=alps for an ALPS free list, placement=fragmented for a fragmented machine), a file "
               "(a node_list as 'evaluator placement --write-rank-order' writes it: ids and ranges like 0-15,32), "
               "or such a list inline")


_START_HELP = ("a start of the search, besides the ones it builds (repeatable; each adds one, put first): a "
               "rank-order file (MPICH_RANK_ORDER as 'evaluator placement --write-rank-order' writes it: one line "
               "of ranks per node, the nodes those of the node_list beside it, else of --nodes, in order), a node "
               "list (one node id per rank; prefix rank_order: or node_list: to say which), or the name of a "
               "placement of the placement group (alps, block, dragonfly_cartesian, ...; built with this config's "
               "overrides, as evaluator eval would run it)")

_REPEATS = ("the same mapping as",)


def skipped_summary(skipped: dict[str, str]) -> str:
    """One line for the starts a search skipped (``{name: reason}``): those that do not apply to the job, by name,
    and how many repeat another start; ``--verbose`` prints each with its reason instead."""
    repeats = [n for n, why in skipped.items() if why.startswith(_REPEATS)]
    other = [n for n in skipped if n not in repeats]
    parts = []
    if other:
        parts.append(f"{len(other)} that do not apply here ({', '.join(other)})")
    if repeats:
        parts.append(f"{len(repeats)} that repeat another start")
    total = len(skipped)
    return f"skipped {total} start{'s' if total != 1 else ''}: {'; '.join(parts)}; --verbose lists why"


def _nodes(spec: str, point) -> np.ndarray | None:
    if spec == "all":
        return None
    if spec == "placement":
        tn = point.placement.task_node
        _, first = np.unique(tn, return_index=True)
        return tn[np.sort(first)]  # the placement's nodes in the order it fills them
    path = Path(spec)
    if spec.strip() and path.is_file():  # (an empty spec is Path("."): the working directory)
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError("--nodes", spec, "a readable node list file (text)",
                              str(getattr(exc, "strerror", None) or exc)) from None
        return parse_node_ids(text, f"--nodes ({spec})")
    if re.fullmatch(r"[\d,\s-]+", spec):
        return parse_node_ids(spec)
    raise ConfigError("--nodes", spec, "all, placement, a node list file that exists, or node ids like 0-15,32")


def _with_tasks_per_node(overrides: list[str], cfg, tpn: int) -> list[str]:
    """``overrides`` with the placement's ``tasks_per_node`` set to ``--tasks-per-node`` (``tpn``), so that its
    capacity check counts the slots the search uses; a placement given another ``tasks_per_node`` is refused."""
    if tpn < 1:
        raise ConfigError("--tasks-per-node", tpn, "an integer >= 1 (tasks per node)")
    given = [o for o in overrides if override_key(o) == "placement.tasks_per_node"]
    if given:
        value = given[-1].split("=", 1)[1].strip()
        if value != str(tpn):
            raise ConfigError("--tasks-per-node", tpn, f"the placement's own tasks_per_node ({given[-1]})",
                              "Give the tasks per node once: --tasks-per-node or placement.tasks_per_node.")
        return overrides
    if "tasks_per_node" not in cfg.placement:  # a placement with one task per node: only --nodes placement reads it
        return overrides
    return [*overrides, f"placement.tasks_per_node={tpn}"]


def _default_kind(overrides: list[str]) -> str:
    """The placement kind ``evaluator eval`` would run with these overrides (the config's default unless one names
    another; a ``placement.KEY`` that is not the default's own key leaves the default as it is)."""
    try:
        return config.compose(overrides).placement.kind
    except ConfigError:
        return config.compose([o for o in overrides if not re.match(r"\+?placement\.", o)]).placement.kind


def _named_placement(opt: str, overrides: list[str], user_placement: bool, default: str, point,
                     tasks_per_node: int | None):
    """The placement ``opt`` of the ``placement`` group as ``evaluator eval`` (or a sweep) would build it for this
    job: the config's overrides (those of another placement left out), its YAML values, ``--tasks-per-node``
    where the placement has the field; a :class:`ConfigError` when it does not build for the job."""
    over = [o for o in overrides if not re.match(r"\+?placement(=|\.)", o)] + [f"placement={opt}"]
    if opt == default:  # the config's own placement: the overrides of it kept (placement.gamma=..., say) where
        try:            # they are its keys
            config.compose(overrides)
            over = list(overrides)
        except ConfigError:
            if user_placement:
                raise
    if tasks_per_node is not None and "tasks_per_node" in config.compose(over).placement:
        over.append(f"placement.tasks_per_node={tasks_per_node}")
    obj = config.to_object(config.compose(over))
    return config.build_placement(obj.placement, point.topology, obj.traffic, point.traffic.n_tasks, obj.topology)


def _named_starts(overrides: list[str], user_placement: bool, point, tasks_per_node: int | None) -> list[Start]:
    """The named placements as ``evaluator eval`` would run this job with each option of the ``placement`` group
    (its YAML values: gamma, orders, seed), the config's default first (or the one the user named); an option
    that does not build for the job is left out (the search's own starts then stand for it)."""
    default = _default_kind(overrides)
    from ..config.hydra import group_options

    options = [default] + [o for o in group_options("placement") if o != default]
    out = []
    for opt in options:
        try:
            pl = _named_placement(opt, overrides, user_placement, default, point, tasks_per_node)
        except ConfigError:  # an option that does not apply to this job
            continue
        label = f"{opt} (as configured{', the default' if opt == default and not user_placement else ''})"
        out.append(Start(label, np.asarray(pl.task_node, np.int64)))
    return out


def _named_times(res) -> dict:
    """The times of the named placements a user could have run (the placement group's options as configured), by
    start name: a configured placement left out as the same mapping as another start counts as that start (the
    launcher's fill order is the start ``linear`` and the configured ``linear`` both)."""
    named = {n: t for n, t in res.starts.items() if "as configured" in n}
    for name, why in res.skipped.items():
        other = why[len(_REPEATS[0]):].strip().strip("'") if why.startswith(_REPEATS[0]) else None
        if "as configured" in name and other in res.starts:
            named[other] = res.starts[other]
    return named


def _user_starts(specs: list[str], overrides: list[str], user_placement: bool, point, nodes, tpn: int,
                 tasks_per_node: int | None) -> list[Start]:
    """The starts ``--start`` names, in the order given (a spec given twice counts once): files read by
    :func:`read_start_file`, placements built by :func:`_named_placement`; every one checked against the job
    (:func:`evaluator.mapping.check_start`), an error naming ``--start`` and the value otherwise."""
    from ..config.hydra import group_options

    topo, n = point.topology, point.traffic.n_tasks
    options = group_options("placement")
    default = _default_kind(overrides)
    out: list[Start] = []
    for spec in dict.fromkeys(specs):
        kind, _, rest = spec.partition(":")
        if kind in FILE_KINDS and rest:
            out.append(read_start_file(rest, topo, n, nodes, tpn, kind=kind, name=spec))
        elif Path(spec).exists():
            out.append(read_start_file(spec, topo, n, nodes, tpn))
        elif spec in options:
            try:
                pl = _named_placement(spec, overrides, user_placement, default, point, tasks_per_node)
            except ConfigError as exc:
                raise ConfigError("--start", spec, f"a placement that builds for this job ({n} tasks on "
                                  f"{topo.name})", f"It does not: {exc}") from None
            label = f"{spec} (--start, as configured)"
            out.append(Start(label, check_start(topo, n, nodes, tpn, pl.task_node, "--start", spec)))
        else:
            looks_like_file = "/" in spec or "." in spec or spec.upper().startswith(("MPICH", "NODE"))
            raise ConfigError("--start", spec, "a rank-order file or node list that exists, or a placement of the "
                              f"placement group: one of {', '.join(options)}",
                              f"No file {spec} exists." if looks_like_file else
                              f"No file {spec} exists and no placement is named so.")
    return out


MAX_TASKS_PER_NODE = 1024
"""The most slots per node ``--tasks-per-node`` may give (every node's slots are listed: 10^11 asked for 13 TB)."""


def _check_options(args) -> None:
    """The search's options, named as the user wrote them, before anything is built (the library names them
    ``mapping.time_budget`` etc.)."""
    positive_float("--budget", args.budget, allow_zero=True)
    if args.iterations is not None:
        positive_int("--iterations", args.iterations, minimum=0)
    positive_int("--candidates", args.candidates)
    require(args.candidates <= MAX_CANDIDATES, "--candidates", args.candidates,
            f"at most {MAX_CANDIDATES:,} candidate moves per device call (the default 4,096)",
            "Each candidate holds its moved flows in memory (10^13 of them asked for 80 TB).")
    if args.tasks_per_node is not None:
        require(1 <= args.tasks_per_node <= MAX_TASKS_PER_NODE, "--tasks-per-node", args.tasks_per_node,
                f"an integer in [1, {MAX_TASKS_PER_NODE:,}] (slots per node)")
    check_seed("--seed", args.seed)


def main(argv: list[str]) -> int:
    args = _parser().parse_intermixed_args(argv)
    _check_options(args)
    _check_rank_order_dir(args)
    _hostfile.check_options(args)
    cfg, obj, as_run, user_placement = _compose(args)
    out_dir = Path(obj.output_dir).parent / "mapping" if Path(obj.output_dir).name == "eval" else Path(
        obj.output_dir)
    if obj.save:
        check_writable("output_dir", out_dir)
        _check_latest(out_dir)
    point = _build(obj)
    names = _hostfile.names_of(args, point.topology.n_nodes)
    tpn = args.tasks_per_node
    if tpn is None:
        tpn = int(getattr(obj.placement, "tasks_per_node", 1) or 1)
    nodes, _ = check_job(point.topology, point.traffic, available_nodes(point.topology, _nodes(args.nodes, point)),
                         tpn)
    mine = _user_starts(args.start, as_run, user_placement, point, nodes, tpn, args.tasks_per_node)
    res = search_mapping(point.topology, point.traffic, point.routing, nodes=nodes, user_starts=mine,
                         tasks_per_node=tpn, time_budget=args.budget, seed=args.seed, candidates=args.candidates,
                         traffic_cfg=obj.traffic, topology_cfg=obj.topology, max_iterations=args.iterations,
                         progress=not args.no_progress, anneal=args.anneal, fill=args.fill,
                         extra_starts=_named_starts(as_run, user_placement, point, args.tasks_per_node))
    print(f"mapping search: {point.traffic.n_tasks} tasks of {point.traffic.name} on {point.topology.name} "
          f"({len(res.nodes)} nodes available, {tpn} per node), routing {point.routing.kind}")
    _print_starts(res, args.verbose)
    _print_search(res, args.verbose)
    _print_found(res, args.verbose)
    interrupted = False
    try:
        draws = _print_draws(res, point)
    except KeyboardInterrupt:  # the mapping found is kept: written below
        draws, interrupted = None, True
        print("draws of the routing interrupted (Ctrl-C): none summarised; the mapping found above is kept")
    if draws is not None:
        res, chosen = best_over_draws(res, draws)
        if chosen != FOUND:
            print(f"mapping written: {chosen}, the fastest on average over the draws, not the mapping found (its "
                  f"gain was the searched draw's luck)")
    ds = res.to_dataset()
    if draws is not None:
        ds["draw_completion_time"] = draws["completion_time"].rename(mapping="draw_mapping").assign_attrs(
            units="s", long_name=f"completion time under each of {draws.sizes['draw']} draws of the routing (the "
                                 f"search scored the first only)")
    ds.attrs["config_yaml"] = config.to_yaml(cfg)
    if obj.save:
        try:
            path = write_dataset(ds, out_dir, identity=ds.attrs["config_yaml"] + repr(sorted(vars(args).items())))
        except OSError as exc:
            raise StorageError(f"output_dir = {str(out_dir)!r}: cannot write the dataset there "
                               f"({exc.strerror or exc}).", "output_dir", str(out_dir), "a writable directory") from None
        print(f"dataset: {path}")
    if names is not None:  # (any mapping: srun -m arbitrary places every rank by its line)
        hf = write_hostfile(res.placement, args.write_hostfile, names, header=f"evaluator map: {res.placement.name}")
        print(f"hostfile: {hf}  (SLURM_HOSTFILE={hf} srun --distribution=arbitrary -n {res.placement.n_tasks} ...)")
    if args.write_rank_order is not None:
        ro, nl = res.write_launch_files(args.write_rank_order, force=args.force)  # (in the search's fill order)
        print(f"rank order: {ro}\nnode list: {nl}  (aprun -L `cat {nl}` -N {res.tasks_per_node} ...; nodes filled "
              f"in {res.fill} order)")
    return 130 if interrupted else 0  # (the shell's code for a Ctrl-C: the draws asked for were not all evaluated)


def _check_latest(out_dir: Path) -> None:
    """Before the search: ``out_dir``'s ``latest`` must read a mapping (or nothing): a mapping saved into a sweep's,
    an eval's or a study's directory took its ``latest`` over (until 2026-12-06); a ``latest`` of the user's own
    is said on stderr (:func:`evaluator.runs.check_latest_owner`)."""
    from ..runs import check_latest_owner

    check_latest_owner(out_dir, "evaluator map", "output_dir", str(out_dir), own="evaluator map",
                       expected="a directory of evaluator map's own datasets (results/mapping by default), or one "
                                "holding none",
                       new="this mapping's dataset", taken_by="a mapping saved there", instead="the mapping",
                       remedy="Give another output_dir=DIR (e.g. results/mapping), or save=false.")


def _parser() -> ArgumentParser:
    ap = ArgumentParser(
        prog="evaluator map",
        description="search the task-to-node mapping of the config's job (topology, routing, traffic) that "
                    "minimises its predicted completion time: every applicable named placement and a METIS "
                    "graph-partitioning mapping as starting points, then a batched local search under a time "
                    "budget; prints each start's time and the gain over it, writes a dataset under "
                    "results/mapping/ and, on request, MPICH_RANK_ORDER and node_list",
        epilog="e.g. evaluator map topology=dragonfly routing=minimal traffic=random_pairs traffic.n_tasks=256 "
               "--budget 20 --write-rank-order launch/")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides key=value / group=option")
    ap.add_argument("--budget", type=float, default=60.0, metavar="SECONDS",
                    help="seconds of local search after the starting points (default 60)")
    ap.add_argument("--iterations", type=int, default=None, metavar="N",
                    help="stop after N batches of candidates even within the budget: with the same seed, the same "
                         "mapping on every run (a budget alone stops wherever the machine's speed leaves it)")
    ap.add_argument("--nodes", default="all", help=_NODES_HELP)
    ap.add_argument("--start", action="extend", nargs=1, default=[], metavar="FILE|NAME", help=_START_HELP)
    ap.add_argument("--tasks-per-node", type=int, default=None, metavar="N",
                    help="slots per node (default: the config's placement.tasks_per_node, else 1); sets the "
                         "placement's tasks_per_node too, which then must not say otherwise")
    ap.add_argument("--seed", type=int, default=0, help="seed of the partitioning, the random start and the search")
    ap.add_argument("--candidates", type=int, default=4096, help="candidate moves scored per device call")
    ap.add_argument("--anneal", action="store_true",
                    help="after a plateau, accept worse moves by the Metropolis rule (simulated annealing on the "
                         "q-norm) rather than random kicks alone; off by default (docs/mapping.md)")
    ap.add_argument("--write-rank-order", metavar="DIR", default=None,
                    help="write DIR/MPICH_RANK_ORDER (MPICH_RANK_REORDER_METHOD=3) and DIR/node_list (aprun -L)")
    _hostfile.add_options(ap)
    ap.add_argument("--force", action="store_true",
                    help="replace MPICH_RANK_ORDER and node_list already in DIR, or the hostfile")
    ap.add_argument("--fill", choices=("alps", "id"), default=None,
                    help="order in which the launcher fills the listed nodes: alps (the ALPS-like order; default on "
                         "3-D tori) or id (ascending node id; default elsewhere); with several tasks per node the "
                         "search keeps every used node full but the one filled last, so that the files can be written")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    ap.add_argument("--verbose", action="store_true",
                    help="list every start that was skipped (does not apply to the job, or repeats another start) "
                         "with the reason, one line each, instead of one summary line")
    return ap


def _check_rank_order_dir(args) -> None:
    """``--write-rank-order DIR``: refused before anything is computed where it holds the files already (without
    ``--force``) or cannot be written."""
    if args.write_rank_order is not None:
        d = Path(args.write_rank_order)
        there = [str(d / n) for n in ("MPICH_RANK_ORDER", "node_list") if (d / n).exists()]
        if there and not args.force:
            raise ConfigError("--write-rank-order", args.write_rank_order,
                              "a directory without MPICH_RANK_ORDER or node_list",
                              f"It holds {' and '.join(there)} already; choose another directory, or add --force.")
        check_writable("--write-rank-order", d)


def _compose(args):
    """``(cfg, obj, as_run, user_placement)``: the config (the placement ``linear`` unless the user named one: it
    only says which nodes with ``--nodes placement``; ``--tasks-per-node`` in it), its object, the overrides of
    the job as ``evaluator eval`` would run it, and whether the user named a placement."""
    overrides = list(args.overrides)
    user_placement = any(re.match(r"\+?placement=", o) for o in overrides)
    as_run = list(overrides)  # the job as `evaluator eval` would run it: its placement the config's default
    if not user_placement:  # the placement only says which nodes with --nodes placement
        try:
            cfg = config.compose(["placement=linear", *overrides])
            overrides.insert(0, "placement=linear")
        except ConfigError:  # placement.KEY=... of the config's default placement (placement.gamma=...)
            if not any(re.match(r"\+?placement\.", o) for o in overrides):
                raise
    cfg = config.compose(overrides)
    if args.tasks_per_node is not None:
        overrides = _with_tasks_per_node(overrides, cfg, args.tasks_per_node)
        cfg = config.compose(overrides)
    obj = config.to_object(cfg)
    if config.has_jobs(obj):
        raise ConfigError("jobs", "several jobs", "one job (topology, routing, traffic)",
                          "evaluator map searches one job's mapping; evaluate several jobs with evaluator eval.")
    return cfg, obj, as_run, user_placement


def _build(obj):
    """The config's point; the placement's capacity check in this command's words (``--tasks-per-node``)."""
    try:
        return config.build(obj)
    except ConfigError as exc:
        if (exc.field == "placement.n_tasks" and "tasks_per_node" in str(exc.allowed)
                and getattr(obj.placement, "tasks_per_node", None) is not None):
            # the capacity check of the placement: in this command's words
            raise ConfigError("--tasks-per-node", int(obj.placement.tasks_per_node), exc.allowed.replace(
                "placement.tasks_per_node=", "--tasks-per-node "), exc.hint.replace(
                "placement.tasks_per_node=", "--tasks-per-node ") if exc.hint else None) from None
        raise


def _print_starts(res, verbose: bool) -> None:
    """Each start's time and the search's gain over it (the grid embeddings, up to 16 on a torus, as their best
    and a count line unless ``verbose``), and the skipped starts (one summary line unless ``verbose``)."""
    # the grid embeddings (up to 16 on a torus) in one row, their best, and a count line (--verbose: every one)
    emb = [n for n in res.starts if is_embedding(n)]
    best_emb = min(emb, key=res.starts.get) if emb else None
    shown = list(res.starts) if verbose or len(emb) < 2 else [
        n for n in res.starts if not is_embedding(n) or n == best_emb]
    width = max(len(n) for n in shown)
    unit = shared_unit("s", [[res.starts[n] for n in shown]])  # one unit for the column (and its count line)
    t = lambda x: _in_unit(x, unit)  # noqa: E731
    print(f"{'start':<{width}}  {'completion time':>15}  gain of the search")
    for name in shown:
        ts = res.starts[name]
        print(f"{name:<{width}}  {t(ts):>15}  {res.gain(name) * 100:5.1f} %")
        if len(shown) < len(res.starts) and is_embedding(name):
            others = [res.starts[n] for n in emb if n != name]
            print(f"  and {len(others)} other grid embeddings, {t(min(others))} to {t(max(others))} (--verbose "
                  f"lists them)")
    skipped = res.skipped  # (a kind that ran as configured, random, is in the table, not here: search_mapping)
    if verbose:
        for name, why in skipped.items():
            print(f"skipped {name}: {why}")
    elif skipped:
        print(skipped_summary(skipped))


def _in_unit(x: float, unit: tuple[str, float]) -> str:
    """A time in the display unit ``unit`` (``(name, factor)`` of :func:`evaluator.display.shared_unit`) that the
    values printed beside it share: ``0.7500 ms`` over ``1.200 ms`` in one column, not ``750.0 us`` over
    ``1.200 ms``."""
    return f"{format_values([x], 's', unit)[0][0]} {unit[0]}"


def _print_search(res, verbose: bool) -> None:
    """The search's batches, moves and rate, its compilations' share, and the move kinds that paid."""
    t = res.trace
    rate = t.evaluated[-1] / t.elapsed[-1] if t.elapsed and t.elapsed[-1] > 0 else 0.0
    print(f"search from {res.best_start}: {len(t.elapsed) - 1} batches, {t.evaluated[-1]:,} moves scored "
          f"({rate:,.0f}/s, {res.info['evaluator']}), {sum(t.accepted):,} applied, in "
          f"{format_value(t.elapsed[-1] if t.elapsed else 0.0, 's')}")
    if t.stopped == "ctrl-c":
        print(f"search stopped by Ctrl-C after {format_value(t.elapsed[-1], 's')}: the mapping below is the best seen "
              f"until then")
    elif t.stopped == "bound":
        print(f"search stopped after {format_value(t.elapsed[-1], 's')} of its "
              f"{format_value(res.info['time_budget'], 's')}: the mapping meets the lower bound below, so no mapping "
              f"is faster")
    cs = getattr(t, "compile_seconds", 0.0)
    if t.elapsed and cs >= 1.0 and t.elapsed[-1] > cs:  # a first run's compilations: the rate without them
        print(f"lowering and compiling device calls: {format_value(cs, 's')} of the search "
              f"({t.evaluated[-1] / (t.elapsed[-1] - cs):,.0f} moves/s over the rest; a run of the same shapes "
              f"finds them in the compilation cache)")
    if verbose or len(getattr(t, "kinds", {})) > 1:  # the move kinds that paid (several: structured moves ran)
        print(f"moves: {res.info['move_kinds']}")


def _print_draws(res, point):
    """Where one routing spec is one random draw (hashed ECMP: one hash seed): the mapping found, the best start
    and the best named placement under :data:`~evaluator.mapping.DRAWS` draws (mean, 95th percentile), since the
    search scored one draw and its gain may be that draw's luck. Returns their times (None for other routings)."""
    if not point.routing.draws(1):
        return None
    best_named = _best_named(res)
    cands = {FOUND: res.task_node}
    labels = {FOUND: FOUND}
    for name, what in ((res.best_start, "the best start"), (best_named, "the best named placement")):
        if name is None:
            continue
        if name in cands:
            labels[name] = labels[name][:-1] + f"; {what})"
            continue
        cands[name] = res.start_nodes[name]
        labels[name] = f"{name[:-1]}; {what})" if name.endswith(")") else f"{name} ({what})"
    ds = over_draws(point.topology, point.routing, point.traffic, cands, DRAWS)
    draw = [str(d) for d in ds["draw"].values]
    print(f"over {len(draw)} draws of the routing ({draw[0]} .. {draw[-1]}; the search scored {draw[0]} only), "
          f"mean and 95th percentile:")
    width = max(len(v) for v in labels.values())
    mean, p95 = ({n: float(ds[v].sel(mapping=n)) for n in cands}
                 for v in ("completion_time_mean", "completion_time_p95"))
    unit = shared_unit("s", [list(mean.values()), list(p95.values())])  # one unit for both columns
    for name in cands:
        print(f"  {labels[name]:<{width}}  {_in_unit(mean[name], unit):>10}  {_in_unit(p95[name], unit):>10}")
    found = float(ds["completion_time_mean"].sel(mapping=FOUND))
    for name in list(cands)[1:]:
        other = float(ds["completion_time_mean"].sel(mapping=name))
        if found >= other and res.completion_time < res.starts.get(name, -np.inf):  # a gain on the draw searched
            print(f"  the search's gain over {name} does not hold over the draws: on average the mapping found is "
                  f"{'as fast as' if found == other else 'slower than'} it")
    return ds


def _best_named(res) -> str | None:
    """The fastest named placement a user could have run (:func:`_named_times`), or None."""
    named = _named_times(res)
    return min(named, key=named.get) if named else None


def _print_found(res, verbose: bool = False) -> None:
    """The mapping found against the best start and the best named placement, and the bound under it."""
    named = _named_times(res)
    best_named = _best_named(res)
    vs_named = (f"; {(1 - res.completion_time / named[best_named]) * 100:.1f} % below the best named placement, "
                f"{best_named}" if best_named is not None and best_named != res.best_start else "")
    print(f"mapping found: {format_value(res.completion_time, 's')} "
          f"({res.gain(res.best_start) * 100:.1f} % below the best start, {res.best_start}{vs_named})")
    if res.bound is not None and res.lower_bound > 0:
        print(f"no mapping is below {format_value(res.lower_bound, 's')} ({res.bound.describe()}; the mapping found "
              f"is {res.completion_time / res.lower_bound:.2f}x that)")
        net = res.bound.network()
        if net is not None and net[0] != res.bound.binding:
            print(f"  the network's bound: {format_value(net[1], 's')} ({res.bound.describe(net[0])})")
        for note in res.bound.notes:  # the parts a job cannot load (" is left out: ..."): with --verbose only
            if verbose or " is left out: " not in note:
                print(f"  {note}")
    elif res.completion_time <= 0:  # (the search's stop line points here: the bound met is 0)
        print("no mapping is below 0 s: no byte of the mapping found crosses a link (every flow stays on its node)")
