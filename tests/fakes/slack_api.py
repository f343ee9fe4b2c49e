"""A fake Slack Web API on loopback that records every call, for testing the Slack bot offline.

Serves, under ``/api/``, the methods the bot uses: ``auth.test``, ``chat.postMessage``,
``chat.update``, ``chat.postEphemeral``, ``reactions.add``, the ``files.uploadV2`` chain
(``files.getUploadURLExternal``, a POST of the bytes to ``/upload/{file_id}``,
``files.completeUploadExternal``) and ``apps.connections.open`` (Socket Mode: a WebSocket at
``/link`` that says hello, carries envelopes the test pushes, and records the bot's acks).
Anything else answers ``{"ok": true}``. ``/respond/{id}`` stands in for response_urls.

    async with FakeSlack() as slack:                        # 127.0.0.1, a free port
        client = AsyncWebClient(token="xoxb-test", base_url=slack.api_url)
        slack.rate_limit("chat.update", retry_after=1)      # the next chat.update gets 429 + Retry-After: 1
        ...
        await slack.wait_for(lambda: slack.of("reactions.add"))
        slack.messages["C1", "1700000000.000002"]["text"]   # a message as the last update left it

Standalone: ``python -m tests.fakes.slack_api --port 0`` prints ``FAKE_SLACK_URL=http://127.0.0.1:PORT``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

BOT_USER = "UBOT"


@dataclass
class Call:
    method: str
    body: dict[str, Any]
    token: str | None = None
    at: float = field(default_factory=time.monotonic)
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def ts(self) -> str | None:
        """The ts of the message this call posted (chat.postMessage) or edited (chat.update)."""
        return self.response.get("ts")


class FakeSlack:
    def __init__(self, *, token: str | None = None, team: str = "T1") -> None:
        self.token, self.team = token, team
        self.calls: list[Call] = []
        self.responses: list[dict[str, Any]] = []  # what arrived at response_urls
        self.uploads: dict[str, bytes] = {}
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.acks: list[dict[str, Any]] = []  # Socket Mode envelope acks
        self._faults: dict[str, list[float]] = {}
        self._ts = itertools.count(1)
        self._sockets: list[web.WebSocketResponse] = []
        self.app = web.Application()
        self.app.router.add_post("/api/{method}", self._api)
        self.app.router.add_post("/upload/{file_id}", self._upload)
        self.app.router.add_post("/respond/{id}", self._respond)
        self.app.router.add_get("/link", self._link)
        self._runner: web.AppRunner | None = None
        self.url = ""

    # ---------------------------------------------------------------- life cycle

    async def start(self, port: int = 0) -> FakeSlack:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        host, bound = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{bound}"
        return self

    async def stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeSlack:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def response_url(self, name: str = "1") -> str:
        return f"{self.url}/respond/{name}"

    # ---------------------------------------------------------------- scripting and reading

    def rate_limit(self, method: str, retry_after: float | str = 1, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` are answered 429 with ``Retry-After`` (seconds,
        or any text: a broken header)."""
        self._faults.setdefault(method, []).extend([retry_after] * times)

    def of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method and c.status == 200]

    def posted(self, channel: str | None = None) -> list[dict[str, Any]]:
        return [c.body for c in self.of("chat.postMessage") if channel is None or c.body.get("channel") == channel]

    def recorded_text(self) -> str:
        """Everything the bot sent to Slack (bodies, uploads, responses) as one string, for leak checks."""
        parts = [json.dumps(c.body, default=str) for c in self.calls]
        parts += [json.dumps(r, default=str) for r in self.responses]
        parts += [u.decode("utf-8", "replace") for u in self.uploads.values()]
        return "\n".join(parts)

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            await asyncio.sleep(0.02)
        methods = [c.method for c in self.calls]
        raise AssertionError(f"fake Slack: {what or 'condition'} not met within {timeout}s; calls: {methods}")

    async def push(self, envelope: dict[str, Any]) -> None:
        """Send a Socket Mode envelope to every connected client."""
        for ws in list(self._sockets):
            await ws.send_str(json.dumps(envelope))

    @property
    def connected(self) -> int:
        return len(self._sockets)

    # ---------------------------------------------------------------- handlers

    async def _body(self, request: web.Request) -> dict[str, Any]:
        raw = await request.read()
        body: dict[str, Any] = dict(parse_qsl(request.query_string))
        if request.content_type == "application/json" and raw:
            body.update(json.loads(raw))
        elif raw:
            body.update(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
        return body

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        body = await self._body(request)
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip() or body.get("token")
        call = Call(method, body, token)
        self.calls.append(call)
        faults = self._faults.get(method)
        if faults:
            retry_after = faults.pop(0)
            call.status = 429
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429,
                                     headers={"Retry-After": str(retry_after)})
        if self.token is not None and token != self.token and method != "apps.connections.open":
            return web.json_response({"ok": False, "error": "invalid_auth"})
        call.response = self._answer(method, body)
        return web.json_response(call.response)

    def _next_ts(self) -> str:
        return f"1700000000.{next(self._ts):06d}"

    def _answer(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {"ok": True, "url": "https://fake.slack.com/", "team": "Fake", "user": "troupe",
                    "team_id": self.team, "user_id": BOT_USER, "bot_id": "B1", "is_enterprise_install": False}
        if method == "chat.postMessage":
            ts = self._next_ts()
            message = {"text": body.get("text"), "blocks": _decoded(body.get("blocks")),
                       "thread_ts": body.get("thread_ts"), "ts": ts}
            self.messages[(str(body.get("channel")), ts)] = message
            return {"ok": True, "channel": body.get("channel"), "ts": ts, "message": message}
        if method == "chat.update":
            key = (str(body.get("channel")), str(body.get("ts")))
            if key not in self.messages:
                return {"ok": False, "error": "message_not_found"}
            self.messages[key].update(text=body.get("text"), blocks=_decoded(body.get("blocks")))
            return {"ok": True, "channel": body.get("channel"), "ts": body.get("ts"), "text": body.get("text")}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self._next_ts()}
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ts):05d}"
            return {"ok": True, "upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            files = _decoded(body.get("files")) or []
            return {"ok": True, "files": [{"id": f.get("id"), "title": f.get("title")} for f in files]}
        if method == "apps.connections.open":
            return {"ok": True, "url": f"{self.url.replace('http', 'ws', 1)}/link"}
        return {"ok": True}

    async def _upload(self, request: web.Request) -> web.Response:
        self.uploads[request.match_info["file_id"]] = await request.read()
        return web.Response(text="OK - uploaded")

    async def _respond(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.responses.append(json.loads(raw) if raw.startswith(b"{") else {"raw": raw.decode()})
        return web.Response(text="ok")

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1,
                                      "debug_info": {"host": "fake"}, "connection_info": {"app_id": "A1"}}))
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self.acks.append(json.loads(msg.data))
        finally:
            self._sockets.remove(ws)
        return ws


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


async def _main(port: int) -> None:
    slack = await FakeSlack().start(port)
    print(f"FAKE_SLACK_URL={slack.url}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="A fake Slack Web API that records every call.")
    parser.add_argument("--port", type=int, default=0)
    asyncio.run(_main(parser.parse_args().port))
