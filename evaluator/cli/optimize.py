"""``evaluator optimize --tasks N --alpha A,B,C [--routings ...] [overrides]``: exhaustive stencil search."""

from __future__ import annotations

import contextlib
import math
import re
from collections import Counter

from .. import config
from ..dataset import predicted_time
from ..display import format_table
from ..errors import ConfigError
from ..query import best, open_results
from ..sweep import optimize_axes, plan_sweep, run_sweep
from ..sweep.reasons import infeasible_reasons, summarize_reasons
from .._args import ArgumentParser
from .sweep import one_draw_line

__all__ = ["main"]


def _int_list(text: str) -> list[int]:
    """``--alpha``: comma-separated positive integers (a ConfigError otherwise)."""
    allowed = "comma-separated positive integers (elements per dimension), e.g. 512,512,512"
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not re.fullmatch(r"[+-]?\d+", p) for p in parts):
        raise ConfigError("--alpha", text, allowed)
    vals = [int(p) for p in parts]
    if any(v < 1 for v in vals):
        raise ConfigError("--alpha", text, allowed, f"{min(vals)} is not a positive element count.")
    if len(vals) > MAX_DIMS:
        raise ConfigError("--alpha", f"{len(vals)} dimensions", f"at most {MAX_DIMS} dimensions ({allowed})")
    return vals


MAX_DIMS = 32
"""The most dimensions of ``--alpha`` (NumPy's arrays hold at most 64; a stencil of more than 32 is no job)."""
MAX_FACTORED = 10**12
"""The largest ``--alpha`` element factorised for the nearest feasible task counts (trial division: a prime of
10^18 would take minutes)."""
OWN_KEYS = {"traffic": "--alpha (optimize searches a stencil's decompositions)", "traffic.alpha": "--alpha",
            "placement": "--placement", "output_dir": "sweep.output_dir (where optimize writes; output_dir is eval's)"}
"""Config keys the command sets itself, with what sets them: an override of one is refused, not applied over the
options (traffic.alpha=[16,16,16] replaced --alpha) or ignored (output_dir)."""


def _tasks(text: str) -> int:
    allowed = "a positive integer (the number of tasks |beta|)"
    if not re.fullmatch(r"\s*[+-]?\d+\s*", str(text)):
        raise ConfigError("--tasks", text, allowed)
    n = int(text)
    if n < 1:
        raise ConfigError("--tasks", n, allowed)
    return n


def _prime_factors(v: int) -> Counter:
    out: Counter = Counter()
    f = 2
    while f * f <= v:
        while v % f == 0:
            out[f] += 1
            v //= f
        f += 1
    if v > 1:
        out[v] += 1
    return out


def _nearest_feasible(n: int, alpha: list[int]) -> tuple[int | None, int | None]:
    """The largest task count <= n and the smallest >= n that divide prod(alpha) (None where there is none)."""
    if any(a > MAX_FACTORED for a in alpha):
        return None, None  # no suggestion: factorising would take longer than the user waits
    exps: Counter = Counter()
    for a in alpha:
        exps.update(_prime_factors(a))
    divisors = [1]
    for p, e in exps.items():
        divisors = [d * p ** k for d in divisors for k in range(e + 1)]
        if len(divisors) > 1_000_000:  # pragma: no cover - absurd alphas: no suggestion
            return None, None
    below = max((d for d in divisors if d <= n), default=None)
    above = min((d for d in divisors if d >= n), default=None)
    return below, above


def _check_decomposable(n: int, alpha: list[int]) -> None:
    """Refuse a task count with no ordered factorization ``beta`` (``len(alpha)`` factors) where ``beta_k | alpha_k``.

    Such a ``beta`` exists exactly when ``n`` divides ``prod(alpha)`` (the prime factors of ``n`` can be dealt out
    to the dimensions that have them).
    """
    total = math.prod(alpha)
    if total % n == 0:
        return
    below, above = _nearest_feasible(n, alpha)
    near = [str(v) for v in (below, above) if v is not None and v != n]
    shape = "x".join(map(str, alpha))
    raise ConfigError(
        "--tasks", n,
        f"a task count with an ordered factorization into {len(alpha)} factors beta that divide "
        f"alpha = {shape} (beta[k] | alpha[k]); no factorization of {n} does",
        "Nearest feasible task counts: " + " and ".join(dict.fromkeys(near)) + "." if near else None)


