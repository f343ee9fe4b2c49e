"""HumanEvalFix (``data/humanevalfix/``): 164 one-bug Python functions with their docstrings and
tests, as :class:`~daemon.eval.suite.Item` records, and the benchmark's way to test a module.

An item's workspace is one file, ``<entry_point>.py``: the buggy function with its docstring
(HumanEvalFixDocs: the tests stay hidden from the team). ``item.data`` holds ``entry_point``,
``canonical`` (the module with the canonical solution), ``test`` and ``bug`` (the hunks from
``bugs.json``: ``line``/``end_line`` in that file)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from daemon.eval.scoring import ProgramRun, run_python
from daemon.eval.suite import Item
from daemon.json_types import JsonObject

DATA = Path(__file__).resolve().parent / "data" / "humanevalfix"
IMPORT_HELPER = (
    "import math", "import re", "import sys", "import copy", "import datetime", "import itertools",
    "import collections", "import heapq", "import statistics", "import functools", "import hashlib",
    "import string", "from typing import *", "from collections import *",
)  # the bigcode harness's header (without numpy, which no test uses)


@functools.cache
def load_items() -> tuple[Item, ...]:
    """All 164 items in the dataset's order (``Python/0`` … ``Python/163``)."""
    bugs = json.loads((DATA / "bugs.json").read_text(encoding="utf-8"))
    items = []
    with (DATA / "humanevalpack_python.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                items.append(_item(json.loads(line), bugs))
    return tuple(items)


def _item(row: JsonObject, bugs: JsonObject) -> Item:  # the data files' JSON
    entry = row["entry_point"]
    file = f"{entry}.py"
    return Item(id=row["task_id"], files={file: row["prompt"] + row["buggy_solution"]}, data={
        "entry_point": entry, "file": file, "canonical": row["prompt"] + row["canonical_solution"],
        "test": row["test"], "bug_type": row["bug_type"], "bug": bugs[row["task_id"]]["hunks"]})


def buggy_module(item: Item) -> str:
    return item.files[item.data["file"]]


async def run_item_tests(item: Item, module: str) -> ProgramRun:
    """The item's tests against ``module`` (the whole file), in the sandbox with a 10 s limit."""
    return await run_python("\n".join(IMPORT_HELPER) + "\n" + module + "\n" + item.data["test"])


def covers_bug(item: Item, start: int, end: int) -> bool:
    """A finding on lines ``start..end`` catches the bug: at most 3 lines, touching a bug line ±1."""
    if end - start + 1 > 3:
        return False
    return any(start <= hunk["end_line"] + 1 and end >= hunk["line"] - 1 for hunk in item.data["bug"])
