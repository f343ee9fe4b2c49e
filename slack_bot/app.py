"""Wiring: the slack-bolt async app, and the two ways to run it.

* Socket Mode (default): ``SLACK_APP_TOKEN``; the bot dials out, no public URL needed.
* HTTP mode (``--http --port N``): the Events API, interactivity and the slash command at
  ``/slack/events`` on bolt's own aiohttp server; every request's signature is checked with
  ``SLACK_SIGNING_SECRET`` (a bad signature or a stale timestamp is answered 401, nothing runs).

Listeners are acknowledged at once (``process_before_response=False``); the work runs after.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
from typing import Any

from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from daemon.client import DaemonClient
from daemon.redact import install_log_redaction
from slack_bot import render
from slack_bot.actions import on_job_button, on_workspace_button
from slack_bot.bot import TroupeBot
from slack_bot.config import SlackConfig
from slack_bot.slash import on_command

log = logging.getLogger("troupe.slack")
EVENTS_PATH = "/slack/events"


def web_client(config: SlackConfig) -> AsyncWebClient:
    base = config.api_url or "https://slack.com/api/"
    return AsyncWebClient(token=config.bot_token, base_url=base if base.endswith("/") else base + "/")


def build_app(bot: TroupeBot) -> AsyncApp:
    """The bolt app; every listener hands over to ``bot``."""
    app = AsyncApp(client=bot.poster.client, signing_secret=bot.config.signing_secret or "unused-in-socket-mode",
                   process_before_response=False, ignoring_self_events_enabled=True, logger=log)

    @app.middleware
    async def learn_bot_user(context: Any, body: dict[str, Any], next: Any) -> Any:
        bot.bot_user_id = bot.bot_user_id or context.get("bot_user_id")
        return await next()

    # Each listener acts for the Slack user who sent the event (bot.acting_for: on a team server the
    # calls are that user's person's, when the bot's token is a bot's).
    @app.event("app_mention")
    async def mention(event: dict[str, Any], body: dict[str, Any]) -> None:
        async with bot.acting_for(event.get("user")):
            await bot.on_mention(event, body.get("event_id"))

    @app.event("message")
    async def message(event: dict[str, Any], body: dict[str, Any]) -> None:
        async with bot.acting_for(event.get("user")):
            await bot.on_message(event, body.get("event_id"))

    @app.action(re.compile(rf"^({render.APPLY}|{render.DISCARD}|{render.DETAILS})$"))
    async def job_button(ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any) -> None:
        await ack()
        async with bot.acting_for((body.get("user") or {}).get("id")):
            await on_job_button(bot, body, action, respond)

    @app.action(re.compile(rf"^{render.PICK_WORKSPACE}_(\d+|select)$"))
    async def workspace_button(ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any) -> None:
        await ack()
        async with bot.acting_for((body.get("user") or {}).get("id")):
            await on_workspace_button(bot, body, action, respond)

    @app.command("/troupe")
    async def troupe(ack: Any, command: dict[str, Any], respond: Any) -> None:
        await ack()
        async with bot.acting_for(command.get("user_id")):
            await on_command(bot, command, respond)

    return app


def make_bot(config: SlackConfig, daemon: DaemonClient | None = None) -> TroupeBot:
    config.register_secrets()
    return TroupeBot(config, daemon or DaemonClient(), web_client(config))


async def start_http(app: AsyncApp, host: str, port: int) -> web.AppRunner:
    """Serve ``/slack/events`` on ``host:port``; returns the runner (``await runner.cleanup()`` stops it)."""
    runner = web.AppRunner(app.web_app(path=EVENTS_PATH, port=port), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


async def start_socket_mode(app: AsyncApp, app_token: str) -> Any:
    """Connect over Socket Mode; returns the handler (``await handler.close_async()`` stops it)."""
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    handler = AsyncSocketModeHandler(app, app_token)
    await handler.connect_async()
    return handler


async def serve(config: SlackConfig, *, http: bool, host: str = "127.0.0.1", port: int = 3000,
                ready: Any = None) -> int:
    """Run until SIGINT/SIGTERM. ``ready(url_or_mode)`` is called once listening (for tests and logs)."""
    config.require(http=http)
    install_log_redaction()
    bot = make_bot(config)
    app = build_app(bot)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        health = await bot.daemon.health()
        log.info("connected to the Troupe daemon %s (%s)", health.version, health.home)
        resumed = await bot.resume()
        if http:
            runner = await start_http(app, host, port)
            bound = [s for s in runner.addresses]
            where = f"http://{bound[0][0]}:{bound[0][1]}{EVENTS_PATH}" if bound else f"{host}:{port}"
            log.info("Slack events at %s", where)
            closer: Any = runner.cleanup
        else:
            handler = await start_socket_mode(app, config.app_token)
            where, closer = "socket-mode", handler.close_async
        log.info("Troupe Slack bot ready (%s; %d job(s) resumed)", where, resumed)
        if ready is not None:
            ready(where)
        await stop.wait()
        await closer()
    finally:
        await bot.close()
        await bot.daemon.close()
    return 0
