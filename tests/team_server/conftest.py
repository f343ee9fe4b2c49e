"""A real team server for tests: PostgreSQL (tests/fixtures/postgres.py), API nodes and workers as
processes of their own (``troupe server`` / ``troupe worker``) and a git repository the workers
clone. One per test module: starting it takes a few seconds. The tests' workers run the scripted
executor (tests/daemon/executors.py: checkpointed phases, a hold to kill a worker in), so no worker
imports litellm; bench/team_server.py runs the agent engine against the fake model."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from daemon.client import DaemonClient

REPO = Path(__file__).resolve().parents[2]
SCRIPTED = "tests.daemon.executors:scripted"
LIMITS = "jobs = 100\nrequests_per_second = 100\nburst = 200"
"""The clusters' [limits]: the tests' people submit 50 jobs at once (tests/team_server/test_limits_audit.py
sets its own, low, to hit them)."""


def git_repository(root: Path, files: dict[str, str] | None = None) -> Path:
    """The workspace's remote: a git repository with one commit (of ``files``, default one app.py)."""
    root.mkdir(parents=True)
    for name, text in (files or {"app.py": "def add(a, b):\n    return a + b\n"}).items():
        (root / name).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "."],
                 ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


class TeamCluster:
    """API nodes and workers sharing one PostgreSQL database; see the module docstring."""

    def __init__(self, folder: Path, store_url: str, *, llm_url: str | None = None, executor: str | None = None,
                 files: dict[str, str] | None = None, limits: str = LIMITS) -> None:
        self.folder, self.store_url, self.llm_url = folder, store_url, llm_url
        self.remote = git_repository(folder / "remote", files)
        self.config = folder / "team.toml"
        self.config.write_text(
            f'[store]\nurl = "{store_url}"\n[server]\nhost = "127.0.0.1"\nport = 0\n'
            f'[worker]\nconcurrency = 1\ncache = "{folder / "cache"}"\n'
            f'[limits]\n{limits}\n'
            f'[[workspace]]\nname = "shop"\nremote = "{self.remote}"\nchannel = "CSHOP"\nshared_with = ["ada"]\n'
            f'[[workspace]]\nname = "vault"\nremote = "{self.remote}"\nshared_with = ["eve"]\n')
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("TROUPE_", "OPENAI_", "ANTHROPIC_"))}
        self.env.update({
            "TROUPE_HOME": str(folder / "home"), "PYTHONPATH": str(REPO), "TROUPE_TEAM_CONFIG": str(self.config),
            "TROUPE_LOCAL_MODEL": "0", "TROUPE_PRELOAD_LLM": "0", "TROUPE_EXPERIENCE": "off",
            "TROUPE_SSE_HEARTBEAT": "0.5", "TROUPE_WORKER_HEARTBEAT": "0.5", "TROUPE_WORKER_STALLED_AFTER": "5",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "XDG_CONFIG_HOME": str(folder / "config"),
        })
        if llm_url:
            self.env.update({"TROUPE_MODEL": "openai/fake-model", "TROUPE_API_BASE": f"{llm_url}/v1",
                             "TROUPE_API_KEY": "sk-fake"})
        if executor:
            self.env.update({"TROUPE_EXECUTOR": executor, "TROUPE_TEST_RESUMABLE": "1"})
        (folder / "home").mkdir(mode=0o700)
        self.servers: list[tuple[subprocess.Popen[str], str]] = []
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        self.tokens: dict[str, str] = {}

    @property
    def urls(self) -> list[str]:
        return [url for _, url in self.servers]

    def troupe(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "daemon.cli.main", *args], env=self.env, cwd=REPO,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def add_people(self, *names: str) -> None:
        for name in names:
            self.add_person(name)

    def add_person(self, name: str, *, slack_user: str | None = None, bot: bool | None = None) -> str:
        """``troupe server add-person`` (in this process: no interpreter to start); the token, also in ``tokens``."""
        from daemon.team_server.people import People
        from storage import AsyncStore

        async def add() -> str:
            async with await AsyncStore.open(self.store_url) as store:
                return await People(store).add(name, slack_user=slack_user, bot=bot)

        with ThreadPoolExecutor(1) as thread:  # callable from a test's running event loop too
            self.tokens[name] = thread.submit(asyncio.run, add()).result()
        return self.tokens[name]

    def start_servers(self, count: int) -> None:
        """``count`` API nodes, started together; returns once each listens."""
        started = []
        for index in range(count):
            with open(self.folder / f"server{index}.log", "ab") as log:
                started.append(subprocess.Popen([sys.executable, "-m", "daemon.cli.main", "server"], env=self.env,
                                                cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True))
        for proc in started:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()  # printed once the node listens
            if not line.startswith("TROUPE_SERVER_URL="):
                proc.kill()
                raise RuntimeError(f"the API node did not start: {line!r}\n{self.logs()}")
            self.servers.append((proc, line.removeprefix("TROUPE_SERVER_URL=")))

    def start_worker(self, name: str) -> None:
        home = self.folder / f"home-{name}"  # a worker's scratch copies are its own
        home.mkdir(mode=0o700)
        env = {**self.env, "TROUPE_HOME": str(home), "TROUPE_PRELOAD_LLM": "1"}  # litellm before the first job
        with open(self.folder / f"{name}.log", "ab") as log:
            self.workers[name] = subprocess.Popen([sys.executable, "-m", "daemon.cli.main", "worker", "--name", name],
                                                  env=env, cwd=REPO, stdout=log, stderr=log)

    def running_on(self, job_id: str) -> str | None:
        """The worker whose cache holds the job's checkout now (it has one while it runs the job)."""
        return next((name for name in self.workers if (self.folder / "cache" / name / "jobs" / job_id).exists()),
                    None)

    def kill9(self, name: str) -> None:
        proc = self.workers[name]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def client(self, url: str, token: str) -> DaemonClient:
        return DaemonClient(tcp_url=url, token=token, autostart=False, retries=2)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.folder.glob("*.log")))

    def stop(self) -> None:
        procs: list[Any] = [p for p, _ in self.servers] + list(self.workers.values())
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@contextlib.contextmanager
def running_cluster(postgres: Any, template: str, people: dict[str, dict[str, Any]], *, workers: int,
                    servers: int) -> Iterator[TeamCluster]:
    """A cluster on a fresh database with ``people`` (name -> add_person's keywords), ``workers``
    worker processes and ``servers`` API nodes; everything stopped and removed afterwards."""
    url = postgres.create_database(template=template)
    folder = Path(tempfile.mkdtemp(prefix="trt-", dir="/tmp"))
    cluster = TeamCluster(folder, url, executor=SCRIPTED)
    try:
        for name, keywords in people.items():
            cluster.add_person(name, **keywords)
        for index in range(workers):
            cluster.start_worker(f"w{index}")
        cluster.start_servers(servers)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
        postgres.drop_database(url)


@pytest.fixture(scope="module")
def team(postgres: Any, postgres_template: str) -> Iterator[TeamCluster]:
    """Two API nodes and three workers on a fresh database; ada (Slack user UANN) sees workspace shop,
    eve only vault; slack-bot is a bot's token."""
    people: dict[str, dict[str, Any]] = {
        "ada": {"slack_user": "UANN"},  # tests/slack's ANN: the Slack bot acts for her
        "eve": {}, "slack-bot": {"bot": True}}
    with running_cluster(postgres, postgres_template, people, workers=3, servers=2) as cluster:
        yield cluster
