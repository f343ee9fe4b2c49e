"""The bot's parts without a daemon: rate limits and throttling against the fake Slack Web API,
message parsing, configuration, the session store, and choosing the repository."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from daemon.api.protocol import WorkspaceInfo
from slack_bot.bot import TroupeBot
from slack_bot.config import SlackConfig, SlackConfigError, load_config
from slack_bot.intent import parse, plain
from slack_bot.poster import Poster, RateLimitWaits, StatusMessage
from slack_bot.state import BotState, JobRecord, Thread
from tests.fakes.slack_api import FakeSlack

TOKEN = "xoxb-unit-0000-token"


@pytest.fixture
async def slack() -> Any:
    async with FakeSlack(token=TOKEN) as fake:
        yield fake


async def test_a_429_is_waited_out_for_the_seconds_slack_asked(slack: FakeSlack) -> None:
    poster = Poster(AsyncWebClient(token=TOKEN, base_url=slack.api_url))
    ts = await poster.post("C1", None, "hello")
    slack.rate_limit("chat.update", retry_after=1, times=1)
    started = time.monotonic()
    await poster.update("C1", str(ts), "edited")
    assert time.monotonic() - started >= 1.0
    tries = [c for c in slack.calls if c.method == "chat.update"]
    assert [c.status for c in tries] == [429, 200] and tries[1].at - tries[0].at >= 1.0
    assert poster.rate_limited == 1 and slack.messages["C1", ts]["text"] == "edited"


async def test_a_huge_or_unreadable_retry_after_waits_only_the_cap_and_the_edit_lands(slack: FakeSlack) -> None:
    waits = RateLimitWaits(cap=0.3)
    poster = Poster(AsyncWebClient(token=TOKEN, base_url=slack.api_url, retry_handlers=[waits]))
    ts = await poster.post("C1", None, "hello")
    slack.rate_limit("chat.update", retry_after=86_400)  # a day
    slack.rate_limit("chat.update", retry_after="soon")  # neither seconds nor a date
    await asyncio.wait_for(poster.update("C1", str(ts), "edited"), timeout=10)  # not a day, not a crash
    tries = [c for c in slack.calls if c.method == "chat.update"]
    assert [c.status for c in tries] == [429, 429, 200]
    assert all(0.3 <= b.at - a.at < 5 for a, b in itertools.pairwise(tries))  # each wait: the cap
    assert poster.rate_limited == 2 and slack.messages["C1", ts]["text"] == "edited"


async def test_status_edits_are_coalesced_and_throttled(slack: FakeSlack) -> None:
    poster = Poster(AsyncWebClient(token=TOKEN, base_url=slack.api_url))
    ts = str(await poster.post("C1", None, "status"))
    state = {"n": 0}
    status = StatusMessage(poster, "C1", ts, lambda: f"step {state['n']}", interval=0.25)
    started = time.monotonic()
    for n in range(1, 41):  # 40 changes in about one second
        state["n"] = n
        status.touch()
        await asyncio.sleep(0.025)
    await status.finish("finished")
    edits = slack.of("chat.update")
    assert 3 <= len(edits) <= (time.monotonic() - started) / 0.25 + 1, len(edits)  # ~5, not 40
    assert all(b.at - a.at >= 0.2 for a, b in itertools.pairwise(edits))
    assert edits[-1].body["text"] == "finished" and slack.messages["C1", ts]["text"] == "finished"


async def test_secrets_are_redacted_from_every_part_of_a_message(slack: FakeSlack) -> None:
    poster = Poster(AsyncWebClient(token=TOKEN, base_url=slack.api_url))
    leak = "sk-abcdefghijklmnop1234"
    await poster.post("C1", None, f"key {leak}", blocks=[{"type": "section",
                                                          "text": {"type": "mrkdwn", "text": f"`{leak}`"}}])
    await poster.upload("C1", "1.1", f"+API_KEY = '{leak}'\n", "change.diff", "diff")
    assert leak not in slack.recorded_text() and "***" in slack.recorded_text()
    assert [c.method for c in slack.calls] == ["chat.postMessage", "files.getUploadURLExternal",
                                               "files.completeUploadExternal"] and slack.uploads


def test_messages_are_read_as_typed_and_the_kind_comes_from_a_keyword() -> None:
    text = plain("<@UBOT> please review <http://app.py|app.py> and `lib/util.py` &amp; tell <@UANN>", "UBOT")
    assert text == "please review app.py and `lib/util.py` & tell @UANN"
    intent = parse(text)
    assert (intent.kind, intent.files, intent.explicit) == ("review", ["app.py", "lib/util.py"], True)
    assert parse("change greet() to shout").kind == "change"
    assert parse("can you build a todo app").kind == "build"
    assert parse("run the tests please").kind == "test"
    assert parse("what does this test check in the end?").kind == "ask"  # keyword too far in: a question
    assert parse("and now?", default_kind="change").kind == "change"
    assert parse("look at ../etc/passwd.txt and /abs/x.py").files == []


def test_configuration_from_the_user_file_and_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[slack]\nchannels = { C1 = "/src/shop" }\nallowed_users = ["UANN"]\nadmins = ["UADM"]\n'
                    'update_interval = 2\n')
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "SLACK_API_URL": "http://127.0.0.1:9/api/",
           "TROUPE_SLACK_ALLOWED_CHANNELS": "C1, C2", "TROUPE_SLACK_STATE": str(tmp_path / "s.db")}
    config = load_config(env, path)
    assert config.channels == {"C1": "/src/shop"} and config.allowed_channels == {"C1", "C2"}
    assert config.update_interval == 2.0 and config.api_url == "http://127.0.0.1:9/api/"
    assert config.user_allowed("UANN") and config.user_allowed("UADM") and not config.user_allowed("UBOB")
    assert config.may_control("UADM", "UANN") and not config.may_control("UBOB", "UANN")
    config.require(http=True)
    with pytest.raises(SlackConfigError, match="SLACK_APP_TOKEN"):
        config.require(http=False)
    assert "xoxb-1" not in repr(config)
    with pytest.raises(SlackConfigError, match="absolute path"):
        load_config({**env, "TROUPE_SLACK_CHANNELS": "C1=relative/repo"}, path)
    path.write_text("[slack]\nchanels = {}\n")
    with pytest.raises(SlackConfigError, match="unknown key"):
        load_config(env, path)


def test_the_session_store_survives_a_restart_and_remembers_deliveries(tmp_path: Path) -> None:
    state = BotState(tmp_path / "slack.db")
    assert state.first_time("event:Ev1", "msg:C1:1.1") and not state.first_time("event:Ev1", "msg:C1:1.1")
    assert not state.first_time("event:Ev2", "msg:C1:1.1")  # a new event id for the same message
    state.save_thread(Thread("C1", "1.1", requester="UANN", workspace="/r", job_id="j1", question_id="q1"))
    state.add_job(JobRecord("j1", "C1", "1.1", "UANN", "ask"))
    state.update_job("j1", change_id="ch1")
    state.close()
    again = BotState(tmp_path / "slack.db")
    assert again.thread("C1", "1.1") == Thread("C1", "1.1", "UANN", "/r", "j1", None, "q1", None)
    assert again.job("j1").change_id == "ch1" and not again.first_time("event:Ev1")
    again.close()


class StubDaemon:
    def __init__(self, roots: list[str]) -> None:
        self.roots = roots

    async def workspaces(self, *, channel: str | None = None) -> list[WorkspaceInfo]:  # a laptop daemon: all
        return [WorkspaceInfo(id=i, root=r) for i, r in enumerate(self.roots)]


async def test_the_repository_comes_from_the_channel_map_or_the_only_one_registered(tmp_path: Path) -> None:
    def bot(roots: list[str], channels: dict[str, str]) -> TroupeBot:
        config = SlackConfig(bot_token=TOKEN, channels=channels, state_path=tmp_path / f"{len(roots)}.db")
        return TroupeBot(config, StubDaemon(roots), AsyncWebClient(token=TOKEN))  # type: ignore[arg-type]

    assert await bot(["/a", "/b"], {"C1": "/b"})._workspace_for("C1") == "/b"
    assert await bot(["/only"], {})._workspace_for("C7") == "/only"
    assert await bot(["/a", "/b"], {})._workspace_for("C7") is None  # ambiguous: the requester is asked


def test_a_change_whose_own_tests_failed_is_offered_with_a_warning_and_apply_anyway() -> None:
    from daemon.api.protocol import ChangeInfo, JobInfo
    from slack_bot.render import summary_blocks

    job = JobInfo(id="j1", kind="change", state="succeeded", priority=20)
    failed = ChangeInfo(id="c1", job_id="j1", state="proposed", diff="+x\n",
                        tests_failed="Tests FAILED: 1 failed, 1 passed (pytest, 0.4 s)")
    blocks = summary_blocks(job, "done", failed, inline_diff=False, requester=None)
    texts = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    labels = [e["text"]["text"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert ":warning: *Its own tests failed:* Tests FAILED: 1 failed, 1 passed (pytest, 0.4 s)" in texts
    assert labels == ["Apply anyway", "Discard", "Details"]
    passed = ChangeInfo(id="c2", job_id="j1", state="proposed", diff="+x\n")
    labels = [e["text"]["text"] for b in summary_blocks(job, "done", passed, inline_diff=False, requester=None)
              if b["type"] == "actions" for e in b["elements"]]
    assert labels == ["Apply", "Discard", "Details"]
