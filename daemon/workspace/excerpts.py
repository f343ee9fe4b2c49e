"""A reply to an excerpt, written back into the whole file.

A file too large to show whole is shown in parts (:func:`daemon.workspace.repomap.excerpt`: each
part after a ``(lines 942-959)`` line, the parts joined by ``...``). Asked to change it, a small
model does not write SEARCH/REPLACE blocks: it sends the parts back with its change, as if they
were the file. :func:`merge_excerpt` puts each part back where it came from — by its
``(lines A-B)`` line when the reply kept them, else (Python) each definition in place of the one
of the same name — so the change is the lines the model changed, and nothing else is lost.

Blank lines a reply drops or adds are not a change (a traceback shows the code without them, and
the model copies that), and line numbers it copied from a numbered excerpt are taken off.

    merged = merge_excerpt("pkg/big.py", text, reply_code)  # the whole new text, or None
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap

_MARKER = re.compile(r"^\s*\(lines (\d+)-(\d+)\)\s*$")
_NUMBERED = re.compile(r"^\s*\d+\| ?")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def merge_excerpt(path: str, original: str, reply: str) -> str | None:
    """``original`` with the parts of an excerpt that ``reply`` sends back written in place; None when
    the reply holds no part that can be placed (no ``(lines A-B)`` line, and no definition of the file)."""
    lines = reply.rstrip("\n").split("\n")
    if any(_MARKER.match(line) for line in lines):
        return _by_markers(original, lines)
    if path.endswith((".py", ".pyi")):
        return _by_definitions(original, "\n".join(line for line in lines if line.strip() != "..."))
    return None


def _by_markers(original: str, lines: list[str]) -> str | None:
    source = original.split("\n")
    parts: list[tuple[int, int, list[str]]] = []
    for line in lines:
        marker = _MARKER.match(line)
        if marker:
            parts.append((int(marker.group(1)), int(marker.group(2)), []))
        elif parts:
            parts[-1][2].append(line)
        elif line.strip() not in ("", "..."):  # code before the first part: from where?
            return None
    for _, _, body in parts:
        while body and body[-1].strip() in ("", "..."):  # the "..." between parts
            body.pop()
    return _written(source, [(start, end, _unnumbered(body)) for start, end, body in parts])


def _by_definitions(original: str, code: str) -> str | None:
    code = textwrap.dedent("\n".join(_unnumbered(code.split("\n"))))
    try:
        reply, tree = ast.parse(code), ast.parse(original)
    except SyntaxError:
        return None
    top = {node.name: node for node in tree.body if isinstance(node, _DEFINITIONS)}
    inner: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, _DEFINITIONS) and node not in top.values():
            inner.setdefault(node.name, []).append(node)
    source, written = original.split("\n"), code.split("\n")
    spans: list[tuple[int, int, list[str]]] = []
    for node in reply.body:
        if not isinstance(node, _DEFINITIONS):
            continue
        same = top.get(node.name) or (inner[node.name][0] if len(inner.get(node.name, [])) == 1 else None)
        if not isinstance(same, _DEFINITIONS) or same.end_lineno is None or node.end_lineno is None:
            continue
        indent = " " * same.col_offset
        body = [indent + line if line.strip() else line for line in written[_first_line(node) - 1:node.end_lineno]]
        spans.append((_first_line(same), same.end_lineno, body))
    return _written(source, spans) if spans else None


def _written(source: list[str], spans: list[tuple[int, int, list[str]]]) -> str | None:
    """``source`` with lines ``start..end`` of each span replaced by its lines; None when the spans
    overlap (the same part twice) or fall outside the file."""
    last = 0
    for start, end, _ in sorted(spans):
        if not last < start <= end <= len(source):
            return None
        last = end
    for start, end, body in sorted(spans, reverse=True):  # from the bottom: the line numbers stay true
        source[start - 1:end] = _keep_blank_lines(source[start - 1:end], body)
    return "\n".join(source)


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _unnumbered(lines: list[str]) -> list[str]:
    """The lines without the ``  12| `` a numbered excerpt put before each (when every line has one)."""
    filled = [line for line in lines if line.strip()]
    if filled and all(_NUMBERED.match(line) for line in filled):
        return [_NUMBERED.sub("", line, count=1) for line in lines]
    return lines


def _keep_blank_lines(old: list[str], new: list[str]) -> list[str]:
    """``new``, except where it differs from ``old`` only by blank lines: there, ``old``'s lines."""
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        before, after = old[i1:i2], new[j1:j2]
        if op == "equal" or [x for x in before if x.strip()] == [x for x in after if x.strip()]:
            out += before
        else:
            out += after
    return out
