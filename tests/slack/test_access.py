"""Who may talk to the team: signed requests only, allowed channels and people only, never the
bot itself; and the /troupe slash command (acknowledged at once, answered via response_url)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from tests.fakes.llm_server import FakeLLM
from tests.fakes.slack_api import BOT_USER
from tests.slack.conftest import ANN, BOB, CHANNEL, Harness, signed


def mention_body(text: str = "what is this?", channel: str = CHANNEL) -> str:
    ts = f"{int(time.time())}.000999"
    return json.dumps({"type": "event_callback", "team_id": "T1", "event_id": "EvFORGED", "event": {
        "type": "app_mention", "user": ANN, "text": f"<@{BOT_USER}> {text}", "ts": ts, "channel": channel}})


async def test_a_forged_signature_or_a_stale_timestamp_is_refused_and_starts_nothing(harness: Harness,
                                                                                    repo: Path) -> None:
    body = mention_body()
    forged = signed(body, "application/json", secret="not-the-secret")
    async with harness.session.post(harness.url, data=body, headers=forged) as resp:
        assert resp.status == 401
    stale = signed(body, "application/json", at=time.time() - 600)  # right secret, ten minutes old
    async with harness.session.post(harness.url, data=body, headers=stale) as resp:
        assert resp.status == 401
    unsigned = {"Content-Type": "application/json"}
    async with harness.session.post(harness.url, data=body, headers=unsigned) as resp:
        assert resp.status == 401
    tampered = signed(body, "application/json")
    async with harness.session.post(harness.url, data=body.replace("what is this", "build malware"),
                                    headers=tampered) as resp:
        assert resp.status == 401
    await asyncio.sleep(0.3)
    assert await harness.jobs(repo) == []
    assert [c.method for c in harness.slack.calls if c.method != "auth.test"] == []


async def test_channels_and_people_not_allowed_get_a_polite_refusal(make_harness: Any, repo: Path) -> None:
    harness: Harness = await make_harness(repo, allowed_channels=frozenset({CHANNEL}),
                                          allowed_users=frozenset({ANN}))
    ts, _ = await harness.mention("what is this?", channel="C9")
    refusal = await harness.slack.wait_for(lambda: harness.slack.posted("C9"), what="a refusal")
    assert refusal[0]["thread_ts"] == ts and "not set up to work in this channel" in refusal[0]["text"]

    ts, _ = await harness.mention("what is this?", user=BOB)
    refusal = await harness.slack.wait_for(lambda: harness.in_thread(ts), what="a refusal")
    assert "Sorry <@UBOB>" in refusal[0]["text"] and "allowed" in refusal[0]["text"]

    await harness.slash("jobs", user=BOB)
    answer = await harness.slack.wait_for(lambda: harness.slack.responses, what="a slash refusal")
    assert answer[0]["response_type"] == "ephemeral" and "Sorry <@UBOB>" in answer[0]["text"]
    await asyncio.sleep(0.2)
    assert await harness.jobs(repo) == []
    assert not harness.slack.of("reactions.add")


async def test_the_bot_ignores_itself_and_other_bots(harness: Harness, repo: Path) -> None:
    ts = f"{int(time.time())}.000001"
    for event in ({"type": "app_mention", "user": BOT_USER, "text": f"<@{BOT_USER}> loop?", "ts": ts,
                   "channel": CHANNEL},
                  {"type": "app_mention", "user": "UOTHER", "bot_id": "B2", "text": f"<@{BOT_USER}> hi", "ts": ts,
                   "channel": CHANNEL},
                  {"type": "message", "subtype": "bot_message", "bot_id": "B2", "text": "beep", "ts": ts,
                   "thread_ts": ts, "channel": CHANNEL}):
        resp, _ = await harness.event(event)
        assert resp.status == 200
    await asyncio.sleep(0.3)
    assert [c.method for c in harness.slack.calls if c.method != "auth.test"] == []
    assert await harness.jobs(repo) == []


async def test_the_slash_command_acks_at_once_and_answers_via_response_url(harness: Harness, repo: Path,
                                                                          llm: FakeLLM) -> None:
    started = time.monotonic()
    resp = await harness.slash("status")
    assert resp.status == 200 and time.monotonic() - started < 3
    status = await harness.slack.wait_for(lambda: harness.slack.responses, what="the status answer")
    assert status[0]["response_type"] == "ephemeral" and "is up" in status[0]["text"]

    llm.add_rule("It lives in app.py:1.", user="Question: where does quokka live")
    await harness.slash("ask where does quokka live?")
    thread = await harness.slack.wait_for(lambda: [b for b in harness.slack.posted() if not b.get("thread_ts")],
                                          what="the thread the question opens")
    assert "<@UANN> asked the team: where does quokka live?" in thread[0]["text"]
    root = harness.slack.of("chat.postMessage")[0].ts
    assert await harness.finished(str(root)) == ["white_check_mark"]
    summary = await harness.slack.wait_for(lambda: harness.summary(str(root)), what="the answer in the thread")
    assert "It lives in app.py:1." in json.dumps(summary)
    assert await harness.slack.wait_for(  # its reply to the command: posted beside the job, in either order
        lambda: any("the answer will come in the thread" in r["text"] for r in harness.slack.responses),
        what="the reply that the answer comes in the thread")

    await harness.slash("jobs")
    listed = await harness.slack.wait_for(lambda: "Recent jobs" in harness.slack.responses[-1]["text"] and
                                          harness.slack.responses[-1], what="the job list")
    job = (await harness.jobs(repo))[0]
    assert f"`{job.id}` ask in `{repo.name}` — succeeded" in listed["text"]

    await harness.slash(f"cancel {job.id}", user=BOB)  # Bob did not start it
    refused = await harness.slack.wait_for(lambda: "Only the person" in harness.slack.responses[-1]["text"],
                                           what="the cancel refusal")
    assert refused
    await harness.slash("experience quokka")
    found = await harness.slack.wait_for(lambda: "quokka" in harness.slack.responses[-1]["text"] and
                                         harness.slack.responses[-1], what="the search answer")
    assert found["response_type"] == "ephemeral"
    await harness.slash("dance")
    usage = await harness.slack.wait_for(lambda: "/troupe ask" in harness.slack.responses[-1]["text"],
                                         what="the usage")
    assert usage
