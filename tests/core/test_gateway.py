"""The LLM gateway against the fake OpenAI-compatible server: litellm's real HTTP path, every fault."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from daemon.config import ModelSettings, Secret
from daemon.llm.budget import Budget, Usage
from daemon.llm.errors import BudgetExceeded, LLMError, LLMNotConfigured, LLMUnavailable, TimeLimitReached
from daemon.llm.gateway import TIME_LIMIT, Gateway, import_litellm
from daemon.redact import install_log_redaction
from tests.fakes.llm_server import FakeLLM, estimate_tokens

HELLO = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hello"}]
PLANTED_KEY = "sk-planted-key-0123456789abcdef"


class Sleeps:
    """Records the back-off delays instead of waiting them out."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


def gateway(llm: FakeLLM, sleeps: Sleeps | None = None, *, model: str = "openai/fake-model", on_usage=None,
            **settings_kw) -> Gateway:
    settings_kw = {"timeout": 5.0, "max_retries": 3, **settings_kw}
    settings = ModelSettings(default=model, api_base=llm.api_base, api_key=Secret(PLANTED_KEY), **settings_kw)
    return Gateway(settings, sleep=sleeps or Sleeps(), on_usage=on_usage)


async def test_plain_completion_returns_text_and_usage(fake_llm: FakeLLM) -> None:
    fake_llm.add_rule("hello there", user="Say hello")
    reply = await gateway(fake_llm).complete(HELLO)
    assert reply.text == "hello there"
    assert reply.usage.completion_tokens == estimate_tokens("hello there")
    assert reply.usage.prompt_tokens > 0
    assert reply.attempts == 1
    assert fake_llm.requests[-1].body["model"] == "fake-model"
    assert fake_llm.last_prompt().endswith("Say hello")


async def test_streaming_delivers_deltas_and_usage(fake_llm: FakeLLM) -> None:
    fake_llm.add_rule("one two three four five")
    seen: list[str] = []
    reply = await gateway(fake_llm).complete(HELLO, stream=True, on_delta=seen.append)
    assert "".join(seen) == reply.text == "one two three four five"
    assert len(seen) > 1
    assert reply.usage.completion_tokens == estimate_tokens("one two three four five")


async def test_a_stream_stops_at_its_deadline_with_what_came(fake_llm: FakeLLM) -> None:
    words = [f"w{i}" for i in range(400)]
    fake_llm.add_rule(" ".join(words), user="Say hello")
    fake_llm.word_delay = 0.01  # 4 s of writing
    gw = await warm(gateway(fake_llm))
    seen: list[str] = []
    started = time.monotonic()
    reply = await gw.complete(HELLO, stream=True, on_delta=seen.append, deadline=started + 1.0)
    assert reply.finish_reason == TIME_LIMIT and reply.attempts == 1
    got = reply.text.split()
    assert got and got == words[:len(got)] and len(got) < len(words)  # a prefix of the reply, not all of it
    assert "".join(seen) == reply.text
    await asyncio.wait_for(_aborted(fake_llm), 5)  # the client hung up: the server stops writing


async def warm(gw: Gateway) -> Gateway:
    """One call first: litellm's first call (import, client set-up) is not what a deadline measures."""
    await gw.complete([{"role": "user", "content": "warm up"}], stream=True)
    return gw


async def _aborted(llm: FakeLLM) -> None:
    while not llm.requests or not llm.requests[-1].aborted:
        await asyncio.sleep(0.02)


async def test_no_call_starts_or_is_retried_past_its_deadline(fake_llm: FakeLLM) -> None:
    with pytest.raises(TimeLimitReached, match="before model"):
        await gateway(fake_llm).complete(HELLO, stream=True, deadline=time.monotonic() - 1)
    assert not fake_llm.requests
    gw = await warm(gateway(fake_llm, timeout=30))
    fake_llm.fail_next("hang", seconds=10)
    started = time.monotonic()
    with pytest.raises(TimeLimitReached, match="while model"):
        await gw.complete(HELLO, stream=True, deadline=started + 0.5)
    assert len(fake_llm.requests) == 2 and time.monotonic() - started < 5  # the hang was left, not retried


