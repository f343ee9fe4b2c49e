"""Prompt caching: cached prompt tokens a provider reports are recorded per call, priced at the
cached rate, summed per job and shown with the job; Anthropic-style providers get cache marks."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.api.views import job_info
from daemon.cli.render import job_line
from daemon.config import ModelSettings, Secret
from daemon.llm.gateway import Gateway, cache_points, import_litellm
from storage import Store
from tests.fakes.llm_server import FakeLLM, estimate_tokens

SYSTEM = "You are a careful programmer. " + "Follow the house rules exactly. " * 60
PROMPT = "The code:\n" + "def add(a, b):\n    return a + b\n" * 40


@pytest.mark.parametrize("stream", [False, True])
async def test_cached_prompt_tokens_a_provider_reports_are_recorded_and_priced_as_cached(stream: bool) -> None:
    recorded = []
    async with FakeLLM(prompt_cache=True, model="gpt-4o-mini") as llm:
        settings = ModelSettings(default="openai/gpt-4o-mini", api_base=llm.api_base, api_key=Secret("sk-fake"),
                                 max_retries=0)
        gateway = Gateway(settings, on_usage=lambda job, role, model, usage: recorded.append(usage))
        first = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
        one = await gateway.complete(first, stream=stream)
        again = [*first, {"role": "assistant", "content": one.text}, {"role": "user", "content": "Shorter."}]
        two = await gateway.complete(again, stream=stream)

    shared = estimate_tokens(SYSTEM) + estimate_tokens(PROMPT)
    assert one.usage.cached_prompt_tokens == 0
    assert two.usage.cached_prompt_tokens == shared  # the system message and the phase's prompt
    assert [u.cached_prompt_tokens for u in recorded] == [0, shared]
    litellm = import_litellm()
    full_price = sum(litellm.cost_per_token(model="openai/gpt-4o-mini", prompt_tokens=two.usage.prompt_tokens,
                                            completion_tokens=two.usage.completion_tokens))
    cached_price = sum(litellm.cost_per_token(model="openai/gpt-4o-mini", prompt_tokens=two.usage.prompt_tokens,
                                              completion_tokens=two.usage.completion_tokens,
                                              cache_read_input_tokens=shared))
    assert two.usage.cost == pytest.approx(cached_price) and cached_price < 0.75 * full_price


def test_a_jobs_cached_prompt_tokens_are_summed_and_shown_with_its_tokens(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "troupe.db")
    try:
        job = store.record_job("ask", {"prompt": "what does add do?"})
        store.record_usage(job.id, "anthropic/claude-sonnet-4-5", 1500, 100, 0.002, cached_prompt_tokens=0)
        store.record_usage(job.id, "anthropic/claude-sonnet-4-5", 1700, 80, 0.001, cached_prompt_tokens=1400)
        totals = store.job_usage(job.id)
        info = job_info(store.get_job(job.id), workspace=None, usage=totals)
    finally:
        store.close()
    assert (totals.prompt_tokens, totals.cached_prompt_tokens) == (3200, 1400)
    assert info.usage.cached_prompt_tokens == 1400
    assert "3,380 tok" in job_line(info) and "(1,400 cached)" in job_line(info)


def test_anthropic_models_get_cache_marks_and_openai_compatible_ones_none() -> None:
    litellm = import_litellm()
    first = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
    later = [*first, {"role": "assistant", "content": "x"}, {"role": "user", "content": "Shorter."}]
    system, prompt = {"location": "message", "role": "system"}, {"location": "message", "index": 1}
    assert cache_points(litellm, "anthropic/claude-sonnet-4-5", first) == [system]  # no write premium for one call
    assert cache_points(litellm, "anthropic/claude-sonnet-4-5", later) == [system, prompt]  # later turns read it
    assert cache_points(litellm, "openai/gpt-4o-mini", later) is None  # OpenAI caches a repeated prefix itself
    assert cache_points(litellm, "openai/fake-model", later) is None
