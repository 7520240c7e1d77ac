"""Files of one concern (issue 36): no module of the package grows past :data:`MODULE_LINES` lines, and the
functions longer than :data:`FUNCTION_LINES` lines do not grow in number. Each test names what broke the rule."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "evaluator"

MODULE_LINES = 800
"""Most lines of a module of the package (the four files over it in issue 36 were split by concern)."""

MODULE_CEILINGS: dict[str, int] = {}
"""Modules still over :data:`MODULE_LINES`, each at most its size here (none since ``routing/_adaptive.py``, 804
lines, was split into its shared solver and one module per member, 2026-12-02)."""

FUNCTION_LINES = 80
"""A function longer than this (its docstring included) is a long function."""

LONG_FUNCTIONS = 16
"""Long functions in the package: at most this many (issue 36 counted 31 when it was filed; 37 on 2026-11-29, 36 on
2026-12-02 before DOR's, the Dragonfly's and the fat tree's operator builders, local_search, search_mapping,
starting_points, evaluate_jobs, allocation_mode_study, simulate, evaluator map's main, query.best and the fat tree,
torus, Dragonfly and RDN builders, parse_swf, evaluator study rdn's main, tiles.advise, grid_embeddings and
plot_sweep were split)."""


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_module_grows_past_its_limit():
    over = {}
    for p in _modules():
        rel = p.relative_to(PACKAGE).as_posix()
        limit = MODULE_CEILINGS.get(rel, MODULE_LINES)
        n = _lines(p)
        if n > limit:
            over[rel] = (n, limit)
    assert not over, "modules over their limit (lines, limit): " + ", ".join(f"{k} {v}" for k, v in over.items()) \
        + f"; split by concern (a module of {MODULE_LINES} lines at most)"


def test_the_ceilings_are_still_needed():
    """A module below the limit leaves the ceiling list (so that it cannot grow back)."""
    for rel, ceiling in MODULE_CEILINGS.items():
        n = _lines(PACKAGE / rel)
        assert n > MODULE_LINES, f"{rel} has {n} lines, within {MODULE_LINES}: drop it from MODULE_CEILINGS"
        assert ceiling == n, f"{rel} has {n} lines: set its ceiling to {n}"


def _long_functions() -> list[tuple[int, str]]:
    rows = []
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FUNCTION_LINES:
                    rows.append((n, f"{p.relative_to(PACKAGE).as_posix()}:{node.lineno} {node.name}"))
    return sorted(rows, reverse=True)


def test_long_functions_do_not_grow_in_number():
    rows = _long_functions()
    assert len(rows) <= LONG_FUNCTIONS, (f"{len(rows)} functions over {FUNCTION_LINES} lines, at most "
                                         f"{LONG_FUNCTIONS}: " + "; ".join(f"{w} ({n})" for n, w in rows))

