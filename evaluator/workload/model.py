"""The workload model of Feng et al. Sec. 5.1.4: enlargement, modes, MPI fractions, and run time on the RDN.

* **Enlargement**: every job's size is multiplied by ``enlarge`` (2: Mira's
  49,152 nodes to the 82,944-node RDN) and clamped to the machine.
* **Modes**: jobs whose (enlarged) size is in ``[mode_lo, mode_hi]`` nodes
  (576 ... 65,536 in the paper) draw a mode from ``mode_mix`` (40%
  minimal balance, 40% adaptive, 10% custom balance, 10% custom); every
  other job uses ``default_mode`` (minimal balance). Custom-balance jobs get
  the fewest groups that split them evenly (each group's share at most a
  group's nodes); custom jobs one group more than they need, with uneven
  shares (the paper does not say how users choose; this is our assumption).
* **MPI fractions**: ``mpi_fraction`` maps a size bin (upper bound in nodes)
  to the fraction of run time spent in MPI; the paper computes them from
  Mira's logs per job size (not bundled), so they are an input.
* **Run time on the RDN** (:func:`accelerated_run_time`): the paper's
  ``Acc_Time = Job_Time - MPI_Time x Speedup(mode, size)``. Our speedup
  tables hold the *ratio* ``S = T_TDN / T_RDN`` of the communication time
  (1: no change), as the network evaluation gives it; ``speedup_rule``
  turns it into the fraction of MPI time saved:
  ``"time_ratio"`` (default): the MPI time becomes ``MPI_Time / S``, saving
  ``1 - 1/S``; ``"excess"``: saving ``S - 1`` (the paper's formula read
  with "32% speedup" as 0.32), capped at the whole MPI time. Both leave a job
  unchanged at ``S = 1``.

:class:`SpeedupTable` wraps the speedup dataset (dims ``mode``, ``groups``) and
its provenance (:data:`SPEEDUP_TABLE_ATTRS`): the machine it was computed on
and the routing baseline of its ratios. :meth:`SpeedupTable.check_machine`
refuses a table from another machine unless ``allow_foreign_speedups``: a
ratio per job size in groups is the machine's (on the 64-node DF(2, 4, 2, 8)
the stencil's 8-group ratio is 1.83, on the paper's 82,944 nodes 1.00).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import numpy as np

from .._types import Float, Int
from ..errors import ConfigError, ConfigTypeError, check_seed, is_int
from ._check import bool_arg, float_arg, instance_arg, int_arg, mapping_arg, nearest
from .trace import MODES, Trace

__all__ = ["WorkloadModel", "SpeedupTable", "speedup_table", "accelerated_run_time", "PAPER_MODE_MIX",
           "SPEEDUP_RULES", "SPEEDUP_TABLE_ATTRS", "PAPER_FIG4_SPEEDUPS", "prepare_trace"]

PAPER_MODE_MIX = {"minimal_balance": 0.4, "adaptive": 0.4, "custom_balance": 0.1, "custom": 0.1}
"""Mode shares of large jobs of 576-65,536 nodes in Feng et al. Sec. 5.1.4."""

SPEEDUP_RULES = ("time_ratio", "excess")
"""How a communication speedup ratio S saves MPI time: ``1 - 1/S`` or ``S - 1`` (capped at 1)."""


SPEEDUP_TABLE_ATTRS = {
    "machine": "the machine the ratios were computed on, e.g. 'DF(12,24,12,288)'",
    "machine_groups": "its number of groups",
    "machine_nodes_per_group": "its nodes per group",
    "baseline": "what T_TDN is: the traditional Dragonfly's routing, mapping and background",
    "baseline_text": "optional: a longer description of the baseline",
}
"""Attributes of a speedup table's dataset that record what it was computed for. A table of
``evaluator.studies.rdn`` carries ``machine`` as ``DF(p,a,h,g)`` (``g`` groups of ``a * p`` nodes), which is read
when the two counts are absent."""

PAPER_FIG4_SPEEDUPS = {
    "minimal_balance": {2: 1.30, 288: 1.30},
    "custom_balance": {2: 1.30, 288: 1.30},
    "custom": {2: 1.16, 288: 1.16},
    "adaptive": {2: 1.32, 288: 1.00},
}
"""Feng et al.'s Sec. 5.2 speedups typed in, as ratios: 3-D stencil (balance modes) "about 30%", neighbouring
(custom) "about 16%", all-to-all (adaptive) 32% at two groups falling to none on all 288 groups (linear in
between here: the figure's intermediate points are not in the text). Measured with CODES on the paper's
machine (288 groups of 288 nodes) against its TDN with PAR routing, random mapping and 26% noise. Typed in,
not computed: :func:`speedup_table` records no machine for it unless told, so a schedule needs
``allow_foreign_speedups`` to use it (a comparison with the paper, not an evaluation)."""


def _fraction_bins(value) -> tuple[tuple[float, float], ...]:
    """``mpi_fraction`` as ((upper bound in nodes, fraction), ...), sorted; a number is one bin for every size."""
    if isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool):
        value = {float("inf"): float(value)}
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = [tuple(x) for x in value]
    else:
        raise ConfigTypeError("workload.mpi_fraction", value,
                              "a fraction in [0, 1], or {max_nodes: fraction, ...} per job size")
    out = []
    for k, v in items:
        try:
            hi, f = float(k), float(v)
        except (TypeError, ValueError):
            raise ConfigError("workload.mpi_fraction", value, "size bins {max_nodes: fraction} of numbers") from None
        if not (hi >= 1 and 0.0 <= f <= 1.0):
            raise ConfigError("workload.mpi_fraction", value,
                              "size bins {max_nodes >= 1: fraction in [0, 1]} (the last bin may be inf)")
        out.append((hi, f))
    if not out:
        raise ConfigError("workload.mpi_fraction", value, "at least one size bin")
    out.sort()
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class WorkloadModel:
    """Parameters of Sec. 5.1.4 (see the module docstring). All sizes in nodes."""

    enlarge: float = 2.0
    mode_lo: int = 576
    mode_hi: int = 65536
    mode_mix: Mapping[str, float] = dataclasses.field(default_factory=lambda: dict(PAPER_MODE_MIX))
    default_mode: str = "minimal_balance"
    mpi_fraction: Any = 0.3
    speedup_rule: str = "time_ratio"
    seed: int = 0
    allow_foreign_speedups: bool = False

    def __post_init__(self):
        float_arg("workload.enlarge", self.enlarge, 0.0, open_min=True, what="job-size factor")
        bool_arg("workload.allow_foreign_speedups", self.allow_foreign_speedups)
        if not is_int(self.seed):
            raise ConfigTypeError("workload.seed", self.seed, "an integer >= 0 (a NumPy default_rng seed)")
        check_seed("workload.seed", self.seed)
        _mode_name("workload.default_mode", self.default_mode)
        mix = dict(mapping_arg("workload.mode_mix", self.mode_mix, "a mapping {mode: share >= 0}"))
        for m, p in mix.items():
            _mode_name("workload.mode_mix", m)
            float_arg(f"workload.mode_mix.{m}", p, 0.0, what="a share of the jobs in the mode range")
        if not mix or sum(mix.values()) <= 0:
            raise ConfigError("workload.mode_mix", mix, "shares of modes, not all 0")
        if not isinstance(self.speedup_rule, str):
            raise ConfigTypeError("workload.speedup_rule", self.speedup_rule, f"one of {list(SPEEDUP_RULES)}")
        if self.speedup_rule not in SPEEDUP_RULES:
            raise ConfigError("workload.speedup_rule", self.speedup_rule, f"one of {list(SPEEDUP_RULES)}")
        int_arg("workload.mode_lo", self.mode_lo, 0, what="nodes")
        int_arg("workload.mode_hi", self.mode_hi, 0, what="nodes")
        if not self.mode_lo <= self.mode_hi:
            raise ConfigError("workload.mode_lo", self.mode_lo, f"at most mode_hi = {self.mode_hi} (nodes)")
        _fraction_bins(self.mpi_fraction)

    def fractions(self, nodes: Int[np.ndarray, "job"]) -> Float[np.ndarray, "job"]:
        """MPI time fraction of each job size (the first bin whose upper bound is >= the size; past the last: its)."""
        bins = _fraction_bins(self.mpi_fraction)
        hi = np.array([b[0] for b in bins])
        f = np.array([b[1] for b in bins])
        idx = np.minimum(np.searchsorted(hi, np.asarray(nodes, dtype=np.float64), side="left"), len(bins) - 1)
        return f[idx]


def _mode_name(field: str, mode) -> str:
    """A GRAP mode's name; ConfigError naming the allowed modes and the nearest."""
    if not isinstance(mode, str):
        raise ConfigTypeError(field, mode, f"one of {list(MODES)}")
    if mode not in MODES:
        near = nearest(mode, MODES)
        raise ConfigError(field, mode, f"one of {list(MODES)}", f"Did you mean {near!r}?" if near else None)
    return mode


def _even_split(n: int, G: int, groups: int) -> tuple[int, ...] | None:
    """Fewest groups k (n/k <= G, k <= groups) that split n evenly, as (n/k,)*k; None if there is none."""
    for k in range(-(-n // G), groups + 1):
        if n % k == 0:
            return (n // k,) * k
    return None


def _uneven_split(n: int, G: int, groups: int, rng: np.random.Generator) -> tuple[int, ...]:
    """n nodes over one group more than needed (when there is one), in uneven shares of at most G each."""
    k = min(-(-n // G) + 1, groups, n)
    k = max(k, -(-n // G))
    w = rng.uniform(0.5, 1.5, size=k)
    r = np.floor(w / w.sum() * n).astype(np.int64)
    r = np.clip(r, 1, G)
    # fix the total: add to / take from groups with room, largest room first
    diff = n - int(r.sum())
    while diff != 0:
        if diff > 0:
            i = int(np.argmax(G - r))
            step = min(diff, int(G - r[i]))
        else:
            i = int(np.argmax(r))
            step = -min(-diff, int(r[i] - 1))
        r[i] += step
        diff -= step
    return tuple(int(x) for x in r)


MODE_STREAM = 0x6D6F6465  # "mode": the spawn key of the modes' stream


def mode_seed(seed: int) -> np.random.SeedSequence:
    """The seed of the stream :func:`prepare_trace` draws modes and uneven shares from: a child of ``seed``
    (spawn key :data:`MODE_STREAM`), so independent of ``default_rng(seed)``, the stream
    :func:`~evaluator.workload.synthetic.synthetic_trace` draws sizes from when both get the same seed (they did
    until 2026-12-06: the same numbers then chose a job's size class and its mode, and the largest jobs got the
    mix's last modes far more often than the mix says)."""
    return np.random.SeedSequence(int(seed), spawn_key=(MODE_STREAM,))


def prepare_trace(trace: Trace, total_nodes: int, nodes_per_group: int, model: WorkloadModel | None = None) -> Trace:
    """The trace as the simulation runs it: sizes enlarged and clamped, a mode, requirements and MPI fraction
    per job (modes and fractions already in the trace are kept)."""
    instance_arg("trace", trace, Trace, "an evaluator.workload.Trace (read_swf, synthetic_trace)")
    total_nodes = int_arg("total_nodes", total_nodes, 1, what="the machine's nodes")
    G = int_arg("nodes_per_group", nodes_per_group, 1, total_nodes, what="a group's nodes, at most total_nodes")
    model = WorkloadModel() if model is None else instance_arg("model", model, WorkloadModel,
                                                                "an evaluator.workload.WorkloadModel, or None")
    groups = int(total_nodes) // G
    enlarged = np.ceil(trace.nodes * model.enlarge).astype(np.int64)
    nodes = np.minimum(enlarged, int(total_nodes))
    nodes = np.maximum(nodes, 1)
    rng = np.random.default_rng(mode_seed(model.seed))
    mix_modes = list(model.mode_mix)
    p = np.array([model.mode_mix[m] for m in mix_modes], dtype=np.float64)
    p /= p.sum()
    draws = rng.choice(len(mix_modes), size=trace.n_jobs, p=p)
    if trace.mode is None:
        in_range = (nodes >= model.mode_lo) & (nodes <= model.mode_hi) & (nodes > G)
        mode = np.where(in_range, np.asarray(mix_modes, dtype=object)[draws], model.default_mode).astype(object)
    else:
        mode = np.asarray(trace.mode, dtype=object).copy()
    if trace.requirements is None:
        reqs = []
        for i in range(trace.n_jobs):
            n = int(nodes[i])
            r: tuple[int, ...] = ()
            if n > G and mode[i] == "custom_balance":
                r = _even_split(n, G, groups) or ()
                if not r:  # no even split: the user asks for near-even shares instead
                    mode[i] = "custom"
            if n > G and mode[i] == "custom":
                r = _uneven_split(n, G, groups, rng)
            reqs.append(r)
        requirements = tuple(reqs)
    else:
        requirements = trace.requirements
    mpi = model.fractions(nodes) if trace.mpi_fraction is None else np.asarray(trace.mpi_fraction, np.float64)
    attrs = dict(trace.attrs)
    attrs.update({"enlarge": float(model.enlarge), "mode_lo": int(model.mode_lo), "mode_hi": int(model.mode_hi),
                  "mode_mix": repr(dict(model.mode_mix)), "mpi_fraction": repr(model.mpi_fraction),
                  "speedup_rule": model.speedup_rule, "model_seed": int(model.seed),
                  "clamped": int((enlarged > int(total_nodes)).sum())})
    return trace.replace(nodes=nodes, mode=mode, requirements=requirements, mpi_fraction=mpi, attrs=attrs)


class SpeedupTable:
    """Speedup(mode, groups) of the communication on the RDN against the traditional Dragonfly.

    Built from an :class:`xarray.Dataset` (its ``speedup`` variable, or its
    only one) or :class:`xarray.DataArray` with dims ``mode`` and ``groups``:
    the ratio ``T_TDN / T_RDN`` (1: no change) computed by the network
    evaluation for jobs on that many groups. A job on ``g`` groups gets the
    value at ``g``, linearly interpolated between the table's group counts;
    below the smallest count it gets 1 (the paper's Fig. 4 starts at two
    groups: jobs in one group are not accelerated) and above the largest the
    largest's value. NaN marks a (mode, groups) not computed: that mode's
    other points are used. A mode missing from the table (or all NaN) is an
    error when the simulation starts.

    Provenance, from the dataset's attributes (:data:`SPEEDUP_TABLE_ATTRS`):
    :attr:`machine` (a name), :attr:`machine_shape` (``(groups,
    nodes_per_group)``, None when not recorded), :attr:`baseline` (what the
    ratios are against; None when not recorded) and :attr:`source` (the file
    it was read from, else ``"in memory"``).
    """

    def __init__(self, data, source: str | None = None):
        import xarray as xr

        instance_arg("speedups", data, (xr.Dataset, xr.DataArray),
                     "an xarray Dataset/DataArray with dims (mode, groups), a netCDF path or {mode: {groups: ratio}}")
        attrs = dict(getattr(data, "attrs", {}) or {})
        self.source = str(source) if source is not None else "in memory"
        where = "speedup_table" if source is None else f"speedup table {self.source}"
        self.machine, self.machine_shape = _machine_of(attrs)
        base, text = attrs.get("baseline"), attrs.get("baseline_text")
        self.baseline = str(base) if base not in (None, "", "not recorded") else None
        if self.baseline and text not in (None, ""):
            self.baseline += f" ({text})"
        if isinstance(data, xr.Dataset):
            names = list(data.data_vars)
            if "speedup" in data:
                data = data["speedup"]
            elif len(names) == 1:
                data = data[names[0]]
            else:
                raise ConfigError(where, names, "a dataset with a 'speedup' variable (or only one)")
        if tuple(sorted(data.dims)) != ("groups", "mode"):
            raise ConfigError(f"{where}: dims", list(data.dims), "exactly ('mode', 'groups')")
        for c in ("mode", "groups"):
            if c not in data.coords:
                raise ConfigError(f"{where}: coordinate {c!r}", "missing", f"a {c} coordinate")
        data = data.transpose("mode", "groups")
        if data.dtype.kind not in "iuf":
            raise ConfigTypeError(f"{where}: speedup", f"dtype {data.dtype}",
                                  "real ratios T_TDN / T_RDN (float; NaN where not computed)")
        modes = data["mode"].values
        if modes.dtype.kind not in "UO" or not all(isinstance(m, str) for m in modes.tolist()):
            raise ConfigTypeError(f"{where}: mode", modes.tolist(), f"mode names from {list(MODES)}")
        if len(set(modes.tolist())) != len(modes):
            raise ConfigError(f"{where}: mode", modes.tolist(), "each mode once")
        graw = data["groups"].values
        glist = graw.tolist()
        if graw.dtype.kind not in "iuf" or (graw.dtype.kind == "f" and not np.all(np.isfinite(graw))):
            raise ConfigTypeError(f"{where}: groups", glist, "positive integer group counts, ascending")
        if graw.size == 0 or np.any(graw != np.round(graw)) or np.any(graw < 1):
            raise ConfigError(f"{where}: groups", glist, "positive integer group counts (job sizes in groups), "
                                                         "ascending")
        if np.any(np.diff(graw) <= 0):
            raise ConfigError(f"{where}: groups", glist, "group counts in strictly ascending order",
                              "Sort the table by groups (xarray: ds.sortby('groups')) and drop repeated counts.")
        self.modes = tuple(str(m) for m in modes.tolist())
        groups = np.asarray(graw, dtype=np.float64)
        values = np.asarray(data.values, dtype=np.float64)
        self._rows = {}
        for m, row in zip(self.modes, values):
            ok = ~np.isnan(row)
            if not ok.any() or np.any(~np.isfinite(row[ok])) or np.any(row[ok] <= 0):
                raise ConfigError(f"{where}[mode={m!r}]", row.tolist(),
                                  "finite ratios > 0 (NaN where not computed, but not everywhere)")
            self._rows[m] = (groups[ok], row[ok])
        self.data = data

    def describe(self) -> str:
        """One line for people: source, machine and baseline."""
        shape = "" if self.machine_shape is None else \
            f", {self.machine_shape[0]} groups x {self.machine_shape[1]} nodes"
        return (f"{self.source} (machine {self.machine or 'not recorded'}{shape}; "
                f"baseline {self.baseline or 'not recorded'})")

    def check_machine(self, groups: int, nodes_per_group: int, allow_foreign: bool = False) -> None:
        """Raise ConfigError unless the table was computed on a machine of ``groups`` groups of
        ``nodes_per_group`` nodes (or ``allow_foreign``): its ratios per job size in groups are that machine's."""
        if allow_foreign or self.machine_shape == (int(groups), int(nodes_per_group)):
            return
        got = "not recorded" if self.machine_shape is None else \
            f"{self.machine_shape[0]} groups x {self.machine_shape[1]} nodes"
        if self.machine and self.machine_shape is not None and self.machine != got:
            got = f"{self.machine}, {got}"
        raise ConfigError(
            "speedups.machine", got,
            f"the scheduled machine, {groups} groups x {nodes_per_group} nodes; or set "
            f"workload.allow_foreign_speedups=true (--allow-foreign-speedups) to apply it anyway",
            f"Table: {self.source}.")

    def check_modes(self, modes, model: "WorkloadModel | None" = None) -> None:
        """Raise ConfigError if a job's mode has no row in the table, naming every mode missing, how many jobs run
        in each, and (``model``) the mode mix and default mode the jobs' modes come from."""
        from collections import Counter

        counts = Counter(str(m) for m in np.asarray(modes, dtype=object).reshape(-1).tolist())
        missing = sorted(set(counts) - set(self.modes))
        if not missing:
            return
        jobs = ", ".join(f"{m} ({counts[m]} job{'s' if counts[m] != 1 else ''})" for m in missing)
        origin = ""
        if model is not None:
            mix = {m: float(v) for m, v in dict(model.mode_mix).items() if float(v) > 0}
            origin = (f" The jobs' modes come from workload.mode_mix = {mix} (jobs of {model.mode_lo}-"
                      f"{model.mode_hi} nodes spanning more than a group) and workload.default_mode = "
                      f"{model.default_mode!r} (the others).")
        raise ConfigError("speedup_table.mode", missing,
                          f"a table with a row for every mode the jobs run in, {sorted(counts)}; the table "
                          f"({self.source}) has {list(self.modes)}",
                          f"Missing: {jobs}.{origin} Compute the speedups of the missing modes (evaluator study "
                          f"rdn --speedup-out computes all four), or choose a mode mix the table covers.")

    def __call__(self, mode: str, groups: int) -> float:
        """The speedup ratio of a job of ``mode`` on ``groups`` groups."""
        gs, row = self._rows[mode]
        g = float(groups)
        if g < gs[0]:
            return 1.0
        return float(np.interp(g, gs, row))


def _machine_of(attrs: Mapping[str, Any]) -> tuple[str | None, tuple[int, int] | None]:
    """(name, (groups, nodes_per_group)) recorded in a speedup table's attributes (None where not recorded)."""
    import re

    name = attrs.get("machine")
    name = str(name) if name not in (None, "") else None
    g, npg = attrs.get("machine_groups"), attrs.get("machine_nodes_per_group")
    if g is not None and npg is not None:
        return name, (int(g), int(npg))
    m = re.fullmatch(r"\s*DF\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)\s*", name or "")
    if m:
        p, a, _, gg = (int(x) for x in m.groups())
        return name, (gg, a * p)
    return name, None


def speedup_table(values: Mapping[str, Mapping[int, float]], machine: tuple[int, int] | None = None,
                  machine_name: str | None = None, baseline: str | None = None):
    """A speedup dataset from ``{mode: {groups: ratio}}`` (for tests and hand-made studies; the real one comes
    from the network evaluation). ``machine``: ``(groups, nodes_per_group)`` it was computed on; ``machine_name``
    and ``baseline`` as in :data:`SPEEDUP_TABLE_ATTRS`. Without ``machine`` the table records none, and a
    schedule refuses it unless ``allow_foreign_speedups``."""
    import xarray as xr

    mapping_arg("values", values, "a mapping {mode: {groups: ratio}}")
    if not values:
        raise ConfigError("values", dict(values), "at least one mode {mode: {groups: ratio}}")
    for m, row in values.items():
        if not isinstance(m, str):
            raise ConfigTypeError("values", m, f"mode names (str) as keys, e.g. {list(MODES)}")
        mapping_arg(f"values[{m!r}]", row, "a mapping {groups: ratio} (groups: integers >= 1; ratios > 0)")
        if not row:
            raise ConfigError(f"values[{m!r}]", dict(row), "at least one {groups: ratio}")
        for g, v in row.items():
            int_arg(f"values[{m!r}] groups", g, 1, what="a job size in groups")
            float_arg(f"values[{m!r}][{g}]", v, 0.0, open_min=True, what="a ratio T_TDN / T_RDN")
    if machine is not None:
        if not (isinstance(machine, (tuple, list)) and len(machine) == 2):
            raise ConfigTypeError("machine", machine, "(groups, nodes_per_group), or None")
        int_arg("machine[0] (groups)", machine[0], 1)
        int_arg("machine[1] (nodes_per_group)", machine[1], 1)
    for name, v in (("machine_name", machine_name), ("baseline", baseline)):
        if v is not None and not isinstance(v, str):
            raise ConfigTypeError(name, v, "a string, or None")
    modes = list(values)
    groups = sorted({int(g) for row in values.values() for g in row})
    arr = np.full((len(modes), len(groups)), np.nan)
    for i, m in enumerate(modes):
        for j, g in enumerate(groups):
            if g in values[m]:
                arr[i, j] = float(values[m][g])
    attrs: dict[str, Any] = {"baseline": baseline or "not recorded"}
    if machine_name:
        attrs["machine"] = machine_name
    if machine is not None:
        g, npg = (int(x) for x in machine)
        attrs.update(machine=machine_name or f"{g} groups x {npg} nodes", machine_groups=g,
                     machine_nodes_per_group=npg)
    return xr.Dataset({"speedup": (("mode", "groups"), arr,
                                   {"long_name": "communication speedup T_TDN / T_RDN", "units": "1"})},
                      coords={"mode": np.asarray(modes, dtype=str), "groups": np.asarray(groups, dtype=np.int64)},
                      attrs=attrs)


def accelerated_run_time(run_time: float, mpi_fraction: float, speedup: float, rule: str = "time_ratio") -> float:
    """Run time (s) on the RDN: ``run_time - mpi_fraction * run_time * saving(speedup)`` (module docstring)."""
    if speedup == 1.0 or mpi_fraction == 0.0:
        return float(run_time)
    saving = 1.0 - 1.0 / speedup if rule == "time_ratio" else min(speedup - 1.0, 1.0)
    return float(run_time) - float(mpi_fraction) * float(run_time) * saving