async def test_calls_are_greedy_unless_a_temperature_is_configured_or_named(fake_llm: FakeLLM) -> None:
    fake_llm.add_rule("hello there", user="Say hello")
    await gateway(fake_llm).complete(HELLO)
    assert fake_llm.requests[-1].body["temperature"] == 0  # the same code gets the same review
    await gateway(fake_llm, temperature=0.7).complete(HELLO)
    assert fake_llm.requests[-1].body["temperature"] == 0.7
    await gateway(fake_llm, temperature=0.7).complete(HELLO, temperature=1.0)  # a Croto team names its own
    assert fake_llm.requests[-1].body["temperature"] == 1.0
    await gateway(fake_llm, temperature=None).complete(HELLO)
    assert "temperature" not in fake_llm.requests[-1].body  # the provider's default


def test_a_temperature_out_of_range_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon.config import ConfigError, load_settings
    (tmp_path / ".troupe.toml").write_text("[model]\ntemperature = 3\n")
    with pytest.raises(ConfigError, match="temperature must be from 0 to 2, got 3"):
        load_settings(tmp_path, env=False)
    (tmp_path / ".troupe.toml").write_text("[model]\ntemperature = 0.4\n")
    assert load_settings(tmp_path, env=False).model.temperature == 0.4
    monkeypatch.setenv("TROUPE_TEMPERATURE", "0.9")
    assert load_settings(tmp_path).model.temperature == 0.9


async def test_model_per_role_is_used(fake_llm: FakeLLM) -> None:
    settings = ModelSettings(default="openai/general", roles={"reviewer": "openai/sharp-eyes"},
                             api_base=fake_llm.api_base, api_key=Secret("sk-x-123456789"))
    await Gateway(settings).complete(HELLO, role="reviewer")
    await Gateway(settings).complete(HELLO, role="programmer")
    assert [r.body["model"] for r in fake_llm.requests] == ["sharp-eyes", "general"]


