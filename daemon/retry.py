"""Waiting before trying again, written once: exponential backoff and the ``Retry-After`` header.

Every reconnect and retry in Troupe waits through a :class:`Backoff` (the daemon client reaching
or waiting out the daemon, the language server's link, the LLM gateway, a team server's event
channel on PostgreSQL), and reads a server's ``Retry-After`` with :func:`retry_after` (Slack's 429s
too: slack_bot.poster's handler for slack_sdk reads it here and caps it)::

    RECONNECT = Backoff(first=0.1, cap=2.0)
    await RECONNECT.wait(attempt)           # 0.1, 0.2, 0.4 … 2.0 s
    retry_after("120") == 120.0; retry_after("Wed, 21 Oct 2026 07:28:00 GMT")  # seconds from now
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime


@dataclass(frozen=True)
class Backoff:
    """``first`` seconds before the first retry, doubling up to ``cap``; ``spread`` draws each
    wait from ``[(1 - spread) * d, d]`` so that clients failing together do not retry together."""

    first: float
    cap: float
    spread: float = 0.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait after ``attempt`` failures in a row less one (0: before the first retry)."""
        base = min(self.cap, self.first * 2.0 ** min(max(attempt, 0), 32))  # 2.0: int ** int may be a float
        return base * random.uniform(1 - self.spread, 1.0) if self.spread else base

    async def wait(self, attempt: int) -> None:
        await asyncio.sleep(self.delay(attempt))


RECONNECT = Backoff(first=0.1, cap=2.0)
"""A client reaching the daemon again (a restart takes a second or two)."""


def retry_after(value: object) -> float | None:
    """A ``Retry-After`` value (seconds, or an HTTP date) as seconds from now, never negative;
    None when it is absent or unreadable."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return retry_after(value[0]) if value else None
    try:
        return max(0.0, float(str(value)))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(str(value)).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
