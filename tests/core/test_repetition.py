"""A reply that repeats itself is cut after its first copy — streamed or whole — and every call
has a token cap, whoever makes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.config import ModelSettings, Secret
from daemon.llm.gateway import DEFAULT_MAX_TOKENS, Gateway
from daemon.llm.repetition import loop_cut, trim_loop
from tests.fakes.llm_server import FakeLLM

HELLO = [{"role": "user", "content": "Say hello"}]


@pytest.mark.parametrize(("text", "kept"), [
    ("intro\n" + "BUG: x is never reset\n" * 40, "intro\nBUG: x is never reset\n"),
    ("Answer: 3. " + "I hope this helps! " * 30, "Answer: 3. I hope this helps!"),
    ("def f():\n" + "    return 1\n" * 50, "def f():\n    return 1\n"),
])
def test_a_loop_is_cut_after_its_first_copy(text, kept):
    assert trim_loop(text) == (kept, True)


@pytest.mark.parametrize("text", [
    Path(__file__).read_text(),                                   # real code
    "\n".join(f"value_{i} = {i}" for i in range(500)),             # similar lines that differ
    "x" * 10 + "\n" + " " * 1000,                                  # trailing blanks are not a loop
    "LINE: 5\nBUG: wrong\nFIX: y\n\n" * 3,                         # a few copies, short: not yet a loop
])
def test_text_that_does_not_loop_is_left_alone(text):
    assert loop_cut(text) is None and trim_loop(text) == (text, False)


def _gateway(llm: FakeLLM) -> Gateway:
    return Gateway(ModelSettings(default="openai/fake-model", api_base=llm.api_base, api_key=Secret("sk-fake"),
                                 max_retries=0, timeout=5))


@pytest.mark.parametrize("stream", [False, True])
async def test_the_gateway_cuts_a_looping_reply(fake_llm: FakeLLM, stream: bool) -> None:
    fake_llm.default_reply = "Sure.\n" + "Let me check that again.\n" * 200
    reply = await _gateway(fake_llm).complete(HELLO, stream=stream)
    assert reply.text == "Sure.\nLet me check that again.\n" and reply.finish_reason == "repetition"


async def test_every_call_has_a_cap_and_a_reply_past_it_says_length(fake_llm: FakeLLM) -> None:
    gateway = _gateway(fake_llm)
    await gateway.complete(HELLO)
    assert fake_llm.requests[-1].body["max_tokens"] == DEFAULT_MAX_TOKENS
    fake_llm.default_reply = " ".join(f"word{i}" for i in range(200))
    reply = await gateway.complete(HELLO, max_tokens=10, stream=True)
    assert fake_llm.requests[-1].body["max_tokens"] == 10
    assert reply.finish_reason == "length" and len(reply.text) == 40
