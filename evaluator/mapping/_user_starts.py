"""Starts a user brings to a mapping search (``evaluator map --start``): a mapping read from a file, checked.

Two file formats, told apart by the file's name and shape (or by a prefix, ``rank_order:FILE`` /
``node_list:FILE``):

* a **rank-order file** (``MPICH_RANK_ORDER`` for ``MPICH_RANK_REORDER_METHOD=3``, as ``evaluator placement
  --write-rank-order`` and ``evaluator map --write-rank-order`` write it, or a Cray ``grid_order`` output): one
  line per node, in the order the launcher fills the nodes, holding that node's ranks (commas, ranges ``a-b``,
  ``#`` comments). Line ``i`` goes to the ``i``-th node of the ``node_list`` file beside it in the order the
  launcher fills the listed nodes (``aprun -L`` takes them as a set: ascending id, or ALPS's order of a 3-D
  torus where the file says ``# fill: alps``; whatever order the node_list lists them in, which until
  2026-12-07 was read as the fill order, another mapping than the launcher's where it was not ascending; a
  node_list that lists a node twice is refused), or, without one, to the ``i``-th node available to the job
  (``--nodes``, in its fill order). A file whose name contains
  ``RANK_ORDER``, or with a line of several ranks, is read so, but for a file of one line holding more ids than
  a node takes ranks (``--tasks-per-node``), which no rank order can be: a node list written on one line;
* a **node list**: one node id per rank, rank 0 first (newlines, commas or spaces; ranges ``a-b`` stand for one
  rank per node of the range; ``#`` comments). Any other file is read so.

Both are parsed by :func:`parse_node_ids` (the one reader of id lists, that of ``--nodes`` too) and checked by
:func:`check_start`: every rank once, on a node of the topology that is available to the job, at most
``tasks_per_node`` ranks per node; the errors name the option, the value and what is allowed.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .._types import JobNodes, TaskInts
from ..errors import ConfigError
from ._starts import Start

__all__ = ["parse_node_ids", "check_start", "read_start_file", "FILE_KINDS"]

FILE_KINDS = ("rank_order", "node_list")
"""The prefixes that name a start file's format (``rank_order:FILE``, ``node_list:FILE``)."""


MAX_LISTED_IDS = 10**7
"""The most ids a node list or rank order may expand to (its ranges counted before any is listed: 0-999999999
filled the memory)."""


def parse_node_ids(text: str, field: str = "--nodes", limit: int | None = None, machine: str = "the machine"
                   ) -> JobNodes:
    """``"0-3,8, 10"`` (commas, spaces or newlines; ``a-b`` ranges; ``#`` comments) -> node ids in that order.
    ``limit``: the ids must be below it (``machine``'s node count), checked before a range is listed; at most
    :data:`MAX_LISTED_IDS` ids in all."""
    body = "\n".join(line.split("#", 1)[0] for line in str(text).splitlines())
    parts = [p for p in re.split(r"[,\s]+", body) if p]
    spans: list[tuple[int, int]] = []
    count = 0
    for p in parts:
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", p)
        if m is None or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise ConfigError(field, p, "node ids and ascending ranges separated by commas, e.g. 0-15,32,40-47")
        lo = int(m.group(1))
        hi = lo if m.group(2) is None else int(m.group(2))
        if limit is not None and hi >= limit:
            raise ConfigError(field, p, f"node ids of {machine}: integers in [0, {int(limit) - 1}]",
                              f"Node {hi} is out of range.")
        count += hi - lo + 1
        if count > MAX_LISTED_IDS or hi >= 2**62:
            raise ConfigError(field, p, f"at most {MAX_LISTED_IDS:,} ids in all, each below 2^62",
                              "No machine has that many nodes: check the range.")
        spans.append((lo, hi))
    out: list[int] = []
    for lo, hi in spans:
        out.extend(range(lo, hi + 1))
    if not out:
        raise ConfigError(field, text, "at least one node id, e.g. 0-15,32")
    return np.asarray(out, np.int64)


