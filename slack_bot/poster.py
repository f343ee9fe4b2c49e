"""Everything the bot says goes through here: redacted, rate-limit aware, and throttled.

:class:`Poster` wraps the Web API client: every string of every message (text, blocks, file
content) passes :func:`daemon.redact.redact` first, and a ``429`` answer is retried after the
``Retry-After`` seconds Slack asked for, at most MAX_RETRY_AFTER (slack_sdk's own retry handler,
added to the client).
:class:`StatusMessage` is the one status
message of a job: edits are coalesced so that at most one ``chat.update`` goes out per
``interval`` seconds, always with the newest text.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from daemon.redact import redact
from daemon.retry import retry_after

log = logging.getLogger("troupe.slack")

MAX_RATE_LIMIT_RETRIES = 4
MAX_RETRY_AFTER = 30.0  # seconds: the longest one 429 makes the bot wait, whatever Slack sent
UNREADABLE_WAIT = 1.0  # seconds, when a 429 has no Retry-After the bot can read


def scrub(value: Any) -> Any:
    """``value`` with every string redacted (dicts and lists walked)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value


class RateLimitWaits(AsyncRateLimitErrorRetryHandler):
    """slack_sdk's 429 handler (which calls are retried, how often), waiting the ``Retry-After``
    Slack sent as :func:`daemon.retry.retry_after` reads it, at most ``cap`` seconds: a huge one
    (or one that is not a number, where slack_sdk's own wait would raise) cannot stall the bot.
    Each wait is counted and logged."""

    def __init__(self, *, cap: float = MAX_RETRY_AFTER) -> None:
        super().__init__(max_retry_count=MAX_RATE_LIMIT_RETRIES)
        self.cap = cap
        self.waited = 0

    async def prepare_for_next_attempt_async(self, *, state: RetryState, request: HttpRequest,
                                             response: HttpResponse | None = None,
                                             error: Exception | None = None) -> None:
        if response is None:  # not a 429 answer (slack_sdk asks only after one)
            raise error or RuntimeError("Slack retry without a response")
        sent = next((v for k, v in response.headers.items() if k.lower() == "retry-after"), None)
        asked = retry_after(sent)
        wait = min(self.cap, (UNREADABLE_WAIT if asked is None else asked) + random.uniform(0, 0.1))
        self.waited += 1
        log.warning("Slack rate-limited %s (Retry-After %s); retrying in %.1f s", request.url, sent, wait)
        state.next_attempt_requested = True
        await asyncio.sleep(wait)
        state.increment_current_attempt()


class Poster:
    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client
        installed = [h for h in client.retry_handlers if isinstance(h, RateLimitWaits)]
        self.rate_limits = installed[0] if installed else RateLimitWaits()
        if not installed:
            client.retry_handlers.append(self.rate_limits)

    @property
    def rate_limited(self) -> int:
        """How many 429 answers were waited out (for tests and logs)."""
        return self.rate_limits.waited

    async def call(self, method: str, **kwargs: Any) -> dict[str, Any]:
        """``client.<method>(**kwargs)`` with redaction (429s are waited out by the client); raises
        SlackApiError otherwise."""
        response = await getattr(self.client, method)(**scrub(kwargs))
        return dict(response.data) if isinstance(response.data, dict) else {}

    async def post(self, channel: str, thread_ts: str | None, text: str, **kwargs: Any) -> str | None:
        data = await self.call("chat_postMessage", channel=channel, thread_ts=thread_ts, text=text,
                               unfurl_links=False, unfurl_media=False, **kwargs)
        return data.get("ts")

    async def update(self, channel: str, ts: str, text: str, **kwargs: Any) -> None:
        await self.call("chat_update", channel=channel, ts=ts, text=text, **kwargs)

    async def react(self, channel: str, ts: str, name: str) -> None:
        try:
            await self.call("reactions_add", channel=channel, timestamp=ts, name=name)
        except SlackApiError as exc:  # already_reacted, or no permission: a reaction is never worth failing for
            log.info("reaction %s not added: %s", name, exc.response.get("error"))

    async def ephemeral(self, channel: str, user: str, text: str, thread_ts: str | None = None) -> None:
        try:
            await self.call("chat_postEphemeral", channel=channel, user=user, text=text, thread_ts=thread_ts)
        except SlackApiError as exc:
            log.info("ephemeral message not posted: %s", exc.response.get("error"))

    async def upload(self, channel: str, thread_ts: str, content: str, filename: str, title: str) -> None:
        await self.call("files_upload_v2", channel=channel, thread_ts=thread_ts, content=content,
                        filename=filename, title=title)


class StatusMessage:
    """One message, edited in place: ``touch()`` marks it stale; the newest ``render()`` goes out at
    most once per ``interval``; ``finish()`` sends the last edit (waiting the interval out)."""

    def __init__(self, poster: Poster, channel: str, ts: str, render: Callable[[], str],
                 interval: float = 1.5) -> None:
        self.poster, self.channel, self.ts, self.render = poster, channel, ts, render
        self.interval = interval
        self.updates = 0
        self._last_sent = time.monotonic()
        self._last_text: str | None = None
        self._task: asyncio.Task[None] | None = None

    def touch(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._flush_later())

    async def _flush_later(self) -> None:
        await asyncio.sleep(max(0.0, self._last_sent + self.interval - time.monotonic()))
        await self._send(self.render())

    async def _send(self, text: str, **kwargs: Any) -> None:
        if text == self._last_text and not kwargs:
            return
        self._last_text = text
        try:
            await self.poster.update(self.channel, self.ts, text, **kwargs)
            self.updates += 1
        except SlackApiError as exc:  # a lost progress edit must not stop the job's follower
            log.warning("status update failed: %s", exc.response.get("error"))
        finally:
            self._last_sent = time.monotonic()

    async def finish(self, text: str, **kwargs: Any) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        await asyncio.sleep(max(0.0, self._last_sent + self.interval - time.monotonic()))
        await self._send(text, **kwargs)
