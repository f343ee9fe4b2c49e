"""The three adapters as a person uses them against a team server, for tests/team_server: the ``troupe``
command (a subprocess), the language server (a subprocess, driven by the LSP test client of
tests/lsp) and the Slack bot (the bolt app behind its HTTP endpoint, receiving signed requests and
posting to the fake Slack Web API, as tests/slack drive it). Each reaches an API node with
``TROUPE_SERVER_URL`` + ``TROUPE_TOKEN`` (the bot: its own client with a person's token)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

from daemon.client import DaemonClient
from slack_bot.app import EVENTS_PATH, build_app, start_http, web_client
from slack_bot.bot import TroupeBot
from tests.fakes.slack_api import FakeSlack
from tests.lsp.conftest import Editor, start_editor, stop_editor
from tests.slack.conftest import BOT_TOKEN, Harness, slack_config
from tests.team_server.conftest import REPO, TeamCluster

_SCRIPT = Path(sys.executable).parent / "troupe"  # the console script pip installed beside the interpreter
TROUPE = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "daemon.cli.main"]


def server_env(url: str, token: str) -> dict[str, str]:
    return {"TROUPE_SERVER_URL": url, "TROUPE_TOKEN": token}


async def troupe(team: TeamCluster, url: str, token: str, *args: str) -> asyncio.subprocess.Process:
    """``troupe ARGS…`` as a person runs it against the team server at ``url``."""
    env = {k: v for k, v in team.env.items() if k != "TROUPE_TEAM_CONFIG"}
    return await asyncio.create_subprocess_exec(*TROUPE, *args, env={**env, **server_env(url, token)}, cwd=REPO,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


@contextlib.asynccontextmanager
async def editor(home: Path, folder: Path, url: str, token: str) -> AsyncIterator[Editor]:
    """An editor with ``folder`` (a clone of a team workspace's remote) open, its language server on ``url``."""
    home.mkdir(mode=0o700, exist_ok=True)
    opened = await start_editor(home, [folder], env=server_env(url, token))
    try:
        yield opened
    finally:
        await stop_editor(opened)


@contextlib.asynccontextmanager
async def slack_bot(folder: Path, url: str, token: str) -> AsyncIterator[Harness]:
    """The bot with no channel map of its own: it asks the team server which workspace a channel is."""
    slack = await FakeSlack(token=BOT_TOKEN).start()
    config = slack_config(folder, None, api_url=slack.api_url)
    config.register_secrets()
    bot = TroupeBot(config, DaemonClient(tcp_url=url, token=token, autostart=False, retries=2), web_client(config))
    runner = await start_http(build_app(bot), "127.0.0.1", 0)
    host, port = runner.addresses[0][:2]
    harness = Harness(slack, bot, f"http://{host}:{port}{EVENTS_PATH}", aiohttp.ClientSession(), runner)
    try:
        yield harness
    finally:
        await harness.close()
        await slack.stop()
