"""Reading the conventions of a reply: the termination marker and dehallucination questions.

Kept forgiving on purpose: small local models wrap markers in bold, put them on the last line
after a sentence, or prefix a question with ``**Question:**``. Lines inside code fences never
count (code may well contain ``<INFO>`` or ``QUESTION:``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

QUESTION_PREFIX = "QUESTION:"
HUMAN_PREFIX = "ASK_HUMAN:"
_QUESTION = re.compile(r"question\s*[*_]*\s*:\s*(.+)$", re.IGNORECASE)
_HUMAN = re.compile(r"ask[_ ]human\s*[*_]*\s*:\s*(.+)$", re.IGNORECASE)
_DECOR = " \t*_#>`-"
_FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(index, line) for lines outside fenced code blocks."""
    fence: str | None = None
    for i, line in enumerate(text.splitlines()):
        match = _FENCE.match(line)
        if match:
            fence = None if fence == match.group(1) else (fence or match.group(1))
            continue
        if fence is None:
            yield i, line


def find_conclusion(text: str, marker: str) -> str | None:
    """Text after the marker when a line starts with it (or with ``INFO:``, the marker ``<INFO>``
    without brackets; or the last line contains it); else None."""
    lines = text.splitlines()
    prose = list(prose_lines(text))
    key = marker.lower()
    found: tuple[int, int] | None = None
    for i, line in prose:
        stripped = line.lstrip(_DECOR)
        if stripped.lower().startswith(key):
            found = (i, len(line) - len(stripped) + len(marker))
    bare = marker.strip("<>") + ":" if marker.startswith("<") and marker.endswith(">") else None
    if found is None and bare:  # "INFO: the plan": the marker without its brackets (small models drop them)
        for i, line in prose:
            stripped = line.lstrip(_DECOR)
            if stripped.startswith(bare):
                found = (i, len(line) - len(stripped) + len(bare))
    if found is None:
        tail = [(i, line) for i, line in prose if line.strip()][-1:]
        for i, line in tail:
            at = line.lower().find(key)
            if at >= 0:
                found = (i, at + len(marker))
    if found is None:
        return None
    row, col = found
    rest = "\n".join([lines[row][col:], *lines[row + 1:]])
    return rest.strip().strip("*_` ").lstrip(":").strip()


def _prefixed(text: str, pattern: re.Pattern[str]) -> str | None:
    for _, line in prose_lines(text):
        match = pattern.match(line.lstrip(_DECOR))
        if match and match.group(1).strip("*_ "):
            return match.group(1).strip().strip("*_ ").strip()
    return None


def find_question(text: str) -> str | None:
    """The question of a reply that asks the instructor (``QUESTION: ...``)."""
    return _prefixed(text, _QUESTION)


def find_human_question(text: str) -> str | None:
    """The question of a reply that must go to the human (``ASK_HUMAN: ...``)."""
    return _prefixed(text, _HUMAN)
