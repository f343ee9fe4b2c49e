"""Where findings are shown after the user's edits, and how they look as diagnostics (no processes)."""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import TextDocument

from daemon.api.protocol import FindingInfo
from lsp.diagnostics import fix_edit, to_diagnostic
from lsp.documents import OpenDocument, skip_reason
from lsp.tracking import Placed, edit_lines, follow, place

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


BUFFER = ["import os", "", "def add(a, b):", "    total = a - b", "    return total", ""]


def after(edit: tuple[tuple[int, int], tuple[int, int], str], placed: list[Placed] | None = None,
          old: list[str] = BUFFER) -> tuple[list[str], list[tuple[int, int]]]:
    """The buffer after one edit, and where one-line findings on every line of it are now."""
    new, mapping = edit_lines(old, *edit)
    items = placed if placed is not None else [Placed(finding(i + 1), i, i) for i in range(len(old))]
    return new, lines(follow(items, mapping)[0])


def test_neovim_o_keeps_both_neighbouring_lines() -> None:
    # `o` on line 3: Neovim replaces (3, eol)-(4, 0) with "\n<new>\n"
    new, kept = after(((3, 17), (4, 0), "\n    print(total)\n"))
    assert new[3:6] == ["    total = a - b", "    print(total)", "    return total"]
    assert kept == [(0, 0), (1, 1), (2, 2), (3, 3), (5, 5), (6, 6)]


def test_neovim_capital_o_and_vscode_enter_at_end_of_line_keep_the_line() -> None:
    assert after(((3, 0), (3, 0), "    print(a)\n"))[1] == [(0, 0), (1, 1), (2, 2), (4, 4), (5, 5), (6, 6)]
    new, kept = after(((3, 17), (3, 17), "\n    "))  # VS Code: Enter at the end of line 3, auto-indent
    assert new[4] == "    " and kept == [(0, 0), (1, 1), (2, 2), (3, 3), (5, 5), (6, 6)]


def test_helix_open_below_inserts_a_line_feed_at_the_end_of_the_line() -> None:
    assert after(((2, 14), (2, 14), "\n    "))[1] == [(0, 0), (1, 1), (2, 2), (4, 4), (5, 5), (6, 6)]


def test_join_drops_both_joined_lines_only() -> None:
    new, kept = after(((3, 17), (4, 4), " "))  # J on line 3: its line feed and the next line's indent
    assert new[3] == "    total = a - b return total"
    assert kept == [(0, 0), (1, 1), (2, 2), (4, 4)]


def test_a_pasted_block_moves_the_lines_below_and_drops_none() -> None:
    assert after(((1, 0), (1, 0), "X = 1\nY = 2\n"))[1] == [(0, 0), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7)]
    kept = after(((3, 8), (3, 13), "a +"))[1]  # a paste inside a line changes that line only
    assert kept == [(0, 0), (1, 1), (2, 2), (4, 4), (5, 5)]


def test_undo_of_an_inserted_line_keeps_everything_around_it() -> None:
    inserted, _ = edit_lines(BUFFER, (3, 17), (4, 0), "\n    print(total)\n")
    restored, mapping = edit_lines(inserted, (3, 17), (5, 0), "\n")  # Neovim's undo of the `o`
    assert restored == BUFFER
    placed = [Placed(finding(i + 1), i, i) for i in range(len(inserted))]
    assert lines(follow(placed, mapping)[0]) == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]


def test_a_multi_line_finding_goes_when_a_line_is_inserted_inside_it() -> None:
    two_lines = [Placed(finding(4, 5), 3, 4)]
    assert after(((4, 0), (4, 0), "    # note\n"), two_lines)[1] == []
    assert after(((0, 0), (0, 0), "#!\n"), two_lines)[1] == [(4, 5)]


def test_a_dropped_finding_stays_away_until_a_new_review_reports_it() -> None:
    doc = OpenDocument("file:///r/calc.py", "/r/calc.py", root="/r", reviewed=TEXT,
                       lines=[line.rstrip("\n") for line in TEXT] + [""])
    reported = finding(4, job_id="review-1")
    doc.show(reported, TEXT)
    doc.edit((3, 4), (3, 10), "yield")
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
    assert columns.source == "troupe" and columns.code == "review"  # stable: not the finding id


def test_the_fix_replaces_the_findings_whole_lines() -> None:
    doc = TextDocument("file:///r/calc.py", "".join(TEXT))
    edit = fix_edit(doc, Placed(finding(3, 4, suggested_fix="def add(a, b):\n    return a + b\n"), 2, 3))
    assert edit == types.TextEdit(range=rng((2, 0), (3, 16)), new_text="def add(a, b):\n    return a + b")
    assert fix_edit(doc, Placed(finding(4), 3, 3)) is None


def test_binary_and_huge_texts_are_not_worth_reviewing() -> None:
    assert skip_reason("x = 1\n") is None
    assert "binary" in str(skip_reason("a\x00b"))
    assert "too big" in str(skip_reason("x" * 1_000_001))
