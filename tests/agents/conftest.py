"""Fixtures for engine tests: a gateway pointed at the fake LLM server (the real litellm HTTP
path), an event recorder, and a runner factory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from daemon.agents.context import RunContext
from daemon.agents.runner import ChainRunner
from daemon.config import ModelSettings, Secret, Settings
from daemon.events import Event, EventKind
from daemon.llm.gateway import Gateway
from daemon.payloads import payload, wire
from tests.fakes.llm_server import FakeLLM


class Recorder:
    """Collects the engine's events; helpers read them the way an adapter would."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        payload(str(event.kind), wire(event.data))  # what the daemon checks when it records one: a drift fails here
        self.events.append(event)

    def of(self, kind: EventKind) -> list[Event]:
        return [e for e in self.events if e.kind is kind]

    def phases_finished(self) -> list[str]:
        return [e.data.phase for e in self.of(EventKind.PHASE_FINISHED)]


@pytest.fixture
def gateway(fake_llm: FakeLLM) -> Gateway:
    settings = ModelSettings(default="openai/fake-model", api_base=fake_llm.api_base, api_key=Secret("sk-fake"),
                             max_retries=0, timeout=20)
    return Gateway(settings)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def make_runner(gateway: Gateway, recorder: Recorder, tmp_path: Path) -> Callable[..., ChainRunner]:
    scratch_dir = tmp_path / "scratches"

    def make(ask_human: Any = None, *, settings: Settings | None = None, **kwargs: Any) -> ChainRunner:
        context = RunContext.of(gateway, recorder, settings, ask_human=ask_human, scratch_dir=scratch_dir, **kwargs)
        return ChainRunner(context)

    return make


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def snapshot_tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}
