"""README.md and the tutorials (docs/tutorial_*.md) run as a user pastes them: every shell block, in order.

One test per document. The document runs in a fresh temporary directory that stands in for a fresh clone
after ``make setup``: the checkout's ``conf/``, ``sweeps/``, ``tests/``, ``docs/`` and ``evaluator/`` are
linked in, ``.venv`` is this interpreter's environment, ``results/`` starts empty and ``~`` (``$HOME``) is a
directory of its own, outside the "clone" (a study file written to ``~/studies`` is outside the checkout).

The grammar, in the order it is applied:

* **Blocks.** Fenced blocks marked ``bash`` or ``sh``, in document order; ``python`` blocks run too (``exec``,
  one namespace per document, in the same directory). Other fences (output, YAML, layouts) are text.
* **Shrinking.** An HTML comment right before a block (blank lines between allowed) changes that block for
  the test only, so the text says how it is shrunk::

      <!-- test: replace 'OLD' 'NEW'; append 'WHERE' 'ARGS' -->

  ``replace 'OLD' 'NEW'``: every occurrence of the text OLD in the block becomes NEW.
  ``append 'WHERE' 'ARGS'``: every command of the block whose text contains WHERE gets ARGS at its end
  (``''``: every command). Rules are separated by ``;`` and applied in order; a rule that matches nothing
  fails the test (the block changed: update the comment).
* **Commands.** A block is cut into commands as the shell does: a line ending in ``\\`` continues, a quote
  left open continues on the next line, a here-document (``<<'EOF'`` ... ``EOF``) belongs to its command;
  ``#`` starts a comment. ``make setup`` is not run (the environment exists), nor ``make test`` (the suite
  this test belongs to); ``make TARGET`` otherwise runs the target's recipe from the Makefile (``make run``:
  ``$(BIN)/evaluator sweep``, run as below).
* **Variables.** A command made only of ``NAME=value`` words sets shell variables; ``$NAME`` and ``${NAME}``
  outside single quotes and a leading ``~/`` are expanded, then the command is split into words (``$B``
  unquoted splits into its words, as in the shell).
* **Running.** A command whose first word is ``evaluator`` or ends in ``/evaluator`` (``$E``) runs in this
  process, ``evaluator.cli.main(argv)``, with two shared settings that only change where the work runs:
  ``evaluator sweep`` gets ``ray.enabled=false --no-progress`` and ``evaluator schedule`` gets
  ``--no-progress`` (``--no-ray`` with ``--study``): Ray's start-up would dominate these small runs.
  Any other command (``mkdir``, ``cat > file <<'EOF'``, pipes) runs in ``bash`` in the directory, with the
  variables exported and the environment's ``bin/`` first on ``PATH``.
* **Failing.** A command with a non-zero exit status fails the test, naming the document, the command as
  run and its stderr.
* **Outputs.** In a tutorial (``docs/tutorial_*.md``), the untagged block right after a shell block is what
  that block printed: when the shell block ran as written (no test rule changed it, or
  ``EVALUATOR_DOCS_FULL=1``), every line of it with a number must be a line of what the block's commands print
  now, each number to its printed precision (:func:`check_shown`: ``...`` stands for any text, a row's rank is
  left out; a stale number fails the test: regenerate the output from a run as written). The numbers checked
  count as claim-tested (tests/stated_numbers.py). A comment right before the output block changes that::

      <!-- test: compare; skip 'TEXT' -->

  ``compare``: compare it even though the shell block was shrunk (the shrink does not change the lines
  shown); ``skip 'TEXT'`` (implies ``compare``): the lines containing TEXT are not compared unless
  ``EVALUATOR_DOCS_FULL=1`` (the shrink, of this block or of one before it, changes them).

The whole file takes about 150 s of CPU (2026-11-26, with tests/conftest.py's XLA settings; 225 s without them;
217 s of wall time at load 4.5: the README 154 s, mostly JIT compilation of ~40 distinct kernels, the four
tutorials 63 s; since 2026-11-28 the routing-bounds and stencil tutorials run as written, about 8 s of CPU more,
so that their output blocks and prose are checked): the documents' slow commands carry a ``<!-- test: ... -->``
comment. Keep new examples small, or shrink them. The documents run in one process, in order (``make test``
keeps a module on one worker): a tutorial reuses the kernels the README compiled (the RDN tutorial's study is
the README's, both with ``--groups 2``). A tutorial's prose numbers are checked against what its commands
printed in the same run (:data:`PROSE`): no command runs twice.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator import cli
from tests.claims import check_stated

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("tutorial_*.md"))]
LINKED = ("conf", "sweeps", "tests", "docs", "evaluator")
SHELL_LANGS = {"bash", "sh", "shell"}
VERBOSE = bool(os.environ.get("EVALUATOR_DOCS_VERBOSE"))
"""``EVALUATOR_DOCS_VERBOSE=1``: print every command with its seconds as it finishes (with ``-s``);
``EVALUATOR_DOCS_LOG=FILE``: append every command and its output to FILE (for the documents' authors)."""
LOG = os.environ.get("EVALUATOR_DOCS_LOG")
CHECKED = ("docs/tutorial_",)
"""The documents whose output blocks are compared with what their commands print (:func:`check_shown`)."""
OUTPUT_LANGS = {"", "text", "console"}
FULL = bool(os.environ.get("EVALUATOR_DOCS_FULL"))
"""``EVALUATOR_DOCS_FULL=1``: ignore the ``<!-- test: ... -->`` rules, run the commands as written (the numbers a
document states come from this run; minutes)."""

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_RULES = re.compile(r"<!--\s*test:(.*?)-->", re.S)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
_ASSIGN = re.compile(r"^[A-Za-z_]\w*=")
_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


# ---------------------------------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------------------------------

def blocks(text: str) -> list[tuple[str, str, str]]:
    """``(language, body, rules)`` of every fenced block; ``rules``: the ``<!-- test: ... -->`` right before it."""
    out, last = [], 0
    for m in _FENCE.finditer(text):
        before = text[last:m.start()]
        rules = ""
        found = list(_RULES.finditer(before))
        if found and not before[found[-1].end():].strip():
            rules = found[-1].group(1)
        out.append((m.group(1).lower(), m.group(2), rules))
        last = m.end()
    return out


def apply_rules(body: str, rules: str, where: str) -> tuple[str, list[tuple[str, str]]]:
    """The block with its ``replace`` rules applied, and its ``append`` rules ``(WHERE, ARGS)``."""
    appends = []
    for rule in filter(None, (r.strip() for r in rules.split(";"))):
        words = shlex.split(rule)
        assert len(words) == 3 and words[0] in ("replace", "append"), \
            f"{where}: bad test rule {rule!r} (replace 'OLD' 'NEW' or append 'WHERE' 'ARGS')"
        if words[0] == "replace":
            assert words[1] in body, f"{where}: test rule {rule!r}: {words[1]!r} is not in the block"
            body = body.replace(words[1], words[2])
        else:
            appends.append((words[1], words[2]))
    return body, appends


def output_rules(body: str, rules: str, where: str) -> tuple[bool, list[str]]:
    """An output block's rules: whether to compare it although its commands were shrunk (``compare``), and the
    texts of the lines not compared in a shrunk run (``skip 'TEXT'``)."""
    compare, skips = False, []
    for rule in filter(None, (r.strip() for r in rules.split(";"))):
        words = shlex.split(rule)
        assert words in (["compare"],) or (len(words) == 2 and words[0] == "skip"), \
            f"{where}: bad output rule {rule!r} (compare, or skip 'TEXT')"
        if words[0] == "skip":
            assert words[1] in body, f"{where}: output rule {rule!r}: {words[1]!r} is not in the block"
            skips.append(words[1])
        compare = True
    return compare, skips


_SHOWN_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?=x\b|[^\w.]|\.(?!\d)|$)")
_RANK = re.compile(r"^\d+=?\s+(?=\S)")
_ELIDED = re.compile(r"\s*\.\.\.\s*")


