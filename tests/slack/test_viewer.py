"""Details gives the person who pressed it a one-time run viewer link, privately
(``chat.postEphemeral`` in the thread); the link never appears in what the channel sees."""

from __future__ import annotations

import json
from pathlib import Path

from tests.daemon.conftest import DaemonProcess
from tests.fakes.llm_server import FakeLLM
from tests.slack.conftest import BOB, CHANNEL, Harness, buttons
from tests.viewer.conftest import log_in


async def test_details_sends_a_private_viewer_link_to_whoever_pressed_it(
        harness: Harness, repo: Path, llm: FakeLLM, daemon: DaemonProcess) -> None:
    llm.add_rule('[{"start_line": 2, "severity": "minor", "message": "otter finding", "quote": "return a - b"}]',
                 user="def otter(a, b)")
    (repo / "otter.py").write_text("def otter(a, b):\n    return a - b\n")
    ts, _ = await harness.mention("review otter.py please")
    assert await harness.finished(ts) == ["eyes", "white_check_mark"]
    summary = harness.summary(ts) or {}
    job_id = buttons(summary)["Details"]["value"]

    await harness.press("troupe_details", job_id, harness.slack.messages[CHANNEL, harness.summary_ts(ts)], user=BOB)
    (call,) = await harness.slack.wait_for(lambda: harness.slack.of("chat.postEphemeral"), what="the viewer link")
    port = json.loads((daemon.home / "daemon.pid").read_text())["tcp_port"]
    body = call.body
    assert body["user"] == BOB and body["channel"] == CHANNEL and body["thread_ts"] == ts
    prefix = f"http://127.0.0.1:{port}/viewer/jobs/{job_id}?token="
    assert prefix in body["text"] and "Watch it in the viewer" in body["text"]
    url = body["text"].split("<", 1)[1].split("|", 1)[0]
    heading = f"Job `{job_id}`"
    await harness.slack.wait_for(lambda: [b for b in harness.in_thread(ts) if heading in (b.get("text") or "")],
                                 what="the public details")
    public = [c.body for c in harness.slack.calls if c.method != "chat.postEphemeral"] + harness.slack.responses
    assert "/viewer/" not in json.dumps(public, default=str)  # the login never reaches the channel

    assert await log_in(url)  # a working one-time link
