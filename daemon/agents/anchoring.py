"""Placing a review finding on the right line of the real file, forgivingly but never wrongly.

Models cite code loosely: ``line 8: `if x == arr[mid] and ...` ``, a re-indented or respaced copy,
the first half of a line, a line number that is one off, or a number alone. :func:`clean_code`
takes such a citation apart (the number, the code); :func:`find_code` finds the code in the file
(spacing ignored, a trailing ``...`` meaning "and so on", never a merely similar line);
:func:`anchor_line` checks a bare line number against the fix and the message and moves it to
the neighbouring line they point at. Whatever cannot be placed on a line that exists and matches
is rejected by the caller, with the reason.
"""

from __future__ import annotations

import difflib
import io
import keyword
import re
import tokenize

_LINE_PREFIX = re.compile(r"^\s*(?:lines?|ln|l)\s*\.?\s*(\d+)(?:\s*[-–]\s*\d+)?\s*[:.,)|-]?\s*", re.IGNORECASE)
_NUMBER_PREFIX = re.compile(r"^\s*(\d+)\s*(?:[:|]\s?|$)")  # "8: code", "8| code", "8"
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…)\s*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPACE = re.compile(r"\s+")
NEAR = 2  # how far a bare line number may be moved to the line its fix or message points at
_FIX_ALIKE = 0.5  # how alike a fix must be to the line it corrects
_WORDS = {"the", "is", "in", "of", "to", "a", "an", "and", "not", "but", "this", "that", "it", "be", "are", "was",
          "which", "module", "function", "variable", "code", "line", "should", "when", "if", "for", "return",
          "value", "values", "wrong", "bug", "error", "instead", "list", "string", "number", "result"}


def _squeeze(text: str) -> str:
    return _SPACE.sub("", text)


def clean_code(value: str) -> tuple[str, int | None]:
    """The code a citation quotes, and the line number it names (``line 8: `x = 1` `` -> ``("x = 1", 8)``)."""
    text, number = value.strip(), None
    for _ in range(3):  # prefixes and wrappers come in any order: "`line 8: x`", "line 8: `x`"
        before = text
        match = _LINE_PREFIX.match(text) or _NUMBER_PREFIX.match(text)
        if match:
            number = number or int(match.group(1))
            text = text[match.end():].strip()
        text = text.strip().strip("`").strip()
        if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'" and text.count(text[0]) == 2:
            text = text[1:-1].strip()
        if text == before:
            break
    return text, number


def _fragments(quote_line: str) -> list[str]:
    """A quoted line's pieces around any ``...``, spacing removed."""
    return [p for p in (_squeeze(part) for part in _ELLIPSIS.split(quote_line)) if p]


def line_has(line: str, quote_line: str) -> bool:
    """Whether ``line`` holds the quoted code (spacing ignored; ``...`` stands for anything)."""
    pieces, squeezed, at = _fragments(quote_line), _squeeze(line), 0
    if not pieces:
        return False
    for piece in pieces:
        found = squeezed.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _alike(a: str, b: str) -> float:
    a, b = _squeeze(a), _squeeze(b)
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() if a and b else 0.0


def first_code_line(quote: str) -> str:
    return next((q.strip() for q in quote.splitlines() if q.strip()), "")


def find_code(lines: list[str], quote: str, near: int) -> int | None:
    """1-based line where ``quote``'s first line is, nearest to ``near`` (spacing ignored, ``...``
    standing for the rest); None when the file has no such line. Never a merely similar line: a
    bug is often one character (``a - b`` quoted from a file that now says ``a + b``)."""
    first = first_code_line(quote)
    if len("".join(_fragments(first))) < 3:
        return None
    hits = [i + 1 for i, line in enumerate(lines) if line_has(line, first)]
    return min(hits, key=lambda n: abs(n - near)) if hits else None


