"""The latency model of a network: what each message costs besides its bytes (DESIGN.md "Beyond the bound").

A network's :class:`Latency` holds, in SI units (seconds, bytes):

* ``send_overhead`` and ``recv_overhead``: software (MPI and NIC) time per
  message at the sender and at the receiver (LogP's ``o``);
* ``router``: the time to cross one router (switch) on the path;
* ``link``: the time on the wire of each link class (``"torus-dim0"``,
  ``"local"``, ``"global"``, ``"level1-up"``, ``"injection"``, ...; key
  ``"default"`` for the classes not named), so that electrical and optical
  cables, or short and long cable classes, can differ;
* ``eager_threshold``: messages of more bytes use the rendezvous protocol and
  pay ``rendezvous_round_trips`` extra round trips of a zero-byte control
  message before their data (None: every message is eager).

A message ``m`` of ``b_m`` bytes whose path crosses links ``l`` (each
ending at a router or at the destination node) costs

    lambda_m = o_s + o_r + sum_l (wire[class(l)] + router [l ends at a router])
               + [b_m > eager] * R * 2 * (o_s + o_r + sum_l (...))

before its bytes move (``R``: ``rendezvous_round_trips``). A path from
node to node crosses its injection link, its router links and its ejection
link, so it crosses one router more than it has router links; two tasks on
one node exchange through memory (``o_s + o_r``). Where a routing spreads
a pair's bytes over several paths (tie splitting, Valiant), ``sum_l`` is the
expectation over those paths, weighted as the bytes are.

With no latency model (:data:`None` on a topology) nothing here is computed
and every result is the bandwidth model's alone.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, no_type_check

import numpy as np

from ._types import Float
from .errors import ConfigError, nearest, require

__all__ = ["Latency", "LatencyConfig", "latency_from_config", "latency_wanted", "link_latency", "LATENCY_FIELDS"]

LATENCY_FIELDS = ("enabled", "send_overhead", "recv_overhead", "router", "wire", "link", "eager_threshold",
                  "rendezvous_round_trips", "eager_buffered")
"""The keys of a latency block (``topology.latency``, a machine file's ``latency``)."""


@no_type_check  # takes raw configuration and refuses bad values itself (ConfigError naming the field)
@dataclass(frozen=True)
class Latency:
    """What every message costs besides its bytes: overheads, router and wire latency, rendezvous.

    Attributes
    ----------
    send_overhead, recv_overhead
        Seconds per message at the sender and the receiver (>= 0).
    router
        Seconds to cross one router (>= 0).
    link
        Seconds on the wire per link class, ``((class, seconds), ...)``; ``"default"`` covers the classes
        not named (0 without it).
    eager_threshold
        Bytes: a message of more bytes pays the rendezvous round trips (None: none does).
    rendezvous_round_trips
        Round trips of a zero-byte control message before a rendezvous message's data (>= 0; 1 for the
        RTS/CTS handshake of MPI libraries, 0 where a large send only waits for its receive to be posted).
    eager_buffered
        Whether an eager message leaves as soon as it is posted, to wait in the receiver's buffer (MPI
        libraries), or only once its receive is posted too (false: SimGrid's SMPI, whose small sends are detached
        but matched). Read by ``progression="rank"`` only.
    """

    send_overhead: float = 0.0
    recv_overhead: float = 0.0
    router: float = 0.0
    link: tuple[tuple[str, float], ...] = ()
    eager_threshold: float | None = None
    rendezvous_round_trips: int = 1
    eager_buffered: bool = True

    def __post_init__(self):  # every key checked (named as the config names it) and normalised, here only
        f = "topology.latency"
        for name in ("send_overhead", "recv_overhead", "router"):
            object.__setattr__(self, name, _seconds(f"{f}.{name}", getattr(self, name)))
        link = self.link
        if isinstance(link, dict):  # {class: seconds}, as a config writes it
            link = tuple(link.items())
        if not (isinstance(link, (tuple, list)) and all(isinstance(e, (tuple, list)) and len(e) == 2 for e in link)):
            raise ConfigError(f"{f}.link", link, "{class: seconds} or ((class, seconds), ...) pairs")
        object.__setattr__(self, "link", tuple((str(c), _seconds(f"{f}.link.{c}", v)) for c, v in link))
        if self.eager_threshold is not None:
            v = self.eager_threshold
            require(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and v >= 0
                    and not math.isnan(v), f"{f}.eager_threshold", v,
                    "a number of bytes >= 0, or null (every message eager)")
            object.__setattr__(self, "eager_threshold", float(v))
        r = self.rendezvous_round_trips
        require(isinstance(r, (int, np.integer)) and not isinstance(r, bool) and r >= 0,
                f"{f}.rendezvous_round_trips", r, "an integer >= 0")
        object.__setattr__(self, "rendezvous_round_trips", int(r))
        require(isinstance(self.eager_buffered, bool), f"{f}.eager_buffered", self.eager_buffered, "true or false")

    @property
    def overhead(self) -> float:
        """``send_overhead + recv_overhead`` (s): what a message costs with no link at all."""
        return float(self.send_overhead + self.recv_overhead)

    def wire(self, class_name: str) -> float:
        """Seconds on the wire of one link of class ``class_name``."""
        table = dict(self.link)
        return float(table.get(class_name, table.get("default", 0.0)))

    def check_classes(self, class_names: tuple[str, ...], where: str = "topology.latency.link") -> None:
        """Refuse a link class this network does not have (a misspelt class would silently cost 0)."""
        allowed = list(class_names) + ["default"]
        for cls, _ in self.link:
            if cls not in allowed:
                raise ConfigError(f"{where}.{cls}", cls, f"a link class of this network, one of {allowed}",
                                  nearest(cls, allowed))

    def summary(self) -> str:
        """One line for people (decimal SI: us, ns)."""
        from .display import format_value

        def t(x: float) -> str:
            return format_value(x, "s")

        parts = [f"overhead {t(self.send_overhead)} + {t(self.recv_overhead)}", f"router {t(self.router)}"]
        parts += [f"{cls} {t(v)}" for cls, v in self.link]
        if self.eager_threshold is not None:
            parts.append(f"eager <= {self.eager_threshold:,.0f} B, then {self.rendezvous_round_trips} round trip(s)")
        return ", ".join(parts)

    def attrs(self) -> dict[str, Any]:
        """The model as dataset attributes (SI units)."""
        out: dict[str, Any] = {"latency_send_overhead": self.send_overhead,
                               "latency_recv_overhead": self.recv_overhead, "latency_router": self.router,
                               "latency_rendezvous_round_trips": int(self.rendezvous_round_trips)}
        for cls, v in self.link:
            out[f"latency_link_{cls}"] = v
        out["latency_eager_threshold"] = "none" if self.eager_threshold is None else float(self.eager_threshold)
        return out


def _seconds(field_name: str, v) -> float:
    require(isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool) and math.isfinite(v)
            and v >= 0, field_name, v, "a time in seconds >= 0 (e.g. 1.0e-6 for 1 us)")
    return float(v)


