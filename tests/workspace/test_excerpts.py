"""A small model asked to change a file shown in part sends the parts back as if they were the file:
each goes back where it came from (by its ``(lines A-B)`` line, else by its definition's name), the
blank lines it dropped are kept, copied line numbers are taken off, and a reply with no part that
has a place in the file is refused (None)."""

from __future__ import annotations

from daemon.workspace.excerpts import merge_excerpt
from daemon.workspace.repomap import excerpt

HEADER = "import os\nfrom itertools import islice\n\n\n"
BATCHED = '''def batched(iterable, n, *, strict=False):
    """Batch data into tuples of length *n*.

    >>> list(batched('ABCDEFG', 3))
    [('A', 'B', 'C'), ('D', 'E', 'F'), ('G',)]
    """
    iterator = iter(iterable)
    while batch := tuple(islice(iterator, n)):
        if strict and len(batch) is n:
            raise ValueError('batched(): incomplete batch')
        yield batch
'''
FILLERS = "".join(f"\n\ndef filler_{i}(x):\n    return x + {i}\n" for i in range(300))
BIG = HEADER + "def first(x):\n    return x\n\n\n" + BATCHED + FILLERS
BUG, FIXED = "        if strict and len(batch) is n:", "        if strict and len(batch) != n:"


def fenced_body(shown: str) -> str:
    """The code of an excerpt, as a model copies it out of its fence."""
    return shown.split("```python\n", 1)[1].rsplit("```", 1)[0]


def test_the_parts_sent_back_go_back_by_their_lines_and_only_the_changed_line_changes() -> None:
    line = BIG.splitlines().index(BUG) + 1
    shown = excerpt("pkg/recipes.py", BIG, [line], 2000, line_numbers=False)
    assert "(lines 1-4)" in shown and "filler_299" not in shown
    reply = fenced_body(shown).replace(BUG, FIXED).replace('incomplete batch\')\n', "incomplete batch')\n")
    reply = reply.replace("    \n", "").replace('*n*.\n\n', '*n*.\n')  # the blank lines dropped, as from a traceback

    merged = merge_excerpt("pkg/recipes.py", BIG, reply)

    assert merged == BIG.replace(BUG, FIXED)


def test_copied_line_numbers_are_taken_off() -> None:
    line = BIG.splitlines().index(BUG) + 1
    shown = excerpt("pkg/recipes.py", BIG, [line], 2000, line_numbers=True)
    reply = fenced_body(shown).replace(BUG.strip(), FIXED.strip())
    assert f"{line:>4}|         if strict and len(batch) != n:" in reply
    assert merge_excerpt("pkg/recipes.py", BIG, reply) == BIG.replace(BUG, FIXED)


def test_a_definition_sent_back_alone_replaces_the_one_of_its_name_and_a_method_keeps_its_indent() -> None:
    assert merge_excerpt("pkg/recipes.py", BIG, BATCHED.replace(BUG, FIXED)) == BIG.replace(BUG, FIXED)

    cls = HEADER + "class Box:\n    def size(self):\n        return len(self.items) - 1\n" + FILLERS
    reply = "def size(self):\n    return len(self.items)\n"  # the method, sent back at the margin
    assert merge_excerpt("pkg/box.py", cls, reply) == cls.replace("len(self.items) - 1", "len(self.items)")


def test_a_reply_with_nothing_that_has_a_place_in_the_file_is_refused() -> None:
    assert merge_excerpt("pkg/recipes.py", BIG, "print(batched('AB', 1))\n") is None  # no definition of the file
    assert merge_excerpt("pkg/recipes.py", BIG, "def brand_new():\n    pass\n") is None
    assert merge_excerpt("pkg/recipes.py", BIG, "(lines 9000-9001)\nx = 1\n") is None  # past the end
    assert merge_excerpt("pkg/recipes.py", BIG, "x = 1\n(lines 1-2)\nimport os\n") is None  # code from nowhere
    assert merge_excerpt("pkg/recipes.py", BIG, "(lines 1-3)\nimport os\n(lines 2-4)\nimport os\n") is None
    assert merge_excerpt("notes.txt", "a\nb\n", "b\n") is None  # not Python: only the lines markers place it
    assert merge_excerpt("pkg/recipes.py", BIG, "def batched(:\n") is None  # does not parse
