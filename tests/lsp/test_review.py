"""Review on save, end to end: the editor saves a file with a planted bug, the daemon's watcher
reviews it (ruff, then the reviewer on the fake LLM), and the findings come back as diagnostics
that follow the user's edits, offer a quick fix, and can be dismissed for good."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from lsp.messages import FindingDiagnosticData, LintDiagnosticData
from lsp.records import read
from tests.daemon.conftest import DaemonProcess
from tests.lsp.conftest import BUG_MESSAGE, PLANTED, Editor, new_repo, until, uri_of


def at(line: int, start: int, end: int) -> types.Range:
    return types.Range(start=types.Position(line=line, character=start), end=types.Position(line=line, character=end))


async def saved_with_findings(engine_daemon: DaemonProcess, open_editor: Any, name: str) -> tuple[Editor, Path]:
    root = new_repo(engine_daemon.home, name)
    editor = await open_editor(engine_daemon.home, [root])
    await editor.registered(root)
    calc = root / "calc.py"
    editor.open(calc, PLANTED)
    editor.save(calc, PLANTED)
    # a whole review chain: 30 s ran out once at load 10
    await until(lambda: editor.troupe_diagnostics(calc, BUG_MESSAGE), 90, "the reviewer's diagnostic")
    return editor, calc


async def test_a_saved_bug_becomes_diagnostics_with_the_right_range_severity_and_code(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    editor, calc = await saved_with_findings(engine_daemon, open_editor, "review")
    (bug,) = editor.troupe_diagnostics(calc, BUG_MESSAGE)
    assert bug.range == at(4, 4, 16)  # store line 5 -> LSP line 4, from "return" to the end of the line
    assert bug.severity == types.DiagnosticSeverity.Information  # a suggestion: no executed evidence
    assert bug.code == "review" and isinstance(bug.data["findingId"], int)  # stable: not the finding's id
    assert read(FindingDiagnosticData, bug.data).has_fix  # data as lsp/messages.py declares it
    (lint,) = [d for d in editor.diagnostics(calc) if d.code == "F401"]  # the static lane's, on "os"
    assert read(LintDiagnosticData, lint.data).rule == "F401"
    assert lint.range == at(0, 7, 9) and lint.severity == types.DiagnosticSeverity.Warning  # minor
    assert lint.message == "`os` imported but unused"  # without its code repeated
    assert lint.source == "troupe"
    await watcher_handled(editor, calc.parent)  # a second job for the same save would have been queued by now
    listed = await editor.client.protocol.send_request_async("troupe/jobs", {"workspace": str(calc.parent)})
    assert [(j.kind, j.request.options.trigger) for j in listed.jobs] == [("review", "save")]  # the watcher's only


async def test_the_quick_fix_replaces_the_lines_and_team_actions_are_labelled_and_never_preferred(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    editor, calc = await saved_with_findings(engine_daemon, open_editor, "quickfix")
    (bug,) = editor.troupe_diagnostics(calc, BUG_MESSAGE)
    actions = await editor.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri_of(calc)), range=bug.range,
        context=types.CodeActionContext(diagnostics=[bug])))
    fixes = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    (fix,) = fixes
    (edits,) = fix.edit.changes.values()
    assert list(fix.edit.changes) == [uri_of(calc)]
    assert list(edits) == [types.TextEdit(range=at(4, 0, 16), new_text="    return a + b")]
    assert fix.command.command == "troupe.fixApplied"
    others = [a for a in actions if a not in fixes]
    assert sorted(a.command.command for a in others) == ["troupe.ask", "troupe.dismiss", "troupe.explain"]
    assert {a.kind for a in others} == {"refactor.troupe"}
    assert all(a.title.startswith("Troupe: ") and not a.is_preferred for a in actions)


async def test_findings_follow_edits_above_them_and_vanish_when_their_line_is_edited(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    editor, calc = await saved_with_findings(engine_daemon, open_editor, "tracking")
    editor.edit(calc, (3, 0), (3, 0), "# one\n# two\n")  # two lines above the bug
    await until(lambda: [d for d in editor.troupe_diagnostics(calc, BUG_MESSAGE) if d.range.start.line == 6],
                what="the diagnostic to move down two lines")
    editor.edit(calc, (6, 15), (6, 16), "c")  # return a - b -> return a - c
    await until(lambda: not editor.troupe_diagnostics(calc, BUG_MESSAGE), what="the edited finding to go")
    assert [d.code for d in editor.diagnostics(calc)] == ["F401"]  # untouched finding stays


async def test_dismiss_removes_the_diagnostic_and_the_same_finding_stays_away_after_the_next_save(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    editor, calc = await saved_with_findings(engine_daemon, open_editor, "dismiss")
    (bug,) = editor.troupe_diagnostics(calc, BUG_MESSAGE)
    answer = await editor.command("troupe.dismiss", {"findingId": bug.data["findingId"]})
    assert answer == {"findingId": bug.data["findingId"], "state": "dismissed"}
    assert not editor.troupe_diagnostics(calc, BUG_MESSAGE)

    reviews_before = len(finished_reviews(editor))
    editor.save(calc, PLANTED + "\n\nVALUE = 1\n")  # same bug, saved again: the reviewer reports it again
    await until(lambda: len(finished_reviews(editor)) > reviews_before, what="the second review")
    assert [d.code for d in editor.diagnostics(calc)] == ["F401"]
    assert not editor.troupe_diagnostics(calc, BUG_MESSAGE)


async def watcher_handled(editor: Editor, root: Path) -> None:
    """The daemon's watcher has handled every save made before this call: a binary probe saved now
    (which starts no job) is reported skipped, on the stream the editor hears, only after them."""
    probe, deadline = root / "probe.bin", time.monotonic() + 30
    while True:
        since = len(editor.custom)
        probe.write_bytes(b"\0probe\n")
        try:
            await until(lambda since=since: [n for name, n in editor.custom[since:] if name == "troupe/jobEvent"
                                 and n.event.kind == "watch" and n.event.data.action == "skipped"
                                 and any(f.startswith(probe.name) for f in n.event.data.files)],
                        timeout=2.0, what="the watcher's notice of the probe")
            return
        except AssertionError:  # saved again (the watcher coalesces saves; it never loses the last)
            if time.monotonic() > deadline:
                raise


def finished_reviews(editor: Editor) -> list[Any]:
    return [n.event for n in editor.notifications("troupe/jobEvent")
            if n.event.kind == "job_state" and n.event.data.state == "succeeded"]
