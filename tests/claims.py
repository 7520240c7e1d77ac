"""Numbers that README.md, docs/ and the studies' YAML headers state, checked against what the tool gives.

Every number the tool produces and a document states names the command that
produced it (in the same document). A claim test reruns that computation
(a shrunken variant where the stated one takes minutes, still on the same
model) and calls :func:`check_stated`, which fails when

* the document no longer contains the stated text (it was edited: update the claim),
* the document does not name the command, or
* the value the tool gives now differs from the stated number by more than half a unit
  of the stated number's last printed digit (``2.065x``: within 0.0005; ``24.3%``: within 0.05 points).

Example::

    check_stated("docs/tiles.md", r"\\| ratio \\| \\*\\*([0-9.]+)x\\*\\*", ratio,
                 command="evaluator sweep sweeps=psdns_slab_orientation")

Timings are measurements of a machine, not of the model: they name their command but are not rerun.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["ROOT", "stated", "check_stated", "precision"]


def _text(doc: str) -> str:
    """The document with every run of whitespace (line breaks included) as one space: patterns and commands
    match across the lines a paragraph was wrapped at."""
    return " ".join((ROOT / doc).read_text().split())


def stated(doc: str, pattern: str, count: int | None = 1, record: bool = True) -> list[str]:
    """The numbers ``doc`` states where ``pattern`` (a regex whose first group is the number) matches in the
    document with its whitespace runs made single spaces (write patterns with single spaces).

    ``count``: how many matches there must be (None: at least one); a pattern that stopped matching means the
    document was edited and the claim must follow. ``record``: count the numbers as claim-tested (off where a test
    only reads a number as an input of another claim and checks nothing about it).
    """
    text = _text(doc)
    matches = list(re.finditer(pattern, text))
    found = [m.group(1) for m in matches]
    if record:
        _record(doc, [m.span(1) for m in matches])
    assert found, f"{doc}: no text matches {pattern!r} (the document changed: update its claim test)"
    if count is not None:
        assert len(found) == count, f"{doc}: {pattern!r} matches {len(found)} times, expected {count}"
    return found


def _record(doc: str, spans: list[tuple[int, int]]) -> None:
    """Append the spans a claim read to the run's ledger (``$EVALUATOR_CLAIMS_LEDGER``, made by tests/conftest.py),
    which tests/stated_numbers.py reads to list the stated results no claim test reads."""
    ledger = os.environ.get("EVALUATOR_CLAIMS_LEDGER")
    if ledger and spans:
        with open(ledger, "a") as f:  # one short line a write: appends of both xdist workers do not interleave
            f.write("".join(json.dumps({"doc": doc, "start": a, "end": b}) + "\n" for a, b in spans))


def precision(number: str) -> float:
    """Half a unit of the last printed digit of ``number`` (``"2.065"`` -> 0.0005, ``"958"`` -> 0.5)."""
    digits = number.replace(",", "").lstrip("+-")
    decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
    return 0.5 * 10.0 ** -decimals


def check_stated(doc: str, pattern: str, value: float, command: str, count: int | None = 1,
                 slack: float = 1e-9) -> None:
    """Assert that every number ``doc`` states at ``pattern`` equals ``value`` to its printed precision, and
    that ``doc`` names ``command`` (verbatim)."""
    text = _text(doc)
    named = text.replace(" \\ ", " ")  # a command written over several lines (shell continuations) is named too
    assert " ".join(command.split()) in named, f"{doc} states a number without naming its command {command!r}"
    for number in stated(doc, pattern, count):
        got = float(number.replace(",", ""))
        tol = precision(number) * (1.0 + slack) + slack * abs(got)
        assert math.isfinite(value), f"{doc}: the tool gives {value} for the stated {number}"
        assert abs(value - got) <= tol, (f"{doc}: states {number} at {pattern!r}, the tool now gives {value!r} "
                                         f"(command: {command}); regenerate the document's number")


_NUM = r"[-+]?\d[\d,]*(?:\.\d+)?"


def check_output_block(doc: str, command: str, output: str, skip: tuple[str, ...] = ("...",),
                       drop: tuple[str, ...] = ()) -> int:
    """Check every number of the output block that ``doc`` shows after ``command`` (the first fenced block
    after the one holding it) against ``output``, the command's output now: each line of the block is found in
    ``output`` by its label (the text before its first number) and each of its numbers must equal the output
    line's number at the same place, to the doc's printed precision (as :func:`check_stated`). Lines containing
    a ``skip`` text and lines without numbers are passed over; the parts of a line (of the block and of the
    output) that a regex of ``drop`` matches are left out of the comparison (a measured time inside a line whose
    other numbers are results). Returns how many numbers were checked."""
    raw = (ROOT / doc).read_text()
    text = _text(doc)
    flat = " ".join(command.split())
    blocks = re.findall(r"```[^\n]*\n(.*?)```", raw, re.S)
    at = next((i for i, b in enumerate(blocks) if flat in " ".join(b.replace("\\\n", " ").split())), None)
    assert at is not None and at + 1 < len(blocks), f"{doc}: no output block after the command {command!r}"
    block = blocks[at + 1]
    start = text.find(" ".join(block.split()), text.find(" ".join(blocks[at].split())))
    assert start >= 0, f"{doc}: the output block after {command!r} not found"

    def dropped(x: str) -> str:
        for d in drop:
            x = re.sub(d, "", x)
        return x

    got_lines = [dropped(" ".join(x.split())) for x in output.splitlines()]
    checked, pos, spans = 0, start, []
    for line in block.splitlines():
        line = " ".join(line.split())
        if not line:
            continue
        pos = text.find(line, pos)
        here, pos = pos, pos + len(line)
        if any(s in line for s in skip) or not re.search(_NUM, line):
            continue
        label = line[: re.search(_NUM, line).start()]
        cands = [g for g in got_lines if label and g.startswith(label)]
        assert cands, f"{doc}: the command's output has no line {label!r} (command {command!r})"
        got = max(cands, key=lambda g: len(os.path.commonprefix([g, line])))  # 'step 1' before 'step 0'
        gone = [m.span() for d in drop for m in re.finditer(d, line)]
        want = [m for m in re.finditer(_NUM, line) if not any(a <= m.start() < b for a, b in gone)]
        have = re.findall(_NUM, got)
        assert len(have) >= len(want), f"{doc}: {line!r} against the output's {got!r}"
        for m, value in zip(want, have):
            number, v = m.group(0), float(value.replace(",", ""))
            stated_v = float(number.replace(",", ""))
            assert abs(v - stated_v) <= precision(number) * (1 + 1e-9) + 1e-9 * abs(stated_v), (
                f"{doc}: states {number} in {line!r}, the tool now prints {value} in {got!r} (command: {command}); "
                "regenerate the document's output")
            spans.append((here + m.start(), here + m.end()))
            checked += 1
    _record(doc, spans)
    return checked
