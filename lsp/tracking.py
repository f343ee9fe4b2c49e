"""Where a finding is in the editor's buffer now, after the user's edits since the review.

A review reads the file as it was saved; the user keeps typing. A finding arrives with 1-based
lines of the reviewed text; :func:`place` maps them onto the buffer (0-based) through a line
diff, and :func:`edit_lines` + :func:`follow` move placed findings (and lint) along with each
incremental ``didChange``: edits elsewhere move them, an edit that changes the text of their
lines drops them (the next review decides).
Pure functions over lines, so the rules are tested without a server.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import Field, dataclass, replace
from typing import Any, ClassVar, Protocol, TypeVar

from daemon.api.protocol import FindingInfo


@dataclass(frozen=True)
class Placed:
    """A finding and the 0-based lines (``start`` to ``end``, inclusive) it covers in the buffer now."""

    finding: FindingInfo
    start: int
    end: int


def line_map(old: Sequence[str], new: Sequence[str]) -> dict[int, int]:
    """Old line index -> new line index for every line the edit left unchanged."""
    if old == new:
        return {i: i for i in range(len(old))}
    mapping: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            mapping[block.a + k] = block.b + k
    return mapping


def place(finding: FindingInfo, reviewed: Sequence[str], current: Sequence[str]) -> Placed | None:
    """The finding in the current buffer, or None when its lines were edited (or never existed)."""
    start = finding.start_line - 1
    end = max(start, (finding.end_line or finding.start_line) - 1)
    if start < 0 or end >= len(reviewed):
        return None
    mapping = line_map(reviewed, current)
    if any(line not in mapping for line in range(start, end + 1)):
        return None
    first, last = mapping[start], mapping[end]
    if last - first != end - start:
        return None
    return Placed(finding, first, last)


Item = TypeVar("Item", bound="Spanned")


class Spanned(Protocol):
    """Anything shown on lines ``start``..``end`` (0-based, inclusive) of the buffer: findings, lint;
    a dataclass, so that :func:`follow` can move it with ``dataclasses.replace``."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


def edit_lines(old: Sequence[str], start: tuple[int, int], end: tuple[int, int],
               text: str) -> tuple[list[str], dict[int, int]]:
    """Apply one edit to ``old`` (lines without their line feeds; positions in characters):
    the new lines and, for every old line whose text the edit left as it was, its new index.

    Only lines whose text changed are lost: Neovim's ``o`` (``(L, eol)``-``(L+1, 0)`` replaced by
    ``"\\n<new>\\n"``), Enter at the end of a line, a paste of whole lines, an undo that restores
    them all keep the lines around the edit."""
    lines = list(old) or [""]
    first = min(start[0], len(lines) - 1)
    last = min(max(end[0], first), len(lines) - 1)
    prefix = lines[first][:start[1]]
    suffix = lines[last][end[1]:] if end[0] <= last else ""
    block_old = lines[first:last + 1]
    block_new = (prefix + text + suffix).split("\n")
    new = lines[:first] + block_new + lines[last + 1:]
    same_top = 0
    while same_top < min(len(block_old), len(block_new)) and block_old[same_top] == block_new[same_top]:
        same_top += 1
    same_bottom = 0
    while (same_bottom < min(len(block_old), len(block_new)) - same_top
           and block_old[-1 - same_bottom] == block_new[-1 - same_bottom]):
        same_bottom += 1
    delta = len(block_new) - len(block_old)
    mapping = {i: i for i in range(first + same_top)}
    mapping.update({last - j: last - j + delta for j in range(same_bottom)})
    mapping.update({i: i + delta for i in range(last + 1, len(lines))})
    return new, mapping


def follow(items: Sequence[Item], mapping: dict[int, int]) -> tuple[list[Item], list[Item]]:
    """(kept, dropped): an item is kept, moved, when all its lines are unchanged and still together."""
    kept: list[Item] = []
    dropped: list[Item] = []
    for item in items:
        first, last = mapping.get(item.start), mapping.get(item.end)
        whole = all(line in mapping for line in range(item.start, item.end + 1))
        if whole and first is not None and last is not None and last - first == item.end - item.start:
            kept.append(replace(item, start=first, end=last))
        else:
            dropped.append(item)
    return kept, dropped
