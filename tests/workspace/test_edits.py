"""Edits from model replies: the formats weak models really emit, and errors a model can act on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.workspace.edits import (
    EDIT_FORMAT_HELP,
    EditApplyError,
    EditParseError,
    ParsedEdit,
    apply_edits,
    parse_edits,
)
from daemon.workspace.scratch import Scratch
from tests.workspace.conftest import tree

FENCE = "```"


def sr(path: str, search: str, replace: str) -> ParsedEdit:
    return ParsedEdit(path, "search_replace", search=search, replace=replace)


@pytest.mark.parametrize(("reply", "path"), [
    (f"Here it is:\n{FENCE}python src/app.py\nprint(1)\n{FENCE}\n", "src/app.py"),
    (f"{FENCE}src/app.py\nprint(1)\n{FENCE}", "src/app.py"),
    (f"{FENCE}python:src/app.py\nprint(1)\n{FENCE}", "src/app.py"),
    (f'{FENCE}python title="src/app.py"\nprint(1)\n{FENCE}', "src/app.py"),
    (f"src/app.py\n{FENCE}python\nprint(1)\n{FENCE}", "src/app.py"),
    (f"**src/app.py**\n\n{FENCE}python\nprint(1)\n{FENCE}", "src/app.py"),
    (f"`src/app.py`:\n{FENCE}python\nprint(1)\n{FENCE}", "src/app.py"),
    (f"### src/app.py\n{FENCE}python\nprint(1)\n{FENCE}", "src/app.py"),
    (f"File: src/app.py\n{FENCE}python\nprint(1)\n{FENCE}", "src/app.py"),
    (f"Here is the updated `src/app.py`:\n{FENCE}python\nprint(1)\n{FENCE}", "src/app.py"),
    (f"{FENCE}python\n# File: src/app.py\nprint(1)\n{FENCE}", "src/app.py"),
    ("~~~python src/app.py\nprint(1)\n~~~", "src/app.py"),
    (f"{FENCE}python src/app.py\nprint(1)\n", "src/app.py"),  # the model stopped before closing the fence
    (f"1. **src/app.py**\n   {FENCE}python\n   print(1)\n   {FENCE}", "src/app.py"),  # inside a list item
], ids=["lang-and-path", "path-only", "lang-colon-path", "title-attr", "line-before", "bold", "backticked",
        "heading", "file-label", "prose-with-path", "file-comment", "tilde-fence", "unclosed", "list-indent"])
def test_whole_file_blocks_in_every_variant(reply: str, path: str) -> None:
    assert parse_edits(reply) == [ParsedEdit(path=path, kind="whole", content="print(1)\n")]


def test_line_numbers_copied_from_a_numbered_listing_are_dropped() -> None:
    [edit] = parse_edits(f"{FENCE}python src/app.py\n   1| import sys\n   2|\n   3| print(sys.argv)\n{FENCE}")
    assert edit.content == "import sys\n\nprint(sys.argv)\n"


def test_a_markdown_file_may_contain_code_fences() -> None:
    reply = f"{FENCE}markdown README.md\n# Usage\n{FENCE}bash\nshop --help\n{FENCE}\nDone.\n{FENCE}\nThat's all."
    [edit] = parse_edits(reply)
    assert edit.content == f"# Usage\n{FENCE}bash\nshop --help\n{FENCE}\nDone.\n"


def test_search_replace_blocks_with_the_file_named_before_or_inside_the_fence() -> None:
    reply = (
        "shop/pricing.py\n"
        f"{FENCE}python\n<<<<<<< SEARCH\nPRICES = {{'apple': 3}}\n=======\nPRICES = {{'apple': 4}}\n>>>>>>> REPLACE\n"
        f"{FENCE}\n\n"
        f"{FENCE}python\ntools/report.py\n<<<<<<< SEARCH\n    return x\n=======\n    return y\n>>>>>>> REPLACE\n"
        "<<<<<<< SEARCH\ndef a():\n=======\ndef b():\n>>>>>>> REPLACE\n"  # same file, no name repeated
        f"{FENCE}\n"
    )
    assert parse_edits(reply) == [
        sr("shop/pricing.py", "PRICES = {'apple': 3}\n", "PRICES = {'apple': 4}\n"),
        sr("tools/report.py", "    return x\n", "    return y\n"),
        sr("tools/report.py", "def a():\n", "def b():\n"),
    ]


def test_a_mixed_reply_yields_every_edit_in_order_and_ignores_unnamed_examples() -> None:
    reply = (
        "I'll change the price, add a module and remove the old one.\n\n"
        f"shop/pricing.py\n<<<<<<< SEARCH\nA = 1\n=======\nA = 2\n>>>>>>> REPLACE\n\n"
        f"{FENCE}python shop/discount.py\nRATE = 0.1\n{FENCE}\n\n"
        f"Run it with:\n{FENCE}bash\npython -m shop\n{FENCE}\n\n"
        "DELETE: shop/legacy.py\n"
    )
    assert [(e.path, e.kind) for e in parse_edits(reply)] == [
        ("shop/pricing.py", "search_replace"), ("shop/discount.py", "whole"), ("shop/legacy.py", "delete")]


def test_commands_and_output_that_mention_a_file_are_not_edits_of_it() -> None:
    reply = (
        f"{FENCE}python main.py\nprint('hi')\n{FENCE}\n"
        f"Run `python main.py`:\n{FENCE}bash\npython main.py\n{FENCE}\n"
        f"Here is what main.py prints:\n{FENCE}\nhi\n{FENCE}\n"
    )
    assert parse_edits(reply) == [ParsedEdit("main.py", "whole", content="print('hi')\n")]


def test_draft_code_in_a_reasoning_section_is_not_an_edit() -> None:
    draft = f"{FENCE}python app.py\nDRAFT = True\n{FENCE}"
    final = f"{FENCE}python app.py\nFINAL = True\n{FENCE}"
    assert parse_edits(f"<think>Let me try:\n{draft}\nNo.</think>\n{final}")[0].content == "FINAL = True\n"
    assert parse_edits(f"Let me try:\n{draft}\n</think>\n{final}")[0].content == "FINAL = True\n"


def test_no_code_block_is_explained_with_the_format_to_use() -> None:
    with pytest.raises(EditParseError) as caught:
        parse_edits("Sure! I have updated the pricing logic as requested.")
    message = str(caught.value)
    assert "no file edits" in message and "nothing was changed" in message
    assert EDIT_FORMAT_HELP in message and "<<<<<<< SEARCH" in message


def test_code_without_a_file_name_is_explained_or_given_the_default_path() -> None:
    reply = f"{FENCE}python\nprint(1)\n{FENCE}"
    with pytest.raises(EditParseError, match=r"1 code block\(s\) but none says which file"):
        parse_edits(reply)
    assert parse_edits(reply, default_path="main.py") == [ParsedEdit("main.py", "whole", content="print(1)\n")]


@pytest.mark.parametrize("reply", [
    f"../../x\n{FENCE}python\nimport os\n{FENCE}",
    f"/etc/passwd\n{FENCE}\nroot::0:0::/root:/bin/sh\n{FENCE}",
    f"{FENCE}python /etc/cron.d/job.py\nx\n{FENCE}",
    "../outside.py\n<<<<<<< SEARCH\n=======\nx = 1\n>>>>>>> REPLACE\n",
    "DELETE: /etc/passwd",
])
def test_unsafe_paths_are_refused_with_a_reason(reply: str) -> None:
    with pytest.raises(EditParseError, match=r"Refused path .*(absolute paths are not allowed|'\.\.' would leave)"):
        parse_edits(reply)


def test_an_unfinished_search_replace_block_is_explained() -> None:
    with pytest.raises(EditParseError, match="needs a >>>>>>> REPLACE line"):
        parse_edits("a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n")


# -- applying ---------------------------------------------------------------------------------

@pytest.fixture
def scratch(repo: Path, tmp_path: Path) -> Iterator[Scratch]:
    work = Scratch.from_repo(repo, base_dir=tmp_path / "scratches")
    yield work
    work.cleanup()


def test_search_replace_exact_and_whole_file_edits_apply(scratch: Scratch) -> None:
    changed = apply_edits(scratch, [
        sr("shop/pricing.py", "PRICES = {'apple': 3}\n", "PRICES = {'apple': 3, 'pear': 5}\n"),
        ParsedEdit("tools/export.py", "whole", content="def export():\n    return []\n"),
        ParsedEdit("tools/notes.txt", "delete"),
    ])
    assert changed == ["shop/pricing.py", "tools/export.py", "tools/notes.txt"]
    assert scratch.read("shop/pricing.py").startswith("PRICES = {'apple': 3, 'pear': 5}\n\n\ndef price_of")
    assert scratch.read("tools/export.py") == "def export():\n    return []\n"
    assert not scratch.exists("tools/notes.txt")


def test_search_text_with_trailing_whitespace_or_indentation_drift_still_applies(scratch: Scratch) -> None:
    apply_edits(scratch, [sr("shop/cart.py", "def total(self):   \n    return sum(price_of(n) for n in self.items)\n",
                             "def total(self):\n    return round(sum(price_of(n) for n in self.items), 2)\n")])
    assert "    def total(self):\n        return round(sum(price_of(n) for n in self.items), 2)\n" in scratch.read(
        "shop/cart.py")


def test_search_text_indented_with_two_spaces_fits_a_four_space_file(scratch: Scratch) -> None:
    apply_edits(scratch, [sr("shop/cart.py", "def add(self, name):\n  self.items.append(name)\n",
                             "def add(self, name):\n  if name:\n    self.items.append(name)\n")])
    assert "    def add(self, name):\n        if name:\n            self.items.append(name)\n" in scratch.read(
        "shop/cart.py")


def test_an_empty_search_creates_a_new_file(scratch: Scratch) -> None:
    assert apply_edits(scratch, [sr("shop/tax.py", "", "VAT = 0.2\n")]) == ["shop/tax.py"]
    assert scratch.read("shop/tax.py") == "VAT = 0.2\n"


def test_search_text_not_found_shows_the_closest_real_lines(scratch: Scratch) -> None:
    with pytest.raises(EditApplyError) as caught:
        apply_edits(scratch, [sr("shop/cart.py", "    def add(self, item):\n        self.items.append(item)\n", "")])
    message = str(caught.value)
    assert "SEARCH text not found in shop/cart.py" in message
    assert "    8|     def add(self, name):\n    9|         self.items.append(name)" in message


def test_ambiguous_search_text_asks_for_more_context(scratch: Scratch) -> None:
    with pytest.raises(EditApplyError, match=r"matches 3 places in shop/cart.py \(at lines 6, 9, 12\)"):
        apply_edits(scratch, [sr("shop/cart.py", "self.items", "self.things")])
    with pytest.raises(EditApplyError, match=r"matches 3 places in shop/cart.py \(at lines 5, 8, 11\)"):
        apply_edits(scratch, [sr("shop/cart.py", "\n    def", "\n    async def")])


def test_a_whole_file_with_elided_code_is_refused(scratch: Scratch) -> None:
    lazy = "class Cart:\n    # ... rest of the code unchanged ...\n    def clear(self):\n        self.items = []\n"
    with pytest.raises(EditApplyError, match="would delete code"):
        apply_edits(scratch, [ParsedEdit("shop/cart.py", "whole", content=lazy)])
    assert "def total" in scratch.read("shop/cart.py")


def test_edits_are_all_or_nothing_and_every_failure_is_listed(scratch: Scratch) -> None:
    before = scratch.read("shop/pricing.py")
    with pytest.raises(EditApplyError) as caught:
        apply_edits(scratch, [
            sr("shop/pricing.py", "PRICES = {'apple': 3}\n", "PRICES = {}\n"),
            sr("shop/missing.py", "x = 1\n", "x = 2\n"),
            ParsedEdit("tools/gone.py", "delete"),
        ])
    assert len(caught.value.failures) == 2
    assert "shop/missing.py does not exist" in str(caught.value) and "cannot delete tools/gone.py" in str(caught.value)
    assert scratch.read("shop/pricing.py") == before


def test_a_symlink_leading_outside_is_refused_and_nothing_is_written_outside(scratch: Scratch,
                                                                             tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.py").write_text("safe = True\n")
    os.symlink(outside, scratch.root / "vendor")
    before = tree(outside)
    with pytest.raises(EditApplyError, match="'vendor' is a symlink leading outside the workspace"):
        apply_edits(scratch, [ParsedEdit("vendor/victim.py", "whole", content="safe = False\n"),
                              sr("vendor/new.py", "", "x = 1\n")])
    assert tree(outside) == before


def test_windows_line_endings_are_kept(scratch: Scratch) -> None:
    scratch.write("win.py", "a = 1\r\nb = 2\r\n")
    apply_edits(scratch, [sr("win.py", "b = 2\n", "b = 3\n")])
    assert scratch.read("win.py") == "a = 1\r\nb = 3\r\n"
