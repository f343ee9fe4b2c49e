"""Find code that is still a placeholder: what the completion loop asks the programmer to finish.

For Python, the syntax tree decides: a function whose body is only ``pass``, ``...`` or
``raise NotImplementedError`` is unfinished (abstract methods and overloads are not), and a
file that does not parse is unfinished. A ``pass`` in an ``except`` block is fine — unlike the
reference implementation, which flagged any ``pass``. In every code file, ``TODO``/``FIXME``
comments count.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

CODE_SUFFIXES = (".py", ".js", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".c", ".h", ".cpp", ".hpp", ".rb",
                 ".sh", ".kt", ".swift", ".cs", ".php")
_TODO = re.compile(r"(#|//|/\*|--)\s*(TODO|FIXME)\b", re.IGNORECASE)
_SKIP_DECORATORS = {"abstractmethod", "overload", "abc.abstractmethod", "typing.overload"}


@dataclass
class Unfinished:
    file: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}"


def _decorator_name(node: ast.expr) -> str:
    return ast.unparse(node.func if isinstance(node, ast.Call) else node)


def _is_stub(body: list[ast.stmt]) -> bool:
    statements = body
    first = statements[0] if statements else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        statements = statements[1:]  # the docstring
    if len(statements) != 1:
        return not statements  # a function that is only a docstring is a stub too
    stmt = statements[0]
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis:
        return True
    if isinstance(stmt, ast.Raise) and stmt.exc is not None:
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def _python(path: str, text: str) -> list[Unfinished]:
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [Unfinished(path, exc.lineno or 1, f"does not parse: {exc.msg}")]
    out = []
    protocols = {node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                 and any(ast.unparse(base).endswith("Protocol") for base in node.bases)}
    inside_protocol = {id(item) for cls in protocols for item in cls.body}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or id(node) in inside_protocol:
            continue
        if any(_decorator_name(d) in _SKIP_DECORATORS for d in node.decorator_list):
            continue
        if _is_stub(node.body):
            out.append(Unfinished(path, node.lineno, f"function {node.name}() has no implementation"))
    return out


def find_unfinished(files: Iterable[tuple[str, str]]) -> list[Unfinished]:
    """Every placeholder in the given ``(path, text)`` code files, in file and line order."""
    found: list[Unfinished] = []
    for path, text in files:
        if not path.endswith(CODE_SUFFIXES):
            continue
        if path.endswith(".py"):
            found.extend(_python(path, text))
        for number, line in enumerate(text.splitlines(), 1):
            if _TODO.search(line):
                found.append(Unfinished(path, number, f"TODO left: {line.strip()[:80]}"))
    return sorted(found, key=lambda u: (u.file, u.line))
