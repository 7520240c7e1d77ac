"""Config -> build: the library objects of one design point, through the families' registries."""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass

from ..placement import KINDS as PLACEMENTS
from ..placement import Placement, PlacementContext, placement_kind
from ..routing import KINDS as ROUTINGS
from ..routing import Routing
from ..topology import KINDS as TOPOLOGIES
from ..topology import Topology
from ..traffic import KINDS as TRAFFICS
from ..errors import ConfigError, IgnoredKeyError, nearest, refuse_ignored, require
from ..latency import latency_from_config
from ..jobs import Background, Job, check_background
from ..traffic import DenseTraffic, PhasedTraffic, Traffic
from .schemas import FAMILIES, JOB_KEYS

__all__ = ["build_topology", "build_routing_spec", "build_traffic", "build_placement", "build_job", "DesignPoint", "build",
           "as_dict", "JobsPoint", "build_jobs", "job_group_config", "has_jobs", "drawn_choices", "check_settings",
           "refuse_unread_keys"]


def build_topology(cfg) -> Topology:
    """Topology from a topology schema, with its latency model (``cfg.latency`` over the one the kind gives, a
    catalogue machine's; no model when neither sets a key: :func:`evaluator.latency.latency_from_config`)."""
    topo = TOPOLOGIES[cfg.kind].build(cfg)
    given = getattr(cfg, "latency", None)
    lat = latency_from_config(given, base=topo.latency)
    if lat is None and topo.latency is None:
        return topo
    return topo.with_latency(lat)


def drawn_choices(obj) -> dict[str, str]:
    """The groups of a design point's config (routing, traffic, placement) whose config is one random draw (its
    kind's :meth:`~evaluator._registry.Kind.is_drawn`: hashed ECMP's hash, a random permutation, a random or
    randomly ordered placement): ``{group: "<group> <kind> (seed <seed>)"}``. A result of such a point is that
    draw's, not what the point gives on average over its seeds.

    Several jobs (:func:`has_jobs`): each job's own groups as ``jobs.<i>.<group>`` (the key a sweep axis sets:
    ``jobs.<i>.<group>.seed``), named with the job; the top-level routing where a job or the background routes
    by it; a background whose pattern is a random permutation as ``background``, and its own routing, where it is
    one draw, as ``background.routing``."""
    if not has_jobs(obj):
        return _drawn({g: getattr(obj, g, None) for g in ("routing", "traffic", "placement")})
    out, shared = {}, False
    for i, raw in enumerate(obj.jobs if obj.jobs is not None else []):
        raw = raw if isinstance(raw, dict) else {}
        try:
            cfgs = {g: job_group_config(g, raw.get(g), getattr(obj, g), f"jobs[{i}].{g}")
                    for g in ("traffic", "placement", "routing") if g != "routing" or raw.get(g) is not None}
        except ConfigError:  # (refused where the point is built)
            continue
        shared |= raw.get("routing") is None
        job = f"job {raw['name']}" if raw.get("name") is not None else f"job {i}"
        out |= {f"jobs.{i}.{g}": f"{what} of {job}" for g, what in _drawn(cfgs, f"jobs.{i}.").items()}
    b = getattr(obj, "background", None)
    if b is not None and b.fraction != 0:
        shared |= b.routing is None
        if b.pattern == "random_permutation":
            out["background"] = f"background random_permutation (seed {b.seed})"
        if b.routing is not None:
            try:
                cfg = job_group_config("routing", b.routing, getattr(obj, "routing"), "background.routing")
            except ConfigError:  # (refused where the point is built)
                cfg = None
            out |= {f"background.{g}": f"{what} of the background"
                    for g, what in _drawn({"routing": cfg}, "background.").items()}
    return (_drawn({"routing": obj.routing}) if shared else {}) | out


def _drawn(cfgs: dict, prefix: str = "") -> dict[str, str]:
    """``{group: "<prefix><group> <kind> (seed <seed>)"}`` of the configs in ``cfgs`` (group -> config) that are
    one random draw (:func:`drawn_choices`)."""
    kinds = {"routing": ROUTINGS, "traffic": TRAFFICS, "placement": PLACEMENTS}
    out = {}
    for group, cfg in cfgs.items():
        name = getattr(cfg, "kind", None)
        if name in set(kinds[group]) and kinds[group][name].is_drawn(cfg):
            out[group] = f"{prefix}{group} {cfg.kind} (seed {getattr(cfg, 'seed', '?')})"
    return out


