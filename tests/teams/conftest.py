"""Fixtures for the teams tests: a gateway on the fake LLM server (the real litellm HTTP path),
an event recorder, a model-call function for the pool and network, and small chain files."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from daemon.agents.accounting import Tally
from daemon.agents.loader import load_chain_file
from daemon.agents.model import Chain, ChainSet
from daemon.config import ModelSettings, Secret
from daemon.events import Event, EventKind
from daemon.llm.gateway import Gateway
from tests.fakes.llm_server import FakeLLM

MINI_CHAIN = '''
name = "mini"
description = "New code, then a review loop (no tests: cheap for team tests)."
start = "empty"
{extra}

[[steps]]
phase = "coding"
instructor = "cto"
assistant = "programmer"
produces = "code"
max_questions = 0
template = """Task: {{task}}

Write the program.

{{edit_format}}"""

[[steps]]
loop = "review"
until = "finished"
max_cycles = 2

[[steps.phases]]
phase = "review_comment"
instructor = "programmer"
assistant = "reviewer"
reflect = false
max_questions = 0
template = """Task: {{task}}

{{code}}

Give the ONE most important problem. If nothing is wrong, reply only: <INFO> Finished"""

[[steps.phases]]
phase = "review_modify"
instructor = "reviewer"
assistant = "programmer"
produces = "code"
max_questions = 0
template = """Review comment: {{review_comment}}

{{code}}

Fix the code as the comment asks.

{{edit_format}}"""
'''


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: EventKind) -> list[Event]:
        return [e for e in self.events if e.kind is kind]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def gateway(fake_llm: FakeLLM) -> Gateway:
    return Gateway(ModelSettings(default="openai/fake-model", api_base=fake_llm.api_base, api_key=Secret("sk-fake"),
                                 max_retries=0, timeout=20, concurrency=16))


@pytest.fixture
def complete(gateway: Gateway):  # type: ignore[no-untyped-def]
    """A (messages, role, temperature) -> text call over the gateway, counting usage in ``complete.tally``."""
    tally = Tally()

    async def call(messages: list[dict[str, str]], role: str, temperature: float | None) -> str:
        began = time.monotonic()
        completion = await gateway.complete(messages, role=role, temperature=temperature)
        tally.add(completion, time.monotonic() - began)
        return completion.text

    call.tally = tally  # type: ignore[attr-defined]
    return call


def mini_chains(tmp_path: Path, extra: str = "") -> ChainSet:
    """The chain set holding only ``mini`` (with ``extra`` top-level keys such as ``teams = 3``)."""
    path = tmp_path / "mini.toml"
    path.write_text(MINI_CHAIN.format(extra=extra))
    chain: Chain = load_chain_file(path)
    return ChainSet({chain.name: chain}, chain.roles)


def program(name: str, body: str) -> str:
    """A whole-file reply writing ``name`` with ``body``."""
    return f"```python {name}\n{body.rstrip()}\n```"
