"""Slack bot tests: the real bolt app behind its real aiohttp endpoint, receiving signed requests
shaped like Slack's, talking to a fake Slack Web API (tests/fakes/slack_api.py) and to a real
daemon subprocess whose agent engine talks to the fake LLM server.

One daemon and one fake LLM serve the whole package (each test scripts the LLM with its own
marker words and works in its own repository); every test gets a fresh bot, state file and
fake Slack."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from slack_sdk.signature import SignatureVerifier

from daemon.api.protocol import SubmitJob
from slack_bot.app import EVENTS_PATH, build_app, start_http, web_client
from slack_bot.bot import TroupeBot
from slack_bot.config import SlackConfig
from tests.daemon.conftest import DaemonProcess, daemon_env, wait_for
from tests.fakes.llm_server import FakeLLM
from tests.fakes.slack_api import BOT_USER, FakeSlack

BOT_TOKEN = "xoxb-test-0000-bottoken"
SECRET = "test-signing-secret"
CHANNEL = "C1"
ANN, BOB = "UANN", "UBOB"
INTERVAL = 0.2
_ts = itertools.count(1)


@pytest.fixture(scope="session")
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM().start_in_thread()
    fake.default_reply = "I am the fake model."
    yield fake
    fake.stop_thread()


@pytest.fixture(scope="session")
def daemon(llm: FakeLLM) -> Iterator[DaemonProcess]:
    """The real daemon with the agent engine; warmed up by one job, so tests see steady timings."""
    home = Path(tempfile.mkdtemp(prefix="trs-", dir="/tmp"))
    env = daemon_env(home, **llm.env(), TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor",
                     TROUPE_PRELOAD_LLM="1", TROUPE_JOBS_CONCURRENCY="4")
    process = DaemonProcess(home, env).start()
    warm = make_repo(home, "warmup")

    async def warm_up() -> None:
        async with process.client() as client:
            job = await client.submit(SubmitJob(kind="ask", workspace=str(warm), prompt="warm up"))
            await wait_for(client, job.id, timeout=90)

    import asyncio

    asyncio.run(warm_up())
    yield process
    process.stop()
    shutil.rmtree(home, ignore_errors=True)


def make_repo(home: Path, name: str) -> Path:
    root = (home / name).resolve()
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("def add(a, b):\n    return a - b\n")
    (root / ".troupe.toml").write_text('[test]\ncommand = "true"\n')
    return root


@pytest.fixture
def repo(daemon: DaemonProcess, request: pytest.FixtureRequest) -> Path:
    return make_repo(daemon.home, re.sub(r"\W", "_", request.node.name)[:60])


def signed(body: str, content_type: str, *, secret: str = SECRET, at: float | None = None) -> dict[str, str]:
    ts = str(int(at if at is not None else time.time()))
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature, "Content-Type": content_type}


def new_ts() -> str:
    return f"{int(time.time())}.{next(_ts):06d}"


class Harness:
    """Sends Slack-shaped, signed requests to the bot's /slack/events and reads what it did."""

    def __init__(self, slack: FakeSlack, bot: TroupeBot, url: str, session: aiohttp.ClientSession,
                 runner: Any) -> None:
        self.slack, self.bot, self.url, self.session, self.runner = slack, bot, url, session, runner
        self.closed = False

    async def close(self) -> None:
        """Stop the bot (as a restart would); the fake Slack keeps running."""
        if not self.closed:
            self.closed = True
            await self.session.close()
            await self.runner.cleanup()
            await self.bot.close()
            await self.bot.daemon.close()

    async def send(self, body: str, content_type: str, **headers: str) -> aiohttp.ClientResponse:
        all_headers = {**signed(body, content_type), **headers}
        async with self.session.post(self.url, data=body, headers=all_headers) as resp:
            await resp.read()
            return resp

    async def event(self, event: dict[str, Any], *, event_id: str | None = None,
                    **headers: str) -> tuple[aiohttp.ClientResponse, str]:
        event_id = event_id or f"Ev{next(_ts):08d}"
        body = json.dumps({"token": "legacy", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
                           "event": event, "event_id": event_id, "event_time": int(time.time()),
                           "authorizations": [{"team_id": "T1", "user_id": BOT_USER, "is_bot": True}]})
        return await self.send(body, "application/json", **headers), event_id

    async def mention(self, text: str, *, user: str = ANN, channel: str = CHANNEL, thread_ts: str | None = None,
                      event_id: str | None = None, **headers: str) -> tuple[str, str]:
        """``@troupe <text>``; returns (the message ts, the event id)."""
        ts = new_ts()
        event = {"type": "app_mention", "user": user, "text": f"<@{BOT_USER}> {text}", "ts": ts,
                 "channel": channel, "event_ts": ts, **({"thread_ts": thread_ts} if thread_ts else {})}
        resp, event_id = await self.event(event, event_id=event_id, **headers)
        assert resp.status == 200
        return ts, event_id

    async def reply(self, text: str, thread_ts: str, *, user: str = ANN, channel: str = CHANNEL) -> str:
        ts = new_ts()
        resp, _ = await self.event({"type": "message", "channel_type": "channel", "user": user, "text": text,
                                    "ts": ts, "thread_ts": thread_ts, "channel": channel, "event_ts": ts})
        assert resp.status == 200
        return ts

    async def choose(self, element: dict[str, Any], value: str, message: dict[str, Any], *,
                     user: str = ANN) -> aiohttp.ClientResponse:
        """Press a button, or pick ``value`` in a menu."""
        if element["type"] == "button":
            return await self.press(element["action_id"], value, message, user=user)
        return await self.press(element["action_id"], "", message, user=user, action={
            "type": "static_select", "selected_option": {"value": value, "text": {"type": "plain_text", "text": "x"}}})

    async def press(self, action_id: str, value: str, message: dict[str, Any], *, user: str = ANN,
                    channel: str = CHANNEL, action: dict[str, Any] | None = None) -> aiohttp.ClientResponse:
        payload = {"type": "block_actions", "user": {"id": user}, "team": {"id": "T1"}, "api_app_id": "A1",
                   "channel": {"id": channel}, "container": {"type": "message", "channel_id": channel,
                                                             "message_ts": message["ts"]},
                   "message": message, "trigger_id": "1.2.3", "response_url": self.slack.response_url(action_id),
                   "actions": [action or {"type": "button", "action_id": action_id, "value": value}]}
        payload["actions"][0].update(action_id=action_id, block_id="b", action_ts=str(time.time()))
        return await self.send(urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")

    async def slash(self, text: str, *, user: str = ANN, channel: str = CHANNEL) -> aiohttp.ClientResponse:
        body = urlencode({"command": "/troupe", "text": text, "user_id": user, "channel_id": channel,
                          "team_id": "T1", "trigger_id": "1.2.3", "response_url": self.slack.response_url("slash")})
        return await self.send(body, "application/x-www-form-urlencoded")

    # ---------------------------------------------------------------- reading

    async def jobs(self, repo: Path) -> list[Any]:
        """The daemon's jobs in ``repo`` (none when no job ever registered it)."""
        if str(repo) not in [w.root for w in await self.bot.daemon.workspaces()]:
            return []
        return await self.bot.daemon.jobs(workspace=str(repo))

    def in_thread(self, thread_ts: str) -> list[dict[str, Any]]:
        return [b for b in self.slack.posted(CHANNEL) if b.get("thread_ts") == thread_ts]

    def reactions(self, ts: str) -> list[str]:
        return [c.body["name"] for c in self.slack.of("reactions.add") if c.body.get("timestamp") == ts]

    def summary(self, thread_ts: str) -> dict[str, Any] | None:
        """The final message of a thread: the one with the buttons."""
        for body in reversed(self.in_thread(thread_ts)):
            if any(b.get("type") == "actions" for b in _blocks(body)):
                return body
        return None

    def summary_ts(self, thread_ts: str) -> str:
        for call in reversed(self.slack.of("chat.postMessage")):
            if call.body.get("thread_ts") == thread_ts and any(b.get("type") == "actions" for b in _blocks(call.body)):
                return str(call.ts)
        raise AssertionError(f"no summary in thread {thread_ts}")

    async def finished(self, ts: str, timeout: float = 30.0) -> list[str]:
        return await self.slack.wait_for(lambda: {"white_check_mark", "x"} & set(self.reactions(ts)) and
                                         self.reactions(ts), timeout, what=f"a final reaction on {ts}")


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = body.get("blocks") or []
    return json.loads(blocks) if isinstance(blocks, str) else blocks


def buttons(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The interactive elements of a message by their label (a menu by its placeholder)."""
    return {(e.get("text") or e.get("placeholder"))["text"]: e
            for b in _blocks(body) if b.get("type") == "actions" for e in b["elements"]}


def block_text(body: dict[str, Any]) -> str:
    return "\n".join(b["text"]["text"] for b in _blocks(body) if b.get("type") == "section")


def slack_config(tmp_path: Path, repo: Path | None, **overrides: Any) -> SlackConfig:
    values: dict[str, Any] = {"bot_token": BOT_TOKEN, "signing_secret": SECRET, "update_interval": INTERVAL,
                              "channels": {CHANNEL: str(repo)} if repo else {}, "state_path": tmp_path / "slack.db"}
    values.update(overrides)
    return SlackConfig(**values)


@pytest.fixture
async def make_harness(daemon: DaemonProcess, tmp_path: Path) -> AsyncIterator[Any]:
    made: list[Harness] = []

    async def make(repo: Path | None, slack: FakeSlack | None = None, **overrides: Any) -> Harness:
        slack = slack or await FakeSlack(token=BOT_TOKEN).start()
        config = slack_config(tmp_path, repo, api_url=slack.api_url, **overrides)
        config.register_secrets()
        bot = TroupeBot(config, daemon.client(), web_client(config))
        runner = await start_http(build_app(bot), "127.0.0.1", 0)
        host, port = runner.addresses[0][:2]
        made.append(Harness(slack, bot, f"http://{host}:{port}{EVENTS_PATH}", aiohttp.ClientSession(), runner))
        return made[-1]

    yield make
    for harness in made:
        await harness.close()
        await harness.slack.stop()


@pytest.fixture
async def harness(make_harness: Any, repo: Path) -> Harness:
    return await make_harness(repo)
