"""Applying parsed edits to a scratch workspace, tolerant of what models get slightly wrong.

SEARCH text is matched exactly first, then ignoring trailing whitespace, then ignoring
indentation (the replacement is re-indented to fit). A SEARCH that matches nowhere, or in
several places, fails with the closest lines of the real file, numbered, so the model can
copy them. A call is all-or-nothing: if any edit fails, no file is written.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Protocol

from daemon.workspace.paths import PathOutsideWorkspace
from daemon.workspace.reply_parser import EditApplyError, ParsedEdit
from daemon.workspace.scratch import NotEditable

_COMMENT = re.compile(r"^\s*(?:#|//|/\*|<!--|--|;)\s*(?P<body>.*?)\s*(?:\*/|-->)?\s*$")
_ELISION_WORDS = re.compile(r"\b(rest|remaining|existing|unchanged|previous|other|omitted|same|keep|as before)\b", re.I)
_ELISION_PHRASE = re.compile(
    r"^(?:the )?rest of (?:the )?(?:code|file|class|module|methods?|functions?)\b"
    r"|^(?:code|everything else|the rest|other methods) (?:remains? |stays? )?(?:unchanged|the same)\b",
    re.I,
)


class EditableFiles(Protocol):
    """What edits are applied to: a :class:`~daemon.workspace.scratch.Scratch` copy, or files in
    memory (``daemon.teams.solution``)."""

    def read(self, path: str, /) -> str: ...

    def write(self, path: str, text: str, /) -> None: ...

    def delete(self, path: str, /) -> None: ...

    def list_files(self) -> list[str]: ...


def apply_edits(scratch: EditableFiles, edits: list[ParsedEdit]) -> list[str]:
    """Apply ``edits`` in order and return the paths whose content changed.

    Raises EditApplyError (message for the model, every failure listed) and writes nothing
    when any edit does not fit.
    """
    originals: dict[str, str | None] = {}
    pending: dict[str, str | None] = {}
    failures: list[str] = []
    for number, edit in enumerate(edits, 1):
        try:
            if edit.path not in pending:
                originals[edit.path] = _current_text(scratch, edit.path)
                pending[edit.path] = originals[edit.path]
            pending[edit.path] = _apply_one(edit, pending[edit.path], scratch)
        except (EditApplyError, PathOutsideWorkspace, NotEditable) as exc:
            failures.append(f"Edit {number} ({edit.kind} {edit.path}): {exc}")
    if failures:
        raise EditApplyError(
            f"None of your edits were applied: {len(failures)} of {len(edits)} did not fit the files. "
            "Fix these and send all your edits again.\n\n" + "\n\n".join(failures),
            failures,
        )
    changed = []
    for path, text in pending.items():
        if text == originals[path]:
            continue
        if text is None:
            scratch.delete(path)
        else:
            scratch.write(path, text)
        changed.append(path)
    return changed


def _current_text(scratch: EditableFiles, path: str) -> str | None:
    try:
        return scratch.read(path)
    except FileNotFoundError:
        return None


def _apply_one(edit: ParsedEdit, current: str | None, scratch: EditableFiles) -> str | None:
    if edit.kind == "delete":
        if current is None:
            raise EditApplyError(f"cannot delete {edit.path}: there is no such file.")
        return None
    crlf = current is not None and current.count("\r\n") > current.count("\n") // 2
    text = None if current is None else current.replace("\r\n", "\n")
    result = _whole(edit, text) if edit.kind == "whole" else _search_replace(edit, text, scratch)
    return result.replace("\n", "\r\n") if crlf else result


def _whole(edit: ParsedEdit, current: str | None) -> str:
    if current is not None:
        elided = [line for line in elisions(edit.content) if line not in current]
        if elided:
            raise EditApplyError(
                f"your whole-file block for {edit.path} contains {elided[0].strip()!r} instead of real code. "
                "A whole-file block replaces the entire file, so that would delete code. Send the complete file, "
                "or use SEARCH/REPLACE blocks for just the parts that change."
            )
    return edit.content


def elisions(text: str) -> list[str]:
    """Comment lines that stand for omitted code (``# ... rest of the code unchanged ...``)."""
    found = []
    for line in text.split("\n"):
        comment = _COMMENT.match(line)
        if not comment:
            continue
        body = comment["body"]
        dotted = "..." in body or "…" in body
        if (dotted and (not body.strip(".… ") or _ELISION_WORDS.search(body))) or _ELISION_PHRASE.match(body):
            found.append(line)
    return found


def _search_replace(edit: ParsedEdit, current: str | None, scratch: EditableFiles) -> str:
    search, replace = edit.search.replace("\r\n", "\n"), edit.replace.replace("\r\n", "\n")
    if not search.strip():
        if current is None or not current.strip() or current == replace:
            return replace
        raise EditApplyError(
            f"the SEARCH section is empty but {edit.path} already exists. Copy the lines to change into SEARCH, "
            "or send the whole file in a whole-file block."
        )
    if current is None:
        similar = difflib.get_close_matches(edit.path, scratch.list_files(), n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(similar)}?" if similar else ""
        raise EditApplyError(
            f"{edit.path} does not exist.{hint} To create a new file, leave SEARCH empty or send a whole-file block."
        )
    exact = current.count(search)
    if exact == 1:
        return current.replace(search, replace, 1)
    lines = current.split("\n")
    wanted = _trim_blank(search.split("\n"))
    for normalize in (str.rstrip, str.strip):
        starts = _find_all(lines, wanted, normalize)
        if len(starts) == 1:
            return _splice(lines, starts[0], wanted, _trim_final_newline(replace))
        if len(starts) > 1:
            raise _ambiguous(edit.path, [s + 1 for s in starts])
    if exact > 1:
        skip = len(search) - len(search.lstrip())  # report the line where the searched text starts
        starts = [m.start() + skip for m in re.finditer(re.escape(search), current)]
        raise _ambiguous(edit.path, [current[:start].count("\n") + 1 for start in starts])
    if replace.strip() and current.count(replace) == 1:
        return current  # the model re-sent an edit that is already in the file
    raise EditApplyError(
        f"SEARCH text not found in {edit.path}. SEARCH must copy the file's current lines exactly. "
        + closest_lines(lines, wanted, edit.path)
    )


def _ambiguous(path: str, line_numbers: list[int]) -> EditApplyError:
    where = ", ".join(str(n) for n in line_numbers[:6])
    return EditApplyError(
        f"the SEARCH text matches {len(line_numbers)} places in {path} (at lines {where}). "
        "Include more surrounding lines in SEARCH so it matches exactly one place."
    )


def _trim_blank(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _trim_final_newline(text: str) -> list[str]:
    return text[:-1].split("\n") if text.endswith("\n") else (text.split("\n") if text else [])


def _find_all(lines: list[str], wanted: list[str], normalize: Callable[[str], str]) -> list[int]:
    target = [normalize(line) for line in wanted]
    have = [normalize(line) for line in lines]
    size = len(target)
    return [s for s in range(len(have) - size + 1) if have[s] == target[0] and have[s:s + size] == target]


def _splice(lines: list[str], start: int, wanted: list[str], replacement: list[str]) -> str:
    """Replace ``lines[start:start+len(wanted)]``, re-indenting ``replacement`` the way the file is indented.

    Each indentation width the SEARCH used maps to the width the file really has at that
    line, so a uniform shift and a 2-versus-4-spaces drift are both corrected.
    """
    found = lines[start:start + len(wanted)]
    widths: dict[int, str] = {}
    for said, have in zip(wanted, found, strict=True):
        if said.strip():
            widths.setdefault(len(_indent(said)), _indent(have))
    if any(len(real) != width or (real and real[0] == "\t") for width, real in widths.items()):
        replacement = [_reindent(line, widths) for line in replacement]
    return "\n".join(lines[:start] + replacement + lines[start + len(wanted):])


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindent(line: str, widths: dict[int, str]) -> str:
    if not line.strip():
        return line
    width = len(_indent(line))
    if width in widths:
        return widths[width] + line.lstrip()
    below = sorted(w for w in widths if w < width)
    if below:  # deeper than anything SEARCH showed: extra levels at the file's own step
        base = below[-1]
        scale = 1.0
        if len(below) >= 2 and below[-1] != below[-2]:
            scale = max(1.0, (len(widths[below[-1]]) - len(widths[below[-2]])) / (below[-1] - below[-2]))
        return widths[base] + " " * round((width - base) * scale) + line.lstrip()
    return widths[min(widths)] + line.lstrip() if widths else line


def closest_lines(lines: list[str], wanted: list[str], path: str, extra: int = 2) -> str:
    """The numbered lines of ``path`` that look most like ``wanted``, for an error the model can act on."""
    if not lines or not wanted:
        return ""
    size = len(wanted)
    needle = "\n".join(line.strip() for line in wanted)
    windows = range(max(1, len(lines) - size + 1))
    scored = []
    for start in windows:
        matcher = difflib.SequenceMatcher(None, needle, "\n".join(s.strip() for s in lines[start:start + size]))
        scored.append((matcher.quick_ratio(), start, matcher))
    best_ratio, best_start = -1.0, 0
    for _, start, matcher in sorted(scored, key=lambda item: -item[0])[:8]:
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best_ratio, best_start = ratio, start
    first = max(0, best_start - extra)
    last = min(len(lines), best_start + size + extra)
    shown = "\n".join(f"{n + 1:>5}| {lines[n]}" for n in range(first, last))
    return f"The closest lines in {path} are lines {first + 1}-{last}:\n{shown}"
