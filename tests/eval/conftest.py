"""``troupe eval`` against a real daemon (the agent engine) and the fake LLM: the daemon has no
TROUPE_MODEL, so the eval's ``--model`` reaches the gateway through each item's workspace."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from daemon.eval.runner import DaemonContext
from daemon.eval.split import ArmResult
from tests.daemon.conftest import DaemonProcess, daemon_env
from tests.fakes.llm_server import FakeLLM

MODEL = "openai/eval-fake"


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM().start_in_thread()
    yield fake
    fake.stop_thread()


@pytest.fixture(scope="module")
def eval_daemon(llm: FakeLLM) -> Iterator[DaemonProcess]:
    home = Path(tempfile.mkdtemp(prefix="tre-", dir="/tmp"))
    endpoint = {k: v for k, v in llm.env().items() if k != "TROUPE_MODEL"}
    env = daemon_env(home, **endpoint, TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor", TROUPE_EXPERIENCE="off")
    daemon = DaemonProcess(home, env).start()
    yield daemon
    daemon.kill9()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def learning_daemon(llm: FakeLLM) -> Iterator[DaemonProcess]:
    """A daemon whose experience is on (the eval suites' daemon has it off): ``--experience-split``."""
    home = Path(tempfile.mkdtemp(prefix="trx-", dir="/tmp"))
    endpoint = {k: v for k, v in llm.env().items() if k != "TROUPE_MODEL"}
    daemon = DaemonProcess(home, daemon_env(home, **endpoint, TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor"))
    yield daemon.start()
    daemon.kill9()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
async def ctx(eval_daemon: DaemonProcess, llm: FakeLLM) -> AsyncIterator[DaemonContext]:
    """A runner context on the eval daemon, with the fake's script cleared."""
    llm.reset()
    llm.default_reply = "<INFO> Finished"
    async with eval_daemon.client() as client:
        context = DaemonContext(client, model=MODEL, job_timeout=60, poll=0.05)
        yield context
        await context.close()


def last_user(body: dict) -> str:
    """The last user message of a chat request body."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) else " ".join(part.get("text", "") for part in content)


class ArmPrompts(list[tuple[ArmResult, list[str]]]):
    """A split run's ``on_result``: each arm's result with the prompts its jobs sent the fake model."""

    def __init__(self, llm: FakeLLM) -> None:
        super().__init__()
        self.llm = llm
        self.seen = len(llm.requests)

    def __call__(self, arm: ArmResult, done: int, total: int) -> None:
        self.append((arm, [r.prompt for r in self.llm.requests[self.seen:]]))
        self.seen = len(self.llm.requests)