@dataclass
class LatencyConfig:
    """A latency block (seconds and bytes; every key null: not given). ``wire`` is the wire latency of every
    link class that ``link`` does not name; ``link`` maps a link class to its own (on the command line a new
    class key takes a ``+``: ``+topology.latency.link.global=1.0e-7``). A machine file's block gives the
    machine's values; keys given on the command line (``topology.latency.router=1e-7``) override them one by
    one. ``enabled``: null (the default) turns the model on when any key is set; true turns it on with the
    catalogue machine's published figures (docs/latency.md; zeros elsewhere) under the keys given; false turns it
    off whatever is set (no latency computed: the bandwidth model alone)."""

    enabled: Optional[bool] = None
    send_overhead: Optional[float] = None
    recv_overhead: Optional[float] = None
    router: Optional[float] = None
    wire: Optional[float] = None
    link: dict[str, float] = field(default_factory=dict)
    eager_threshold: Optional[float] = None
    rendezvous_round_trips: Optional[int] = None
    eager_buffered: Optional[bool] = None


def _given(cfg) -> dict[str, Any]:
    """The keys of a latency block that are set (a mapping, a :class:`LatencyConfig` or an OmegaConf node)."""
    if cfg is None:
        return {}
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        items = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    elif isinstance(cfg, Mapping) or hasattr(cfg, "items"):
        items = dict(cfg.items())
    else:
        raise ConfigError("topology.latency", cfg, f"a mapping with keys {list(LATENCY_FIELDS)}")
    for k in items:
        if k not in LATENCY_FIELDS:
            raise ConfigError(f"topology.latency.{k}", items[k], f"a key of {list(LATENCY_FIELDS)}",
                              nearest(k, LATENCY_FIELDS))
    out = {k: v for k, v in items.items() if v is not None and k not in ("link", "wire", "enabled")}
    link = items.get("link") or {}
    if isinstance(cfg, Latency):  # (its table as pairs)
        link = dict(link)
    require(isinstance(link, Mapping) or hasattr(link, "items"), "topology.latency.link", link,
            "a mapping of link class -> seconds (e.g. {global: 1.0e-7, default: 1.0e-8})")
    link = {str(k): v for k, v in dict(link.items()).items()}
    if items.get("wire") is not None:
        wire = _seconds("topology.latency.wire", items["wire"])
        require("default" not in link or link["default"] == wire, "topology.latency.wire", wire,
                f"one value for the classes link does not name: topology.latency.link.default = "
                f"{link.get('default')!r} says it too", "Give one of the two.")
        link["default"] = wire
    if link:
        out["link"] = link
    return out