def _shown_pattern(line: str, literal: bool = False) -> tuple[re.Pattern, list[tuple[int, str]]]:
    """A line of an output block as a regex (its numbers as groups, ``...`` as any text), and its numbers with
    their places in the line. ``literal``: each number matches only as written (the regex finds which columns
    ``...`` stands for)."""
    parts, numbers, at = [], [], 0
    for seg_no, seg in enumerate(_ELIDED.split(line)):
        if seg_no:
            parts.append(r"\s*.*?\s*")
        start = line.index(seg, at) if seg else at
        pos = 0
        for m in _SHOWN_NUMBER.finditer(seg):
            parts.append(r"\s+".join(map(re.escape, seg[pos:m.start()].split(" "))))
            parts.append(f"({re.escape(m.group(0))})" if literal else r"([-+]?\d[\d,]*(?:\.\d+)?)")
            numbers.append((start + m.start(), m.group(0)))
            pos = m.end()
        parts.append(r"\s+".join(map(re.escape, seg[pos:].split(" "))))
        at = start + len(seg)
    return re.compile("".join(parts)), numbers


def check_shown(doc: str, raw: str, fence: re.Match, printed: str, skips: tuple[str, ...] | list[str]) -> int:
    """Check the numbers of the output block ``fence`` of ``doc`` against ``printed``, what the shell block before
    it printed now: every line of the block (but those containing a ``skip`` text) must be a line of the output,
    its numbers equal to the printed precision (:func:`tests.claims.precision`), ``...`` standing for any text
    (elided columns) and a row's rank left out (rows are found by their labels). A line of the block that
    continues the one before it (a long line wrapped) may continue it in the output. Records the numbers
    checked in the claims' ledger (tests/stated_numbers.py). Returns how many numbers were checked."""
    from tests.claims import _record, _text, precision

    text = _text(doc)
    body_at = fence.start(2)
    before = raw[:body_at]
    pos = len(" ".join(before.split())) + (1 if before.strip() and before[-1].isspace() else 0)
    got = [" ".join(x.split()) for x in printed.splitlines()]
    got = [_RANK.sub("", g) for g in got]
    spans, last = [], None  # last: (output line, end) of the previous line's match
    for line in fence.group(2).splitlines():
        line = " ".join(line.split())
        if not line:
            continue
        here = text.find(line, pos)
        assert here >= 0, f"{doc}: output line {line!r} not found in the document text"
        pos = here + len(line)
        if any(s in line for s in skips):
            last = None
            continue
        rank = _RANK.match(line)
        body = line[rank.end():] if rank else line
        shift = here + (rank.end() if rank else 0)
        pattern, numbers = _shown_pattern(body)
        if not numbers:
            last = None
            continue
        exact = _shown_pattern(body, literal=True)[0]
        tries = [(i, 0) for i in range(len(got))]
        if last is not None:
            i, end = last
            tries.insert(0, (i, end + len(got[i][end:]) - len(got[i][end:].lstrip())))
        shape, found = None, None
        for rx in (exact, pattern):  # as printed first; then to the printed precision
            for i, start in tries:
                m = rx.match(got[i], start)
                if m is None:
                    continue
                shape = shape or m
                if all(abs(float(v.replace(",", "")) - float(n.replace(",", "")))
                       <= precision(n) * (1 + 1e-9) + 1e-9 * abs(float(n.replace(",", "")))
                       for v, (_, n) in zip(m.groups(), numbers)):
                    found = (i, m)
                    break
            if found:
                break
        assert shape is not None, (f"{doc}: the output has no line like {line!r}; the commands printed:\n{printed}"
                                   "\n(regenerate the document's output)")
        assert found is not None, (f"{doc}: states {line!r}, the tool now prints {shape.string!r} "
                                   "(regenerate the document's output)")
        last = (found[0], found[1].end())
        spans += [(shift + a, shift + a + len(n)) for a, n in numbers]
    _record(doc, spans)
    return len(spans)


