"""A mention, end to end over HTTP: 👀, a reply in the thread, a throttled status message, the
summary with the diff and Apply / Discard / Details, ✅; a retried delivery runs once; Apply
works for the requester only; no planted secret ever reaches Slack."""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from pathlib import Path
from typing import Any

from tests.fakes.llm_server import FakeLLM
from tests.slack.conftest import ANN, BOB, BOT_TOKEN, CHANNEL, INTERVAL, Harness, block_text, buttons

PLANTED_KEY = "sk-planted-0123456789abcdef"
PLANTED_SLACK = "xoxb-planted-9999-abcdefgh"
CODE = '''app.py
```python
<<<<<<< SEARCH
    return a - b
=======
    return a + b
>>>>>>> REPLACE
```
'''


def script_change(llm: FakeLLM, marker: str, *, plan: str = "app.py: make add() add") -> None:
    llm.add_rule(f"<INFO> {plan}", user=re.compile(rf"{marker}[\s\S]*List the files to change"))
    llm.add_rule(CODE, user=re.compile(rf"{marker}[\s\S]*Make the change\."))
    llm.add_rule("<INFO> Finished", user=re.compile(rf"{marker}[\s\S]*Give the ONE most important problem"))


async def test_a_mention_runs_a_change_and_reports_it_in_the_thread(harness: Harness, repo: Path,
                                                                    llm: FakeLLM) -> None:
    script_change(llm, "zebra", plan=f"app.py: make add() add (key {PLANTED_SLACK})")
    llm.latency = 0.3  # each model call takes a while, so the status message has phases to show
    started = time.monotonic()
    ts, event_id = await harness.mention(f"change add() in app.py so it adds, zebra. My key: {PLANTED_KEY}")
    retry, _ = await harness.event(  # Slack delivers the same event again while the first is running
        {"type": "app_mention", "user": ANN, "text": "<@UBOT> change ... zebra", "ts": ts, "channel": CHANNEL,
         "event_ts": ts}, event_id=event_id, **{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    assert retry.status == 200
    try:
        assert await harness.finished(ts) == ["eyes", "white_check_mark"]
    finally:
        llm.latency = 0.0
    elapsed = time.monotonic() - started
    slack = harness.slack

    # one job for one mention, even though it was delivered twice
    jobs = await harness.jobs(repo)
    assert [(j.kind, j.state) for j in jobs] == [("change", "succeeded")]
    job = jobs[0]
    assert job.request["options"]["slack_thread"] == f"{CHANNEL}/{ts}"

    # the acknowledgement (the status message) and the summary, both in the thread; nothing top-level
    thread = harness.in_thread(ts)
    assert len(thread) == 2 and all(b["thread_ts"] == ts for b in slack.posted())
    status = slack.of("chat.postMessage")[0]
    assert "On it" in status.body["text"]
    updates = [c for c in slack.of("chat.update") if c.body["ts"] == status.ts]
    assert 2 <= len(updates) <= elapsed / INTERVAL + 3  # kept up to date, but throttled
    gaps = [b.at - a.at for a, b in itertools.pairwise(updates)]
    assert all(gap >= INTERVAL * 0.9 for gap in gaps), gaps
    final_status = slack.messages[CHANNEL, str(status.ts)]["text"]
    assert "done" in final_status and "tokens" in final_status and "$" in final_status and job.id in final_status
    assert any("phase `" in c.body["text"] for c in updates), [c.body["text"] for c in updates]

    # the summary: the plan, the diff as a snippet, and the three buttons
    summary = harness.summary(ts)
    assert summary is not None
    text = block_text(summary)
    assert "*Plan:* app.py: make add() add" in text and "`app.py`" in text
    assert "-    return a - b\n+    return a + b" in text
    assert set(buttons(summary)) == {"Apply", "Discard", "Details"}
    assert buttons(summary)["Apply"]["value"] == job.id

    # secrets: the key in the prompt, a token in the model's reply, the bot's own token — none in Slack
    recorded = slack.recorded_text()
    assert PLANTED_KEY not in recorded and PLANTED_SLACK not in recorded and BOT_TOKEN not in recorded
    assert "***" in text  # the plan did carry the token, redacted


async def test_apply_is_for_the_requester_and_changes_the_file(make_harness: Any, repo: Path, llm: FakeLLM) -> None:
    harness: Harness = await make_harness(repo, snippet_max_chars=0)  # every diff goes up as a file
    script_change(llm, "okapi")
    harness.slack.rate_limit("chat.update", retry_after=1)  # Slack says: slow down, once
    ts, _ = await harness.mention("change add() so it adds, okapi")
    await harness.finished(ts)
    summary = harness.summary(ts)
    assert summary is not None
    limited = [c for c in harness.slack.calls if c.method == "chat.update"][:2]
    assert [c.status for c in limited] == [429, 200] and limited[1].at - limited[0].at >= 1.0

    # the diff came as a file in the thread, not inline
    assert "```" not in block_text(summary)
    done = harness.slack.of("files.completeUploadExternal")
    assert len(done) == 1 and done[0].body["thread_ts"] == ts and done[0].body["channel_id"] == CHANNEL
    (upload,) = harness.slack.uploads.values()
    assert b"-    return a - b\n+    return a + b" in upload
    job_id = buttons(summary)["Apply"]["value"]
    message = harness.slack.messages[CHANNEL, harness.summary_ts(ts)]

    # Bob did not ask: refused, privately, and nothing changes
    resp = await harness.press("troupe_apply", job_id, message, user=BOB)
    assert resp.status == 200
    refusal = await harness.slack.wait_for(lambda: harness.slack.responses, what="a response_url answer")
    assert refusal[0]["response_type"] == "ephemeral" and "Only <@UANN>" in refusal[0]["text"]
    await asyncio.sleep(0.3)
    assert (repo / "app.py").read_text() == "def add(a, b):\n    return a - b\n"

    # Details is for anyone allowed: the phases in the thread
    await harness.press("troupe_details", job_id, message, user=BOB)
    details = await harness.slack.wait_for(
        lambda: [b for b in harness.in_thread(ts) if "phase `plan`" in (b.get("text") or "")], what="details")
    assert "tool `tests`" in details[0]["text"]

    # Ann asked: applied to her files, and the summary shows it instead of the buttons
    await harness.press("troupe_apply", job_id, message, user=ANN)
    await harness.slack.wait_for(lambda: "a + b" in (repo / "app.py").read_text(), what="the file applied")
    assert (repo / "app.py").read_text() == "def add(a, b):\n    return a + b\n"
    updated = await harness.slack.wait_for(
        lambda: [c for c in harness.slack.of("chat.update") if c.body["ts"] == message["ts"]], what="summary edit")
    assert "Applied by <@UANN>" in updated[-1].body["text"]
    assert not buttons(updated[-1].body)
    change = await harness.bot.daemon.change((await harness.bot.daemon.job(job_id)).result["change_id"])
    assert change.state == "applied"


async def test_a_review_posts_its_findings(harness: Harness, repo: Path, llm: FakeLLM) -> None:
    (repo / "heron.py").write_text("def heron(a, b):\n    return a - b\n")
    llm.add_rule('[{"start_line": 2, "severity": "major", "message": "heron() subtracts", "quote": "return a - b"}]',
                 user="def heron(a, b)")
    ts, _ = await harness.mention("review <http://heron.py|heron.py> please")
    assert await harness.finished(ts) == ["eyes", "white_check_mark"]
    (job,) = await harness.jobs(repo)
    assert job.kind == "review" and job.request["files"] == ["heron.py"]
    text = block_text(harness.summary(ts) or {})
    assert "finding(s)" in text and "`heron.py:2` _info_ heron() subtracts" in text  # an opinion: a suggestion
    assert set(buttons(harness.summary(ts) or {})) == {"Details"}  # nothing to apply
