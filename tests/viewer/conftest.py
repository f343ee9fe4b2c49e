"""The run viewer's tests: a real engine daemon (subprocess, loopback TCP on) pointed at the fake
LLM server, and Debian's Chromium driven headless by the Python ``playwright`` package (its own
browser downloads are never used). Browser tests skip, saying why, when either is missing.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from daemon.api.protocol import SubmitJob
from tests.daemon.conftest import REPO, DaemonProcess, daemon_env
from tests.fakes.llm_server import FakeLLM

CHROMIUM = os.environ.get("TROUPE_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = REPO / "test-artifacts"

INJECTION = ('Plan: <script>window.__pwned = 1; document.title = "pwned"</script>'
             '<img src=x onerror="window.__pwned = 2">\n'
             "<INFO> app.py: add() takes an optional third number")
CODE = '''app.py
```python
<<<<<<< SEARCH
def add(a, b):
    return a + b
=======
def add(a, b, c=0):
    """Add two or three numbers; <b>not</b> HTML."""
    return a + b + c
>>>>>>> REPLACE
```
'''


class Gate:
    """Holds the fake model's answer for the code phase until the test opens it (live viewing)."""

    def __init__(self) -> None:
        self.opened = threading.Event()

    def reply(self, body: dict[str, Any]) -> str:
        self.opened.wait(timeout=30)  # runs on the fake server's own thread
        return CODE


def script_change_job(llm: FakeLLM, gate: Gate) -> None:
    """The change chain: a question to the CTO, an injected plan, a gated edit, a clean review."""
    llm.add_rule("QUESTION: Which Python versions must add() support?", user="List the files to change", times=1)
    llm.add_rule("Python 3.11 and newer.", system="asks you a question")
    llm.add_rule(INJECTION, user="Python 3.11 and newer.")
    llm.add_rule(gate.reply, user="Make the change.")
    llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")


@pytest.fixture(scope="session")
def viewer_llm() -> Iterator[FakeLLM]:
    fake = FakeLLM(default_reply="<INFO> add() is in app.py:1").start_in_thread()
    yield fake
    fake.stop_thread()


@pytest.fixture(scope="session")
def viewer_daemon(viewer_llm: FakeLLM) -> Iterator[DaemonProcess]:
    """One engine daemon for the viewer tests, with the defaults' loopback TCP listener (no
    TROUPE_TCP_PORT: the viewer works out of the box)."""
    home = Path(tempfile.mkdtemp(prefix="trv-", dir="/tmp"))
    env = daemon_env(home, **viewer_llm.env(), TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor",
                     TROUPE_PRELOAD_LLM="1", TROUPE_JOBS_CONCURRENCY="1")
    daemon = DaemonProcess(home, env).start()
    yield daemon
    daemon.stop()
    shutil.rmtree(home, ignore_errors=True)


def tcp_port(daemon: DaemonProcess) -> int:
    return int(json.loads((daemon.home / "daemon.pid").read_text())["tcp_port"])


def token(daemon: DaemonProcess) -> str:
    return (daemon.home / "token").read_text().strip()


def make_repo(parent: Path, name: str) -> Path:
    root = parent / name
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "test_app.py").write_text("from app import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    return root.resolve()


def run(coro: Any) -> Any:
    """Run one coroutine from a synchronous test, on a thread of its own: playwright's sync API
    keeps an event loop running on the test's thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def submit(daemon: DaemonProcess, request: SubmitJob) -> str:
    async with daemon.client() as client:
        return (await client.submit(request)).id


async def viewer_link(daemon: DaemonProcess, job_id: str | None = None) -> tuple[int, dict[str, Any]]:
    """POST /v1/viewer/link over the Unix socket, as the CLI does."""
    connector = aiohttp.UnixConnector(path=str(daemon.socket))
    async with aiohttp.ClientSession(connector=connector) as session, session.post(
            "http://troupe/v1/viewer/link", json={"job_id": job_id} if job_id else {}) as resp:
        return resp.status, await resp.json()


async def log_in(url: str) -> str:
    """Open a one-time viewer link as a browser does, without following the last redirect: a link to a
    job first goes, unspent, to the viewer's root, which spends it for the cookie. Returns the cookie."""
    from urllib.parse import urljoin

    async with aiohttp.ClientSession() as session:
        for _ in range(2):
            async with session.get(url, allow_redirects=False) as resp:
                assert resp.status == 303, f"{url}: {resp.status}"
                if "troupe_viewer" in resp.cookies:
                    return resp.cookies["troupe_viewer"].value
                url = urljoin(url, resp.headers["Location"])
    raise AssertionError(f"the link never gave the viewer's cookie (last stop {url})")


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (what to install), or None."""
    if not Path(CHROMIUM).exists():
        return (f"Chromium is not installed at {CHROMIUM}: the viewer's browser tests need it "
                "(apt-get install -y chromium)")
    if importlib.util.find_spec("playwright") is None:
        return ("the Python package playwright is not installed: pip install 'playwright>=1.50,<2' "
                "(it drives Debian's Chromium; no browser download is needed)")
    return None


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Debian Chromium under playwright, or a skip that says what to install."""
    missing = browser_missing()
    if missing:
        pytest.skip(missing)
    from playwright import sync_api

    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
