"""The bare model's prompts and replies in the shapes the team's jobs produce: findings with a fix
(the reviewer's format), and a whole file."""

from __future__ import annotations

from daemon.eval.scoring import Spot, apply_line_fix, bare_review_prompt, bare_spots, parse_file_reply


def test_a_bare_review_is_read_as_the_reviewers_reply_is() -> None:
    text = "".join(f"x{n} = {n}\n" for n in range(1, 25))
    reply = "LINE: 15\n**Bug:** the distance can be negative\nFIX: `x15 = abs(15)`\n\nLINE: 20\nBUG: off by one\n"
    assert bare_spots(reply, "f.py", text) == [Spot(15, 15, "the distance can be negative", "x15 = abs(15)"),
                                               Spot(20, 20, "off by one", None)]
    assert bare_spots("NONE", "f.py", text) == [] and bare_spots("No bugs here.", "f.py", text) == []
    assert bare_spots("LINE: 99\nBUG: past the end", "f.py", text) == []  # placed by the reviewer's validator


def test_the_bare_review_prompt_is_the_reviewers_format_on_the_numbered_file() -> None:
    from daemon.agents.findings import FINDINGS_FORMAT

    prompt = bare_review_prompt("f.py", "a = 1\nb = 2\n")
    assert prompt.startswith("Please review f.py") and prompt.endswith(FINDINGS_FORMAT)
    assert "  2| b = 2" in prompt


def test_the_whole_file_is_the_longest_fenced_block_that_parses() -> None:
    reply = "Here:\n```python\ndef f():\n    return 1\n```\nand a note:\n```\nnot python (\n```"
    assert parse_file_reply(reply) == "def f():\n    return 1\n"
    assert parse_file_reply("x = 1") == "x = 1\n"
    assert parse_file_reply("I would change the loop.") is None


def test_a_fix_replaces_the_findings_whole_lines() -> None:
    assert apply_line_fix("a\nb\nc\n", 2, 2, "    B") == "a\n    B\nc\n"
    assert apply_line_fix("a\nb\nc\n", 1, 2, "x\n") == "x\nc\n"
