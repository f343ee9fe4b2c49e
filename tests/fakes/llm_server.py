"""An OpenAI-compatible fake LLM server, so tests and benchmarks exercise litellm's real HTTP path.

Serves `GET /v1/models` and `POST /v1/chat/completions` (plain JSON, and SSE streaming with a
final usage chunk when `stream_options.include_usage` is set, then `data: [DONE]`) on
127.0.0.1 at a random port.

In async tests (the `fake_llm` fixture in tests/conftest.py does this for you)::

    async with FakeLLM() as llm:
        llm.add_rule("Looks good. <DONE>", system="You are the reviewer")   # substring match
        llm.add_rule(lambda body: body["model"], user=re.compile(r"^which model"), times=1)
        llm.enqueue("first reply", "second reply")     # used when no rule matches, in order
        llm.default_reply = "OK"                        # used when the queue is empty
        r = await litellm.acompletion(messages=[...], **llm.litellm_kwargs())
        assert "diff --git" in llm.last_prompt()
        assert llm.requests[0].system.startswith("You are")
        assert llm.requests[-1].body["temperature"] == 0

Faults go first, in the order queued, each for `times` requests (optionally only for a model):
    llm.fail_next("rate_limit", retry_after=2)   # 429 with Retry-After: 2
    llm.fail_next("server_error", times=3)       # 500 ("unavailable" is 503)
    llm.fail_next("hang", seconds=30)            # stall past the client's timeout
    llm.fail_next("malformed_json")              # 200 with a body that is not JSON
    llm.fail_next("truncated_stream")            # connection closed mid-body / mid-stream
    llm.fail_next("wrong_shape")                 # 200 JSON without `choices`
    llm.fail_next("null_content")                # 200, a choice whose `content` is null (no text)

A reply longer than the request's `max_tokens` is cut there, with `finish_reason: "length"`.
`FakeLLM(prompt_cache=True)` reports, as OpenAI does (`usage.prompt_tokens_details.cached_tokens`),
the tokens of the leading messages a request shares with an earlier one for the same model.

`llm.word_delay = 0.01` streams a reply one word each 10 ms, as a slow model writes.

`llm.latency = 0.2` delays every answer; a client that hangs up meanwhile is recorded
(`llm.aborted`, `RecordedRequest.aborted`). Token usage is `estimate_tokens` (ceil(chars / 4)) of
the message texts and of the reply, so tests can assert on accounting.

From synchronous code, `with FakeLLM() as llm:` (or `llm.start_in_thread()` / `llm.stop_thread()`)
runs the server on its own event loop in a thread.

Standalone, for daemon subprocess tests and benchmarks::

    python -m tests.fakes.llm_server --port 0 --script script.json --record requests.jsonl

prints `FAKE_LLM_URL=http://127.0.0.1:PORT` on its first line. The script file holds
`{"default_reply": "...", "rules": [{"user": "...", "system": "...", "regex": false, "model": null,
"times": null, "reply": "..."}], "queue": ["..."], "faults": [{"kind": "rate_limit", "times": 1,
"retry_after": 1}]}`. The same JSON can be POSTed to `/_fake/script` at run time;
`GET /_fake/requests` returns what was recorded and `POST /_fake/reset` forgets everything.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from aiohttp import web

from tests.fakes import llm_payloads as payloads
from tests.fakes.llm_script import (
    Fault,
    FaultKind,
    Pattern,
    RecordedRequest,
    Reply,
    Rule,
    Script,
    estimate_tokens,
)

__all__ = ["FakeLLM", "RecordedRequest", "estimate_tokens"]


def _error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(payloads.error_body(message, kind), status=status, headers=headers)


class FakeLLM:
    """A scripted OpenAI-compatible server; see the module docstring."""

    def __init__(
        self,
        *,
        default_reply: Reply = "OK",
        model: str = "fake-model",
        latency: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        record_path: Path | str | None = None,
        prompt_cache: bool = False,
    ) -> None:
        self.script = Script(default_reply=default_reply, prompt_cache=prompt_cache)
        self.model = model
        self.latency = latency
        self.word_delay = 0.0  # seconds between the streamed words of a reply
        self.host = host
        self.port = port
        self.record_path = Path(record_path) if record_path else None
        self.models_calls = 0
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None

    # ----- scripting -------------------------------------------------------------------------

    @property
    def default_reply(self) -> Reply:
        return self.script.default_reply

    @default_reply.setter
    def default_reply(self, reply: Reply) -> None:
        self.script.default_reply = reply

    def add_rule(
        self,
        reply: Reply,
        *,
        system: Pattern | None = None,
        user: Pattern | None = None,
        model: str | None = None,
        times: int | None = None,
    ) -> Rule:
        """Answer `reply` when the system prompt and the last user message match (all given
        conditions must hold), at most `times` times. Rules are tried in the order added."""
        return self.script.add_rule(Rule(reply, system=system, user=user, model=model, times=times))

    def enqueue(self, *replies: Reply) -> None:
        """Replies served in order to requests that no rule matches."""
        self.script.enqueue(*replies)

    def fail_next(self, kind: FaultKind, *, times: int = 1, model: str | None = None, **options: float) -> None:
        """Serve fault `kind` to the next `times` requests (for `model` only, if given).
        Options: `retry_after` (rate_limit, seconds), `seconds` (hang)."""
        self.script.add_fault(Fault(kind, times=times, model=model, **options))

    def reset(self) -> None:
        self.script.reset()
        self.models_calls = 0

    # ----- what was asked --------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every chat-completion request received, oldest first (faulted ones included)."""
        return list(self.script.requests)

    def last_prompt(self) -> str:
        """All message texts of the last request, joined by blank lines."""
        if not self.script.requests:
            raise AssertionError("the fake LLM has not received any chat request")
        return self.script.requests[-1].prompt

    def prompts_containing(self, text: str | re.Pattern[str]) -> list[RecordedRequest]:
        """The requests whose prompt (any message) contains `text` (or matches the pattern)."""
        if isinstance(text, re.Pattern):
            return [r for r in self.requests if text.search(r.prompt)]
        return [r for r in self.requests if text in r.prompt]

    # ----- how clients reach it --------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_base(self) -> str:
        return f"{self.url}/v1"

    def litellm_kwargs(self, model: str | None = None) -> dict[str, str]:
        """Keyword arguments that point `litellm.acompletion` at this server."""
        return {"model": f"openai/{model or self.model}", "api_base": self.api_base, "api_key": "sk-fake"}

    def env(self, model: str | None = None) -> dict[str, str]:
        """The Troupe environment variables that point the gateway (or a daemon) at this server."""
        return {
            "TROUPE_MODEL": f"openai/{model or self.model}",
            "TROUPE_API_BASE": self.api_base,
            "TROUPE_API_KEY": "sk-fake",
        }

    # ----- lifecycle -------------------------------------------------------------------------

    async def start(self) -> FakeLLM:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_get("/_fake/requests", self._control_requests)
        app.router.add_post("/_fake/script", self._control_script)
        app.router.add_post("/_fake/reset", self._control_reset)
        self._stopping = asyncio.Event()
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()  # wakes hanging and delayed handlers
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeLLM:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def start_in_thread(self) -> FakeLLM:
        """Run the server on its own event loop in a daemon thread (for synchronous callers)."""
        loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, name="fake-llm", daemon=True)
        self._thread.start()
        self._thread_loop = loop
        asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout=10)
        return self

    def stop_thread(self) -> None:
        loop, thread = self._thread_loop, self._thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self.stop(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        self._thread_loop = self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start_in_thread()

    def __exit__(self, *exc_info: object) -> None:
        self.stop_thread()

    # ----- handlers --------------------------------------------------------------------------

    async def _pause(self, seconds: float) -> None:
        """Sleep, but wake at once when the server stops (so stop() never waits on a hang)."""
        assert self._stopping is not None
        if seconds > 0:
            try:
                await asyncio.wait_for(self._stopping.wait(), seconds)
            except TimeoutError:
                pass

    async def _pause_unless_gone(self, request: web.Request, seconds: float) -> bool:
        """Sleep like :meth:`_pause`; False as soon as the client has closed the connection."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (left := deadline - loop.time()) > 0:
            await self._pause(min(left, 0.02))
            if request.transport is None or request.transport.is_closing():
                return False
            if self._stopping is not None and self._stopping.is_set():
                break
        return True

    @property
    def aborted(self) -> list[RecordedRequest]:
        """The requests whose client hung up while waiting for the answer."""
        return [r for r in self.script.requests if r.aborted]

    async def _models(self, request: web.Request) -> web.Response:
        self.models_calls += 1
        names = [self.model] + [r.model for r in self.script.rules if r.model]
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "troupe-fake"} for n in dict.fromkeys(names)]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.text())
        except ValueError as exc:
            return _error(400, f"request body is not JSON: {exc}", "invalid_request_error")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "`messages` must be a list of chat messages", "invalid_request_error")
        recorded = RecordedRequest(body=body, headers=dict(request.headers))
        fault = self.script.take_fault(recorded)
        recorded.fault = fault.kind if fault else None
        self.script.record(recorded)
        try:
            if not await self._pause_unless_gone(request, self.latency):
                recorded.aborted = True
                return web.Response(status=499, text="the client went away before the answer")
            if fault is not None:
                response = await self._serve_fault(request, recorded, fault)
                if response is not None:
                    return response
            recorded.reply = self.script.choose_reply(recorded)
            recorded.cap()
            if recorded.stream:
                return await self._stream(request, recorded)
            return web.json_response(payloads.completion(recorded))
        finally:
            self._append_to_record_file(recorded)

    async def _stream(self, request: web.Request, recorded: RecordedRequest) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        try:
            await response.prepare(request)
            for chunk in payloads.chunks(recorded):
                await response.write(payloads.sse(chunk))
                if self.word_delay:
                    await self._pause(self.word_delay)
            await response.write(payloads.sse("[DONE]"))
            await response.write_eof()
        except ConnectionResetError:
            recorded.aborted = True  # the client stopped reading (it timed out, or left a stream it had enough of)
        return response

    async def _serve_fault(
        self, request: web.Request, recorded: RecordedRequest, fault: Fault
    ) -> web.StreamResponse | None:
        """The faulty answer, or None when the fault was a delay and a normal reply follows."""
        if fault.kind == "rate_limit":
            retry_after = f"{fault.retry_after:g}"
            return _error(
                429,
                f"Rate limit reached (fake); retry after {retry_after} s",
                "rate_limit_exceeded",
                headers={"Retry-After": retry_after},
            )
        if fault.kind == "server_error":
            return _error(500, "The server had an error while processing your request (fake)", "server_error")
        if fault.kind == "unavailable":
            return _error(503, "The engine is currently overloaded (fake)", "service_unavailable")
        if fault.kind == "hang":
            if not await self._pause_unless_gone(request, fault.seconds):
                recorded.aborted = True
                return web.Response(status=499, text="client went away during the hang")
            return None
        if fault.kind == "malformed_json":
            if recorded.stream:
                return await self._raw_stream(request, [b'data: {"id": "chatcmpl-broken", "choices": [{\n\n'])
            return web.Response(
                text='{"id": "chatcmpl-broken", "choices": [{"message": ', content_type="application/json"
            )
        if fault.kind == "wrong_shape":
            recorded.reply = "this reply has no choices"
            shaped = {**payloads.envelope(recorded, "chat.completion"), "output": recorded.reply}
            if recorded.stream:
                return await self._raw_stream(request, [payloads.sse(shaped), payloads.sse("[DONE]")])
            return web.json_response(shaped)
        if fault.kind == "null_content":
            recorded.reply = None
            if recorded.stream:
                return await self._stream(request, recorded)
            return web.json_response(payloads.completion(recorded))
        assert fault.kind == "truncated_stream"
        recorded.reply = "this reply is cut short before it ends"
        if recorded.stream:
            head = [payloads.sse(chunk) for chunk in payloads.chunks(recorded)[:2]]
            return await self._raw_stream(request, head, cut=True)
        whole = json.dumps(payloads.completion(recorded)).encode()
        return await self._raw_stream(request, [whole[: len(whole) // 2]], cut=True, length=len(whole))

    async def _raw_stream(
        self, request: web.Request, parts: list[bytes], *, cut: bool = False, length: int | None = None
    ) -> web.StreamResponse:
        content_type = "application/json" if length else "text/event-stream"
        response = web.StreamResponse(headers={"Content-Type": content_type})
        if length is not None:
            response.content_length = length
        await response.prepare(request)
        for part in parts:
            await response.write(part)
        if cut:
            # Close the TCP connection mid-body, as a crashed or overloaded server does.
            await asyncio.sleep(0.05)
            if request.transport is not None:
                request.transport.abort()
            return response
        await response.write_eof()
        return response

    def _append_to_record_file(self, recorded: RecordedRequest) -> None:
        if self.record_path is not None:
            with self.record_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(recorded.as_json()) + "\n")

    async def _control_requests(self, request: web.Request) -> web.Response:
        return web.json_response([r.as_json() for r in self.requests])

    async def _control_script(self, request: web.Request) -> web.Response:
        try:
            self.script.load(await request.json())
        except (ValueError, TypeError) as exc:
            return _error(400, f"bad fake LLM script: {exc}", "invalid_request_error")
        return web.json_response({"ok": True})

    async def _control_reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})


class ServerProcess:
    """A fake server in a process of its own (as a real model server would be: its CPU is not the
    client's), for benchmarks: ``with ServerProcess("--latency", "0.02") as url: ...``. ``argv``
    replaces the whole command (a script that calls :func:`serve_until_signalled` itself)."""

    def __init__(self, *args: str, argv: list[str] | None = None, cwd: Path | None = None) -> None:
        self.argv = argv or [sys.executable, "-m", "tests.fakes.llm_server", *args]
        self.cwd = cwd or Path(__file__).resolve().parents[2]

    def __enter__(self) -> str:
        self.process = subprocess.Popen(self.argv, cwd=self.cwd, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline().strip()  # type: ignore[union-attr]
        if not line.startswith("FAKE_LLM_URL="):
            self.process.kill()
            self.process.wait(timeout=10)
            raise RuntimeError(f"the fake server did not start: {line!r}")
        return line.removeprefix("FAKE_LLM_URL=")

    def __exit__(self, *exc_info: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


async def serve_until_signalled(llm: FakeLLM) -> None:
    """Start ``llm``, print its URL (the first line :class:`ServerProcess` reads), serve until SIGINT/SIGTERM."""
    await llm.start()
    print(f"FAKE_LLM_URL={llm.url}", flush=True)
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, done.set)
    await done.wait()
    await llm.stop()


async def _serve_forever(args: argparse.Namespace) -> None:
    llm = FakeLLM(host=args.host, port=args.port, latency=args.latency, record_path=args.record)
    if args.default_reply is not None:
        llm.default_reply = args.default_reply
    if args.script:
        llm.script.load(json.loads(Path(args.script).read_text(encoding="utf-8")))
    await serve_until_signalled(llm)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.llm_server", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 (default) picks a free port")
    parser.add_argument("--script", help="JSON file with default_reply, rules, queue and faults")
    parser.add_argument("--record", help="append every chat request to this JSON-lines file")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before each answer")
    parser.add_argument("--default-reply", help="reply when no rule or queued reply applies")
    asyncio.run(_serve_forever(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