def check_start(topology, n_tasks: int, nodes, tasks_per_node: int, task_node, field: str, value) -> TaskInts:
    """``task_node`` (shape [task]) as int64 when it maps the job's ``n_tasks`` tasks onto the available ``nodes``
    with at most ``tasks_per_node`` per node; a :class:`ConfigError` with ``field`` and ``value`` (the option and
    what the user gave) saying what is wrong otherwise."""
    tn = np.asarray(task_node).reshape(-1).astype(np.int64)
    if tn.size != n_tasks:
        raise ConfigError(field, value, f"a mapping of the job's {n_tasks} ranks (one node per rank)",
                          f"It places {tn.size} ranks.")
    out = (tn < 0) | (tn >= topology.n_nodes)
    if out.any():
        ids = np.unique(tn[out])
        raise ConfigError(field, value, f"node ids of {topology.name}: integers in [0, {topology.n_nodes - 1}]",
                          f"Node {int(ids[0])} is out of range ({ids.size} node id(s) are).")
    avail = np.zeros(topology.n_nodes, dtype=bool)
    avail[np.asarray(nodes, np.int64)] = True
    if not avail[tn].all():
        ids = np.unique(tn[~avail[tn]])
        raise ConfigError(field, value, f"a mapping onto the {int(avail.sum())} nodes available to the job "
                          f"(--nodes)", f"It uses {ids.size} node(s) that are not available, e.g. "
                          f"{ids[:5].tolist()}.")
    counts = np.bincount(tn, minlength=topology.n_nodes)
    if counts.max() > tasks_per_node:
        node = int(np.argmax(counts))
        raise ConfigError(field, value, f"at most {tasks_per_node} rank(s) per node (--tasks-per-node)",
                          f"Node {node} holds {int(counts[node])}.")
    return tn


def _rank_order_lines(text: str, field: str) -> list[np.ndarray]:
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [parse_node_ids(line, field) for line in lines if line]


def _check_line_lengths(text: str, lines: list[np.ndarray], tpn: int, field: str, value: str) -> None:
    """MPICH reads the file's ranks as one list and fills the nodes ``tpn`` at a time (``aprun -N``), whatever its
    lines; a line per node is read so only where every line but the last holds ``tpn`` ranks (the last at most):
    any other file would be read as another mapping than the launcher's, so it is refused, naming the line."""
    numbers = [i + 1 for i, line in enumerate(text.splitlines()) if line.split("#", 1)[0].strip()]
    for k, (r, line_no) in enumerate(zip(lines, numbers)):
        last = k == len(lines) - 1
        if r.size > tpn or (r.size < tpn and not last):
            raise ConfigError(field, value, f"a rank order of one line per node: {tpn} ranks (--tasks-per-node) on "
                              f"every line but the last, at most {tpn} on the last",
                              f"Line {line_no} holds {r.size}. MPICH fills the nodes {tpn} ranks at a time whatever "
                              f"the lines, so this file is another mapping: write {tpn} ranks a line, or give the "
                              f"--tasks-per-node the file was written for.")


_FILL = re.compile(r"^\s*#\s*fill:\s*(\S*)", re.MULTILINE)


def _in_fill_order(text: str, nodes: np.ndarray, topology, field: str, value: str, listed: bool = False
                   ) -> np.ndarray:
    """``nodes`` in the order the launcher fills them, as the rank-order file's ``# fill:`` line says
    (:func:`~evaluator.placement.rank_order.rank_order_text`): ``alps``, ALPS's order of a 3-D torus
    (``evaluator placement`` writes its lines so by default there); ``id`` or no such line: ascending id where
    ``listed`` (the nodes of a ``node_list``, which ``aprun -L`` takes as a set), else as given (``--nodes``)."""
    m = _FILL.search(text)
    fill = m.group(1) if m else "id"
    if fill == "id":
        return np.sort(nodes) if listed else nodes
    if fill != "alps":
        raise ConfigError(field, value, "a rank-order file whose '# fill:' line says alps or id",
                          f"It says {fill!r}.")
    from ..placement import alps_order
    from ..placement.base import TORUS_3D

    if not TORUS_3D.test(topology):
        raise ConfigError(field, value, f"a rank-order file filled in id order on {topology.name} (its '# fill: alps' "
                          "line is ALPS's order of a 3-D torus)", "Write it again with --fill id.")
    pos = np.empty(topology.n_nodes, np.int64)
    pos[alps_order(topology)] = np.arange(topology.n_nodes)
    return nodes[np.argsort(pos[nodes], kind="stable")]


