"""Daemon tests run the real daemon as a subprocess with its own TROUPE_HOME and talk to it over
its Unix socket, exactly as the CLI, the language server and the Slack bot do."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.api.protocol import FINAL_STATES, JobInfo
from daemon.client import DaemonClient

REPO = Path(__file__).resolve().parents[2]
SCRIPTED = "tests.daemon.executors:scripted"


class DaemonProcess:
    """``python -m daemon.cli.main daemon`` in a temporary TROUPE_HOME."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.home / "troupe.sock"

    def start(self, timeout: float = 20.0, **extra_env: str) -> DaemonProcess:
        self.env.update(extra_env)
        log = open(self.home / "stderr.log", "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen([sys.executable, "-m", "daemon.cli.main", "daemon"], env=self.env,
                                     stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited ({self.proc.returncode}):\n{self.stderr()}")
            with socket.socket(socket.AF_UNIX) as probe:
                try:
                    probe.connect(str(self.socket))
                except OSError:
                    time.sleep(0.02)
                    continue
            if self.started():  # the pid file (with the TCP port) comes after the socket opens
                return self
            time.sleep(0.02)
        raise RuntimeError(f"daemon did not start:\n{self.stderr()}")

    def started(self) -> bool:
        """True once the daemon wrote its pid file (its last step of starting up)."""
        try:
            info = json.loads((self.home / "daemon.pid").read_text())
        except (OSError, ValueError):
            return False
        return self.proc is not None and info.get("pid") == self.proc.pid

    def stderr(self) -> str:
        path = self.home / "stderr.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def client(self, **options: Any) -> DaemonClient:
        return DaemonClient(self.socket, autostart=False, retries=options.pop("retries", 2), **options)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout: float = 20.0) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise


def daemon_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TROUPE_", "OPENAI_", "ANTHROPIC_"))}
    env.update({
        "TROUPE_HOME": str(home), "PYTHONPATH": str(REPO), "TROUPE_EXECUTOR": SCRIPTED, "TROUPE_AUTOSTART": "0",
        "TROUPE_SSE_HEARTBEAT": "0.5", "TROUPE_WATCH_DEBOUNCE": "0.2", "TROUPE_PRELOAD_LLM": "0",
        "TROUPE_LOCAL_MODEL": "0",
        "XDG_CONFIG_HOME": str(home / "config"), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    })
    env.update(extra)
    return env


@pytest.fixture
def home() -> Iterator[Path]:
    """A short TROUPE_HOME (Unix socket paths must stay under ~100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="trd-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make_daemon(home: Path) -> Iterator[Any]:
    started: list[DaemonProcess] = []

    def make(**env: str) -> DaemonProcess:
        process = DaemonProcess(home, daemon_env(home, **env))
        started.append(process)
        return process

    yield make
    for process in started:
        if process.proc is not None and process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait(5)


@pytest.fixture
async def daemon(make_daemon: Any) -> AsyncIterator[DaemonProcess]:
    """A started daemon with the scripted executor."""
    yield make_daemon().start()


@pytest.fixture
def repo(home: Path) -> Path:
    """A small git repository to work in."""
    root = home / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("*.log\nsecret/\n")
    (root / "app.py").write_text("def add(a, b):\n    return a + b\n")
    return root


async def wait_for(client: DaemonClient, job_id: str, *, states: tuple[str, ...] = FINAL_STATES,
                   timeout: float = 20.0) -> JobInfo:
    deadline = time.monotonic() + timeout
    while True:
        job = await client.job(job_id)
        if job.state in states:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {job.state} after {timeout}s")
        await asyncio.sleep(0.05)