def commands(body: str) -> list[str]:
    """The block cut into commands, as the shell reads it (continuations, open quotes, here-documents)."""
    out, buf, lines = [], "", body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        buf = f"{buf}\n{line}" if buf else line
        if buf.endswith("\\"):
            continue
        try:
            shlex.split(buf, comments=True)
        except ValueError:  # an open quote: the command goes on
            continue
        m = _HEREDOC.search(buf)
        if m:
            while i < len(lines) and lines[i].strip() != m.group(2):
                buf += "\n" + lines[i]
                i += 1
            buf += "\n" + (lines[i] if i < len(lines) else "")
            i += 1
        if shlex.split(head(buf), comments=True):
            out.append(buf)
        buf = ""
    assert not buf.strip(), f"unterminated command: {buf!r}"
    return out


def head(cmd: str) -> str:
    """The command without its here-document's body (the words the shell splits)."""
    m = _HEREDOC.search(cmd)
    return cmd if m is None else cmd[:m.end()] + cmd[m.end():].split("\n", 1)[0]


def expand(cmd: str, env: dict[str, str], home: str) -> str:
    """``$NAME``/``${NAME}`` outside single quotes and a word-leading ``~/``, expanded."""
    out, quote, i = [], None, 0
    while i < len(cmd):
        c = cmd[i]
        if quote == "'":
            out.append(c)
            quote = None if c == "'" else quote
        elif c == "'" and quote is None:
            quote = "'"
            out.append(c)
        elif c == '"':
            quote = None if quote == '"' else '"'
            out.append(c)
        elif c == "\\" and i + 1 < len(cmd):
            out.append("" if cmd[i + 1] == "\n" else cmd[i:i + 2])  # a line continuation goes
            i += 1
        elif c == "$" and (m := _VAR.match(cmd, i)):
            name = m.group(1) or m.group(2)
            out.append(env.get(name, os.environ.get(name, "")))
            i = m.end() - 1
        elif c == "~" and cmd[i:i + 2] in ("~/", "~") and (i == 0 or cmd[i - 1] in " \t\n=:") and quote is None:
            out.append(home)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _is_shell(cmd: str) -> bool:
    """Whether the command needs a shell: pipes, redirections, lists, here-documents."""
    lex = shlex.shlex(head(cmd), posix=True, punctuation_chars=True)
    lex.commenters = "#"
    lex.whitespace_split = True
    return any(tok and set(tok) <= set("|&;<>()") for tok in lex)


