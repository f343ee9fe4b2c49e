"""Bad input never takes the server down: malformed parameters get JSON-RPC errors and the next
request is answered; huge and binary documents are skipped with a log line. Every workspace
folder (and every folder added later) is registered; the server never loads the engine."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.daemon.conftest import DaemonProcess
from tests.lsp.conftest import Editor, new_repo, until, uri_of

INVALID_PARAMS = types.ErrorCodes.InvalidParams.value


async def rejected(editor: Editor, method: str, params: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await editor.raw_request(method, params)
    return caught.value


async def command_rejected(editor: Editor, name: str, *arguments: Any) -> str:
    error = await rejected(editor, types.WORKSPACE_EXECUTE_COMMAND, {"command": name, "arguments": list(arguments)})
    assert error.code == INVALID_PARAMS, error
    return error.message


async def test_malformed_params_get_error_answers_and_the_server_still_answers(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    root = new_repo(engine_daemon.home, "malformed")
    editor = await open_editor(engine_daemon.home, [root])
    await editor.registered(root)

    error = await rejected(editor, types.TEXT_DOCUMENT_CODE_ACTION, {"textDocument": 5, "range": "everything"})
    assert error.code == INVALID_PARAMS and "textDocument/codeAction" in error.message
    assert "prompt" in await command_rejected(editor, "troupe.ask", {"prompt": 5})
    assert "prompt is empty" in await command_rejected(editor, "troupe.ask", {"prompt": "  "})
    assert "mode must be" in await command_rejected(editor, "troupe.ask", {"prompt": "hi", "mode": "yolo"})
    assert "one argument" in await command_rejected(editor, "troupe.cancel")
    assert "findingId" in await command_rejected(editor, "troupe.dismiss", {"findingId": "first"})
    assert "troupe.nope" in await command_rejected(editor, "troupe.nope", {})
    limit = await rejected(editor, "troupe/jobs", {"limit": 0})
    assert limit.code == INVALID_PARAMS and "limit" in limit.message
    assert (await rejected(editor, "troupe/jobs", [1, 2])).code == INVALID_PARAMS
    editor.raw_notify(types.TEXT_DOCUMENT_DID_OPEN, {"textDocument": {"uri": 7}})  # logged; no answer is due

    status = await editor.status()
    assert status.daemon == "connected"
    jobs = await editor.client.protocol.send_request_async("troupe/jobs", {"limit": 5, "workspace": str(root)})
    assert jobs.jobs == []
    debug = await editor.client.protocol.send_request_async("troupe/debug", {})
    assert debug.engineModules == []  # no litellm, no daemon.agents, no daemon.llm in the server process


async def test_huge_and_binary_documents_are_skipped_with_a_log_line(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    root = new_repo(engine_daemon.home, "oversized")
    editor = await open_editor(engine_daemon.home, [root])
    await editor.registered(root)
    binary, huge = root / "blob.py", root / "huge.py"
    editor.open(binary, "x = 1\n\x00\x01\x02")
    editor.open(huge, "# filler line for a very big file\n" * 40_000)

    def skipped() -> list[str]:
        return [m.message for m in editor.client.log_messages if m.message.startswith("Troupe: skipped ")]

    logs = await until(lambda: len(skipped()) >= 2 and skipped(), what="two log lines")
    assert any("blob.py" in m and "binary" in m for m in logs)
    assert any("huge.py" in m and "too big" in m for m in logs)
    actions = await editor.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri_of(binary)),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=1, character=0)),
        context=types.CodeActionContext(diagnostics=[])))
    assert not actions
    assert uri_of(binary) not in editor.client.diagnostics and uri_of(huge) not in editor.client.diagnostics
    assert (await editor.status()).daemon == "connected"


async def test_every_workspace_folder_and_every_added_one_is_registered(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    first, second, later = (new_repo(engine_daemon.home, name) for name in ("multi-a", "multi-b", "multi-c"))
    editor = await open_editor(engine_daemon.home, [first, second])
    await editor.registered(first)
    await editor.registered(second)
    editor.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(
            added=[types.WorkspaceFolder(uri=uri_of(later), name="multi-c")],
            removed=[types.WorkspaceFolder(uri=uri_of(first), name="multi-a")])))
    await editor.registered(later)
    assert sorted((await editor.status()).workspaces) == sorted([str(second), str(later)])
    async with engine_daemon.client() as daemon:
        roots = {w.root for w in await daemon.workspaces() if w.watching}
    assert {str(first), str(second), str(later)} <= roots  # a removed folder stays watched for others
