"""The static lane: lint diagnostics on open, on change (the buffer's text, not the disk) and on
save, straight from the daemon's ``POST /v1/lint``; ruff's own quick fix applied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.daemon.conftest import DaemonProcess
from tests.lsp.conftest import Editor, apply_text_edits, new_repo, until, uri_of

BROKEN = "import os\n\n\ndef six():\n    return undefined_six\n"


def lint(editor: Editor, path: Path) -> dict[str, types.Diagnostic]:
    return {str(d.code): d for d in editor.diagnostics(path) if d.code in ("F401", "F821", "F841")}


async def opened(engine_daemon: DaemonProcess, open_editor: Any, name: str, text: str = BROKEN,
                 files: dict[str, str] | None = None) -> tuple[Editor, Path]:
    root = new_repo(engine_daemon.home, name, {"six.py": text, **(files or {})})  # on disk before the watcher
    editor = await open_editor(engine_daemon.home, [root])
    await editor.registered(root)
    path = root / "six.py"
    editor.open(path, text)
    return editor, path


async def test_opening_a_file_shows_its_lint_at_once_with_undefined_names_as_errors(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    editor, path = await opened(engine_daemon, open_editor, "on-open")
    found = await until(lambda: len(lint(editor, path)) == 2 and lint(editor, path), what="lint on open")
    assert found["F821"].severity == types.DiagnosticSeverity.Error
    assert found["F821"].message == "Undefined name `undefined_six`"  # the code is not repeated
    assert found["F821"].range == types.Range(start=types.Position(line=4, character=11),
                                              end=types.Position(line=4, character=24))
    assert found["F401"].severity == types.DiagnosticSeverity.Warning
    listed = await editor.client.protocol.send_request_async("troupe/jobs", {"workspace": str(path.parent)})
    assert listed.jobs == []  # no job, no model: lint is not a review


async def test_typing_lints_the_buffer_not_the_file_on_disk(engine_daemon: DaemonProcess, open_editor: Any) -> None:
    editor, path = await opened(engine_daemon, open_editor, "on-change", text="def six():\n    return 6\n")
    await until(lambda: editor.client.diagnostics.get(uri_of(path)) is not None, what="the first lint")
    editor.edit(path, (1, 11), (1, 12), "undefined_six")  # unsaved: the disk still says 6
    await until(lambda: "F821" in lint(editor, path), what="lint of the edited buffer")
    editor.edit(path, (1, 11), (1, 24), "7")
    await until(lambda: "F821" not in lint(editor, path), what="the fixed buffer's lint")


async def test_the_projects_ruff_configuration_decides_the_rules(engine_daemon: DaemonProcess,
                                                                 open_editor: Any) -> None:
    config = {"ruff.toml": '[lint]\nselect = ["F821"]\n'}
    editor, path = await opened(engine_daemon, open_editor, "configured", files=config)
    await until(lambda: "F821" in lint(editor, path), what="the configured lint")
    assert "F401" not in lint(editor, path)


async def test_ruffs_own_fix_is_a_preferred_quick_fix_that_removes_the_unused_import(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    editor, path = await opened(engine_daemon, open_editor, "ruff-fix")
    unused = (await until(lambda: lint(editor, path).get("F401"), what="F401"))
    actions = await editor.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri_of(path)), range=unused.range,
        context=types.CodeActionContext(diagnostics=[unused], only=[types.CodeActionKind.QuickFix])))
    (fix,) = [a for a in actions if a.title.startswith("Remove unused import")]
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred and fix.title.endswith("(F401)")
    fixed = apply_text_edits(BROKEN, list(fix.edit.changes[uri_of(path)]))
    assert fixed == "\n\ndef six():\n    return undefined_six\n"
    editor.edit(path, (0, 0), (1, 0), "")  # the editor applies it
    await until(lambda: "F401" not in lint(editor, path), what="F401 gone after the fix")
    assert "F821" in lint(editor, path)
