"""The language server's one connection to the daemon, kept alive for the whole session.

:class:`DaemonLink` owns the shared :class:`~daemon.client.DaemonClient` (which starts the
daemon when ``TROUPE_AUTOSTART`` allows), follows the daemon-wide event stream, and when the
daemon cannot be reached says so ONCE, keeps serving, and reconnects with backoff. Every time
it (re)connects it calls ``on_connect`` (register the workspace folders, refresh diagnostics).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiohttp

from daemon.api.protocol import StreamEvent
from daemon.client import DaemonClient, DaemonError
from daemon.retry import Backoff
from lsp.messages import LinkState

log = logging.getLogger("troupe.lsp")

R = TypeVar("R")  # what one daemon call answers

NOT_YET = "not connected yet"
LINK_BACKOFF = Backoff(first=0.25, cap=5.0)  # an editor session outlives many daemon restarts

OnEvent = Callable[[StreamEvent], Awaitable[None]]
OnState = Callable[[bool, str], None]
LINK_ERRORS = (DaemonError, aiohttp.ClientError, OSError, TimeoutError)


class DaemonLink:
    def __init__(self, client: DaemonClient, *, on_connect: Callable[[], Awaitable[None]], on_event: OnEvent,
                 on_state: OnState) -> None:
        self.client = client
        self.connected = False
        self.reason = NOT_YET
        self._on_connect, self._on_event, self._on_state = on_connect, on_event, on_state
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="troupe-daemon-link")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.client.close()

    @property
    def state(self) -> LinkState:
        """``connecting`` (no answer yet), ``connected`` or ``unreachable``."""
        if self.connected:
            return "connected"
        return "connecting" if self.reason == NOT_YET else "unreachable"

    def retry_now(self) -> None:
        """A request just reached the daemon: skip the rest of the backoff."""
        self._wake.set()

    async def call(self, make: Callable[[DaemonClient], Awaitable[R]]) -> R:
        """One daemon call on behalf of an editor request; a lost connection is noted, then raised."""
        try:
            result = await make(self.client)
        except DaemonError as exc:
            if exc.status == 0:
                self._lost(exc)
            raise
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            self._lost(exc)
            raise DaemonError(f"cannot reach the Troupe daemon ({exc})") from None
        if not self.connected:
            self.retry_now()
        return result

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                await self.client.health()
                self._found()
                await self._on_connect()
                failures = 0
                async for event in self.client.watch_events():
                    try:
                        await self._on_event(event)
                    except Exception:  # one bad event must not end the stream
                        log.exception("handling daemon event %s of job %s failed", event.kind, event.job_id)
                self._lost(DaemonError("the event stream ended"))
            except asyncio.CancelledError:
                raise
            except LINK_ERRORS as exc:
                self._lost(exc)
            except Exception as exc:  # a bug in our handlers: log it, keep the session alive
                log.exception("daemon link failed")
                self._lost(exc)
            self._wake.clear()
            try:  # a request that reaches the daemon meanwhile ends the wait (retry_now)
                await asyncio.wait_for(self._wake.wait(), LINK_BACKOFF.delay(failures))
            except TimeoutError:
                pass
            failures += 1

    def _found(self) -> None:
        if not self.connected:
            self.connected, self.reason = True, "connected"
            log.info("connected to the daemon")
            self._on_state(True, "connected")

    def _lost(self, exc: BaseException) -> None:
        reason = str(exc) or type(exc).__name__
        if self.connected or self.reason == NOT_YET:
            log.warning("the daemon is unreachable: %s", reason)
            self.connected, self.reason = False, reason
            self._on_state(False, reason)
        self.reason = reason
