"""The fake LLM server, driven by real litellm over HTTP: what later suites can rely on."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import litellm
import pytest
from litellm.exceptions import MidStreamFallbackError

from tests.fakes.llm_server import FakeLLM, estimate_tokens

litellm.suppress_debug_info = True

# One request per call: neither litellm's wrapper nor the openai SDK may retry behind our back.
NO_RETRIES = {"num_retries": 0, "max_retries": 0}
REPO_ROOT = Path(__file__).resolve().parent.parent


def chat(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


async def ask(llm: FakeLLM, user: str = "hello", system: str = "You are helpful.", **kwargs) -> str:
    options = {**NO_RETRIES, **llm.litellm_kwargs(), **kwargs}
    response = await litellm.acompletion(messages=chat(system, user), **options)
    return response.choices[0].message.content


# ----- replies -------------------------------------------------------------------------------


async def test_a_plain_completion_returns_the_default_reply_with_estimated_usage(fake_llm: FakeLLM) -> None:
    fake_llm.default_reply = "All good here."
    response = await litellm.acompletion(messages=chat("Be brief.", "Status?"), **fake_llm.litellm_kwargs())

    assert response.choices[0].message.content == "All good here."
    assert response.usage.prompt_tokens == estimate_tokens("Be brief.") + estimate_tokens("Status?")
    assert response.usage.completion_tokens == estimate_tokens("All good here.") == 4


async def test_streaming_yields_the_reply_in_pieces_and_a_final_usage_chunk(fake_llm: FakeLLM) -> None:
    fake_llm.default_reply = "one two three four"
    messages = chat("Be brief.", "Count.")
    stream = await litellm.acompletion(
        messages=messages, stream=True, stream_options={"include_usage": True}, **fake_llm.litellm_kwargs()
    )
    chunks = [chunk async for chunk in stream]

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 4
    assert chunks[-1].usage.completion_tokens == estimate_tokens("one two three four")
    rebuilt = litellm.stream_chunk_builder(chunks, messages=messages)
    assert rebuilt.usage.prompt_tokens == fake_llm.requests[0].prompt_tokens


async def test_the_sse_stream_ends_with_done(fake_llm: FakeLLM) -> None:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{fake_llm.api_base}/chat/completions", json=body) as response,
    ):
        raw = await response.text()

    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert raw.rstrip().endswith("data: [DONE]")
    assert '"usage"' not in raw  # usage only when stream_options.include_usage asks for it


async def test_rules_match_the_system_prompt_or_the_last_user_message_before_the_queue(fake_llm: FakeLLM) -> None:
    fake_llm.add_rule("LGTM <DONE>", system="You are the reviewer")
    fake_llm.add_rule("4", user=re.compile(r"^what is 2\s*\+\s*2"))
    fake_llm.enqueue("queued one", "queued two")

    assert await ask(fake_llm, "please review", system="You are the reviewer. Be strict.") == "LGTM <DONE>"
    assert await ask(fake_llm, "what is 2 + 2?") == "4"
    assert await ask(fake_llm, "anything else") == "queued one"
    assert await ask(fake_llm, "and again") == "queued two"
    assert await ask(fake_llm, "queue is empty now") == "OK"


async def test_a_rule_limited_to_n_uses_then_falls_through(fake_llm: FakeLLM) -> None:
    fake_llm.add_rule("first answer", user="question", times=2)
    fake_llm.default_reply = "fallback"

    answers = [await ask(fake_llm, "a question") for _ in range(3)]

    assert answers == ["first answer", "first answer", "fallback"]


async def test_a_rule_can_be_limited_to_one_model(fake_llm: FakeLLM) -> None:
    fake_llm.add_rule("from the big model", model="openai/big-model")

    assert await ask(fake_llm, "hi", model="openai/big-model") == "from the big model"
    assert await ask(fake_llm, "hi") == "OK"
    assert [r.model for r in fake_llm.requests] == ["big-model", "fake-model"]


async def test_a_callable_reply_is_computed_from_the_request(fake_llm: FakeLLM) -> None:
    fake_llm.add_rule(lambda body: f"you sent {len(body['messages'])} messages to {body['model']}")

    assert await ask(fake_llm) == "you sent 2 messages to fake-model"


# ----- recording -----------------------------------------------------------------------------


async def test_every_request_is_recorded_with_its_body_and_headers(fake_llm: FakeLLM) -> None:
    await ask(fake_llm, "first question", system="You are the CTO.", temperature=0)
    await ask(fake_llm, "second question with the failing test output: AssertionError")

    first, second = fake_llm.requests
    assert first.system == "You are the CTO."
    assert first.last_user == "first question"
    assert first.body["temperature"] == 0
    assert first.headers["Authorization"] == "Bearer sk-fake"
    assert first.reply == "OK"
    assert "AssertionError" in fake_llm.last_prompt()
    assert fake_llm.prompts_containing("AssertionError") == [second]
    assert fake_llm.prompts_containing(re.compile(r"CTO|nothing")) == [first]


async def test_the_models_endpoint_lists_the_served_model(fake_llm: FakeLLM) -> None:
    async with aiohttp.ClientSession() as session, session.get(f"{fake_llm.api_base}/models") as response:
        listing = await response.json()

    assert [m["id"] for m in listing["data"]] == ["fake-model"]
    assert fake_llm.models_calls == 1


async def test_a_request_without_messages_gets_a_clear_400(fake_llm: FakeLLM) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{fake_llm.api_base}/chat/completions", json={"model": "x"}) as response,
    ):
        error = await response.json()

    assert response.status == 400
    assert "messages" in error["error"]["message"]


async def test_latency_delays_every_answer(fake_llm: FakeLLM) -> None:
    fake_llm.latency = 0.3
    started = time.monotonic()
    await ask(fake_llm)

    assert time.monotonic() - started >= 0.3


# ----- faults, as litellm sees them ----------------------------------------------------------


async def test_a_429_is_a_rate_limit_error_carrying_retry_after(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("rate_limit", retry_after=7)

    with pytest.raises(litellm.RateLimitError) as caught:
        await ask(fake_llm)

    # Where litellm 1.110 exposes the response headers on its exceptions:
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.litellm_response_headers["retry-after"] == "7"
    assert await ask(fake_llm) == "OK"  # one-shot: the next request is served
    assert [r.fault for r in fake_llm.requests] == ["rate_limit", None]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(
    ("kind", "error"),
    [("server_error", litellm.InternalServerError), ("unavailable", litellm.ServiceUnavailableError)],
)
async def test_5xx_faults_are_server_errors(fake_llm: FakeLLM, kind: str, error: type, stream: bool) -> None:
    fake_llm.fail_next(kind)  # type: ignore[arg-type]

    with pytest.raises(error):
        await ask(fake_llm, stream=stream)


async def test_a_hang_past_the_client_timeout_is_a_timeout(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("hang", seconds=30)
    started = time.monotonic()

    with pytest.raises(litellm.Timeout):
        await ask(fake_llm, timeout=0.5)

    assert time.monotonic() - started < 5
    assert len(fake_llm.requests) == 1


async def test_malformed_json_is_reported_as_a_json_decoding_error(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("malformed_json")

    with pytest.raises(litellm.InternalServerError, match="Expecting value"):
        await ask(fake_llm)


async def test_a_reply_without_choices_is_reported_as_such(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("wrong_shape")

    with pytest.raises(litellm.InternalServerError, match="no 'choices'"):
        await ask(fake_llm)


async def test_a_stream_cut_mid_way_raises_after_the_first_pieces(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("truncated_stream")
    stream = await litellm.acompletion(messages=chat("s", "u"), stream=True, **NO_RETRIES, **fake_llm.litellm_kwargs())
    received: list[str] = []

    with pytest.raises(MidStreamFallbackError, match="Connection error") as caught:
        async for chunk in stream:
            received.append(chunk.choices[0].delta.content or "")

    assert "".join(received).strip() == "this"
    assert isinstance(caught.value, litellm.ServiceUnavailableError)  # what a retry policy sees


async def test_a_plain_body_cut_mid_way_is_a_connection_error(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("truncated_stream")

    with pytest.raises(litellm.InternalServerError, match="Connection error"):
        await ask(fake_llm)


async def test_faults_apply_in_order_n_times_and_only_to_their_model(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("unavailable", times=2)
    fake_llm.fail_next("rate_limit", retry_after=1, model="big-model")
    fake_llm.fail_next("server_error")
    outcomes = []
    for model in ["fake-model", "fake-model", "fake-model", "big-model", "big-model"]:
        try:
            outcomes.append(await ask(fake_llm, model=f"openai/{model}"))
        except (litellm.ServiceUnavailableError, litellm.InternalServerError, litellm.RateLimitError) as exc:
            outcomes.append(type(exc).__name__)

    assert outcomes == [
        "ServiceUnavailableError",
        "ServiceUnavailableError",
        "InternalServerError",
        "RateLimitError",
        "OK",
    ]


async def test_without_retry_options_the_openai_sdk_retries_twice(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("unavailable", times=5)

    with pytest.raises(litellm.ServiceUnavailableError):
        await litellm.acompletion(messages=chat("s", "u"), **fake_llm.litellm_kwargs())

    assert len(fake_llm.requests) == 3  # why every test above passes num_retries=0, max_retries=0


# ----- other ways to run it ------------------------------------------------------------------


def test_synchronous_code_runs_the_server_in_a_thread() -> None:
    with FakeLLM(default_reply="from a thread") as llm:
        llm.add_rule("scripted from the test thread", user="scripted")
        plain = litellm.completion(messages=chat("s", "hello"), **NO_RETRIES, **llm.litellm_kwargs())
        ruled = litellm.completion(messages=chat("s", "scripted"), **NO_RETRIES, **llm.litellm_kwargs())

    assert plain.choices[0].message.content == "from a thread"
    assert ruled.choices[0].message.content == "scripted from the test thread"
    assert len(llm.requests) == 2


async def test_the_standalone_server_follows_a_script_file_and_records_requests(tmp_path: Path) -> None:
    script = {
        "rules": [{"user": "^ping", "regex": True, "reply": "pong"}],
        "queue": ["queued"],
        "faults": [{"kind": "rate_limit", "retry_after": 2}],
    }
    (tmp_path / "script.json").write_text(json.dumps(script))
    record = tmp_path / "requests.jsonl"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fakes.llm_server",
            "--script",
            str(tmp_path / "script.json"),
            "--record",
            str(record),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = (await asyncio.to_thread(server.stdout.readline)).strip().removeprefix("FAKE_LLM_URL=")
        kwargs = {"model": "openai/fake-model", "api_base": f"{url}/v1", "api_key": "sk-fake", **NO_RETRIES}
        with pytest.raises(litellm.RateLimitError):
            await litellm.acompletion(messages=chat("s", "ping"), **kwargs)
        pong = await litellm.acompletion(messages=chat("s", "ping"), **kwargs)
        queued = await litellm.acompletion(messages=chat("s", "other"), **kwargs)
        async with aiohttp.ClientSession() as session:
            await session.post(f"{url}/_fake/script", json={"queue": ["added at run time"]})
            added = await litellm.acompletion(messages=chat("s", "other"), **kwargs)
            async with session.get(f"{url}/_fake/requests") as response:
                recorded = await response.json()
    finally:
        server.terminate()
        server.wait(timeout=10)

    assert [pong.choices[0].message.content, queued.choices[0].message.content, added.choices[0].message.content] == [
        "pong",
        "queued",
        "added at run time",
    ]
    assert [r["reply"] for r in recorded] == [None, "pong", "queued", "added at run time"]
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line["body"]["messages"][-1]["content"] for line in lines] == ["ping", "ping", "other", "other"]
    assert server.returncode == 0
