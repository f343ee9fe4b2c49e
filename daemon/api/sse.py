"""Server-sent events: one writer for every stream, with resume ids and heartbeat comments.

A job's stream resumes from the store (``id`` is the event's ``seq``; ``Last-Event-ID`` or
``?after=N``) and then follows the hub live; it ends after the job's final state. The
daemon-wide stream follows the hub and resumes from its short history.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable

from aiohttp import web

from daemon.api.protocol import FINAL_STATES, ProtocolError, StreamEvent
from daemon.jobs.hub import EventHub, Subscription
from daemon.payloads import JobStateData, clipped_payload

HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def wants_stream(request: web.Request) -> bool:
    return "text/event-stream" in request.headers.get("Accept", "") or request.query.get("stream") == "1"


def resume_after(request: web.Request) -> int:
    """The seq a job stream resumes after: ``Last-Event-ID`` wins over ``?after=``."""
    raw = request.headers.get("Last-Event-ID") or request.query.get("after") or "0"
    if not raw.isdigit():
        raise ProtocolError(f"after / Last-Event-ID must be a non-negative integer (an event seq), got {raw!r}")
    return int(raw)


MAX_FRAME = 8 << 20  # far below what DaemonClient reads (daemon.client_stream.MAX_SSE_LINE)


def frame(event: StreamEvent, event_id: str) -> bytes:
    data = json.dumps(event.to_json(), separators=(",", ":"))
    if len(data) > MAX_FRAME:  # events are clipped when recorded; this is the stream's own guard
        rest = clipped_payload(event.kind, f"event too large to stream ({len(data):,} bytes)")
        event = StreamEvent.of(rest, job_id=event.job_id, seq=event.seq, phase=event.phase, role=event.role,
                               at=event.at, workspace=event.workspace, progress=event.progress)
        data = json.dumps(event.to_json(), separators=(",", ":"))
    return f"id: {event_id}\nevent: {event.kind}\ndata: {data}\n\n".encode()


def is_final(event: StreamEvent) -> bool:
    body = event.payload
    return isinstance(body, JobStateData) and body.state in FINAL_STATES


async def _open(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers=HEADERS)
    await response.prepare(request)
    await response.write(b": troupe event stream\n\n")
    return response


async def stream_job(request: web.Request, hub: EventHub, sub: Subscription, backlog: Iterable[StreamEvent],
                     *, after: int, finished: bool, heartbeat: float) -> web.StreamResponse:
    """Send ``backlog`` (already stored), then live events; stop after the job's final state."""
    response = await _open(request)
    last = after
    try:
        for event in backlog:
            assert event.seq is not None
            await response.write(frame(event, str(event.seq)))
            last = event.seq
            if is_final(event):
                return response
        if finished:
            return response
        while True:
            try:
                item = await asyncio.wait_for(sub.queue.get(), heartbeat)
            except TimeoutError:
                await response.write(b": heartbeat\n\n")
                continue
            if item is None:  # the daemon is stopping, or this reader fell too far behind
                return response
            _, event = item
            if event.seq is None or event.seq <= last:
                continue
            await response.write(frame(event, str(event.seq)))
            last = event.seq
            if is_final(event):
                return response
    except ConnectionResetError:  # the client went away; it resumes with Last-Event-ID
        return response
    finally:
        hub.unsubscribe(sub)


async def stream_all(request: web.Request, hub: EventHub, sub: Subscription, *, heartbeat: float,
                     counter: list[int]) -> web.StreamResponse:
    """The daemon-wide stream: every job's events and the watcher's notices, until the daemon stops."""
    response = await _open(request)
    try:
        while True:
            try:
                item = await asyncio.wait_for(sub.queue.get(), heartbeat)
            except TimeoutError:
                await response.write(b": heartbeat\n\n")
                continue
            if item is None:
                return response
            number, event = item
            await response.write(frame(event, hub.stream_id(number)))
            counter[0] += 1
    except ConnectionResetError:  # the client went away; it resumes with Last-Event-ID
        return response
    finally:
        hub.unsubscribe(sub)
