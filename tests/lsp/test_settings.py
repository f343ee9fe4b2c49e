"""The editor's settings: ``model``, ``reviewOnSave`` and ``testOnSave`` from initializationOptions
and workspace/didChangeConfiguration reach the daemon as the workspace's overrides (bad values
are logged and ignored), and ``minimumSeverity`` hides less severe diagnostics."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from daemon.api.protocol import WorkspaceSettings
from tests.daemon.conftest import DaemonProcess
from tests.lsp.conftest import BUG_MESSAGE, PLANTED, Editor, new_repo, until, uri_of


async def daemon_settings(daemon: DaemonProcess, root: Path) -> WorkspaceSettings | None:
    async with daemon.client() as client:
        return {ws.root: ws.settings for ws in await client.workspaces()}.get(str(root))


async def settings_become(daemon: DaemonProcess, root: Path, wanted: WorkspaceSettings) -> None:
    seen = None
    for _ in range(300):
        seen = await daemon_settings(daemon, root)
        if seen == wanted:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the daemon's settings for {root} stayed {seen}, not {wanted}")


def change_configuration(editor: Editor, troupe: dict[str, Any]) -> None:
    editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"troupe": troupe}))


async def test_initialization_options_and_configuration_changes_reach_the_daemons_workspace_settings(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    root = new_repo(engine_daemon.home, "settings")
    editor = await open_editor(engine_daemon.home, [root], options={
        "questions": "notification", "changes": "notification", "model": "openai/editor-model",
        "reviewOnSave": False, "testOnSave": True, "minimumSeverity": "major"})
    await editor.registered(root)
    assert await daemon_settings(engine_daemon, root) == WorkspaceSettings(
        model="openai/editor-model", review_on_save=False, test_on_save=True)

    change_configuration(editor, {"questions": "notification", "changes": "notification", "model": None,
                                  "reviewOnSave": "yes", "testOnSave": False, "minimumSeverity": "info"})
    await settings_become(engine_daemon, root, WorkspaceSettings(test_on_save=False))
    logged = [m.message for m in editor.client.log_messages if "reviewOnSave must be true or false" in m.message]
    assert logged and logged[0].endswith("got 'yes'; ignored")

    added = new_repo(engine_daemon.home, "settings-added")  # a folder added later gets them too
    editor.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(uri=uri_of(added), name="added")],
                                                removed=[])))
    await editor.registered(added)
    assert await daemon_settings(engine_daemon, added) == WorkspaceSettings(test_on_save=False)


async def test_review_on_save_false_saves_quietly_and_minimum_severity_hides_minor_findings(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    root = new_repo(engine_daemon.home, "severity")
    editor = await open_editor(engine_daemon.home, [root], options={"reviewOnSave": False,
                                                                    "minimumSeverity": "minor"})
    await editor.registered(root)
    calc = root / "calc.py"
    editor.open(calc, PLANTED)
    editor.save(calc, PLANTED)  # starts no review: reviewOnSave is false
    await editor.command("troupe.review", {"file": str(calc)})
    deadline = time.monotonic() + 60
    while True:  # the review job ends
        jobs = await editor.client.protocol.send_request_async("troupe/jobs", {"workspace": str(root)})
        if jobs.jobs and all(j.state in ("succeeded", "failed") for j in jobs.jobs):
            break
        assert time.monotonic() < deadline, "the review job did not end"
        await asyncio.sleep(0.05)
    assert [(j.kind, j.state) for j in jobs.jobs] == [("review", "succeeded")]
    assert all(getattr(j.request.options, "trigger", None) != "save" for j in jobs.jobs)
    (lint,) = await until(lambda: [d for d in editor.diagnostics(calc) if d.code == "F401"], what="the minor one")
    assert lint.data["severity"] == "minor"
    assert not editor.troupe_diagnostics(calc, BUG_MESSAGE)  # the reviewer's suggestion: below the minimum

    change_configuration(editor, {"reviewOnSave": False, "minimumSeverity": "info"})
    (bug,) = await until(lambda: editor.troupe_diagnostics(calc, BUG_MESSAGE),
                         what="the reviewer's suggestion, once the minimum is info")
    assert bug.data["severity"] == "info"  # an opinion without executed evidence