def build_routing_spec(cfg) -> Routing:
    """Routing spec from a routing schema."""
    return ROUTINGS[cfg.kind].build(cfg)


def build_traffic(cfg, topology: Topology) -> Traffic | DenseTraffic | PhasedTraffic:
    """Traffic from a traffic schema (``n_tasks`` null means one task per node)."""
    return TRAFFICS[cfg.kind].build(cfg, topology)


def refuse_unread_keys(group: str, cfg) -> None:
    """Refuse (:func:`~evaluator.errors.refuse_ignored`) the keys of a ``topology`` or ``traffic`` config that change
    nothing, by the predicates its kind's builder refuses them with, building nothing: a sweep's check that such a
    key acts at one of its points (:attr:`evaluator._registry.Kind.unread`)."""
    kinds = {"topology": TOPOLOGIES, "traffic": TRAFFICS}[group]
    kinds[cfg.kind].refuse_unread(cfg)


_TASKS_FROM = {
    "trace": "the trace's ranks: traffic=trace takes its task count from the trace {path} (traffic.n_tasks is "
             "null), not from placement.n_tasks",
    "file": "the task count of the traffic file {path} (traffic=file), not placement.n_tasks",
}
"""Where the task count of a traffic kind that reads it from a file comes from, for a placement's refusal."""


def _tasks_from(exc: ConfigError, traffic_cfg, n_tasks: int) -> ConfigError:
    """``exc`` (a placement's refusal of ``n_tasks`` tasks) saying where the task count comes from: the traffic's
    ``n_tasks`` or its task grid ``beta`` (the placement has no such key), or the file the traffic read it from
    (a trace's ranks: the user set no task count anywhere)."""
    kind = getattr(traffic_cfg, "kind", None)
    if type(exc) is not ConfigError or exc.field != "placement.n_tasks":
        return exc
    beta = getattr(traffic_cfg, "beta", None)
    if getattr(traffic_cfg, "n_tasks", None) is not None:
        source = f"traffic.n_tasks = {traffic_cfg.n_tasks!r} (traffic={kind})"
    elif kind in _TASKS_FROM:
        source = _TASKS_FROM[kind].format(path=getattr(traffic_cfg, "path", None))
    elif beta is not None:
        source = f"the task grid traffic.beta = {list(beta)!r} (traffic={kind})"
    else:
        return exc
    return ConfigError(exc.field, exc.value, exc.allowed, f"The {n_tasks} tasks are {source}. {exc.hint or ''}".strip())


def build_placement(cfg, topology: Topology, traffic_cfg, n_tasks: int, topology_cfg=None) -> Placement:
    """Placement from a placement schema, for ``n_tasks`` tasks (a refusal of the task count says where it came
    from when the traffic read it from a file)."""
    try:
        kind = placement_kind(cfg.kind, topology)  # a kind for another network: refused before its own fields
        return kind.build(cfg, PlacementContext(topology, n_tasks, traffic_cfg, topology_cfg))
    except ConfigError as exc:
        new = _tasks_from(exc, traffic_cfg, n_tasks)
        if new is exc:
            raise
        raise new from None


@dataclass(frozen=True)
class DesignPoint:
    """Everything one evaluation needs, built from a config."""

    topology: Topology
    routing: Routing
    traffic: Traffic | DenseTraffic | PhasedTraffic
    placement: Placement


def build_job(traffic_cfg, placement_cfg, topology: Topology, topology_cfg=None):
    """``(traffic, placement)`` of one job. Where the traffic kind declares its task count before it is built
    (a file's header), the placement is built for that count first: a placement that cannot hold the tasks is
    refused before a large file is read."""
    declared = TRAFFICS[traffic_cfg.kind].tasks_declared(traffic_cfg, topology)
    pl = None
    if declared is not None:
        pl = build_placement(placement_cfg, topology, traffic_cfg, declared, topology_cfg)
    tr = build_traffic(traffic_cfg, topology)
    if pl is None or tr.n_tasks != declared:
        pl = build_placement(placement_cfg, topology, traffic_cfg, tr.n_tasks, topology_cfg)
    return tr, pl


