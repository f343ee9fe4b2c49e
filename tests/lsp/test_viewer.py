"""``troupe.openViewer``: a one-time run viewer link from the daemon (its default loopback
listener), opened with ``window/showDocument`` (external) when the client can, else returned; a
job the editor started finishes with the link in ``troupe/jobFinished`` (and in a failure's message)."""

from __future__ import annotations

import json
from typing import Any

from pygls.exceptions import JsonRpcException

from tests.daemon.conftest import DaemonProcess
from tests.fakes.llm_server import FakeLLM
from tests.lsp.conftest import PLANTED, new_repo, until, uri_of
from tests.viewer.conftest import log_in


def viewer_base(daemon: DaemonProcess) -> str:
    return f"http://127.0.0.1:{json.loads((daemon.home / 'daemon.pid').read_text())['tcp_port']}/viewer/"


async def test_open_viewer_shows_the_link_externally_and_a_finished_job_carries_one(
        engine_daemon: DaemonProcess, llm: FakeLLM, open_editor: Any) -> None:
    llm.add_rule("<INFO> add() is in calc.py:4 (viewer test).", user="where is add() for the viewer", times=1)
    root = new_repo(engine_daemon.home, "viewer", {"calc.py": PLANTED})
    editor = await open_editor(engine_daemon.home, [root])
    await editor.registered(root)
    base = viewer_base(engine_daemon)

    answer = await editor.command("troupe.openViewer", {})
    (shown,) = editor.client.shown_documents
    assert shown.external is True and shown.uri == answer["url"] and answer["opened"] is True
    assert shown.uri.startswith(f"{base}?token=")

    job_id = (await editor.command("troupe.ask", {"prompt": "where is add() for the viewer?",
                                                  "file": uri_of(root / "calc.py")}))["jobId"]
    (finished,) = await until(lambda: editor.notifications("troupe/jobFinished"), timeout=60, what="the job's end")
    assert finished.job.id == job_id and finished.viewerUrl.startswith(f"{base}jobs/{job_id}?token=")
    said = await until(lambda: editor.shown("add() is in calc.py:4"), timeout=10, what="the answer shown")
    assert said == ["Troupe: add() is in calc.py:4 (viewer test)."]  # no link in it (it arrives after the end)

    answer = await editor.command("troupe.openViewer", {"jobId": job_id[:8]})
    assert answer["url"].startswith(f"{base}jobs/{job_id}?token=") and answer["opened"] is True
    assert len(editor.client.shown_documents) == 2
    # open: false (an editor behind a proxy maps the link itself): the link only, nothing shown
    quiet = await editor.command("troupe.openViewer", {"jobId": job_id[:8], "open": False})
    assert quiet["url"].startswith(f"{base}jobs/{job_id}?token=") and quiet["opened"] is False
    assert len(editor.client.shown_documents) == 2
    assert await log_in(answer["url"])  # a working one-time link

    for bad, message in (({"jobId": 5}, "jobId"), ({"jobId": "zzzz-none"}, "no job with an id starting")):
        try:
            await editor.command("troupe.openViewer", bad)
        except JsonRpcException as exc:
            assert message in str(exc)
        else:
            raise AssertionError(f"troupe.openViewer accepted {bad}")


async def test_without_show_document_the_url_is_returned(engine_daemon: DaemonProcess, open_editor: Any) -> None:
    root = new_repo(engine_daemon.home, "viewer-emacs", {"calc.py": PLANTED})
    editor = await open_editor(engine_daemon.home, [root], capabilities="emacs")
    answer = await editor.command("troupe.openViewer")
    assert answer["opened"] is False and answer["url"].startswith(f"{viewer_base(engine_daemon)}?token=")
    assert editor.client.shown_documents == []
