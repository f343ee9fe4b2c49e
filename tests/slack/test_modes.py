"""The two ways to run the bot: Socket Mode against a fake WebSocket endpoint, and
``python -m slack_bot --http --port 0`` as its own process (what ``troupe slack --http`` runs)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import aiohttp

from daemon.api.protocol import FINAL_STATES
from slack_bot.app import build_app, start_socket_mode, web_client
from slack_bot.bot import TroupeBot
from tests.daemon.conftest import REPO, DaemonProcess
from tests.fakes.llm_server import FakeLLM
from tests.fakes.slack_api import BOT_USER, FakeSlack
from tests.slack.conftest import ANN, BOT_TOKEN, CHANNEL, SECRET, new_ts, signed, slack_config

APP_TOKEN = "xapp-1-A1-test-apptoken"

def callback(text: str, ts: str, event_id: str) -> dict:
    return {"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": event_id,
            "event_time": int(time.time()), "authorizations": [{"team_id": "T1", "user_id": BOT_USER, "is_bot": True}],
            "event": {"type": "app_mention", "user": ANN, "text": f"<@{BOT_USER}> {text}", "ts": ts,
                      "channel": CHANNEL, "event_ts": ts}}

def reactions(slack: FakeSlack, ts: str) -> list[str]:
    return [c.body["name"] for c in slack.of("reactions.add") if c.body.get("timestamp") == ts]

async def test_socket_mode_acks_envelopes_and_runs_the_same_mention_flow(daemon: DaemonProcess, repo: Path,
                                                                        tmp_path: Path, llm: FakeLLM) -> None:
    llm.add_rule("Via the socket: app.py:1.", user="Question: where is the ibex")
    async with FakeSlack(token=BOT_TOKEN) as slack:
        config = slack_config(tmp_path, repo, api_url=slack.api_url, app_token=APP_TOKEN)
        bot = TroupeBot(config, daemon.client(), web_client(config))
        handler = await start_socket_mode(build_app(bot), APP_TOKEN)
        try:
            await slack.wait_for(lambda: slack.connected, what="a Socket Mode connection")
            opened = slack.of("apps.connections.open")
            assert len(opened) == 1 and opened[0].token == APP_TOKEN  # the app-level token, not the bot's

            ts = new_ts()
            payload = callback("where is the ibex?", ts, "EvSOCK1")
            await slack.push({"envelope_id": "env-1", "type": "events_api", "accepts_response_payload": False,
                              "retry_attempt": 0, "retry_reason": "", "payload": payload})
            await slack.push({"envelope_id": "env-2", "type": "events_api", "accepts_response_payload": False,
                              "retry_attempt": 1, "retry_reason": "timeout", "payload": payload})  # redelivered
            await slack.wait_for(lambda: {"env-1", "env-2"} <= {a.get("envelope_id") for a in slack.acks},
                                 what="both envelopes acked")
            await slack.wait_for(lambda: "white_check_mark" in reactions(slack, ts), what="the final reaction")
            assert reactions(slack, ts) == ["eyes", "white_check_mark"]
            thread = [b for b in slack.posted() if b.get("thread_ts") == ts]
            assert "On it" in thread[0]["text"] and "Via the socket: app.py:1." in json.dumps(thread[-1])
            assert slack.of("chat.update")
            jobs = await bot.daemon.jobs(workspace=str(repo))
            assert len(jobs) == 1 and jobs[0].state == "succeeded"
        finally:
            await handler.close_async()
            await bot.close()
            await bot.daemon.close()

async def test_python_m_slack_bot_serves_signed_events_over_http(daemon: DaemonProcess, repo: Path,
                                                                 tmp_path: Path, llm: FakeLLM) -> None:
    llm.add_rule("From the process: app.py:2.", user="Question: where is the gecko")
    async with FakeSlack(token=BOT_TOKEN) as slack:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TROUPE_", "SLACK_"))}
        env.update({"TROUPE_HOME": str(daemon.home), "TROUPE_AUTOSTART": "0", "PYTHONPATH": str(REPO),
                    "XDG_CONFIG_HOME": str(tmp_path / "config"), "TROUPE_SLACK_STATE": str(tmp_path / "slack.db"),
                    "TROUPE_SLACK_CHANNELS": f"{CHANNEL}={repo}", "TROUPE_SLACK_UPDATE_INTERVAL": "0.2",
                    "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": slack.api_url})
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "slack_bot", "--http", "--port", "0",
                                                    env=env, cwd=REPO, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
        try:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            assert line.startswith("SLACK_BOT_READY=http://127.0.0.1:"), line
            url = line.split("=", 1)[1].strip()
            ts = new_ts()
            body = json.dumps(callback("where is the gecko?", ts, "EvPROC1"))

            async with aiohttp.ClientSession() as session:
                forged = signed(body, "application/json", secret="wrong")
                async with session.post(url, data=body, headers=forged) as resp:
                    assert resp.status == 401
                async with session.post(url, data=body, headers=signed(body, "application/json")) as resp:
                    assert resp.status == 200
            await slack.wait_for(lambda: "white_check_mark" in reactions(slack, ts), what="the final reaction")
            assert "From the process: app.py:2." in json.dumps(slack.posted()[-1])
        finally:
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 20)
        logs = (await proc.stderr.read()).decode()
        assert code == 0, logs
        assert BOT_TOKEN not in logs and SECRET not in logs
        async with daemon.client() as client:
            jobs = await client.jobs(workspace=str(repo))
        assert len(jobs) == 1 and jobs[0].state in FINAL_STATES