def build(cfg) -> DesignPoint:
    """Build a design point from an :class:`~evaluator.config.EvalConfig`-shaped object (config -> build)."""
    topo = build_topology(cfg.topology)
    rt = build_routing_spec(cfg.routing)
    tr, pl = build_job(cfg.traffic, cfg.placement, topo, cfg.topology)
    return DesignPoint(topo, rt, tr, pl)


def as_dict(obj) -> dict:
    """A schema dataclass as a plain dict (for provenance)."""
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else dict(obj)


def job_group_config(group: str, raw, base, where: str):
    """The schema instance of one job's ``group`` (``traffic``, ``placement`` or ``routing``).

    ``raw`` None: the top-level ``base``; a mapping with a ``kind``: that kind's schema
    (its keys checked); a mapping without one: ``base`` with those keys replaced.
    """
    if raw is None:
        return base
    if dataclasses.is_dataclass(raw):
        return raw
    require(isinstance(raw, dict), where, raw, f"a {group} config (a mapping of its keys)")
    kinds = FAMILIES[group]
    if "kind" in raw:
        if raw["kind"] not in kinds:
            raise ConfigError(f"{where}.kind", raw["kind"], f"one of {list(kinds)}", nearest(raw["kind"], kinds))
        schema = kinds[raw["kind"]].schema
        start = {}
    else:
        require(base is not None, f"{where}.kind", None, f"a {group} kind, one of {list(kinds)}")
        schema, start = type(base), as_dict(base)
    fields = {f.name for f in dataclasses.fields(schema)}
    for key in raw:
        if key not in fields:
            raise ConfigError(f"{where}.{key}", raw[key], f"a key of {group} kind "
                                                          f"{raw.get('kind', getattr(base, 'kind', '?'))!r}: "
                                                          f"{sorted(fields)}")
    return schema(**{**start, **raw})


@dataclass(frozen=True)
class JobsPoint:
    """Everything a several-jobs evaluation needs, built from a config."""

    topology: Topology
    routing: Routing
    jobs: tuple[Job, ...]
    background: Background | None
    exclusive_nodes: bool
    interference: bool


def build_jobs(cfg, topology: Topology | None = None) -> JobsPoint:
    """Build the jobs of an :class:`~evaluator.config.EvalConfig` (``jobs`` null: one job, the top-level groups).

    ``topology``: the topology built from ``cfg.topology`` already (a sweep reuses one object, and with it the
    kernels compiled for it).
    """
    bounds = getattr(cfg, "bounds", False)
    if bounds is not False:  # computed for one job's traffic only: never dropped silently
        raise ConfigError("bounds", bounds, "false with several jobs or a background load",
                          "Bounds are computed for one job's traffic; drop jobs (and background) or bounds.")
    jobs_cfg = cfg.jobs if cfg.jobs is not None else [{}]
    require(isinstance(jobs_cfg, (list, tuple)) and len(jobs_cfg) > 0, "jobs", jobs_cfg,
            "a non-empty list of jobs, each {name, traffic, placement, routing} (missing groups: the top-level "
            "ones)")
    topo = topology if topology is not None else build_topology(cfg.topology)
    rt = build_routing_spec(cfg.routing)
    jobs = []
    for i, raw in enumerate(jobs_cfg):
        where = f"jobs[{i}]"
        raw = {} if raw is None else raw
        require(isinstance(raw, dict), where, raw, f"a mapping with keys among {list(JOB_KEYS)}")
        for key in raw:
            if key not in JOB_KEYS:
                raise ConfigError(f"{where}.{key}", raw[key], f"a key of a job: one of {list(JOB_KEYS)}")
        tcfg = job_group_config("traffic", raw.get("traffic"), cfg.traffic, f"{where}.traffic")
        pcfg = job_group_config("placement", raw.get("placement"), cfg.placement, f"{where}.placement")
        rcfg = raw.get("routing")
        with _fields_under(where):
            job_rt = None if rcfg is None else build_routing_spec(job_group_config("routing", rcfg, cfg.routing,
                                                                                   f"{where}.routing"))
            tr, pl = build_job(tcfg, pcfg, topo, cfg.topology)
        jobs.append(Job(tr, pl, job_rt, str(raw["name"]) if raw.get("name") is not None else None))
    bg = None
    b = cfg.background
    if b is not None and (b.fraction != 0 or b.routing is not None or b.pattern != "uniform"):
        with _fields_under("background"):
            bg_rt = None if b.routing is None else build_routing_spec(
                job_group_config("routing", b.routing, cfg.routing, "background.routing"))
        bg = Background(b.fraction, b.pattern, bg_rt, b.seed)
    return JobsPoint(topo, rt, tuple(jobs), bg, bool(cfg.exclusive_nodes), bool(cfg.interference))


