"""Every axis name of the package's shape annotations is declared in ``evaluator._types.AXIS_MEANINGS`` (issue 36
item 4: shapes held, not only written)."""

from __future__ import annotations

import re
from pathlib import Path

from evaluator._types import AXES, AXIS_MEANINGS

PACKAGE = Path(__file__).resolve().parents[1] / "evaluator"
_ANNOTATION = re.compile(r"\b(?:Float|Int|Bool|Shaped|UInt|Num|Real|Integer|Inexact|Complex)\[\s*[\w.]+\s*,\s*"
                         r"\"([^\"]*)\"\s*\]")


def _used() -> dict[str, set[str]]:
    used: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for m in _ANNOTATION.finditer(path.read_text()):
            for token in m.group(1).split():
                name = token.lstrip("*#_").split("=")[0]
                if name and name != "..." and not re.fullmatch(r"[0-9+\-*/]+", name):
                    used.setdefault(name, set()).add(str(path.relative_to(PACKAGE.parent)))
    return used


def test_every_axis_name_used_is_declared():
    used = _used()
    assert len(used) > 20  # the scan sees the annotations (it would pass vacuously on a broken pattern)
    missing = {n: sorted(w) for n, w in used.items() if n not in AXIS_MEANINGS}
    assert not missing, f"axis names used but not declared in evaluator/_types.py AXIS_MEANINGS: {missing}"


def test_every_declared_axis_is_used_and_explained():
    used = _used()
    assert AXES == tuple(AXIS_MEANINGS)
    unused = [n for n in AXES if n not in used]
    assert not unused, f"declared in AXIS_MEANINGS but used by no annotation: {unused}"
    assert all(v.strip() and v != n for n, v in AXIS_MEANINGS.items())
