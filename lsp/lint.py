"""The static lane in the editor: the daemon's lint of the buffer text, as diagnostics and quick fixes.

The server only sends text (on open, on change after a short pause, on save) and renders what
the daemon answered: which rules, their severity and their fixes are decided there
(``POST /v1/lint``). An answer for a version of the buffer the user has typed past is dropped
(a newer lint is on its way); until then the shown lint moves with the edits like findings do.
Ruff's own fixes are quick fixes, ruff's safe ones preferred; lines and character columns
arrive 1-based and are converted to the client's position encoding here.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types
from pygls.workspace import ServerTextPosition, ServerTextRange, TextDocument

from daemon.api.protocol import LintDiagnostic, LintFix
from lsp.diagnostics import SEVERITY, SOURCE
from lsp.messages import LintDiagnosticData
from lsp.records import wire

CHANGE_PAUSE_S = 0.15  # lint the buffer once typing pauses this long


@dataclass(frozen=True)
class Linted:
    """A lint diagnostic and the 0-based lines (``start`` to ``end``) it covers in the buffer now."""

    lint: LintDiagnostic
    start: int
    end: int
    version: int | None  # the buffer version it was computed on (its fix applies to that text only)


def placed(diagnostics: list[LintDiagnostic], version: int | None) -> list[Linted]:
    return [Linted(d, d.start_line - 1, max(d.start_line, d.end_line) - 1, version) for d in diagnostics]


def _position(doc: TextDocument, line: int, col: int) -> ServerTextPosition:
    lines = doc.lines
    if line >= len(lines):
        return ServerTextPosition(len(lines), 0)
    text = lines[line].rstrip("\r\n")
    return ServerTextPosition(line, min(max(col, 0), len(text)))


def _range(doc: TextDocument, start: tuple[int, int], end: tuple[int, int]) -> types.Range:
    return doc.range_to_client_units(ServerTextRange(_position(doc, *start), _position(doc, *end)))


def to_diagnostic(doc: TextDocument, item: Linted) -> types.Diagnostic:
    lint = item.lint
    end_line = item.start + lint.end_line - lint.start_line
    empty = end_line == item.start and lint.end_col <= lint.start_col  # e.g. a syntax error at the end
    rng = _range(doc, (item.start, lint.start_col - 1), (end_line, 1 << 30 if empty else lint.end_col - 1))
    return types.Diagnostic(range=rng, message=lint.message, severity=SEVERITY.get(lint.severity),
                            source=SOURCE, code=lint.rule,
                            data=wire(LintDiagnosticData(rule=lint.rule, by=f"ruff ({lint.rule})",
                                                         has_fix=lint.fix is not None, severity=lint.severity)))


def _fix_edits(doc: TextDocument, fix: LintFix) -> list[types.TextEdit]:
    return [types.TextEdit(range=_range(doc, (e.start_line - 1, e.start_col - 1), (e.end_line - 1, e.end_col - 1)),
                           new_text=e.text) for e in fix.edits]


def fix_actions(doc: TextDocument, item: Linted) -> list[types.CodeAction]:
    """Ruff's fix for this diagnostic, when it has one that applies to the buffer as it is now."""
    fix = item.lint.fix
    if fix is None or fix.applicability == "display-only" or item.version != doc.version:
        return []
    safe = fix.applicability == "safe"
    return [types.CodeAction(
        title=f"{fix.message} ({item.lint.rule}{'' if safe else ', unsafe fix'})",
        kind=types.CodeActionKind.QuickFix, diagnostics=[to_diagnostic(doc, item)], is_preferred=safe,
        edit=types.WorkspaceEdit(changes={doc.uri: _fix_edits(doc, fix)}))]
