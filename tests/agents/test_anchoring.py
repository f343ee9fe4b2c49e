"""Findings land on the right line however loosely a small model cites it — and never on a line
that does not exist or does not match."""

from __future__ import annotations

import pytest

from daemon.agents.findings import parse_findings, validate_findings

SEARCH = """def find_first_in_sorted(arr, x):
    lo = 0
    hi = len(arr)

    while lo <= hi:
        mid = (lo + hi) // 2

        if x == arr[mid] and (mid == 0 or x != arr[mid - 1]):
            return mid

        elif x <= arr[mid]:
            hi = mid

        else:
            lo = mid + 1

    return -1
"""
FILE = "find_first_in_sorted.py"


def place(reply: str) -> tuple[list[tuple[int, int]], list[str]]:
    kept, rejected = validate_findings(parse_findings(reply), {FILE: SEARCH}.get, {FILE})
    return [(f.start_line, f.end_line) for f in kept], [r.reason for r in rejected]


@pytest.mark.parametrize("code", [
    "line 8: `if x == arr[mid] and ...`",            # Qwen2.5-Coder-1.5B, verbatim
    "Line 8: if x == arr[mid] and (mid == 0 or x != arr[mid - 1]):",
    "`if x == arr[mid] and (mid == 0 or x != arr[mid - 1]):`",
    "if x==arr[mid] and (mid==0 or x!=arr[mid-1]):",  # respaced
    "        if x == arr[mid] and",                   # re-indented, and only the start
    "L8: `if x == arr[mid]`",
])
def test_a_quoted_line_is_found_however_it_is_cited(code):
    placed, reasons = place(f"BUG: the first match is missed\nSEVERITY: major\nCODE: {code}\n")
    assert (placed, reasons) == ([(8, 8)], [])


def test_the_real_failing_reply_from_the_issue_keeps_both_findings():
    reply = ("BUG: the loop can read past the end of arr\nSEVERITY: major\nCODE: line 5: `while lo <= hi:`\n"
             "FIX: while lo < hi:\n\n"
             "BUG: hi should shrink below mid\nSEVERITY: minor\nCODE: Line 11: elif x <= arr[mid]:\n")
    placed, reasons = place(reply)
    assert placed == [(5, 5), (11, 11)] and reasons == []


def test_the_line_and_fix_format_is_placed_on_the_line_the_fix_corrects():
    placed, reasons = place("LINE: 5\nBUG: lo <= hi reads arr[len(arr)]\nFIX: while lo < hi:\n")
    assert (placed, reasons) == ([(5, 5)], [])
    one_off, _ = place("LINE: 6\nBUG: the loop bound is wrong\nFIX: while lo < hi:\n")
    assert one_off == [(5, 5)]  # the number was one off; the fix is a changed copy of line 5


def test_a_line_number_alone_counts_when_it_matches_the_message():
    assert place("LINE: 12 hi = mid should be hi = mid - 1") == ([(12, 12)], [])
    moved, _ = place("LINE: 13\nBUG: `hi` is set to mid, which loops forever\n")
    assert moved == [(12, 12)]  # the nearest line holding the name the message is about
    placed, reasons = place("LINE: 2\nBUG: `mid` is computed wrong\n")
    assert placed == [] and reasons == [f"line 2 does not match the finding (it names mid) in {FILE}"]


def test_findings_never_land_on_lines_that_do_not_exist_or_do_not_match():
    placed, reasons = place("LINE: 40\nBUG: off by one\nFIX: return lo\n\n"
                            "BUG: wrong\nCODE: line 3: `return arr[0]`\n\n"
                            "LINE: 4\nBUG: the search fails on empty input\n")
    assert placed == []
    assert reasons == [f"line 40 does not exist in {FILE} (17 lines)",
                       f"the quoted code 'return arr[0]' is not in {FILE}",
                       f"line 4 is blank in {FILE}"]


def test_one_line_blocks_and_blocks_without_a_bug_line_parse():
    raw = parse_findings("LINE: 12, FIX: hi = mid - 1\nLINE: 5 BUG: the bound should be lo < hi")
    assert [(r["start_line"], r.get("replacement"), r.get("message")) for r in raw] == [
        (12, "hi = mid - 1", None), (5, None, "the bound should be lo < hi")]
    kept, _ = validate_findings(raw, {FILE: SEARCH}.get, {FILE})
    assert [(f.start_line, f.message, f.replacement, f.severity) for f in kept] == [
        (12, "should be: hi = mid - 1", "            hi = mid - 1", "major"),
        (5, "the bound should be lo < hi", None, "major")]


def test_a_numbered_list_of_prose_on_the_docstring_is_not_a_finding():
    text = '"""A small inventory of items."""\n\n\ndef load(lines):\n    inventory = {}\n    return inventory\n'
    reply = ("LINE: 1\nBUG: The `load` function should return an inventory.\n"
             "FIX: The `load` function should return an inventory from lines.\n")  # the bundled 0.5B model, verbatim
    kept, rejected = validate_findings(parse_findings(reply), {"inv.py": text}.get, {"inv.py"})
    assert kept == [] and [r.reason for r in rejected] == [
        "line 1 does not match the finding (it names inventory, lines, load) in inv.py"]
    kept, _ = validate_findings(parse_findings("LINE: 1\nBUG: inventory is never filled\n"),
                                {"inv.py": text}.get, {"inv.py"})
    assert [f.start_line for f in kept] == []  # line 1 is prose; lines 4-6 are too far to move to


def test_a_block_that_says_there_is_no_bug_is_not_a_finding():
    placed, reasons = place("LINE: 1 no bug>")  # the bundled 0.5B model, verbatim
    assert placed == [] and reasons == ["it says there is nothing wrong ('no bug>')"]


def test_a_quote_of_code_that_changed_by_one_character_is_not_placed():
    placed, reasons = place("BUG: hi never shrinks\nCODE: hi = mid + 1\n")  # the file says lo = mid + 1 / hi = mid
    assert placed == [] and reasons == [f"the quoted code 'hi = mid + 1' is not in {FILE}"]


def test_a_fix_written_as_a_sentence_is_not_offered_as_the_fixed_line():
    kept, _ = validate_findings(parse_findings(
        "LINE: 12\nBUG: hi = mid never shrinks below mid\nFIX: In line 12, change `hi = mid` to `hi = mid - 1`.\n"),
        {FILE: SEARCH}.get, {FILE})  # the bundled 0.5B model's way of writing a fix
    assert [(f.start_line, f.replacement) for f in kept] == [(12, None)]