def _split_negative(argv: list[str]) -> list[str]:
    """``--alpha -8,8`` / ``--tasks -64``: keep a value that starts with '-' attached to its option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--alpha", "--tasks", "--top", "-n") and i + 1 < len(argv) and re.match(r"-\d", argv[i + 1]):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _describe(topology_cfg) -> str:
    """The network for people, as every command names it (the topology's own name: ``DF(4,8,4,33)``,
    ``torus 8x8``), never the config's Python repr."""
    from ..config.build import build_topology

    return build_topology(topology_cfg).name


def _names(option: str, text: str, group: str) -> list[str]:
    """The options of config ``group`` that ``text`` names (comma-separated), each checked to exist."""
    from ..config.hydra import group_options
    from ..errors import nearest

    names = [s.strip() for s in str(text).split(",")]
    if not names or any(not s for s in names):
        raise ConfigError(option, text, "comma-separated option names, e.g. minimal,valiant")
    known = group_options(group)
    for n in names:
        if n not in known:
            raise ConfigError(option, n, f"an option of the {group} group: {', '.join(known)}", nearest(n, known))
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # (the sweep refused it naming its axis, sweep.axes.routing, not the option)
        raise ConfigError(option, text, f"distinct option names (each once); {', '.join(twice)} is given twice",
                          "A repeated name would search the same configurations twice.")
    return names


def _check_overrides(overrides: list[str], ray: bool) -> None:
    """Refuse an override that the command would apply over its own options (:data:`OWN_KEYS`) or ignore
    (``ray.*`` without ``--ray``: the search then runs in this process)."""
    from .._args import override_key

    for o in overrides:
        key = (override_key(o) or "").split("@")[0]
        if key in OWN_KEYS:
            raise ConfigError(key, o.split("=", 1)[-1], f"no override of {key}: give {OWN_KEYS[key]} instead")
        if key.split(".")[0] == "ray" and not ray:
            raise ConfigError(key, o.split("=", 1)[-1], "ray.* settings with --ray only (without it the search "
                              "runs in this process)", "Add --ray, or drop the override.")


def _check_placement_serves(request, placement: str, tasks: int, alpha: list[int]) -> None:
    """Refuse a --placement that does not serve the network, --tasks more than it can place there, and an --alpha
    of dimensions it cannot lay out there, before the search runs (each made every configuration infeasible, found
    after the search: 2 min for DF(8,16,8); a 2-D --alpha under torus_block on a 3-D torus was refused naming
    --tasks)."""
    from ..config.build import build_topology
    from ..placement import placement_kind

    topology = build_topology(request.config.topology)
    try:
        kind = placement_kind(request.config.placement.kind, topology)
    except ConfigError as exc:
        raise ConfigError("--placement", placement, exc.allowed, exc.hint) from None
    kind.check_fits(request.config.placement, topology, tasks, "--tasks")
    kind.check_grid(request.config.placement, topology, len(alpha), "--alpha", ",".join(map(str, alpha)))


@contextlib.contextmanager
def _routings_named():
    """A routing that cannot serve the network is refused naming --routings (the sweep names its config key)."""
    try:
        yield
    except ConfigError as exc:
        if type(exc) is ConfigError and exc.field == "routing":
            raise ConfigError("--routings", exc.value, exc.allowed, exc.hint) from None
        raise


