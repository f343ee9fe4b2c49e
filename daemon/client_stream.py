"""Reading the daemon's event streams on the client's side: the lines of a stream, however long,
and the events of each job already seen, so that a stream replayed after a reconnect repeats none."""

from __future__ import annotations

import collections
import logging
from collections.abc import AsyncIterator

import aiohttp

from daemon.messages import StreamEvent

log = logging.getLogger("troupe.client")


class JobSeqs:
    """The ``seq`` of each job's events seen on a stream (of the last ``jobs`` jobs), so a stream
    replayed after a reconnect repeats none of them. Per job: every seq up to ``floor`` was seen (or
    came before the stream first saw the job) and the few seen above it, which a node that
    published two events of one job out of order leaves until the gap is filled."""

    def __init__(self, jobs: int = 10_000) -> None:
        self._seen: collections.OrderedDict[str, tuple[int, set[int]]] = collections.OrderedDict()
        self._jobs = jobs

    def first_time(self, event: StreamEvent) -> bool:
        """Whether ``event`` is new (an event of no job always is); it is remembered."""
        if event.job_id is None or event.seq is None:
            return True
        floor, above = self._seen.get(event.job_id, (event.seq - 1, set()))
        if event.seq <= floor or event.seq in above:
            return False
        above.add(event.seq)
        while floor + 1 in above:
            floor += 1
            above.discard(floor)
        self._seen[event.job_id] = (floor, above)
        self._seen.move_to_end(event.job_id)
        if len(self._seen) > self._jobs:
            self._seen.popitem(last=False)
        return True


MAX_SSE_LINE = 64 << 20
"""The longest stream line read (the daemon clips events far below this); a longer one is skipped
whole, with a warning, and the stream goes on (aiohttp's own line reader stops at 128 KiB-512 KiB)."""


async def sse_lines(content: aiohttp.StreamReader, limit: int = MAX_SSE_LINE) -> AsyncIterator[bytes]:
    """The lines of a stream, without their ``\\n``, however long, up to ``limit`` bytes each."""
    parts: list[bytes] = []
    size, skipping = 0, False
    async for chunk in content.iter_any():
        while chunk:
            end = chunk.find(b"\n")
            piece, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1:])
            if not skipping:
                parts.append(piece)
                size += len(piece)
                if size > limit:
                    log.warning("skipped an event stream line over %d bytes", limit)
                    parts, skipping = [], True
            if end >= 0:
                if not skipping:
                    yield b"".join(parts)
                parts, size, skipping = [], 0, False
    if parts and not skipping:
        yield b"".join(parts)
