"""Find the line of a key in a TOML file's text, so semantic errors can say where they are.

``tomllib`` reports line numbers only for syntax errors. For "unknown role" or "missing
template" the loader knows the key's path (``["steps", 2, "instructor"]``) and asks this
module for its line: tables and arrays of tables are followed by their headers, keys by their
``key =`` line. When the exact key cannot be found, the line of the closest enclosing table
is returned, and 1 when nothing matches.
"""

from __future__ import annotations

import re

_ARRAY_HEADER = re.compile(r"^\s*\[\[\s*([^\]]+?)\s*\]\]")
_TABLE_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]")


def _norm(name: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in name.split("."))


def _headers(lines: list[str]) -> list[tuple[int, str, bool]]:
    """(index, dotted name, is_array) of each header outside multi-line strings."""
    out = []
    in_string: str | None = None
    for i, line in enumerate(lines):
        if in_string is None:
            match = _ARRAY_HEADER.match(line)
            if match:
                out.append((i, _norm(match.group(1)), True))
            else:
                match = _TABLE_HEADER.match(line)
                if match:
                    out.append((i, _norm(match.group(1)), False))
        for quote in ('"""', "'''"):
            if in_string in (None, quote) and line.count(quote) % 2 == 1:
                in_string = quote if in_string is None else None
    return out


def _key_line(lines: list[str], start: int, end: int, key: str, header_rows: set[int]) -> int | None:
    pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for i in range(start, end):
        if i in header_rows:
            break  # keys of this table end at the next header
        if pattern.match(lines[i]):
            return i
    return None


def line_of(text: str, path: list[str | int]) -> int:
    """1-based line of the key at ``path`` (strings are keys, ints index arrays of tables)."""
    lines = text.splitlines()
    headers = _headers(lines)
    header_rows = {row for row, _, _ in headers}
    start, end, prefix, best = 0, len(lines), "", 0
    i = 0
    while i < len(path):
        key = path[i]
        if not isinstance(key, str):
            break
        name = f"{prefix}.{key}" if prefix else key
        nxt = path[i + 1] if i + 1 < len(path) else None
        if isinstance(nxt, int):
            rows = [row for row, h, arr in headers if arr and h == name and start <= row < end]
            if nxt >= len(rows):
                break
            row = rows[nxt]
            later = [r for r, h, _ in headers if r > row and r < end and not h.startswith(name + ".")]
            start, end, prefix, best = row + 1, (later[0] if later else end), name, row
            i += 2
            continue
        rows = [row for row, h, arr in headers if not arr and h == name and start <= row < end]
        if rows:
            row = rows[0]
            later = [r for r, h, _ in headers if r > row and r < end and not h.startswith(name + ".")]
            start, end, prefix, best = row + 1, (later[0] if later else end), name, row
            i += 1
            continue
        found = _key_line(lines, start, end, key, header_rows - {best})
        if found is not None:
            best = found
        break
    return best + 1 if lines else 1
