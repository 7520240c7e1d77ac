"""The summary of a sweep's infeasible points: their reasons grouped by rule, the rule that covers most points
first.

A point's ``reason`` is ``"<field>: <what is allowed>"`` (:func:`evaluator.errors.reason`), often with the
numbers of that point (``placement.gamma: |gamma| <= nodes per group a*p = 32; got |gamma| = 64``, ``... got
|gamma| = 128``, ``traffic.beta: a divisor of alpha[0] = 512``, ``... alpha[2] = 512``). Counted text by text, one
cause spread over many values came after a rarer one and the cause of most points could fall out of the four
shown. Reasons are grouped by their rule: the text without what the point had (``; got ...``) and with every
number read as a number; the group covering most points comes first, shown by its most common text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np

__all__ = ["summarize_reasons", "infeasible_reasons", "reason_counts", "bound_failure_line"]

_GOT = re.compile(r";\s*got\b.*$")
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def _clean(text) -> str:
    return " ".join(str(text).split()).rstrip(".") or "no reason recorded"


def _rule(text: str) -> str:
    return _NUMBER.sub("#", _GOT.sub("", text))


def summarize_reasons(reasons: Iterable[str] | Mapping[str, int], n: int = 4) -> str:
    """``"250 x <reason>, 12 x <reason> (3 variants), and 2 other reason(s)"``: ``reasons`` (one per infeasible
    point, or a mapping of each text to its count: :func:`reason_counts`) grouped by rule, the group covering most
    points first (ties: in order of first appearance); a group of several texts is shown by its most common one,
    without the point's own value (``; got ...``)."""
    counts: Counter = Counter()
    for r, c in (reasons.items() if isinstance(reasons, Mapping) else ((r, 1) for r in reasons)):
        counts[_clean(r)] += int(c)
    groups: dict[str, Counter] = {}
    for text, c in counts.items():
        groups.setdefault(_rule(text), Counter())[text] = c
    ranked = sorted(groups.values(), key=lambda g: -sum(g.values()))
    parts = []
    for g in ranked[:n]:
        top = g.most_common(1)[0][0]
        if len(g) > 1:
            top = _GOT.sub("", top) + f" ({len(g)} variants)"
        parts.append(f"{sum(g.values())} x {top}")
    text = ", ".join(parts)
    if len(ranked) > n:
        text += f", and {len(ranked) - n} other reason(s)"
    return text


def infeasible_reasons(ds) -> list[str]:
    """The ``reason`` of every infeasible point of a sweep dataset (points with ``feasible`` False; every point
    when the dataset has no ``feasible``)."""
    return [str(r) for r in _infeasible(ds)]


def _infeasible(ds) -> np.ndarray:
    """The ``reason`` values of the infeasible points, flat (every point's without ``feasible``)."""
    reasons = np.asarray(ds["reason"].values).reshape(-1)
    if "feasible" in ds:
        reasons = reasons[~np.asarray(ds["feasible"].values, bool).reshape(-1)]
    return reasons


def reason_counts(ds) -> dict[str, int]:
    """How many infeasible points of a sweep dataset have each ``reason`` text (in order of first appearance):
    :func:`infeasible_reasons` counted by a hash table, without a Python string per point (a 10^6-point sweep's
    737,500 reasons: 1.2 s -> 0.1 s). A dataset opened without its ``reason`` variable (``open_results(...,
    drop_variables=["reason"])``) gives the counts the sweep recorded at assembly (attribute
    ``reason_counts_json``, :func:`evaluator.sweep.assemble.reason_counts_json`)."""
    import json

    import pandas as pd

    if "reason" not in ds and "reason_counts_json" in ds.attrs:
        return {str(k): int(v) for k, v in json.loads(ds.attrs["reason_counts_json"])}
    counts = pd.Series(_infeasible(ds), dtype=object).value_counts(sort=False, dropna=False)
    return {str(k): int(v) for k, v in counts.items()}


def bound_failure_line(n_failed: int, why: str) -> str:
    """The line a sweep with ``bounds`` prints at its end where some feasible points' bound LPs failed (HiGHS
    without an optimum: :mod:`evaluator.sweep.bounds`): ``"3 points' bound LPs failed: 3 x highs: Numerical
    difficulties encountered; their bounds are NaN, see bound_status"``; ``''`` where none did. ``why``: their
    ``bound_status`` texts summarised by :func:`summarize_reasons`. A written dataset keeps it (attribute
    ``bound_failures``)."""
    if n_failed <= 0:
        return ""
    if n_failed == 1:
        return f"1 point's bound LP failed: {why}; its bound is NaN, see bound_status"
    return f"{n_failed} points' bound LPs failed: {why}; their bounds are NaN, see bound_status"