def _is_evaluator(word: str) -> bool:
    return word == "evaluator" or word.endswith("/evaluator")


# ---------------------------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------------------------

def make_recipe(target: str) -> list[str]:
    """The commands of a Makefile target's recipe, with ``$(BIN)`` and ``$(VENV)`` as ``make setup`` makes them."""
    text = (ROOT / "Makefile").read_text()
    m = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n?)+)", text, re.M)
    assert m, f"Makefile: no recipe for {target!r}"
    return [line.strip().lstrip("@").replace("$(BIN)", ".venv/bin").replace("$(VENV)", ".venv")
            for line in m.group(1).splitlines()]


def shared_settings(argv: list[str]) -> list[str]:
    """The settings every document's commands run with here (module docstring): where, not what."""
    if argv[:1] == ["sweep"]:
        return [*argv, "ray.enabled=false", "--no-progress"]
    if argv[:1] == ["schedule"]:
        return [*argv, "--no-progress", *(["--no-ray"] if "--study" in argv else [])]
    return argv


@pytest.fixture
def clone(tmp_path, monkeypatch):
    """A stand-in for a fresh clone after ``make setup``, and a home directory beside it."""
    d = tmp_path / "clone"
    d.mkdir()
    for name in LINKED:
        (d / name).symlink_to(ROOT / name)
    (d / ".venv").symlink_to(Path(sys.prefix))
    (d / "results").mkdir()
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(d)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return d


def run_document(doc: str, clone: Path, capsys, outputs: list[tuple[str, str]] | None = None
                 ) -> list[tuple[str, float]]:
    """Run ``doc``'s blocks in order in ``clone``; the commands as run and their seconds. ``outputs``, when given,
    gets every command as written in the document (``[python] ...`` for a python block) with what it printed.

    A tutorial's output block (the untagged block right after a shell block) is compared with what the block's
    commands print now, by :func:`check_shown`: when the block ran as written (no test rule changed it), or when
    the output block carries an output rule (module docstring)."""
    home = os.environ["HOME"]
    env: dict[str, str] = {}
    timings, namespace = [], {"__name__": "__doc__"}
    shell_env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    raw_doc = (ROOT / doc).read_text()
    fences = list(_FENCE.finditer(raw_doc))
    printed, as_written = None, False  # the previous shell block's output, and whether it ran unshrunk
    for k, (lang, body, rules) in enumerate(blocks(raw_doc)):
        where = f"{doc}, block {k + 1}"
        if lang == "python":
            t0 = time.perf_counter()
            capsys.readouterr()
            try:
                exec(compile(body, where, "exec"), namespace)
            except Exception as exc:  # noqa: BLE001 (the failure is the test's message)
                pytest.fail(f"{where} (python) failed: {type(exc).__name__}: {exc}\n{body}")
            out, err = capsys.readouterr()
            if outputs is not None:
                outputs.append((f"[python] {body.splitlines()[0]}", out + err))
            timings.append((f"[python] {body.splitlines()[0]}", time.perf_counter() - t0))
            printed = None
            continue
        if lang not in SHELL_LANGS:
            compare, skips = output_rules(body, rules, where)
            if printed is not None and doc.startswith(CHECKED) and lang in OUTPUT_LANGS and (as_written or compare):
                check_shown(doc, raw_doc, fences[k], printed, () if FULL else skips)
            printed = None
            continue
        as_written = FULL or not rules
        printed = ""
        body, appends = apply_rules(body, "" if FULL else rules, where)
        used = set()
        pending = commands(body)
        while pending:
            raw = pending.pop(0)
            words = shlex.split(head(raw), comments=True)
            if words[0] == "make":
                assert len(words) == 2, f"{where}: one make target at a time: {raw!r}"
                if words[1] not in ("setup", "test"):
                    pending[:0] = make_recipe(words[1])
                continue
            for i, (needle, extra) in enumerate(appends):
                if needle in raw:
                    raw = _append(raw, extra)
                    used.add(i)
            text = expand(raw, env, home)
            if not _is_shell(text):
                words = shlex.split(text, comments=True)
                if all(_ASSIGN.match(w) for w in words):
                    env.update(w.split("=", 1) for w in words)
                    continue
            t0 = time.perf_counter()
            if not _is_shell(text) and _is_evaluator(words[0]):
                argv = shared_settings(words[1:])
                capsys.readouterr()
                try:
                    rc = cli.main(argv)
                except SystemExit as exc:  # argparse
                    rc = exc.code if isinstance(exc.code, int) else 1
                out, err = capsys.readouterr()
                shown = "evaluator " + shlex.join(argv)
            else:
                proc = subprocess.run(["bash", "-c", raw], cwd=clone, capture_output=True, text=True,
                                      env={**shell_env, **env, "HOME": home})
                rc, out, err, shown = proc.returncode, proc.stdout, proc.stderr, raw
            if rc != 0:
                pytest.fail(f"{where}: exit status {rc} from\n  {shown}\nstderr:\n{err[-4000:]}")
            timings.append((shown, time.perf_counter() - t0))
            printed += out + err
            if outputs is not None:
                outputs.append((shown, out + err))
            if LOG:
                with open(LOG, "a") as f:
                    f.write(f"$ {shown}\n{out}{err}\n")
            if VERBOSE:
                with capsys.disabled():
                    print(f"  {timings[-1][1]:6.1f} s  {shown[:150]}", flush=True)
        missing = [appends[i] for i in range(len(appends)) if i not in used]
        assert not missing, f"{where}: test rule append {missing} matches no command (the block changed)"
    return timings


