"""Shared fixtures. litellm is pointed at local fakes only; it must never reach the network."""

from __future__ import annotations

import os

# Before anything imports litellm: use the bundled model-cost map instead of fetching it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Daemons started by tests never fall back to the bundled local model (tests/local turns it on).
os.environ["TROUPE_LOCAL_MODEL"] = "0"
# Programs run by tests get no packages from PyPI (tests/workspace/test_packages.py serves its own wheels).
os.environ["TROUPE_PACKAGES"] = "off"

from collections.abc import AsyncIterator

import pytest

from tests.fakes.llm_server import FakeLLM

pytest_plugins = ["tests.fixtures.postgres"]  # `postgres` (a real server per session) and `postgres_url`


@pytest.fixture
async def fake_llm() -> AsyncIterator[FakeLLM]:
    """A started fake OpenAI-compatible server on 127.0.0.1; `fake_llm.litellm_kwargs()` points
    litellm at it. Stopped after the test."""
    async with FakeLLM() as llm:
        yield llm


@pytest.fixture
def fake_llm_env(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    """`fake_llm`, with TROUPE_MODEL / TROUPE_API_BASE / TROUPE_API_KEY pointing at it."""
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    return fake_llm


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The test files longest first (tests/file_durations.py says why and how they are measured); each
    file's tests stay together and in their own order."""
    from tests.file_durations import load, ordered

    rank = {path: index for index, path in enumerate(ordered([item.nodeid.split("::")[0] for item in items], load()))}
    items.sort(key=lambda item: rank[item.nodeid.split("::")[0]])  # stable: a file's tests keep their order
