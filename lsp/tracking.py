"""Where a finding is in the editor's buffer now, after the user's edits since the review.

A review reads the file as it was saved; the user keeps typing. A finding arrives with 1-based
lines of the reviewed text; :func:`place` maps them onto the buffer (0-based) through a line
diff, and :func:`shift` moves placed findings along with each incremental ``didChange``: edits
above a finding move it, an edit that touches its lines drops it (the next review decides).
Pure functions over lines, so the rules are tested without a server.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, replace

from lsprotocol import types

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
    moved = [mapping.get(line) for line in range(start, end + 1)]
    if any(m is None for m in moved) or moved[-1] - moved[0] != end - start:  # type: ignore[operator]
        return None
    return Placed(finding, moved[0], moved[-1])  # type: ignore[arg-type]


def shift(placed: Sequence[Placed], change: types.Range, text: str) -> tuple[list[Placed], list[Placed]]:
    """Apply one incremental edit (``change`` replaced by ``text``): (kept, dropped).

    A whole-line edit (from column 0 to column 0, inserting whole lines) touches only the lines it
    replaces, so inserting lines right above a finding moves it instead of dropping it."""
    first, last = change.start.line, change.end.line
    delta = text.count("\n") - (last - first)
    whole_lines = change.start.character == 0 and change.end.character == 0 and (not text or text.endswith("\n"))
    last_touched = last - 1 if whole_lines else last
    kept: list[Placed] = []
    dropped: list[Placed] = []
    for item in placed:
        if item.end < first:
            kept.append(item)
        elif item.start > last_touched:
            kept.append(replace(item, start=item.start + delta, end=item.end + delta))
        else:
            dropped.append(item)
    return kept, dropped
