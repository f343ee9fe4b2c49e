"""Live fan-out of events to the streams that are listening.

Job events are stored first (the store gives each its ``seq``) and then published here; a
per-job stream resumes from the store and continues from the hub. The daemon-wide stream
(``/v1/events``: every job plus the watcher) keeps a short in-memory history with its own
counter, so a client that reconnects within the same daemon run misses nothing; its ids carry
the daemon's boot id, so after a restart a stale id is recognised instead of misread.
"""

from __future__ import annotations

import asyncio
import collections
import secrets
from dataclasses import dataclass

from daemon.messages import StreamEvent


@dataclass(eq=False)  # compared by identity: each stream is its own
class Subscription:
    queue: asyncio.Queue[tuple[int, StreamEvent] | None]
    job_id: str | None
    workspace: str | None
    roots: frozenset[str] | None = None  # several workspaces (a team server's: those shared with a person)

    def wants(self, event: StreamEvent) -> bool:
        if self.job_id is not None:
            return event.job_id == self.job_id
        if self.roots is not None:
            return event.workspace in self.roots
        return self.workspace is None or event.workspace == self.workspace


class EventHub:
    """Publish/subscribe for :class:`StreamEvent`; slow subscribers are cut off, never block the daemon."""

    def __init__(self, history: int = 2000, queue_size: int = 10_000) -> None:
        self.boot_id = secrets.token_hex(4)
        self._counter = 0
        self._history: collections.deque[tuple[int, StreamEvent]] = collections.deque(maxlen=history)
        self._subscribers: set[Subscription] = set()
        self._queue_size = queue_size
        self.published = 0

    def stream_id(self, number: int) -> str:
        return f"{self.boot_id}-{number}"

    def parse_stream_id(self, raw: str | None) -> int:
        """The counter to resume after; 0 (everything we still hold) for a stale or missing id."""
        if not raw:
            return self._counter
        boot, _, number = raw.rpartition("-")
        if boot != self.boot_id or not number.isdigit():
            return 0
        return int(number)

    def publish(self, event: StreamEvent) -> None:
        self._counter += 1
        self.published += 1
        item = (self._counter, event)
        self._history.append(item)
        for sub in list(self._subscribers):
            if not sub.wants(event):
                continue
            try:
                sub.queue.put_nowait(item)
            except asyncio.QueueFull:  # a client that stopped reading: end its stream, it can resume
                self._subscribers.discard(sub)
                while not sub.queue.empty():
                    sub.queue.get_nowait()
                sub.queue.put_nowait(None)

    def subscribe(self, *, job_id: str | None = None, workspace: str | None = None,
                  roots: frozenset[str] | None = None, after: int | None = None) -> Subscription:
        """A subscription; with ``after``, the held history newer than it is queued first."""
        sub = Subscription(asyncio.Queue(self._queue_size), job_id, workspace, roots)
        if after is not None:
            for number, event in self._history:
                if number > after and sub.wants(event):
                    sub.queue.put_nowait((number, event))
        self._subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subscribers.discard(sub)

    def close(self) -> None:
        """End every stream (the daemon is stopping)."""
        for sub in list(self._subscribers):
            try:
                sub.queue.put_nowait(None)
            except asyncio.QueueFull:
                pass
        self._subscribers.clear()
