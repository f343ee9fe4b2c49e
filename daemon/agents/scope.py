"""What a phase sees of the code inside a loop: what changed, what a comment names, what failures reach.

The first look at the code is whole (within the context budget). After that a phase gets what it
needs, so a cycle costs what changed rather than the whole program again (``Workbench.code``):

- a review after its first cycle: the diff since its last comment and the files that diff touches;
- the fix of a review comment: the files the comment names (every file when it names none), and
  a map of the rest;
- a test fix: the files the failing tests' output reaches (tracebacks, ``file:line``), and a map
  of the rest; a completion: the files with placeholders, and a map of the rest.

A map names every other file with its definitions, so the model can still ask for one
(``QUESTION: ...``). ``imports`` and ``code_map`` are template fields of their own (requirements,
manuals).
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from daemon.workspace.packages import outside_imports
from daemon.workspace.repomap import symbols_for

_SOURCE = (".py", ".pyi", ".js", ".ts", ".go", ".rs", ".rb", ".java", ".c", ".cpp", ".cs")
_FILE_REF = re.compile(r"[\w./-]+\.\w+")


@dataclass
class View:
    """The part of the code a phase's ``{code}`` shows; None fields: not narrowed that way."""

    focus: list[str] | None = None          # these files whole, a map of the rest
    since: dict[str, str] | None = None     # the files as the reviewer last saw them: show the diff since
    why: str = ""                           # for the prompt: why only these files are shown


def named_paths(text: str, paths: list[str]) -> list[str]:
    """The files of ``paths`` that ``text`` names, by path or by file name (``app.py``, ``src/app.py``)."""
    words = set(_FILE_REF.findall(text))
    named = []
    for path in paths:
        name = PurePosixPath(path).name
        if path in words or name in words or any(w.endswith("/" + name) or path.endswith("/" + w) for w in words):
            named.append(path)
    return named


def with_imports(focus: list[str], files: dict[str, str]) -> list[str]:
    """``focus`` and the project's own Python files they import (the code a failing test reaches)."""
    by_module: dict[str, str] = {}
    for path in files:
        if path.endswith(".py"):
            dotted = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            for start in range(dotted.count(".") + 1):  # "src/pkg/mod.py" is also "pkg.mod" and "mod"
                by_module.setdefault(dotted.split(".", start)[-1], path)
    out = list(focus)
    for path in focus:
        try:
            tree = ast.parse(files.get(path, ""))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            out += [by_module[n] for n in names if n in by_module]
    return list(dict.fromkeys(out))


def changed_since(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """Files added, changed or removed between two snapshots (path -> text)."""
    return sorted(p for p in set(before) | set(now) if before.get(p) != now.get(p))


def diff_since(before: dict[str, str], now: dict[str, str]) -> str:
    """A unified diff from ``before`` to ``now`` (empty when nothing changed)."""
    parts: list[str] = []
    for path in changed_since(before, now):
        old, new = before.get(path), now.get(path)
        parts.extend(difflib.unified_diff((old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True),
                                          fromfile=f"a/{path}" if old is not None else "/dev/null",
                                          tofile=f"b/{path}" if new is not None else "/dev/null"))
    return "".join(line if line.endswith("\n") else line + "\n" for line in parts)


def _python_outline(source: str) -> list[str]:
    """Top-level signatures (with their docstring's first line) and command-line options."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = source.splitlines()
    out = []
    doc = ast.get_docstring(tree)
    if doc:
        out.append(f'  """{doc.splitlines()[0]}"""')
    nodes = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    for node in nodes:
        members = [node] + [m for m in getattr(node, "body", []) if isinstance(node, ast.ClassDef)
                            and isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)]
        for member in members:
            indent = "    " if member is not node else "  "
            out.append(indent + lines[member.lineno - 1].strip())
            first = (ast.get_docstring(member) or "").strip().splitlines()
            if first:
                out.append(indent + f'    """{first[0]}"""')
    out += ["  " + line.strip() for line in lines if "add_argument(" in line or "add_parser(" in line]
    return out


def code_map(files: dict[str, str], skip: list[str] | None = None) -> str:
    """Each file (except ``skip``) with what it defines: Python signatures, docstrings and options;
    other languages' symbol names; other files by name and size."""
    out = []
    for path in sorted(set(files) - set(skip or [])):
        text = files[path]
        if path.endswith((".py", ".pyi")):
            outline = _python_outline(text)
        else:
            outline = [f"  {s.kind} {s.name}" for s in symbols_for(path, text)]
        out.append(f"{path} ({len(text.splitlines())} lines)")
        out.extend(outline)
    return "\n".join(out)


def third_party_imports(files: dict[str, str]) -> str:
    """What requirements.txt must cover: the top-level modules the code imports that are neither the
    standard library nor the project's own, one a line; the first lines of files in other languages
    (their imports are not parsed here); "" when there is nothing."""
    found, broken = outside_imports(files)
    other = sorted(broken + [p for p in files if p.endswith(_SOURCE) and not p.endswith((".py", ".pyi"))])
    lines = list(found)
    for path in other:  # another language (or unparsable): its head, where imports are
        head = "\n".join(files[path].splitlines()[:40])
        lines.append(f"{path} (its first lines; read its imports):\n{head}")
    return "\n".join(lines)
