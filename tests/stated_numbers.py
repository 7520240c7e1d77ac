"""Every result README.md and docs/*.md state: claim-tested, marked a measured timing, or listed as not covered.

Issue 34 asks for a check that lists every number in README and docs that is
neither claim-tested nor marked as a measured timing. This module finds the
*stated results* of a document and tells which of them a claim test read.

A stated result
---------------
A number with a decimal point (``2.065``, ``0.630``) or with the unit of a
result: a ratio (``1.638x``), a percentage (``18.9%``), a time (``ms``, ``us``,
``ns``, ``s``, ``min``), a size or a bandwidth (``kB``, ``MB``, ``GB``,
``GiB``, ``GB/s``, ``Gb/s``, ...). Not results, by rule (they are what a
reader types or looks up, not what the tool computed):

* anything inside an HTML comment (the documents' test directives), an inline
  code span (config keys, commands, variable names), a line of a fenced
  ``bash``/``python``/``yaml`` block before its ``#`` comment (the comment
  counts: outputs are written there), or a command line of an output block;
* references and identifiers: a number glued to a letter or ``_`` (``x86``,
  ``p95``, ``H200``, ``3D``), a shape (``8x8x8``, ``4x4x2``), a version
  (``3.32.1``), a date (``2026-11-28``), a section number at the start of a
  heading or list item, and the numbers after ``Fig.``, ``Eq.``, ``Table``,
  ``Section``, ``slide(s)``, ``page``, ``issue(s)``, ``item(s)``, ``step``;
* integers without a unit (task counts, node counts, group counts: the inputs
  of the experiment described; a few integer *results* such as infeasible
  counts are not seen by this rule, a known limit).

Covered
-------
* **claim-tested**: inside a group that :func:`tests.claims.stated` matched
  during the test run (every call appends its spans to the ledger named by
  ``EVALUATOR_CLAIMS_LEDGER``; tests/conftest.py makes one per run);
* **marked**: a measured timing, a cited number or an input (below). A
  **measured timing**: on a line that carries ``<!-- timing -->``, or inside
  a block (paragraph, table or code block) that starts right after a line
  ``<!-- timings -->``, or anywhere in a document that carries ``<!-- timings:
  this document -->`` (docs/bench.md, the benchmark's page): the block's times,
  rates and their ratios are measurements of a machine, not of the model
  (speed is measured, not asserted in tests); each such block names the
  command that measured it. A **cited** number (``<!-- cited -->`` on its
  line, ``<!-- citations -->`` before its block): a number a paper, a slide or
  a vendor states, quoted with its source (a paper's figure, which the tool's
  own number beside it is compared with). An **input** (``<!-- input -->``,
  ``<!-- inputs -->``): a setting of the experiment described (bandwidths,
  sizes, bytes), which the command written next to it sets; not a result. A
  **budgeted** result (``<!-- budgeted -->``, ``<!-- budgeted results -->``):
  what a run under a wall-clock budget reached (the best mapping a search found
  within 60 s, its gains and its moves): it depends on the machine's speed as a
  timing does, so no test can rerun it to the same value; the block names the
  command and the machine, and a claim test certifies what holds on any machine
  (no such result below the lower bound, none above the best start).

Run ``make numbers`` (the claim tests, then :func:`report`) to list what is not
covered; ``make test`` fails when a document has more uncovered results than
its ceiling in ``tests/data/numbers_ceiling.json`` (a ratchet: lower a ceiling
when you cover numbers; a new document starts at 0).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CEILING = ROOT / "tests" / "data" / "numbers_ceiling.json"
LEDGER_ENV = "EVALUATOR_CLAIMS_LEDGER"

__all__ = ["Stated", "documents", "stated_results", "covered_spans", "not_covered", "report", "check_ceilings"]

_UNIT = (r"%|ms\b|us\b|ns\b|s\b|min\b|h\b|[kMGTP]i?B(?:/s)?\b|[kMGTP]b/s\b|[kMGT]bit/s\b|B\b|"
         r"bytes\b|MHz\b|GHz\b|W\b|kW\b|MW\b")
_NUMBER = re.compile(r"(?<![\w.\-/])([-+\u2212]?\d[\d,]*(?:\.\d+)?)(x(?![\w])|\s?(?:" + _UNIT + r"))?")
_REF = re.compile(r"(?:Fig(?:ure)?s?\.?|Eqs?\.|Equations?|Tables?|Sections?|Sec\.|SMPI|§|slides?|pages?|pp?\.|issues?|items?|"
                  r"steps?|Algorithm|Listing|Theorem|Lemma|stop|version|Python|SimGrid|JAX|Ray|CUDA)\s*\(?$", re.I)
_SHAPE = re.compile(r"\d+(?:x\d+)+")
_CODE_LANGUAGES = {"bash", "sh", "shell", "python", "py", "yaml", "yml", "toml", "json", "ini", "make", "console"}
"""Fenced blocks in these languages are inputs up to each line's ``#`` comment; others (untagged, ``text``) are
output, but for lines that start with a command (``$ ``, ``evaluator ``, ...)."""
MARKS = {"timing": ("<!-- timing -->", "<!-- timings -->"), "cited": ("<!-- cited -->", "<!-- citations -->"),
         "input": ("<!-- input -->", "<!-- inputs -->"),
         "budgeted": ("<!-- budgeted -->", "<!-- budgeted results -->")}
"""What a marker says of the numbers it covers, with its line and block forms (module docstring)."""
_TIMING_DOCUMENT = "<!-- timings: this document -->"


@dataclasses.dataclass(frozen=True)
class Stated:
    """One stated result: its document, its span in the whitespace-normalised text (as :mod:`tests.claims` sees
    it), the text, its line (1-based) and what a marker says of it (:data:`MARKS`: ``timing``, ``cited``,
    ``input``; empty: unmarked)."""

    doc: str
    start: int
    end: int
    text: str
    line: int
    marked: str = ""

    def where(self, norm: str) -> str:
        return f"{self.doc}:{self.line}: {self.text!r} in '...{norm[max(0, self.start - 50):self.end + 30]}...'"


def documents() -> list[str]:
    """README.md and every docs/*.md, as paths relative to the checkout."""
    return ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))


def _normalise(raw: str) -> tuple[str, list[int]]:
    """``" ".join(raw.split())`` (what tests.claims matches against) and, for each raw offset, its offset there."""
    out: list[str] = []
    pos = [0] * (len(raw) + 1)
    pending = False
    for i, ch in enumerate(raw):
        if ch.isspace():
            pending = bool(out)
            pos[i] = len(out)
            continue
        if pending:
            out.append(" ")
            pending = False
        pos[i] = len(out)
        out.append(ch)
    pos[len(raw)] = len(out)
    return "".join(out), pos


def _masked_lines(raw: str) -> list[tuple[int, str, bool]]:
    """Every line of ``raw`` as ``(offset, text with non-result parts blanked, marker kind or "")``: HTML comments,
    inline code spans and the command part of fenced code lines are blanked (same length, so offsets hold)."""
    lines, offset = [], 0
    fence = False
    block_kind = ""
    after_marker = ""
    in_comment = False
    code = continued = False
    for line in raw.splitlines(keepends=True):
        text = line
        stripped = line.strip()
        opened = next((k for k, (_, block) in MARKS.items() if stripped == block), "")
        if opened:
            after_marker, block_kind = opened, ""
        elif after_marker and stripped:
            block_kind, after_marker = after_marker, ""
        elif not stripped and not fence:
            block_kind = ""
        is_fence = stripped.startswith("```")
        # HTML comments, across lines
        masked = []
        i = 0
        while i < len(text):
            if in_comment:
                j = text.find("-->", i)
                if j < 0:
                    masked.append(" " * (len(text) - i))
                    i = len(text)
                else:
                    masked.append(" " * (j + 3 - i))
                    i, in_comment = j + 3, False
            else:
                j = text.find("<!--", i)
                if j < 0:
                    masked.append(text[i:])
                    i = len(text)
                else:
                    masked.append(text[i:j])
                    i, in_comment = j, True
        text = "".join(masked)
        if is_fence:
            text = " " * len(text)
        elif fence:
            # a code line of a bash/python/yaml block is input up to its comment (the comment counts); an untagged
            # or text block is output (it counts) but for its command lines
            body = text.lstrip()
            if code or body.startswith(("$ ", "$E ", "evaluator ", "python ", "make ")) or continued:
                k = text.find("#")
                text = " " * len(text) if k < 0 else " " * k + text[k:]
            continued = line.rstrip().endswith("\\") and not code
        else:
            text = re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), text)
        kind = block_kind or next((k for k, (mark, _) in MARKS.items() if mark in line), "")
        lines.append((offset, text, kind))
        offset += len(line)
        if is_fence:
            fence = not fence
            code = fence and stripped[3:].strip() in _CODE_LANGUAGES
            continued = False
    return lines


def stated_results(doc: str) -> tuple[str, list[Stated]]:
    """The normalised text of ``doc`` and its stated results (see the module docstring)."""
    raw = (ROOT / doc).read_text()
    norm, pos = _normalise(raw)
    out: list[Stated] = []
    whole = "timing" if _TIMING_DOCUMENT in raw else ""
    for lineno, (offset, text, kind) in enumerate(_masked_lines(raw), start=1):
        kind = kind or whole
        head = re.match(r"\s*(?:#+\s*|[-*+]\s+)?(\d+(?:\.\d+)*\.?)\s", text)
        for m in _NUMBER.finditer(text):
            num, unit = m.group(1), (m.group(2) or "").strip()
            s, e = m.start(1), m.end(1)
            if head and s == head.start(1):
                continue  # a heading's or a list item's number
            after = text[e:e + 1]
            if after and (after.isalpha() and not unit) or after == "_":
                continue  # glued to a word: an identifier (3D, 4-ary handled below)
            if re.match(r"-[A-Za-z]", text[e:e + 2]) or re.match(r"-\d", text[e:e + 2]) and not unit:
                continue  # 5-D, 4-ary, 2-core; ranges and dates (20-21, 2026-11-28)
            if _SHAPE.match(text, s) and _SHAPE.match(text, s).end() > e:
                continue
            if re.search(r"\d\.\d+\.\d", text[s:e + 3]) or re.match(r"\.\d", text[e:e + 2]):
                continue  # a version
            if _REF.search(text[max(0, s - 14):s].rstrip()) or re.search(r"[\w)\]]\($", text[:s]) \
                    or re.search(r"\d,\s?$", text[max(0, s - 3):s]) and re.search(r"\w\([\d, ]*$", text[:s]):
                continue  # a reference, or the parameters of a name: DF(4,8,4)
            if s and (text[s - 1].isalpha() or text[s - 1] == "_"):
                continue
            if not unit and "." not in num:
                continue  # an integer without a unit: a count or an input
            out.append(Stated(doc, pos[offset + s], pos[offset + e], num + (" " + unit if unit else ""), lineno,
                              kind))
    return norm, out


def _ledger_spans(paths: Iterable[Path]) -> dict[str, list[tuple[int, int]]]:
    spans: dict[str, list[tuple[int, int]]] = {}
    for p in paths:
        for line in p.read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                spans.setdefault(d["doc"], []).append((d["start"], d["end"]))
    return spans


def covered_spans(ledger: str | Path | None = None) -> dict[str, list[tuple[int, int]]]:
    """The spans the claim tests matched, per document, from the ledger file (default: ``$EVALUATOR_CLAIMS_LEDGER``)."""
    path = Path(ledger or os.environ[LEDGER_ENV])
    return _ledger_spans([path] if path.is_file() else sorted(path.glob("*")))


def not_covered(spans: dict[str, list[tuple[int, int]]], docs: Iterable[str] | None = None
                ) -> dict[str, list[tuple[Stated, str]]]:
    """Per document, its stated results that no claim test read and no marker covers."""
    out = {}
    for doc in docs or documents():
        norm, results = stated_results(doc)
        got = spans.get(doc, [])
        out[doc] = [(r, r.where(norm)) for r in results
                    if not r.marked and not any(a <= r.start and r.end <= b + 1 for a, b in got)]
    return out


def report(missing: dict[str, list[tuple[Stated, str]]], limit: int = 20) -> str:
    """A readable list: the count per document and the first ``limit`` uncovered results of each."""
    lines = [f"{sum(len(v) for v in missing.values())} stated results neither claim-tested nor marked:"]
    for doc, items in missing.items():
        if items:
            lines.append(f"  {doc}: {len(items)}")
            lines += [f"    {w}" for _, w in items[:limit]]
    return "\n".join(lines)


def check_ceilings(missing: dict[str, list[tuple[Stated, str]]]) -> list[str]:
    """Documents over their ceiling (tests/data/numbers_ceiling.json; a document not listed: 0), as messages."""
    ceiling = json.loads(CEILING.read_text()) if CEILING.exists() else {}
    return [f"{doc}: {len(items)} stated results not covered, ceiling {ceiling.get(doc, 0)}:\n"
            + "\n".join(f"    {w}" for _, w in items[:30])
            for doc, items in missing.items() if len(items) > ceiling.get(doc, 0)]


def write_ceilings(missing: dict[str, list[tuple[Stated, str]]]) -> None:
    """Set every document's ceiling to its count now, never raising one (the ratchet only goes down; a document
    the file does not list stays at 0). Without a file: the counts now (the first baseline)."""
    if CEILING.exists():
        old = json.loads(CEILING.read_text())
        new = {doc: min(len(items), old.get(doc, 0)) for doc, items in missing.items()}
    else:
        new = {doc: len(items) for doc, items in missing.items()}
    new = {doc: n for doc, n in new.items() if n}
    CEILING.write_text(json.dumps(dict(sorted(new.items())), indent=1) + "\n")


if __name__ == "__main__":
    # python -m tests.stated_numbers [LEDGER] [--lower-ceilings]: the report (without a ledger: nothing is covered);
    # --lower-ceilings lowers tests/data/numbers_ceiling.json to the counts now
    import sys

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    missing = not_covered(covered_spans(args[0]) if args else {})
    print(report(missing, limit=int(os.environ.get("LIMIT", "20"))))
    if "--lower-ceilings" in sys.argv:
        write_ceilings(missing)
