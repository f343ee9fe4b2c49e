"""Job events between machines: PostgreSQL LISTEN/NOTIFY.

Every process records an event in the store first (the store gives it its ``seq``), then
:class:`NotifyingHub` sends ``NOTIFY troupe_events, '<job id> <seq>'``. Every API node runs an
:class:`EventRelay`: it listens on that channel, reads the job's events after the last one it
relayed from the store, and publishes them to its own :class:`EventHub`, so a stream on any node
(SSE, the language server, Slack, the viewer) sees every event once, in order. A notification is
only a hint (NOTIFY's payload is small and a notification can be missed while reconnecting):
the store is the record, so a missed one is caught up by the job's next event, and a stream that
resumes reads the store anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

import psycopg

from daemon.jobs.hub import EventHub
from daemon.jobs.progress import advance, fold
from daemon.messages import StreamEvent
from daemon.retry import RECONNECT
from storage.errors import StoreError

if TYPE_CHECKING:
    from daemon.payloads import JobProgress
    from storage import AsyncStore

log = logging.getLogger("troupe.team.events")

CHANNEL = "troupe_events"


class NotifyingHub(EventHub):
    """An EventHub whose job events go to every API node through PostgreSQL (none are delivered here
    directly: the node's relay delivers them, its own included, so every node does the same)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self._url = url
        self._outbox: asyncio.Queue[str] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None

    async def open(self) -> None:
        self._sender = asyncio.create_task(self._send(), name="troupe-notify")

    async def aclose(self) -> None:
        """Send what is left (for a few seconds at most: the database may be gone), then stop."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5.0):
                await self._outbox.join()
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender

    def publish(self, event: StreamEvent) -> None:
        if event.job_id is None or event.seq is None:
            super().publish(event)  # not a job's event: this node's streams only
            return
        self.published += 1
        self._outbox.put_nowait(f"{event.job_id} {event.seq}")  # < NOTIFY's 8000-byte payload

    def deliver(self, event: StreamEvent) -> None:
        """Publish to this node's streams (the relay's events, from every node)."""
        super().publish(event)

    async def _send(self) -> None:
        failures = 0
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._url, autocommit=True) as conn:
                    failures = 0
                    while True:
                        note = await self._outbox.get()
                        try:
                            await conn.execute("SELECT pg_notify(%s, %s)", [CHANNEL, note])
                        except psycopg.Error:
                            self._outbox.put_nowait(note)  # sent again on the next connection
                            raise
                        finally:
                            self._outbox.task_done()
            except psycopg.Error as exc:
                log.warning("cannot notify the other nodes (%s); retrying", exc)
                await RECONNECT.wait(failures)
                failures += 1


class EventRelay:
    """Listens for job events from every node and publishes them to this node's hub, each once."""

    def __init__(self, url: str, store: AsyncStore, hub: NotifyingHub) -> None:
        self._url, self._store, self._hub = url, store, hub
        self._relayed: dict[str, int] = {}  # job -> the last seq published here
        self._progress: dict[str, JobProgress] = {}
        self._roots: dict[int, str | None] = {}
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._since = time.time()  # jobs created from here on are this node's to relay from their first event
        self.reconnects = 0  # times the channel was lost and listened to again

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="troupe-relay")
        await self._listening.wait()  # from here on no event is missed

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _listen(self) -> None:
        failures = 0
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._url, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    if self._listening.is_set():  # listening again: what was notified meanwhile is lost
                        await self._catch_up()
                        self.reconnects += 1
                    failures = 0
                    self._listening.set()
                    async for note in conn.notifies():
                        job_id, _, seq = note.payload.partition(" ")
                        if seq.isdigit():
                            await self._relay(job_id, int(seq))
            except (psycopg.Error, StoreError) as exc:
                log.warning("lost the event channel (%s); listening again", exc)
                await RECONNECT.wait(failures)
                failures += 1

    async def _catch_up(self) -> None:
        """After the channel was lost: every recent job's events this node has not relayed yet, from
        the store (the jobs it relayed before, and those created since it started)."""
        for job in await self._store.list_jobs(limit=1000):
            last = self._relayed.get(job.id)
            if last is not None:
                await self._relay(job.id, last + 1)
            elif job.created >= self._since:
                await self._relay(job.id, 1)

    async def _relay(self, job_id: str, seq: int) -> None:
        after = self._relayed.get(job_id, seq - 1)  # a job first seen here: from this event on
        if seq <= after:
            return
        events = await self._store.events_after(job_id, after)
        if not events:
            return
        job = await self._store.get_job(job_id)
        root = await self._root(job.workspace_id if job else None)
        progress = self._progress.get(job_id)
        if progress is None:
            progress = fold(await self._store.events_after(job_id, 0, limit=after)) if after else fold([])
        for event in events:
            progress = advance(progress, event.kind, event.data, phase=event.phase, role=event.role)
            self._hub.deliver(StreamEvent(kind=event.kind, data=event.data, job_id=job_id, seq=event.seq,
                                          phase=event.phase, role=event.role, at=event.at or time.time(),
                                          workspace=root, progress=progress))
        self._relayed[job_id] = events[-1].seq
        self._progress[job_id] = progress
        if len(self._relayed) > 10_000:  # finished jobs' counters go, oldest first
            oldest = next(iter(self._relayed))
            self._relayed.pop(oldest)
            self._progress.pop(oldest, None)

    async def _root(self, workspace_id: int | None) -> str | None:
        if workspace_id is None:
            return None
        if workspace_id not in self._roots:
            ws = await self._store.get_workspace(workspace_id)
            self._roots[workspace_id] = ws.root if ws else None
        return self._roots[workspace_id]
