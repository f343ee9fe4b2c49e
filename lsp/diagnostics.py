"""Findings as LSP diagnostics, and a finding's suggested replacement as a text edit.

The store's lines and columns are 1-based; LSP's are 0-based, in the client's position
encoding (UTF-16 unless negotiated otherwise), which ``TextDocument`` converts for us.
A finding without columns covers its lines from the first non-blank character to the end.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import ServerTextPosition, ServerTextRange, TextDocument

from daemon.lint import is_lint_rule
from lsp.messages import FindingDiagnosticData
from lsp.records import wire
from lsp.tracking import Placed

SOURCE = "troupe"
MODEL_CODE = "review"  # the code of every model finding
SEVERITY = {
    "critical": types.DiagnosticSeverity.Error,
    "major": types.DiagnosticSeverity.Error,
    "minor": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


def _line(lines: tuple[str, ...], index: int) -> str:
    return lines[index].rstrip("\r\n") if 0 <= index < len(lines) else ""


def finding_range(doc: TextDocument, item: Placed) -> types.Range:
    lines = tuple(doc.lines)
    finding = item.finding
    first, last = _line(lines, item.start), _line(lines, item.end)
    if finding.start_col and finding.start_col > 1:
        start_char = min(finding.start_col - 1, len(first))
    else:
        start_char = len(first) - len(first.lstrip())
    end_char = len(last) if finding.end_col is None else min(max(finding.end_col - 1, 0), len(last))
    if item.start == item.end and end_char < start_char:
        end_char = len(last)
    return doc.range_to_client_units(ServerTextRange(ServerTextPosition(item.start, start_char),
                                                     ServerTextPosition(item.end, end_char)))


def to_diagnostic(doc: TextDocument, item: Placed) -> types.Diagnostic:
    finding = item.finding
    who = "Troupe (AI reviewer)" if finding.rule is None else f"Troupe ({finding.rule})"
    return types.Diagnostic(
        range=finding_range(doc, item),
        message=finding.message.removeprefix(f"{finding.rule} ") if is_lint_rule(finding.rule) else finding.message,
        severity=SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        source=SOURCE,
        code=finding.rule or MODEL_CODE,  # stable: the rule, or the reviewer's category (ids change)
        data=wire(FindingDiagnosticData(finding_id=finding.id, fingerprint=finding.fingerprint,
                                        has_fix=finding.suggested_fix is not None, severity=finding.severity,
                                        by=who)),
    )


def fix_edit(doc: TextDocument, item: Placed) -> types.TextEdit | None:
    """Replace the finding's whole lines with its suggested replacement."""
    replacement = item.finding.suggested_fix
    if replacement is None:
        return None
    lines = tuple(doc.lines)
    if item.end >= len(lines):
        return None
    last = _line(lines, item.end)
    rng = doc.range_to_client_units(ServerTextRange(ServerTextPosition(item.start, 0),
                                                    ServerTextPosition(item.end, len(last))))
    return types.TextEdit(range=rng, new_text=replacement.removesuffix("\n"))