def quote_end(lines: list[str], quote: str, start: int) -> int:
    """The last line of the file that a multi-line quote starting at ``start`` still matches."""
    wanted = [q.strip() for q in quote.splitlines() if q.strip()][1:]
    end, n = start, start  # 1-based
    for text in wanted:
        while n < len(lines) and not lines[n].strip():
            n += 1
        if n >= len(lines) or not line_has(lines[n], text):
            break
        end = n = n + 1
    return end


def code_names(lines: list[str]) -> tuple[dict[int, set[str]], set[int]]:
    """The names of code (not strings or comments) on each 1-based line, and the lines holding any
    code at all: Python's tokenizer when the file is Python, else identifiers of non-comment lines."""
    names: dict[int, set[str]] = {}
    code: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            if token.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER):
                code.update(range(token.start[0], token.end[0] + 1))
            if token.type == tokenize.NAME and not keyword.iskeyword(token.string):
                names.setdefault(token.start[0], set()).add(token.string)
        return names, code
    except (tokenize.TokenError, SyntaxError, IndentationError):
        names.clear()
    for n, line in enumerate(lines, 1):
        if line.strip() and not line.lstrip().startswith(("#", "//", "*", "/*")):
            names[n] = set(_IDENT.findall(line)) - set(keyword.kwlist)
            code.add(n)
    return names, code


def _mentioned(message: str, names: dict[int, set[str]]) -> set[str]:
    """Names of the file's code that the message mentions (``mid``, ``arr``), not common words."""
    known = set().union(*names.values()) if names else set()
    return {w for w in set(_IDENT.findall(message)) & known if len(w) > 1 and w.lower() not in _WORDS}


_PROSE_START = re.compile(r"^\W*(in|change|add|remove|replace|use|the|this|it|should|make|ensure|fix|update|"
                          r"instead|you|we|to)\b", re.IGNORECASE)


def is_code(fix: str) -> bool:
    """A fix that reads like a line of code, not a sentence about one ("In line 14, change ...")."""
    text = fix.strip()
    if not text or _PROSE_START.match(text) or re.search(r"\bline \d+", text, re.IGNORECASE):
        return False
    return bool(re.search(r"[=()\[\]{}:+*/<>%-]", text)) or len(text.split()) <= 3


def anchor_line(lines: list[str], start: int, fix: str | None, message: str) -> tuple[int | None, str]:
    """A bare line number checked against the finding: the line within ``NEAR`` that the fix
    corrects (the fix is a changed copy of it), else the one whose code uses a name the message
    mentions; the given line when neither points elsewhere. ``(None, reason)`` when it cannot stand:
    a blank line, or no line near it with the code the finding is about."""
    window = range(max(1, start - NEAR), min(len(lines), start + NEAR) + 1)
    fixed = first_code_line(fix or "")
    if fixed and is_code(fixed):
        scores = {n: _alike(lines[n - 1], fixed) for n in window if lines[n - 1].strip()}
        if scores:
            best = max(scores, key=lambda n: (scores[n], -abs(n - start)))
            if scores[best] >= _FIX_ALIKE and scores[best] - scores.get(start, 0.0) >= 0.15:
                return best, ""
            if scores.get(start, 0.0) >= _FIX_ALIKE:
                return start, ""
    names, code = code_names(lines)
    said = _mentioned(message + " " + (fixed if not is_code(fixed) else ""), names)
    if said:
        holding = [n for n in window if names.get(n, set()) & said]
        if not holding:
            return None, f"line {start} does not match the finding (it names {', '.join(sorted(said)[:3])})"
        return min(holding, key=lambda n: abs(n - start)), ""
    if not lines[start - 1].strip():
        return None, f"line {start} is blank"
    if start not in code:
        return None, f"line {start} holds no code (a docstring or a comment)"
    return start, ""


def indented_like(replacement: str, line: str) -> str:
    """A fix written without indentation gets the indentation of the line it replaces."""
    indent = line[: len(line) - len(line.lstrip())]
    body = replacement.strip("\n")
    if not indent or body[:1] in (" ", "\t") or not body:
        return body
    return "\n".join(indent + part if part.strip() else part for part in body.splitlines())
