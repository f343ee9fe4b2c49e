"""MCP tests drive ``troupe mcp`` as a subprocess with the SDK's own client (``mcp.client.stdio`` and
``ClientSession``), against a real daemon subprocess running the agent engine on the fake LLM server.

One engine daemon serves the whole session; each test works in its own git repository under that
daemon's TROUPE_HOME. :func:`mcp_client` opens a session as an agent client does; ``elicit`` makes it
declare elicitation and answer the team's questions as scripted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp_types import ElicitRequestParams, ElicitResult, ErrorData

from tests.daemon.conftest import REPO, DaemonProcess, daemon_env
from tests.fakes.llm_server import FakeLLM

PLANTED = "import os\n\n\ndef add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
BUG_MESSAGE = "add() subtracts: a planted bug"
REVIEW = ('[{"start_line": 5, "severity": "major", "message": "' + BUG_MESSAGE + '", '
          '"quote": "return a - b", "replacement": "    return a + b"}]')
PLAN = "I will fix the subtraction.\n<INFO> calc.py: add() must return a + b"
CODE = """calc.py
```python
<<<<<<< SEARCH
    return a - b
=======
    return a + b
>>>>>>> REPLACE
```
"""
Elicit = Callable[[ElicitRequestParams], Awaitable[ElicitResult]]


@pytest.fixture(scope="session")
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM().start_in_thread()
    yield fake
    fake.stop_thread()


@pytest.fixture(autouse=True)
def fresh_script(llm: FakeLLM) -> None:
    """Each test scripts the model from scratch; a review gets the planted finding unless told otherwise."""
    llm.reset()
    llm.default_reply = REVIEW


@pytest.fixture(scope="session")
def engine_daemon(llm: FakeLLM) -> Iterator[DaemonProcess]:
    home = Path(tempfile.mkdtemp(prefix="trm-", dir="/tmp"))
    env = daemon_env(home, **llm.env(), TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor",
                     TROUPE_JOBS_CONCURRENCY="2", TROUPE_PRELOAD_LLM="1")
    daemon = DaemonProcess(home, env).start()
    yield daemon
    daemon.kill9()  # a graceful stop costs seconds and is the daemon suite's subject, not ours
    shutil.rmtree(home, ignore_errors=True)


_repos = iter(range(10_000))


@pytest.fixture
def repo(engine_daemon: DaemonProcess) -> Path:
    """A git repository of its own with the planted bug (calc.py) and a test that catches it."""
    root = engine_daemon.home / f"repo{next(_repos)}"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "calc.py").write_text(PLANTED)
    (root / "test_calc.py").write_text(TESTS)
    return root.resolve()


def server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TROUPE_", "OPENAI_", "ANTHROPIC_"))}
    env.update({"TROUPE_HOME": str(home), "TROUPE_AUTOSTART": "0", "PYTHONPATH": str(REPO),
                "XDG_CONFIG_HOME": str(home / "config")})
    return env


@contextlib.asynccontextmanager
async def mcp_client(daemon: DaemonProcess, root: Path, *, elicit: Elicit | None = None,
                     ) -> AsyncIterator[ClientSession]:
    """``troupe mcp --workspace ROOT`` as a client starts it, and an initialized session with it."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "daemon.cli.main", "mcp", "--workspace",
                                                                 str(root)],
                                   env=server_env(daemon.home), cwd=str(REPO))

    async def on_elicit(context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        assert elicit is not None
        return await elicit(params)

    with open(daemon.home / "mcp-stderr.log", "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(
                read, write, elicitation_callback=on_elicit if elicit else None) as session:
            await session.initialize()
            yield session


class ProgressLog:
    """What the client heard through ``notifications/progress`` for one call."""

    def __init__(self) -> None:
        self.reports: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.reports.append((progress, total, message))

    @property
    def messages(self) -> list[str]:
        return [m or "" for _, _, m in self.reports]


async def until(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