@contextlib.contextmanager
def _fields_under(where: str):
    """A plain :class:`ConfigError` or an :class:`IgnoredKeyError` raised inside names its field under ``where``
    (``jobs[1]``, ``background``): a job's routing or traffic refused as ``routing.tie`` or ``traffic.overlap`` did
    not say which job's."""
    try:
        yield
    except ConfigError as exc:
        if type(exc) in (ConfigError, IgnoredKeyError) and not exc.field.startswith(where):
            raise type(exc)(f"{where}.{exc.field}", exc.value, exc.allowed, exc.hint) from None
        raise


def check_settings(cfg) -> None:
    """Settings that act only beside others, checked whatever those others are, so that a wrong value is refused
    when it is given, not kept until it would act: the bounds' solver (``bound_solver``, without ``bounds``) and
    the background's pattern, seed and routing (at ``fraction`` 0, where it loads nothing)."""
    from ..lp.bounds import check_bounds

    bounds, solver = getattr(cfg, "bounds", False), getattr(cfg, "bound_solver", "highs")
    check_bounds(True if bounds is False or bounds is None else bounds, solver)
    refuse_ignored(bounds not in (False, None) or solver == "highs", "bound_solver", solver,
                   "'highs' (the default) without bounds: no bound is computed, so no solver is read",
                   "Add bounds=true (or a method), or drop bound_solver.")
    _check_sharing(cfg)
    b = getattr(cfg, "background", None)
    if b is not None:
        check_background(Background(b.fraction, b.pattern, None, b.seed))
        if b.routing is not None:
            with _fields_under("background"):
                build_routing_spec(job_group_config("routing", b.routing, cfg.routing, "background.routing"))


_MAX_MIN_KEYS = ("fairness", "progression")
"""Settings that only max-min sharing reads (``sharing=max_min``): the flows' weights and how phases follow."""


def _check_sharing(cfg) -> None:
    """Refuse ``fairness`` or ``progression`` set (away from the schema's default) where nothing reads it: without
    ``sharing=max_min`` (the bound has no weights and no message order), ``progression`` with several jobs or a
    background load (:func:`evaluator.jobs.evaluate_jobs` runs each job's phases one after another), and
    ``fairness=job`` without them (one job's job-fair weights are the flow-fair ones)."""
    from .._batch.flowlevel import SHARINGS

    sharing = getattr(cfg, "sharing", "bound")
    if sharing not in SHARINGS:  # (refused where it is read, naming its options)
        return
    for key in _MAX_MIN_KEYS:
        value, default = getattr(cfg, key, None), _schema_default(key)
        if value is None or value == default:
            continue
        refuse_ignored(sharing == "max_min", key, value, f"{default!r} (the default) unless sharing=max_min: only "
                       f"flow-level max-min sharing reads {key}; sharing={sharing} is the contention bound",
                       f"Add sharing=max_min, or drop {key}={value}.")
        refuse_ignored(key != "progression" or not has_jobs(cfg), key, value, f"{default!r} (the default) with "
                       "several jobs or a background load: each job's phases follow one another",
                       f"Drop {key}={value}, or evaluate one job (no jobs, background.fraction=0).")
        # one job's job-fair weights are its flow-fair ones (evaluator.evaluate refuses it too)
        refuse_ignored(key != "fairness" or value != "job" or has_jobs(cfg), key, value, "'flow' or 'rtt' for one "
                       "job (job-fair weights of a single job are the flow-fair ones)",
                       "Drop fairness=job, or give several jobs (jobs=...) or a background load.")


def _schema_default(key: str):
    """The default of a top-level key of :class:`~evaluator.config.EvalConfig`."""
    from .schemas import EvalConfig

    return next(f.default for f in dataclasses.fields(EvalConfig) if f.name == key)


def has_jobs(cfg) -> bool:
    """Whether a config asks for the several-jobs evaluation (a ``jobs`` list or a background load)."""
    b = getattr(cfg, "background", None)
    return getattr(cfg, "jobs", None) is not None or (b is not None and b.fraction != 0)
