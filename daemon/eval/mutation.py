"""Single-line mutants of a repository's Python files, made by Cosmic Ray's operators (never by hand).

Cosmic Ray (``cosmic_ray``) parses a module with parso and offers, per operator, every position
where the operator applies; :func:`cosmic_ray.mutating.mutate_code` applies one occurrence and
returns the module's new text with its formatting kept. A mutant here is one such application
that changes exactly one line (same line count, the result still parses): what a one-line bug
looks like. Operators that take arguments (variable replacer/inserter: random by design) and the
exception replacer (it names ``CosmicRayTestingException``, which would give the mutant away) are
not used, and nothing inside a type annotation is mutated: ``str | None`` made ``str / None`` is
never run under ``from __future__ import annotations`` (a mutant no test can kill), and otherwise
fails at import, which is no one-line bug a person makes.

:func:`candidates` lists every position cheaply (no mutated text); :func:`sample_order` orders them
with a seed; :func:`Candidate.apply` makes the mutated text of one.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from daemon.workspace.files import list_repo_files
from daemon.workspace.repomap import is_test_file

SKIPPED_OPERATORS = frozenset({"core/ExceptionReplacer", "core/VariableReplacer", "core/VariableInserter"})


class MutationError(RuntimeError):
    """The files cannot be mutated (none match, none parse); the message says what to do."""


@dataclass(frozen=True)
class Candidate:
    """One operator occurrence in one file: where it applies (1-based line), not yet applied."""

    file: str
    operator: str
    occurrence: int
    line: int
    col: int  # where the mutated node starts and ends on that line (0-based)
    end_col: int

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}:{self.operator.removeprefix('core/')}#{self.occurrence}"

    def apply(self, source: str) -> Mutant | None:
        """The mutant this makes of ``source`` (the file's text), or None when it is not a one-line
        change of valid Python (a no-op, a deleted or split line, a syntax error)."""
        from cosmic_ray.mutating import mutate_code

        mutated = mutate_code(source, _operator(self.operator), self.occurrence)
        if mutated is None or mutated == source:
            return None
        before, after = source.splitlines(), mutated.splitlines()
        changed = [n for n, (a, b) in enumerate(zip(before, after, strict=False), 1) if a != b]
        if len(before) != len(after) or len(changed) != 1 or not _parses(mutated):
            return None
        line = changed[0]
        new = after[line - 1] if line != self.line else self._spaced(before[line - 1], after[line - 1])
        after[line - 1] = new
        text = "\n".join(after) + ("\n" if mutated.endswith("\n") else "")
        return Mutant(candidate=self, line=line, original=before[line - 1], mutated=new, text=text)

    def _spaced(self, original: str, mutated: str) -> str:
        """``mutated`` with the node's spacing as it was: a new node may bring its own leading space
        (the number replacer writes ``f(x= 2)`` for ``f(x=1)``), which would give the mutant away."""
        head, rest = original[:self.col], original[self.end_col:]
        kept = len(head.rstrip())
        if not (mutated.startswith(head[:kept]) and mutated.endswith(rest)) or kept + len(rest) > len(mutated):
            return mutated
        core = mutated[kept:len(mutated) - len(rest)].strip()
        spaced = head + core + rest
        return spaced if "".join(spaced.split()) == "".join(mutated.split()) else mutated


@dataclass(frozen=True)
class Mutant:
    """A candidate applied: the one changed line (1-based), as it was and as it is, and the new text."""

    candidate: Candidate
    line: int
    original: str
    mutated: str
    text: str

    @property
    def file(self) -> str:
        return self.candidate.file

    @property
    def id(self) -> str:
        return self.candidate.id


@functools.cache
def operator_names() -> tuple[str, ...]:
    """Cosmic Ray's core operators that take no arguments, less :data:`SKIPPED_OPERATORS`."""
    from cosmic_ray.plugins import get_operator
    from cosmic_ray.plugins import operator_names as all_names

    return tuple(name for name in all_names()
                 if name not in SKIPPED_OPERATORS and not get_operator(name).arguments())


class Operator(Protocol):
    """What this module uses of a Cosmic Ray operator (the package has no types)."""

    def mutation_positions(self, node: object) -> Iterable[tuple[tuple[int, int], tuple[int, int]]]: ...


@functools.cache
def _operator(name: str) -> Operator:
    from cosmic_ray.plugins import get_operator

    operator: Operator = get_operator(name)()  # untyped: an Operator by Cosmic Ray's plugin contract
    return operator


def python_files(root: Path, pattern: str | None = None) -> list[str]:
    """The repository's Python files (``.gitignore`` honoured) matching ``pattern`` (a glob on the path
    relative to ``root``, e.g. ``more_itertools/*.py``); by default every one outside the tests
    (``tests/``, ``test/``, ``test_*.py``, ``*_test.py``, ``conftest.py``), sorted."""
    files = [f for f in list_repo_files(root) if f.endswith(".py")]
    if pattern:
        return sorted(f for f in files if fnmatch.fnmatchcase(f, pattern))
    return sorted(f for f in files if not is_test_file(f))


def candidates(path: str, source: str) -> list[Candidate]:
    """Every position where an operator applies in ``source`` (the text of ``path``), in Cosmic Ray's
    order (operator, then occurrence). Raises :class:`MutationError` when the file does not parse."""
    from cosmic_ray.ast import ast_nodes, get_ast

    try:
        annotations = _annotations(ast.parse(source))
    except (SyntaxError, ValueError):
        raise MutationError(f"{path} is not valid Python: it cannot be mutated") from None
    tree = get_ast(source)
    nodes = list(ast_nodes(tree))
    found = []
    for name in operator_names():
        operator = _operator(name)
        occurrence = 0
        for node in nodes:
            for (start_line, col), (end_line, end_col) in operator.mutation_positions(node):
                # a position over several lines cannot be a one-line mutant
                if start_line == end_line and not any(a <= (start_line, col) and (end_line, end_col) <= b
                                                      for a, b in annotations):
                    found.append(Candidate(path, name, occurrence, start_line, col, end_col))
                occurrence += 1
    return found


def _annotations(tree: ast.Module) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the module's type annotations are: ((line, col), (end line, end col)) each."""
    spans = []
    for node in ast.walk(tree):
        found: list[ast.expr | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            found += [node.returns, *(a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs,
                                                             args.vararg, args.kwarg) if a is not None)]
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        spans += [((e.lineno, e.col_offset), (e.end_lineno or e.lineno, e.end_col_offset or 0))
                  for e in found if e is not None]
    return spans


def sample_order(found: list[Candidate], seed: int) -> list[Candidate]:
    """``found`` in a random order fixed by ``seed`` (the same files and seed: the same order)."""
    ordered = sorted(found, key=lambda c: (c.file, c.operator, c.occurrence))
    random.Random(seed).shuffle(ordered)
    return ordered


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True