def latency_wanted(cfg) -> bool:
    """Whether a latency block asks for a latency model: ``enabled`` true, or null with any key set."""
    enabled = _enabled(cfg)
    return bool(enabled) if enabled is not None else bool(_given(cfg))


def _enabled(cfg) -> bool | None:
    v = None if cfg is None else (cfg.get("enabled") if isinstance(cfg, Mapping) else getattr(cfg, "enabled", None))
    require(v is None or isinstance(v, bool), "topology.latency.enabled", v, "true, false or null")
    return v


def latency_from_config(cfg, base=None) -> Latency | None:
    """The :class:`Latency` of a latency block over ``base`` (a machine's block; keys given in ``cfg`` win,
    ``link`` class by class), or None: no latency model (``enabled`` false, or null with no key set in either;
    ``enabled`` true with none set: every latency 0). The keys are checked whether or not the model is enabled:
    a wrong value is refused when given, not when the model is switched on."""
    enabled = _enabled(cfg)
    merged = _given(base)
    over = _given(cfg)
    link = dict(merged.pop("link", {}))
    link.update(over.pop("link", {}))
    merged.update(over)
    if not merged and not link and not enabled:
        return None
    model = Latency(**merged, link=tuple(sorted(link.items())))  # (Latency checks every key, also when disabled)
    return None if enabled is False else model


def link_latency(topology, latency: Latency) -> Float[np.ndarray, "link"]:
    """Seconds every link adds to a message crossing it: its class's wire latency, plus the router latency
    where the link ends at a router (router links and injection links; an ejection link ends at a node)."""
    if not all(hasattr(topology, a) for a in ("class_names", "link_class", "link_dst")):  # (a Topology: layer above)
        raise ConfigError("topology", repr(topology)[:60], "a Topology (e.g. evaluator.torus([4, 4, 4]))")
    if not isinstance(latency, Latency):
        raise ConfigError("latency", repr(latency)[:60], "a Latency (e.g. evaluator.latency.Latency(router=1e-7))")
    latency.check_classes(tuple(topology.class_names))
    wire = np.array([latency.wire(c) for c in topology.class_names], dtype=np.float64)
    ends_at_router = np.asarray(topology.link_dst) >= 0
    return wire[np.asarray(topology.link_class)] + latency.router * ends_at_router