def _append(raw: str, extra: str) -> str:
    """``extra`` added to the command, before its trailing comment (``cmd args   # comment``)."""
    pos, quote = None, None
    for j, c in enumerate(raw):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (j == 0 or raw[j - 1] in " \t\n"):
            pos = j
            break
    if pos is None:
        return raw.rstrip() + " " + extra
    return raw[:pos].rstrip() + " " + extra + "  " + raw[pos:]


def test_the_grammar():
    """The parser on a block with every construct (independent of the documents)."""
    body = ("make setup   # once\nE=.venv/bin/evaluator\n$E eval a=1 \\\n   b=2   # two lines\n"
            "$E eval 'x=[{a: 1},\n  {b: 2}]' save=false\ncat > ~/s.yaml <<'EOF'\nk: v  # it's kept\nEOF\n"
            "B=\"t=1 u=2\"\n$E eval $B '$B' \"$B\"\n")
    cmds = commands(body)
    assert len(cmds) == 7 and cmds[2].endswith("b=2   # two lines") and cmds[4].endswith("EOF")
    assert shlex.split(cmds[3], comments=True)[2] == "x=[{a: 1},\n  {b: 2}]"
    env = {"E": "ev", "B": "t=1 u=2"}
    assert shlex.split(expand(cmds[6], env, "/h")) == ["ev", "eval", "t=1", "u=2", "$B", "t=1 u=2"]
    assert expand("cat ~/x a~/b", env, "/h") == "cat /h/x a~/b"
    assert shlex.split(expand(cmds[2], env, "/h"), comments=True) == ["ev", "eval", "a=1", "b=2"]
    assert _is_shell(cmds[4]) and not _is_shell(cmds[2]) and _is_shell("$E runs | head")
    assert _append("$E eval a=1   # note", "k=2") == "$E eval a=1 k=2  # note"
    text = "x\n<!-- test: replace 'a=1' 'a=3'; append 'eval' 'z=0' -->\n\n```bash\n$E eval a=1\n```\n```\nout\n```\n"
    (lang, b, rules), (lang2, _, rules2) = blocks(text)
    assert lang == "bash" and lang2 == "" and rules2 == ""
    new, appends = apply_rules(b, rules, "t")
    assert new == "$E eval a=3\n" and appends == [("eval", "z=0")]
    with pytest.raises(AssertionError, match="not in the block"):
        apply_rules(b, "replace 'nope' 'x'", "t")
    assert output_rules("a\nb x\n", "", "t") == (False, [])
    assert output_rules("a\nb x\n", " compare; skip 'b x' ", "t") == (True, ["b x"])
    with pytest.raises(AssertionError, match="not in the block"):
        output_rules("a\n", "skip 'c'", "t")
    rx, numbers = _shown_pattern("optiq_lp 4x4x2 6.430 ... torus-dim0 1.46x [1.01x, -4.0%]")
    assert [n for _, n in numbers] == ["6.430", "1.46", "1.01", "-4.0"]
    assert rx.match("optiq_lp  4x4x2 6.4301 2.0 x torus-dim0 1.46x [1.01x, -4.0%] more")
    assert not rx.match("optiq_lp 4x4x4 6.430 torus-dim0 1.46x [1.01x, -4.0%]")
    assert _shown_pattern("a 6.430 b", literal=True)[0].match("a 6.430 b") and \
        not _shown_pattern("a 6.430 b", literal=True)[0].match("a 6.431 b")