def read_start_file(path: str | Path, topology, n_tasks: int, nodes, tasks_per_node: int, *,
                    field: str = "--start", kind: str | None = None, name: str | None = None) -> Start:
    """The start that a rank-order file or a node list describes (module docstring), checked.

    Parameters
    ----------
    path
        The file.
    topology, n_tasks, nodes, tasks_per_node
        The job: its topology, ranks, available node ids (in fill order) and slots per node.
    field
        The option named in errors.
    kind
        ``"rank_order"`` or ``"node_list"``; default: told from the file (module docstring).
    name
        The start's name (default: the path as given).
    """
    p = Path(path)
    value = str(path)
    if kind is not None and kind not in FILE_KINDS:
        raise ConfigError(field, value, f"a file format: one of {', '.join(FILE_KINDS)}")
    if not p.is_file():
        raise ConfigError(field, value, "a rank-order file or a node list that exists",
                          f"No file {value} exists." if not p.exists() else f"{value} is not a file.")
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(field, value, "a readable text file", str(getattr(exc, "strerror", None) or exc)) from None
    if kind is None:
        lines = _rank_order_lines(text, f"{field} ({value})")
        one_line = len(lines) == 1 and lines[0].size > int(tasks_per_node)  # no rank order: one node cannot hold it
        several = any(a.size > 1 for a in lines) and not one_line
        kind = "rank_order" if "RANK_ORDER" in p.name.upper() or several else "node_list"
    n = int(n_tasks)
    if kind == "node_list":
        try:
            tn = parse_node_ids(text, f"{field} ({value})", limit=topology.n_nodes, machine=topology.name)
        except ConfigError as exc:
            if exc.allowed.startswith("at least one node id"):  # the value was the file's whole text: name the file
                raise ConfigError(field, value, f"at least one node id: a node list of one node id per rank, {n} "
                                  f"ids for the job's {n} ranks", "It lists none (only comments or blank lines)."
                                  ) from None
            if not exc.allowed.startswith("node ids of"):
                raise
            raise ConfigError(field, value, exc.allowed, exc.hint) from None
        if tn.size != n:
            raise ConfigError(field, value, f"a node list of one node id per rank: {n} ids for the job's {n} ranks",
                              f"It lists {tn.size}.")
        tn = check_start(topology, n, nodes, tasks_per_node, tn, field, value)
        return Start(name or value, tn)
    lines = _rank_order_lines(text, f"{field} ({value})")
    ranks = np.concatenate(lines) if lines else np.zeros(0, np.int64)
    if ranks.size != n or not np.array_equal(np.sort(ranks), np.arange(n)):
        extra = ranks[ranks >= n]
        have = (f"It holds {ranks.size} ranks" + (f", e.g. rank {int(extra[0])}" if extra.size else "") +
                ("" if ranks.size != n or extra.size else ", some of them more than once") + ".")
        raise ConfigError(field, value, f"a rank order of the job's {n} ranks: each of 0..{n - 1} once, one line "
                          f"per node", have)
    _check_line_lengths(text, lines, int(tasks_per_node), field, value)
    beside = p.parent / "node_list"
    if beside.is_file():
        try:
            beside_text = beside.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(field, str(beside), "a readable node_list text file",
                              str(getattr(exc, "strerror", None) or exc)) from None
        fill = parse_node_ids(beside_text, f"{field} ({beside})", limit=topology.n_nodes, machine=topology.name)
        ids, counts = np.unique(fill, return_counts=True)
        if (counts > 1).any():
            raise ConfigError(field, str(beside), "a node_list of distinct node ids (aprun -L takes each node once)",
                              f"It lists node {int(ids[counts > 1][0])} {int(counts[counts > 1][0])} times.")
        source = f"the {fill.size} nodes of {beside}"
    else:
        fill = np.asarray(nodes, np.int64)
        source = f"the {fill.size} nodes available to the job (--nodes)"
    fill = _in_fill_order(text, fill, topology, field, value, listed=beside.is_file())
    if len(lines) > fill.size:
        raise ConfigError(field, value, f"at most one line per node of {source}",
                          f"It has {len(lines)} lines (one per node).")
    tn = np.empty(n, np.int64)
    for node, r in zip(fill.tolist(), lines):
        tn[r] = node
    tn = check_start(topology, n, nodes, tasks_per_node, tn, field, value)
    return Start(name or value, tn)