async def test_rate_limit_honours_retry_after(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("rate_limit", retry_after=7)
    fake_llm.add_rule("after the wait")
    sleeps = Sleeps()
    reply = await gateway(fake_llm, sleeps).complete(HELLO)
    assert reply.text == "after the wait" and reply.attempts == 2
    assert len(sleeps.delays) == 1 and 7.0 <= sleeps.delays[0] < 7.2


async def test_server_errors_back_off_exponentially_with_jitter(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("server_error", times=3)
    sleeps = Sleeps()
    reply = await gateway(fake_llm, sleeps, max_retries=3, backoff_base=1.0).complete(HELLO)
    assert reply.attempts == 4
    assert len(sleeps.delays) == 3
    for attempt, delay in enumerate(sleeps.delays):
        assert 0.5 * 2**attempt <= delay <= 2**attempt  # base * 2^n, jittered down by at most half


async def test_retries_are_bounded_and_the_error_says_so(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("unavailable", times=10)
    with pytest.raises(LLMUnavailable, match=r"failed 3 times.*raise \[model\] max_retries"):
        await gateway(fake_llm, max_retries=2).complete(HELLO)
    assert len(fake_llm.requests) == 3


async def test_a_provider_asking_for_a_very_long_wait_is_reported_not_waited(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("rate_limit", retry_after=3600)
    with pytest.raises(LLMUnavailable, match="asked to wait more than 60s"):
        await gateway(fake_llm).complete(HELLO)


async def test_a_hung_call_times_out_and_is_retried(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("hang", seconds=10)
    fake_llm.add_rule("on time")
    reply = await gateway(fake_llm, timeout=0.5).complete(HELLO)
    assert reply.text == "on time" and reply.attempts == 2


@pytest.mark.parametrize("fault", ["malformed_json", "wrong_shape"])
async def test_replies_in_the_wrong_shape_are_retried(fake_llm: FakeLLM, fault: str) -> None:
    fake_llm.fail_next(fault)
    fake_llm.add_rule("well formed")
    reply = await gateway(fake_llm).complete(HELLO)
    assert reply.text == "well formed" and reply.attempts == 2


async def test_a_truncated_stream_is_retried_whole(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next("truncated_stream")
    fake_llm.add_rule("complete reply")
    reply = await gateway(fake_llm).complete(HELLO, stream=True)
    assert reply.text == "complete reply" and reply.attempts == 2


async def test_budget_stops_the_job_with_a_clear_message(fake_llm: FakeLLM) -> None:
    fake_llm.default_reply = "a reply of several tokens " * 4
    budget = Budget(tokens=30)
    gw = gateway(fake_llm)
    await gw.complete(HELLO, budget=budget)
    assert budget.used_tokens > 30
    with pytest.raises(BudgetExceeded, match=r"token budget spent: \d+ of 30 tokens used; raise \[budget\] tokens"):
        await gw.complete(HELLO, budget=budget)
    assert len(fake_llm.requests) == 1  # the refused call never reached the model


async def test_dollar_budget_counts_priced_models(fake_llm: FakeLLM) -> None:
    budget = Budget(dollars=1e-9)
    gw = gateway(fake_llm, model="openai/gpt-4o-mini")
    reply = await gw.complete(HELLO, budget=budget)
    assert reply.usage.cost > 0
    with pytest.raises(BudgetExceeded, match="cost budget spent"):
        await gw.complete(HELLO, budget=budget)


async def test_cost_is_accounted_per_job_and_unknown_models_cost_nothing(fake_llm: FakeLLM) -> None:
    recorded: list[tuple[str | None, str | None, str, Usage]] = []

    async def on_usage(job_id: str | None, role: str | None, model: str, usage: Usage) -> None:
        recorded.append((job_id, role, model, usage))

    priced = gateway(fake_llm, model="openai/gpt-4o-mini", on_usage=on_usage)
    unpriced = gateway(fake_llm, model="openai/my-local-llama", on_usage=on_usage)
    a = await priced.complete(HELLO, job_id="job-1", role="reviewer")
    b = await unpriced.complete(HELLO, job_id="job-2")
    assert a.usage.cost > 0 and b.usage.cost == 0.0
    # the unknown model is entered at zero once, so litellm stops searching its price list on every reply;
    # a priced model keeps its price
    litellm = import_litellm()
    assert litellm.model_cost["openai/my-local-llama"]["input_cost_per_token"] == 0.0
    assert litellm.model_cost["gpt-4o-mini"]["input_cost_per_token"] > 0
    assert (await priced.complete(HELLO)).usage.cost > 0 and (await unpriced.complete(HELLO)).usage.cost == 0.0
    assert [(j, r, m) for j, r, m, _ in recorded[:2]] == [("job-1", "reviewer", "openai/gpt-4o-mini"),
                                                      ("job-2", None, "openai/my-local-llama")]


async def test_concurrency_is_limited_globally(fake_llm: FakeLLM) -> None:
    fake_llm.latency = 0.2
    gw = gateway(fake_llm, concurrency=2)
    in_flight, peak = 0, 0
    original = gw._call

    async def counting(*args, **kwargs):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await original(*args, **kwargs)
        finally:
            in_flight -= 1

    gw._call = counting  # type: ignore[method-assign]
    await asyncio.gather(*(gw.complete(HELLO) for _ in range(5)))
    assert peak == 2


async def test_no_model_configured_is_a_clear_error() -> None:
    with pytest.raises(LLMNotConfigured, match="set TROUPE_MODEL"):
        await Gateway(ModelSettings()).complete(HELLO)


async def test_a_refused_request_is_not_retried(fake_llm: FakeLLM) -> None:
    gw = Gateway(ModelSettings(default="openai/fake-model", api_base=fake_llm.url + "/nope/v1",
                               api_key=Secret(PLANTED_KEY), max_retries=3))
    with pytest.raises(LLMError, match="refused the request") as info:
        await gw.complete(HELLO)
    assert PLANTED_KEY not in str(info.value)


async def test_the_api_key_never_reaches_a_log_line(fake_llm: FakeLLM, tmp_path: Path) -> None:
    log_file = tmp_path / "daemon.log"
    handler = logging.FileHandler(log_file)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    install_log_redaction(root)
    try:
        fake_llm.fail_next("server_error")
        fake_llm.fail_next("rate_limit", retry_after=0)
        await gateway(fake_llm).complete(HELLO)
        logging.getLogger("troupe.test").error("the key was %s", PLANTED_KEY)
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()
    text = log_file.read_text()
    assert "retry" in text  # the gateway did log its retries
    assert PLANTED_KEY not in text
    assert fake_llm.requests[0].headers.get("Authorization") == f"Bearer {PLANTED_KEY}"  # but it was sent
