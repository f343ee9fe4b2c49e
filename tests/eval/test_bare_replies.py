"""The bare model's replies in the shapes the team's jobs produce: line findings with a fix, and a
whole file."""

from __future__ import annotations

from daemon.eval.scoring import apply_line_fix, parse_file_reply, parse_line_findings


def test_line_findings_are_read_in_the_forms_small_models_write() -> None:
    reply = "LINE: 15 the distance can be negative\nFIX: distance = abs(elem - elem2)\n**Line 20:** off by one\n"
    assert parse_line_findings(reply, "f.py") == [
        {"file": "f.py", "start_line": 15, "message": "the distance can be negative",
         "replacement": "distance = abs(elem - elem2)"},
        {"file": "f.py", "start_line": 20, "message": "off by one"}]
    assert parse_line_findings("NONE", "f.py") == [] and parse_line_findings("No bugs here.", "f.py") == []


def test_the_whole_file_is_the_longest_fenced_block_that_parses() -> None:
    reply = "Here:\n```python\ndef f():\n    return 1\n```\nand a note:\n```\nnot python (\n```"
    assert parse_file_reply(reply) == "def f():\n    return 1\n"
    assert parse_file_reply("x = 1") == "x = 1\n"
    assert parse_file_reply("I would change the loop.") is None


def test_a_fix_replaces_the_findings_whole_lines() -> None:
    assert apply_line_fix("a\nb\nc\n", 2, 2, "    B") == "a\n    B\nc\n"
    assert apply_line_fix("a\nb\nc\n", 1, 2, "x\n") == "x\nc\n"
