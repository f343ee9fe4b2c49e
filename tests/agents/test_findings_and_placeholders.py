"""Forgiving findings parsing, strict placement; placeholders found by syntax, not by grep."""

from __future__ import annotations

import pytest

from daemon.agents.findings import FindingsError, parse_findings, validate_findings
from daemon.agents.placeholders import find_unfinished

FILE = "def f(x):\n    return x + 1\n\n\ndef g():\n    return f(2)\n"


@pytest.mark.parametrize("reply", [
    '```json\n[{"file": "a.py", "start_line": 2, "message": "m"},]\n```',
    'Findings:\n{"file": "a.py", "start_line": 2, "message": "m"}',
    '{"findings": [{"file": "a.py", "start_line": 2, "message": "m"}]}',
    '[\n  // the only problem\n  {"file": "a.py", "start_line": "2", "message": "m",}\n]',
])
def test_findings_json_in_the_shapes_models_produce(reply):
    raw = parse_findings(reply)
    kept, rejected = validate_findings(raw, {"a.py": FILE}.get)
    assert [(f.file, f.start_line, f.message) for f in kept] == [("a.py", 2, "m")] and rejected == []


def test_no_findings_and_broken_json():
    assert parse_findings("[]") == [] and parse_findings("No issues found.") == []
    with pytest.raises(FindingsError, match="no findings in the asked format: write one block per problem"):
        parse_findings("The code is risky in places.")
    with pytest.raises(FindingsError, match=r"not valid: Expecting .* at line 1, column \d+"):
        parse_findings('[{"file": "a.py" "line": 2}]')


SMALL_MODEL_REPLY = """Here is what I found.

BUG: `g` can crash
CODE: def g():
    return f(2)

**BUG**: wrong argument
SEVERITY: Major
CODE:
```python
   6| return f(2)
```
FIX: return f(1)
"""


def test_findings_as_blocks_the_way_small_models_write_them():
    raw = parse_findings(SMALL_MODEL_REPLY)
    assert [r["message"] for r in raw] == ["`g` can crash", "wrong argument"]
    kept, rejected = validate_findings(raw, {"a.py": FILE}.get, {"a.py"})
    assert rejected == []
    assert [(f.file, f.start_line, f.end_line, f.severity) for f in kept] == [("a.py", 5, 6, "major"),
                                                                            ("a.py", 6, 6, "major")]
    assert kept[1].replacement == "    return f(1)"  # the fix takes the indentation of the line it replaces


def test_a_file_line_applies_to_the_blocks_after_it():
    raw = parse_findings("**FILE: b.py**\nBUG: one\nCODE: x = 1\nBUG: two\nCODE: y = 2\n")
    assert [(r["file"], r["message"], r["quote"]) for r in raw] == [("b.py", "one", "x = 1"), ("b.py", "two", "y = 2")]


def test_placement_is_checked_against_the_file():
    raw = [
        {"file": "a.py", "start_line": 5, "end_line": 6, "severity": "HIGH", "message": "ok", "quote": "def g():"},
        {"file": "a.py", "start_line": 1, "end_line": 1, "message": "moved", "quote": "return f(2)"},
        {"file": "a.py", "start_line": 0, "message": "line zero"},
        {"file": "a.py", "start_line": 2, "message": ""},
        {"file": "../etc/passwd", "start_line": 1, "message": "outside"},
        {"start_line": 2, "end_line": 99, "message": "no file named, end past the end"},
    ]
    files = {"a.py": FILE}
    kept, rejected = validate_findings(raw, files.get, {"a.py"})
    assert [(f.start_line, f.end_line, f.severity, f.message) for f in kept] == [
        (5, 6, "major", "ok"), (6, 6, "minor", "moved"), (2, 6, "minor", "no file named, end past the end")]
    assert [r.reason for r in rejected] == ["line 0 does not exist in a.py (6 lines)", "no message",
                                            "file '../etc/passwd' was not under review"]


def test_placeholders_are_found_by_syntax():
    code = '''import abc


class Base(abc.ABC):
    @abc.abstractmethod
    def run(self): ...


def load(path):
    try:
        return open(path).read()
    except OSError:
        pass


def save(path, data):
    """Write data."""
    raise NotImplementedError


def parse(text):
    ...  # TODO: handle quotes
'''
    found = [str(u) for u in find_unfinished([("m.py", code), ("README.md", "TODO: docs"), ("x.py", "def (:")])]
    assert found == ["m.py:16: function save() has no implementation",
                     "m.py:21: function parse() has no implementation",
                     "m.py:22: TODO left: ...  # TODO: handle quotes",
                     "x.py:1: does not parse: invalid syntax"]


def test_a_reviewer_finding_that_only_restates_the_linter_is_dropped():
    from daemon.agents.findings import Finding, drop_lint_repeats
    from daemon.lint.check import LintIssue

    lint = [LintIssue("a.py", 1, 8, "F401", "`os` imported but unused")]
    said = [Finding("a.py", 1, 1, "major", "The `os` module is imported but unused."),
            Finding("b.py", 1, 1, "major", "`os` imported but unused"),
            Finding("a.py", 6, 6, "major", "g passes 2 where f expects the user's value")]
    kept, dropped = drop_lint_repeats(said, lint)
    assert [(f.file, f.start_line) for f in kept] == [("b.py", 1), ("a.py", 6)]
    assert [d.reason for d in dropped] == ["repeats the static check F401: `os` imported but unused"]
