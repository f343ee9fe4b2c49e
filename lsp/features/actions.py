"""Code actions on findings: the suggested fix, and the team's own actions; ruff's own fixes on lint.

Every title of the team's actions starts with "Troupe:" so the user knows an AI is behind it. Only a real fix (a
finding with a suggested replacement) is a ``quickfix``; "Ask the team", "Explain" and
"Dismiss" use the kind ``refactor.troupe``. None is ever ``isPreferred``, so the editor's
own quick-fix key keeps applying the language tools' fixes; ruff's safe fixes are preferred.
"""

from __future__ import annotations

from lsprotocol import types

from lsp.diagnostics import fix_edit, to_diagnostic
from lsp.lint import fix_actions
from lsp.messages import COMMANDS, AskArgs, DismissArgs, FindingArgs, Position, Range
from lsp.records import Record, wire
from lsp.server import TroupeServer
from lsp.tracking import Placed

TEAM_ACTION = "refactor.troupe"
KINDS = [types.CodeActionKind.QuickFix, TEAM_ACTION]


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _wanted(kind: str, only: list[str] | None) -> bool:
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


def _command(title: str, name: str, argument: Record) -> types.Command:
    if not isinstance(argument, COMMANDS[name].params):
        raise TypeError(f"{name} takes {COMMANDS[name].params.__name__}, not {type(argument).__name__}")
    return types.Command(title=title, command=name, arguments=[wire(argument)])


def _range(r: types.Range) -> Range:
    return Range(start=Position(line=r.start.line, character=r.start.character),
                 end=Position(line=r.end.line, character=r.end.character))


def _actions(ls: TroupeServer, uri: str, item: Placed, only: list[str] | None) -> list[types.CodeAction]:
    doc = ls.workspace.get_text_document(uri)
    finding, diagnostic = item.finding, to_diagnostic(doc, item)
    actions = []
    edit = fix_edit(doc, item)
    if edit is not None and _wanted(types.CodeActionKind.QuickFix.value, only):
        actions.append(types.CodeAction(
            title=f"Troupe: apply the suggested fix ({_short(finding.message)})",
            kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
            edit=types.WorkspaceEdit(changes={uri: [edit]}),
            command=_command("Record the fix", "troupe.fixApplied", FindingArgs(finding_id=finding.id))))
    if not _wanted(TEAM_ACTION, only):
        return actions
    line = item.start + 1
    actions += [
        types.CodeAction(
            title="Troupe: ask the team about this (proposes a fix)", kind=TEAM_ACTION, diagnostics=[diagnostic],
            command=_command("Ask the team", "troupe.ask", AskArgs(
                prompt=f"Fix this review finding at line {line}: {finding.message}", file=uri,
                selection=_range(diagnostic.range), mode="change"))),
        types.CodeAction(
            title="Troupe: explain this finding", kind=TEAM_ACTION, diagnostics=[diagnostic],
            command=_command("Explain", "troupe.explain", FindingArgs(finding_id=finding.id))),
        types.CodeAction(
            title="Troupe: dismiss this finding (the team learns from it)", kind=TEAM_ACTION,
            diagnostics=[diagnostic],
            command=_command("Dismiss", "troupe.dismiss", DismissArgs(finding_id=finding.id))),
    ]
    return actions


def register(server: TroupeServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=KINDS))
    def code_action(ls: TroupeServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        doc = ls.documents.get(uri)
        if doc is None or doc.skipped:
            return []
        first, last = params.range.start.line, params.range.end.line
        only = [str(getattr(k, "value", k)) for k in params.context.only or []]
        hits = [p for p in ls.visible(doc) if p.start <= last and p.end >= first]
        text_doc = ls.workspace.get_text_document(uri)
        lint = ls.visible_lint(doc) if _wanted(types.CodeActionKind.QuickFix.value, only) else []
        fixes = [action for item in lint if item.start <= last and item.end >= first
                 for action in fix_actions(text_doc, item)]
        return fixes + [action for item in hits for action in _actions(ls, uri, item, only)]
