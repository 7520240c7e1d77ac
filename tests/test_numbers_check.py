"""tests/stated_numbers.py, the check that lists the stated results no claim test reads (issue 34): what it counts as a
stated result, what it leaves out, timing markers, and that a claim's spans cover what it read."""

from __future__ import annotations

import json

from tests import claims
from tests import stated_numbers as numbers

DOC = """# Title 3.5 with 2.5x

1. The sweep gives **2.065x** and 18.9% in 3.2 ms on DF(4,8,4) (Fig. 4, Eq. 3.2, 8x8x8, x86, 3D, 5-D,
2026-11-28, SMPI 3.32.1, 1,024 ranks, `topology.bw=4.5e9`, issue 34.5).
It took 33 s here. <!-- timing -->
The slides say up to 1.6x. <!-- cited -->
A product, 3 x 2^(1/3).

<!-- inputs -->
At 6.4 GB/s and 8 bytes
per point.

<!-- timings -->
| scenario | time |
|---|---|
| one | 9.5 ms, 7.0x |

<!-- budgeted results -->
| case | found |
|---|---|
| one | 4.25 us, -12.5% |

Then 1.25 us. <!-- budgeted -->

<!-- test: replace '1.5' '2.5' -->
```bash
evaluator sweep a=1.5 b=2.5   # gives 12.5x
```

```
rank 1  0.750 us
$ evaluator eval x=0.25
```
"""


def _results(tmp_path):
    path = tmp_path / "doc.md"
    path.write_text(DOC)
    return numbers.stated_results(str(path))


def test_what_counts_as_a_stated_result(tmp_path):
    norm, found = _results(tmp_path)
    texts = [r.text for r in found]
    assert texts == ["3.5", "2.5 x", "2.065 x", "18.9 %", "3.2 ms", "33 s", "1.6 x", "6.4 GB/s", "8 bytes", "9.5 ms",
                     "7.0 x", "4.25 us", "-12.5 %", "1.25 us", "12.5 x", "0.750 us"]
    marked = {r.text: r.marked for r in found if r.marked}
    assert marked == {"33 s": "timing", "9.5 ms": "timing", "7.0 x": "timing", "1.6 x": "cited", "6.4 GB/s": "input",
                      "8 bytes": "input", "4.25 us": "budgeted", "-12.5 %": "budgeted", "1.25 us": "budgeted"}
    for r in found:  # spans index the whitespace-normalised text that tests/claims.py matches against
        assert norm[r.start:r.end] == r.text.split(" ")[0]
    assert norm == " ".join(DOC.split())


def test_a_claim_covers_what_it_read(tmp_path, monkeypatch):
    path = tmp_path / "doc.md"
    path.write_text(DOC)
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(numbers.LEDGER_ENV, str(ledger))
    monkeypatch.setattr(claims, "ROOT", tmp_path)
    claims.check_stated("doc.md", r"gives \*\*([0-9.]+)x\*\*", 2.065, command="evaluator sweep a=1.5")
    spans = numbers.covered_spans(ledger)
    assert list(spans) == ["doc.md"] and len(spans["doc.md"]) == 1
    missing = numbers.not_covered({str(path): spans["doc.md"]}, [str(path)])[str(path)]
    assert [r.text for r, _ in missing] == ["3.5", "2.5 x", "18.9 %", "3.2 ms", "12.5 x", "0.750 us"]


def test_ceilings_only_go_down(tmp_path, monkeypatch):
    monkeypatch.setattr(numbers, "CEILING", tmp_path / "ceiling.json")
    stated = numbers.Stated("a.md", 0, 1, "1.5", 1)
    numbers.write_ceilings({"a.md": [(stated, "")] * 3, "b.md": [(stated, "")]})
    assert json.loads(numbers.CEILING.read_text()) == {"a.md": 3, "b.md": 1}
    assert numbers.check_ceilings({"a.md": [(stated, "")] * 4})[0].startswith("a.md: 4 stated results")
    assert numbers.check_ceilings({"c.md": [(stated, "")]})  # a new document starts at 0
    numbers.write_ceilings({"a.md": [(stated, "")] * 5, "b.md": [], "c.md": [(stated, "")] * 2})
    assert json.loads(numbers.CEILING.read_text()) == {"a.md": 3}  # c.md, not listed, stays at 0


def test_every_document_is_read():
    docs = numbers.documents()
    assert "README.md" in docs and "docs/latency.md" in docs
    for doc in docs:
        norm, found = numbers.stated_results(doc)
        assert norm == claims._text(doc)
        assert all(norm[r.start:r.end] == r.text.split(" ")[0] for r in found), doc
