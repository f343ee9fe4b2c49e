"""Where findings are shown after the user's edits, and how they look as diagnostics (no processes)."""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import TextDocument

from daemon.api.protocol import FindingInfo
from lsp.diagnostics import fix_edit, to_diagnostic
from lsp.documents import OpenDocument, skip_reason
from lsp.tracking import Placed, place, shift

TEXT = ["import os\n", "\n", "def add(a, b):\n", "    return a - b\n"]


def finding(start: int, end: int | None = None, **fields: object) -> FindingInfo:
    values = {"id": 1, "file": "calc.py", "severity": "major", "message": "bug", "start_line": start,
              "end_line": end, **fields}
    return FindingInfo(**values)  # type: ignore[arg-type]


def rng(a: tuple[int, int], b: tuple[int, int]) -> types.Range:
    return types.Range(start=types.Position(line=a[0], character=a[1]), end=types.Position(line=b[0], character=b[1]))


def lines(placed: list[Placed]) -> list[tuple[int, int]]:
    return [(p.start, p.end) for p in placed]


def test_store_lines_are_one_based_and_lsp_lines_zero_based() -> None:
    assert place(finding(4), TEXT, TEXT) == Placed(finding(4), 3, 3)


def test_a_finding_moves_with_lines_added_above_it_since_the_review() -> None:
    assert place(finding(3, 4), TEXT, ["# new\n", "# lines\n", *TEXT]) == Placed(finding(3, 4), 4, 5)


def test_a_finding_whose_line_changed_since_the_review_is_not_shown() -> None:
    assert place(finding(4), TEXT, [*TEXT[:3], "    return a + b\n"]) is None
    assert place(finding(9), TEXT, TEXT) is None  # a line the file does not have


def test_an_edit_above_shifts_by_the_lines_it_adds_or_removes() -> None:
    placed = [Placed(finding(4), 3, 3)]
    assert lines(shift(placed, rng((0, 9), (0, 9)), "\nimport sys")[0]) == [(4, 4)]  # Enter + text on line 0
    assert lines(shift(placed, rng((0, 0), (2, 0)), "")[0]) == [(1, 1)]  # two whole lines deleted
    assert lines(shift(placed, rng((3, 0), (3, 0)), "# note\n")[0]) == [(4, 4)]  # a line inserted right above


def test_an_edit_below_leaves_it_and_an_edit_on_its_lines_drops_it() -> None:
    placed = [Placed(finding(2, 3), 1, 2)]
    assert lines(shift(placed, rng((5, 0), (6, 3)), "x\ny\nz")[0]) == [(1, 2)]
    kept, dropped = shift(placed, rng((2, 4), (2, 7)), "sub")
    assert kept == [] and lines(dropped) == [(1, 2)]
    kept, dropped = shift(placed, rng((2, 0), (2, 0)), "# a line\n")  # inside a two-line finding
    assert kept == [] and lines(dropped) == [(1, 2)]


def test_a_dropped_finding_stays_away_until_a_new_review_reports_it() -> None:
    doc = OpenDocument("file:///r/calc.py", "/r/calc.py", root="/r", reviewed=TEXT)
    reported = finding(4, job_id="review-1")
    doc.show(reported, TEXT)
    doc.edited(*shift(list(doc.placed.values()), rng((3, 4), (3, 10)), "yield"))
    assert doc.placed == {}
    doc.replace_all([reported], TEXT)  # a refresh from the store: the same report
    assert doc.placed == {}
    doc.show(finding(4, job_id="review-2"), TEXT)  # the next review reports it again
    assert list(doc.placed) == [1]
    doc.show(finding(4, job_id="review-3", state="resolved"), TEXT)
    assert doc.placed == {}


def test_diagnostic_ranges_follow_the_text_and_count_utf16_units() -> None:
    doc = TextDocument("file:///r/calc.py", "s = '😀'  # smile\n    return a - b\n")
    whole = to_diagnostic(doc, Placed(finding(2, severity="info"), 1, 1))
    assert whole.range == rng((1, 4), (1, 16)) and whole.severity == types.DiagnosticSeverity.Information
    emoji = to_diagnostic(doc, Placed(finding(1, severity="minor", rule="E501"), 0, 0))
    assert emoji.range == rng((0, 0), (0, 17)) and emoji.code == "E501"  # the emoji is two UTF-16 units
    columns = to_diagnostic(doc, Placed(finding(2, start_col=12, end_col=17, severity="critical"), 1, 1))
    assert columns.range == rng((1, 11), (1, 16)) and columns.severity == types.DiagnosticSeverity.Error
    assert columns.source == "troupe" and columns.code == 1


def test_the_fix_replaces_the_findings_whole_lines() -> None:
    doc = TextDocument("file:///r/calc.py", "".join(TEXT))
    edit = fix_edit(doc, Placed(finding(3, 4, suggested_fix="def add(a, b):\n    return a + b\n"), 2, 3))
    assert edit == types.TextEdit(range=rng((2, 0), (3, 16)), new_text="def add(a, b):\n    return a + b")
    assert fix_edit(doc, Placed(finding(4), 3, 3)) is None


def test_binary_and_huge_texts_are_not_worth_reviewing() -> None:
    assert skip_reason("x = 1\n") is None
    assert "binary" in str(skip_reason("a\x00b"))
    assert "too big" in str(skip_reason("x" * 1_000_001))