class Printed:
    """What a document's commands printed in this run (:func:`run_document`'s ``outputs``), to check the
    numbers its prose repeats or derives (:data:`PROSE`) against this run: no command is run again."""

    def __init__(self, outputs: list[tuple[str, str]]):
        self.outputs = outputs

    def of(self, command: str) -> str:
        """The output of the last command run whose text (as run) contains ``command``."""
        found = [out for shown, out in self.outputs if command in shown]
        assert found, f"no command like {command!r} ran"
        return found[-1]

    def cell(self, command: str, row: str, column: str) -> float:
        """The number in ``column`` of the table row whose labels (its rank left out) start with the regex
        ``row``, in the output of ``command`` (a pandas table: a column's values end where its header ends)."""
        lines = self.of(command).splitlines()
        for h, header in enumerate(lines):
            m = re.search(rf"(?:^|\s){re.escape(column)}(?=\s|$)", header)
            if m is None:
                continue
            for line in lines[h + 1:]:
                if re.match(row, _RANK.sub("", line.strip())):
                    token = next((t.group(0) for t in re.finditer(r"\S+", line) if t.end() == m.end()), None)
                    assert token is not None, f"{command}: no {column!r} in {line!r}"
                    return float(token.replace(",", ""))
        raise AssertionError(f"{command}: no row {row!r} with a column {column!r}")

    def value(self, command: str, pattern: str) -> float:
        """The number ``pattern``'s first group finds in the output of ``command``."""
        m = re.search(pattern, self.of(command), re.M)
        assert m, f"{command}: no {pattern!r} in its output"
        return float(m.group(1).replace(",", ""))


def _prose_io(p: Printed) -> None:
    doc, cmd = "docs/tutorial_io_multipath.md", "evaluator query io_128_to_16 --best completion_time -n 6"
    t = {(r, m): p.cell(cmd, rf"{r}\s+{m}\b", "completion_time [ms]")
         for r in ("dor_bgq", "kshortest", "optiq_lp") for m in ("disjoint", "subset_spread")}
    hops = {r: p.cell(cmd, rf"{r}\s+disjoint\b", "mean_hops") for r in ("dor_bgq", "kshortest")}
    n, x = r"([0-9.]+)", r"[0-9.]+"
    claims = [
        (rf"is {n}x faster than DOR with a block", t["dor_bgq", "disjoint"] / t["optiq_lp", "disjoint"]),
        (rf"aggregators\*\* \({n} ms against {x}\) \*\*and", t["optiq_lp", "disjoint"]),
        (rf"aggregators\*\* \({x} ms against {n}\) \*\*and", t["dor_bgq", "disjoint"]),
        (rf"\*\*and {n}x faster with spread", t["dor_bgq", "subset_spread"] / t["optiq_lp", "subset_spread"]),
        (rf"spread aggregators\*\* \({n} against {x} ms\)", t["optiq_lp", "subset_spread"]),
        (rf"spread aggregators\*\* \({x} against {n} ms\)", t["dor_bgq", "subset_spread"]),
        (rf"with the block \({n} against {x} ms\)", t["kshortest", "disjoint"]),
        (rf"with the block \({x} against {n} ms\)", t["dor_bgq", "disjoint"]),
        (rf"ms\), and {n}x faster with spread", t["dor_bgq", "subset_spread"] / t["kshortest", "subset_spread"]),
        (rf"faster with spread aggregators \({n} against {x} ms\):", t["kshortest", "subset_spread"]),
        (rf"faster with spread aggregators \({x} against {n} ms\):", t["dor_bgq", "subset_spread"]),
        (rf"longer paths too \({n} hops", hops["kshortest"]),
        (rf"against DOR's {n}\)", hops["dor_bgq"]),
        (rf"twice as long \({n} against {x} ms\)", t["dor_bgq", "subset_spread"]),
        (rf"twice as long \({x} against {n} ms\)", t["dor_bgq", "disjoint"]),
        (r"shrinks to ([0-9]+)% \(", 100 * (t["optiq_lp", "subset_spread"] / t["optiq_lp", "disjoint"] - 1)),
        (rf"shrinks to [0-9]+% \({n} against {x} ms\)", t["optiq_lp", "subset_spread"]),
        (rf"shrinks to [0-9]+% \({x} against {n} ms\)", t["optiq_lp", "disjoint"]),
    ]
    for pattern, value in claims:
        check_stated(doc, pattern, value, cmd)


