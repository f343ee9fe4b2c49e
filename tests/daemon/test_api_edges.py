"""The API's edge, driven from outside against the real daemon: every refusal is the API's JSON
error with a 4xx, never a 500 and never aiohttp's plain text (found by an outside soak)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from tests.daemon.conftest import DaemonProcess
from tests.daemon.test_api import raw


async def send_raw(daemon: DaemonProcess, data: bytes, *, read_timeout: float = 10.0) -> tuple[int, dict[str, Any]]:
    """Bytes straight onto the daemon's socket; the status and the JSON body of its answer."""
    reader, writer = await asyncio.open_unix_connection(str(daemon.socket))
    try:
        writer.write(data)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), read_timeout)
        status = int(head.split(b" ", 2)[1])
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        body = await asyncio.wait_for(reader.readexactly(length), read_timeout)
        assert b"application/json" in head.lower(), head
        return status, json.loads(body)
    finally:
        writer.close()


def error_code(body: dict[str, Any]) -> str:
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return body["error"]["code"]


BIG_ID = "1" + "0" * 29


@pytest.mark.parametrize(("method", "path"), [
    ("POST", f"/v1/findings/{BIG_ID}"), ("DELETE", f"/v1/workspaces/{BIG_ID}"),
    ("GET", f"/v1/experience/{BIG_ID}"), ("DELETE", f"/v1/experience/{BIG_ID}"),
    ("POST", f"/v1/experience/{BIG_ID}")])
async def test_a_30_digit_id_is_a_404_not_a_500(daemon: DaemonProcess, method: str, path: str) -> None:
    body = json.dumps({"state": "dismissed"} if "findings" in path else {"pinned": True}).encode()
    status, answer = await raw(daemon, method, path, data=body if method == "POST" else None)
    assert (status, error_code(answer)) == (404, "not_found"), answer


@pytest.mark.parametrize("path", ["/v1/findings/²", "/v1/workspaces/١٢"])
async def test_an_id_in_other_digits_is_a_400(daemon: DaemonProcess, path: str) -> None:
    status, answer = await raw(daemon, "POST" if "findings" in path else "DELETE", path,
                               data=b'{"state": "dismissed"}' if "findings" in path else None)
    assert status == 400 and "integers" in answer["error"]["message"]


async def test_a_deeply_nested_body_is_a_400_that_says_so(daemon: DaemonProcess) -> None:
    for depth in (100, 100_000):
        status, answer = await raw(daemon, "POST", "/v1/jobs", data=b'{"kind": "ask", "options": {"x": '
                                   + b"[" * depth + b"]" * depth + b"}}")
        assert (status, error_code(answer)) == (400, "bad_request")
        assert "levels deep" in answer["error"]["message"]


async def test_a_lone_surrogate_in_a_prompt_is_refused_at_submission(daemon: DaemonProcess, repo: Any) -> None:
    body = json.dumps({"kind": "ask", "workspace": str(repo), "prompt": "why \ud800 here?"}).encode()
    status, answer = await raw(daemon, "POST", "/v1/jobs", data=body)
    assert status == 400 and "lone surrogate" in answer["error"]["message"]
    assert "prompt" in answer["error"]["message"]
    _, jobs = await raw(daemon, "GET", "/v1/jobs")
    assert jobs["jobs"] == []  # nothing was queued to fail later "blaming the provider"


@pytest.mark.parametrize("request_bytes", [
    b"GARBAGE\r\n\r\n",
    b"GET /v1/health?" + b"x" * 100_000 + b" HTTP/1.1\r\nHost: troupe\r\n\r\n",
    b"FROBNICATE /v1/health HTTP/1.1\r\nHost: troupe\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: troupe\r\nX-Big: " + b"y" * 20_000 + b"\r\n\r\n",
], ids=["garbage-request-line", "100kb-url", "unknown-method", "huge-header"])
async def test_what_the_http_parser_refuses_is_answered_as_json(daemon: DaemonProcess, request_bytes: bytes) -> None:
    status, answer = await send_raw(daemon, request_bytes)
    assert 400 <= status < 500 and error_code(answer) == "bad_http", answer
    async with daemon.client() as client:  # and the daemon is fine
        assert (await client.health()).api_version == 1


async def test_a_content_length_that_lies_gets_a_prompt_408_and_no_unexpected_error(make_daemon: Any) -> None:
    daemon = make_daemon(TROUPE_API_BODY_TIMEOUT="0.5").start()
    started = time.monotonic()
    status, answer = await send_raw(daemon, b"POST /v1/jobs HTTP/1.1\r\nHost: troupe\r\nContent-Type: "
                                    b"application/json\r\nContent-Length: 100000\r\n\r\n{\"kind\":1}")
    assert (status, error_code(answer)) == (408, "request_timeout")
    assert time.monotonic() - started < 5
    status, answer = await send_raw(daemon, b"POST /v1/jobs HTTP/1.1\r\nHost: troupe\r\nContent-Length: "
                                    b"10000000\r\n\r\n0123456789")
    assert (status, error_code(answer)) == (413, "too_large")  # told too much: refused before reading
    # A client that gives up mid-body is no daemon failure.
    _reader, writer = await asyncio.open_unix_connection(str(daemon.socket))
    writer.write(b"POST /v1/jobs HTTP/1.1\r\nHost: troupe\r\nContent-Length: 1000\r\n\r\n{")
    await writer.drain()
    writer.close()
    async with daemon.client() as client:
        assert (await client.health()).api_version == 1
    daemon.stop()
    assert "unexpected error" not in daemon.stderr() and "Traceback" not in daemon.stderr()


async def test_the_client_reads_an_event_line_longer_than_aiohttps_line_limit(home: Any) -> None:
    """A 3 MB event line (the daemon clips far below that; an older daemon did not) is read whole,
    and one over the client's own limit is skipped while the stream goes on."""
    from aiohttp import web

    from daemon.client import DaemonClient
    from daemon.client_stream import sse_lines

    big = {"kind": "message", "data": {"text": "x" * 3_000_000}, "job_id": "j1", "seq": 1}
    done = {"kind": "job_state", "data": {"state": "succeeded"}, "job_id": "j1", "seq": 2}

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in (big, done):
            await response.write(f"id: {event['seq']}\nevent: {event['kind']}\ndata: {json.dumps(event)}\n\n".encode())
        return response

    app = web.Application()
    app.router.add_get("/v1/jobs/j1/events", stream)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.UnixSite(runner, str(home / "fake.sock")).start()
    try:
        async with DaemonClient(home / "fake.sock", autostart=False, retries=0) as client:
            events = [e async for e in client.events("j1")]
    finally:
        await runner.cleanup()
    assert [e.kind for e in events] == ["message", "job_state"] and len(events[0].data["text"]) == 3_000_000

    class Chunks:
        def __init__(self, chunks: list[bytes]) -> None:
            self.chunks = chunks

        async def iter_any(self) -> Any:
            for chunk in self.chunks:
                yield chunk

    lines = [line async for line in sse_lines(Chunks([b"a\nbb", b"b" * 50, b"b\ncc", b"c\n"]), limit=20)]  # type: ignore[arg-type]
    assert lines == [b"a", b"ccc"]  # the 53-byte line was skipped whole