def _refuse_infeasible(ds, plan, path, tasks: int, cfg) -> None:
    """Refuse a search none of whose configurations is feasible, naming what every one of them failed on: a
    setting of the placement (``placement.tasks_per_group=32`` on 8 nodes a group) where all fail on that one,
    else ``--tasks``."""
    reasons = [r for r in infeasible_reasons(ds) if r.strip()]
    # grid points whose beta does not divide alpha (or gamma beta) are expected; say why the others fail
    reasons = [r for r in reasons if "a divisor of" not in r] or reasons
    why = summarize_reasons(reasons, 3) or "no reason recorded"
    fields = {r.split(":", 1)[0].strip().split("[")[0] for r in reasons}
    field = fields.pop() if len(fields) == 1 else ""
    value = cfg
    for part in field.split(".") if field.startswith("placement.") else ():
        value = getattr(value, part, None)
    if field.startswith("placement.") and value is not None and field not in _plan_keys(plan):
        raise ConfigError(field, value, f"a setting with which the job fits the network; all {plan.n_points} "
                          f"configurations were infeasible: {why}",
                          f"Override {field} (or pick another --placement, a larger network; dataset: {path}).")
    raise ConfigError(
        "--tasks", tasks,
        f"a job with at least one feasible placement on the network; all {plan.n_points} configurations "
        f"were infeasible: {why}",
        f"Use fewer tasks, another --placement or a larger network (dataset: {path}).")


def _plan_keys(plan) -> set[str]:
    """The config keys the search sweeps (their values differ from point to point)."""
    return {k for ax in plan.axes for k in ax.keys}


def main(argv: list[str]) -> int:
    ap = ArgumentParser(
        prog="evaluator optimize",
        description="exhaustive search of decompositions, placements and routings for a stencil job",
        epilog="e.g. evaluator optimize --tasks 256 --alpha 512,512,512 --routings minimal,valiant "
               "topology.p=4 topology.a=8 topology.h=4")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides for the network (topology=..., topology.p=...)")
    ap.add_argument("--tasks", required=True, help="number of tasks |beta| (a positive integer)")
    ap.add_argument("--alpha", required=True, help="elements per dimension, e.g. 512,512,512")
    ap.add_argument("--routings", default="minimal,valiant",
                    help="comma-separated routing group options, e.g. minimal,valiant")
    ap.add_argument("--placement", default="dragonfly_cartesian",
                    help="placement group (dragonfly_cartesian searches every gamma)")
    ap.add_argument("-n", "--top", default="10", help="rows of the ranked table to print (0: all; default 10)")
    ap.add_argument("--ray", action="store_true", help="run on Ray instead of in this process")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_intermixed_args(_split_negative(list(argv)))
    tasks = _tasks(args.tasks)
    alpha = _int_list(args.alpha)
    routings = _names("--routings", args.routings, "routing")
    if len(_names("--placement", args.placement, "placement")) > 1:
        raise ConfigError("--placement", args.placement, "one option of the placement group (the search sweeps "
                          "its gamma where it has one)", "Run optimize once per placement.")
    _check_overrides(args.overrides, bool(args.ray))
    if not re.fullmatch(r"\s*\d+\s*", str(args.top)):
        raise ConfigError("--top", args.top, "an integer >= 0 (rows to print; 0: all)")
    top = int(args.top)
    _check_decomposable(tasks, alpha)
    base = ["traffic=stencil", f"placement={args.placement}", f"routing={routings[0]}",
            "sweep.name=optimize", f"traffic.alpha=[{','.join(map(str, alpha))}]"]
    axes = optimize_axes(tasks, len(alpha), routings, args.placement)
    with _routings_named():
        request = config.compose_sweep(base + args.overrides, user_overrides=args.overrides, config_name="config",
                                       axes=axes)
        _check_placement_serves(request, args.placement, tasks, alpha)
        plan = plan_sweep(request)
    ray_cfg = request.config.ray if args.ray else config.RayConfig(enabled=False)
    path = run_sweep(plan, ray_cfg, progress=not args.no_progress)
    ds = open_results(path)
    network = _describe(plan.bases[next(iter(plan.bases))].topology)
    n_feasible = int(ds.attrs["n_feasible"])
    if n_feasible == 0:
        _refuse_infeasible(ds, plan, path, tasks, request.config)
    print(f"searched {plan.n_points} configuration{'' if plan.n_points == 1 else 's'} ({n_feasible} feasible) "
          f"on {network}")
    metric = predicted_time(ds)
    if metric != "completion_time":
        print(f"ranked by {metric} (every configuration has it; completion_time is the bandwidth bound alone)")
    print(format_table(best(ds, metric, n=top)))
    drawn = plan.one_draw_choices()  # random choices drawn once (a hashed routing, a random placement)
    if drawn:
        print(one_draw_line(drawn, "every row above is", "add"))
    print(f"dataset: {path}")
    return 0