def _prose_bounds(p: Printed) -> None:
    doc, cmd = "docs/tutorial_routing_bounds.md", "evaluator query routing_gap --best routing_efficiency"
    py = {"mean": 'print(eff.mean("traffic.seed").round(3).to_series())',
          "min": 'print(eff.min("traffic.seed").round(3).to_series())'}
    lines = p.of("[python] import evaluator as ev").splitlines()
    table = {}  # (routing, mean|min): the python block prints the means, then the minima
    for line in lines:
        m = re.match(r"(dor|kshortest|optiq_heuristic|optiq_lp)\s+([-0-9.]+)$", line.strip())
        if m:
            table[m.group(1), "min" if (m.group(1), "mean") in table else "mean"] = float(m.group(2))
    assert len(table) == 8, f"{doc}: the python block printed {lines}"
    for (r, stat), v in table.items():
        check_stated(doc, rf"\| `{r}` \| " + (r"([0-9.]+) \| [0-9.]+ \|" if stat == "mean" else
                                              r"[0-9.]+ \| ([0-9.]+) \|"), v, py[stat])
    eff = {r: p.cell(cmd, rf"{r}\s", "routing_efficiency") for r in ("optiq_lp", "dor")}
    claims = [
        (r"faster than ([0-9.]+) us\*\*", p.cell(cmd, r"dor\s", "optimal_completion_time [us]"), cmd),
        (r"efficiency ([0-9.]+) on average", table["dor", "mean"], py["mean"]),
        (r"on average, ([0-9.]+) at worst", table["dor", "min"], py["min"]),
        (r"at worst \(([0-9.]+) us for permutation 0\)", p.cell(cmd, r"dor\s", "completion_time [us]"), cmd),
        (r"shortest paths reaches ([0-9.]+) on average", table["kshortest", "mean"], py["mean"]),
        (r"OPTIQ's heuristic ([0-9.]+),", table["optiq_heuristic", "mean"], py["mean"]),
        (r"its LP split ([0-9.]+) \(", table["optiq_lp", "mean"], py["mean"]),
        (r"\(([0-9.]+) on permutation 0, within", eff["optiq_lp"], cmd),
        (r"permutation 0, within ([0-9]+)% of the best", 100 * (1 - eff["optiq_lp"]), cmd),
    ]
    for pattern, value, command in claims:
        check_stated(doc, pattern, value, command)


def _prose_stencil(p: Printed) -> None:
    doc = "docs/tutorial_stencil_placement.md"
    q = "evaluator query stencil4096 --best completion_time --over placement.gamma -n 6"
    t = {(b, r): p.cell(q, rf"{b}\s+\S+\s+{r}\b", "completion_time [us]")
         for b in ("16x16x16", "64x8x8") for r in ("valiant", "minimal") if (b, r) != ("64x8x8", "minimal")}
    kb = {b: p.cell(q, rf"{b}\s+\S+\s+valiant\b", "off_node_bytes [kB]") for b in ("16x16x16", "64x8x8")}
    bw = "evaluator sweep $B placement=alps placement.tasks_per_node=32 placement.rank_order.method=smp,grid_order"
    bw2 = "evaluator sweep $B placement=alps,topaware placement.tasks_per_node=32 sweep.name=bw_placement"
    order = {m: p.cell("sweep.name=bw_rank_order", rf"{m}\s", "completion_time [us]") for m in ("grid_order", "smp")}
    off = {m: p.cell("sweep.name=bw_rank_order", rf"{m}\s", "off_node_bytes [MB]") for m in ("grid_order", "smp")}
    place = {m: p.cell("sweep.name=bw_placement", rf"{m}\s", "completion_time [us]") for m in ("alps", "topaware")}
    tiles = "evaluator tiles --grid 512,512,512 --nodes 128 --tasks-per-node 32 --machine BlueWaters -n 3"
    nic = p.value(tiles, r"injection ([0-9.]+) GB/s per node")
    n = r"([0-9.]+)"
    claims = [
        (rf"wins under both routings: {n} us per exchange", t["16x16x16", "valiant"], q),
        (rf"ranks per group, {n} us with minimal routing", t["16x16x16", "minimal"], q),
        (rf"intermediate groups, {n}x faster", t["16x16x16", "minimal"] / t["16x16x16", "valiant"], q),
        (rf"their faces are larger: {n} kB for", kb["64x8x8"], q),
        (rf"for `64x8x8` against {n} kB\)", kb["16x16x16"], q),
        (rf"so `64x8x8` is {n}x slower", t["64x8x8", "valiant"] / t["16x16x16", "valiant"], q),
        (rf"slower at its best \({n} us\)", t["64x8x8", "valiant"], q),
        (rf"the time each node's NIC \({n} GB/s\)", nic, tiles),
        (rf"with 2x4x4 cells takes {n} us against", order["grid_order"], bw),
        (rf"against SMP's {n} us \(", order["smp"], bw),
        (rf"us \({n}x faster\): a node", order["smp"] / order["grid_order"], bw),
        (rf"fewer bytes leave it \({n} MB off-node", off["grid_order"], bw),
        (rf"off-node against {n} MB\)", off["smp"], bw),
        (rf"the tile advisor predicted, {n} us:", place["topaware"], bw2),
        (rf"us: {n}x faster than ALPS with SMP", place["alps"] / place["topaware"], bw2),
        (rf"Valiant routing \({n} us per exchange\)", t["16x16x16", "valiant"], q),
        (rf"with its rank order \({n} us, the NIC's limit\)", place["topaware"], bw2),
        (rf"with 2x4x4 cells \({n} us, against", order["grid_order"], bw),
        (rf"us, against {n} us with the default SMP order", order["smp"], bw),
    ]
    for pattern, value, command in claims:
        check_stated(doc, pattern, value, command)


def _prose_rdn(p: Printed) -> None:
    """The study's background share, and the speedup table's 5-group column: the test's study (``--groups 2``)
    computes the 2- and 5-group points of the written one (the same model, seeds and machine) and leaves out the
    4-group ones (tests/test_claims_tutorial_rdn.py checks the rest against the written commands; with
    ``EVALUATOR_DOCS_FULL=1`` the output blocks are compared whole)."""
    doc = "docs/tutorial_rdn_queue.md"
    study = "evaluator study rdn --machine 2,2,2,5 --bounds none --baseline oblivious --speedup-out"
    out = p.of("study rdn --machine 2,2,2,5 --bounds none --baseline oblivious")
    check_stated(doc, r"each next to ([0-9]+)% background traffic", p.value(study, r"\), ([0-9]+)% background"),
                 study)
    table = out[out.index("speedup table, DF(2,2,2,5)"):]
    assert re.search(r"^\s+2 groups\s+(?:4 groups\s+)?5 groups$", table, re.M), f"{doc}: the speedup table: {table}"
    cell = r"[0-9.]+x \[[0-9.]+x, [0-9.]+x\]"
    for label in ("minimal_balance (stencil)", "custom_balance (stencil)"):
        m = re.search(rf"^{re.escape(label)}\s+(?:{cell}\s+)+([0-9.]+)x \[([0-9.]+)x, ([0-9.]+)x\]$", table, re.M)
        assert m, f"{doc}: no {label} row in the test's speedup table: {table}"
        for k in range(3):
            groups = [r"([0-9.]+)x \[[0-9.]+x, [0-9.]+x\]", r"[0-9.]+x \[([0-9.]+)x, [0-9.]+x\]",
                      r"[0-9.]+x \[[0-9.]+x, ([0-9.]+)x\]"][k]
            check_stated(doc, rf"{re.escape(label)} {cell} {cell} {groups}", float(m.group(k + 1)), study)


PROSE = {"docs/tutorial_io_multipath.md": _prose_io, "docs/tutorial_rdn_queue.md": _prose_rdn,
         "docs/tutorial_routing_bounds.md": _prose_bounds, "docs/tutorial_stencil_placement.md": _prose_stencil}
"""Per tutorial, its prose's numbers checked against what its commands printed in the same run."""


@pytest.mark.parametrize("doc", DOCS)
def test_document_runs(doc, clone, capsys):
    outputs: list[tuple[str, str]] = []
    timings = run_document(doc, clone, capsys, outputs)
    assert timings, f"{doc}: no command ran"
    if doc in PROSE:
        PROSE[doc](Printed(outputs))
    with capsys.disabled():
        slow = sorted(timings, key=lambda t: -t[1])[:3]
        print(f"\n{doc}: {len(timings)} commands, {sum(t for _, t in timings):.1f} s; slowest: "
              + "; ".join(f"{t:.1f} s {c[:70]}" for c, t in slow))
