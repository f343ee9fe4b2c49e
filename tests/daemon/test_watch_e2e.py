"""The watcher end to end: a real daemon (the agent engine, the fake LLM) watching temporary git
repositories. A save becomes a review whose findings are stored and streamed; atomic saves count
once; ignored files start nothing; a 200-file checkout starts a bounded number of jobs."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.api.protocol import StreamEvent
from tests.daemon.conftest import DaemonProcess, daemon_env, wait_for
from tests.fakes.llm_server import FakeLLM

JOBS_PER_MINUTE = 3
PROBE = "probe.bin"  # a binary file: the watcher reports it skipped and starts no job
PLANTED = "def add(a, b):\n    return a - b\n"
REVIEW = ('[{"start_line": 2, "severity": "major", "message": "add() subtracts: a planted bug", '
          '"quote": "return a - b", "replacement": "    return a + b"}]')


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM().start_in_thread()
    fake.default_reply = REVIEW
    yield fake
    fake.stop_thread()


@pytest.fixture(scope="module")
def engine_daemon(llm: FakeLLM) -> Iterator[DaemonProcess]:
    home = Path(tempfile.mkdtemp(prefix="trw-", dir="/tmp"))
    env = daemon_env(home, **llm.env(), TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor",
                     TROUPE_PRELOAD_LLM="1", TROUPE_WATCH_JOBS_PER_MINUTE=str(JOBS_PER_MINUTE),
                     TROUPE_WATCH_FILES_PER_JOB="5", TROUPE_JOBS_CONCURRENCY="2",
                     TROUPE_EXPERIENCE="off")  # the watcher is under test here, not experience mining
    daemon = DaemonProcess(home, env).start()
    yield daemon
    daemon.stop()
    shutil.rmtree(home, ignore_errors=True)


def new_repo(daemon: DaemonProcess, name: str) -> Path:
    root = daemon.home / name
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("*.log\nsecret/\n")
    return root.resolve()


class Follower:
    """Collects the daemon-wide stream of one workspace in the background."""

    def __init__(self, client: Any, root: Path) -> None:
        self.events: list[StreamEvent] = []
        self._task = asyncio.create_task(self._follow(client, str(root)))

    async def _follow(self, client: Any, root: str) -> None:
        async for event in client.watch_events(root):
            self.events.append(event)

    async def until(self, predicate: Any, timeout: float = 60.0, since: int = 0) -> StreamEvent:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.events[since:]:
                if predicate(event):
                    return event
            await asyncio.sleep(0.05)
        raise AssertionError(f"no such event within {timeout}s; saw {[e.kind for e in self.events]}")

    async def handled(self, root: Path, timeout: float = 30.0) -> None:
        """The stream is open and the watcher has handled every save made before this call: a probe
        saved now is reported (skipped: binary) only after the batches of saves before it. Saved
        again until its notice comes (the first may come before the stream is open)."""
        deadline = time.monotonic() + timeout
        while True:
            since = len(self.events)
            (root / PROBE).write_bytes(b"\0probe\n")
            try:
                await self.until(lambda e: e.kind == "watch" and e.data["action"] == "skipped"
                                 and any(f.startswith(PROBE) for f in e.data["files"]), timeout=2.0, since=since)
                return
            except AssertionError:
                if time.monotonic() > deadline:
                    raise

    def close(self) -> None:
        self._task.cancel()


async def watch(client: Any, root: Path) -> Follower:
    workspace = await client.register_workspace(str(root))
    assert workspace.watching and workspace.watch_mode == "inotify"
    follower = Follower(client, root)
    await follower.handled(root)  # the stream is open before the first save
    return follower


def finished(event: StreamEvent) -> bool:
    return event.kind == "job_state" and event.data.get("state") in ("succeeded", "failed")


async def test_a_save_reviews_the_file_and_streams_static_and_model_findings(
        engine_daemon: DaemonProcess, llm: FakeLLM) -> None:
    root = new_repo(engine_daemon, "saved")
    async with engine_daemon.client() as client:
        follower = await watch(client, root)
        (root / "calc.py").write_text("import os\n\n\n" + PLANTED)
        done = await follower.until(finished)
        job = await client.job(done.job_id)
        findings = await client.findings(str(root), "calc.py")
        (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")  # fixed: both findings go stale
        await follower.until(lambda e: finished(e) and e.job_id != done.job_id)
        after_fix = await client.findings(str(root), "calc.py")
        follower.close()
    assert job.kind == "review" and job.state == "succeeded", job.error
    assert job.request["files"] == ["calc.py"] and job.request["options"]["trigger"] == "save"
    by_rule = {f.rule or "model": f for f in findings}
    assert by_rule["F401"].start_line == 1 and by_rule["F401"].severity == "minor"
    assert by_rule["model"].message == "add() subtracts: a planted bug" and by_rule["model"].start_line == 5
    streamed = [e for e in follower.events if e.kind == "finding"]
    assert {e.data["id"] for e in streamed} == {f.id for f in findings}
    first_static = next(i for i, e in enumerate(follower.events) if e.kind == "finding")
    first_model_call = next(i for i, e in enumerate(follower.events) if e.kind == "usage")
    assert first_static < first_model_call  # the static part streams before the model answers
    assert llm.prompts_containing("return a - b"), "the saved code reached the reviewer's prompt"
    assert after_fix == []
    resolved = {e.data["id"] for e in follower.events if e.kind == "finding" and e.data["state"] == "resolved"}
    assert resolved == {f.id for f in findings}  # editors hear that the stale findings are gone


async def test_an_atomic_rename_save_starts_one_review(engine_daemon: DaemonProcess) -> None:
    root = new_repo(engine_daemon, "atomic")
    async with engine_daemon.client() as client:
        follower = await watch(client, root)
        temp = root / ".calc.py.swx"
        temp.write_text(PLANTED)
        os.replace(temp, root / "calc.py")
        await follower.until(finished)
        await follower.handled(root)  # any duplicate would have been queued by now
        jobs = await client.jobs(workspace=str(root))
        follower.close()
    assert [(j.kind, j.request["files"]) for j in jobs] == [("review", ["calc.py"])]


async def test_a_gitignored_file_starts_nothing(engine_daemon: DaemonProcess) -> None:
    root = new_repo(engine_daemon, "ignored")
    async with engine_daemon.client() as client:
        follower = await watch(client, root)
        (root / "debug.log").write_text("noise\n")
        (root / "secret").mkdir()
        (root / "secret" / "keys.py").write_text("KEY = 1\n")
        (root / ".venv" / "lib").mkdir(parents=True)
        (root / ".venv" / "lib" / "site.py").write_text("x = 1\n")
        await follower.handled(root)  # the watcher has seen the ignored saves
        assert await client.jobs(workspace=str(root)) == []
        (root / "real.py").write_text("x = 1\n")  # the watcher is alive: a real save is reviewed
        await follower.until(lambda e: e.kind == "watch" and e.data["action"] == "queued")
        jobs = await client.jobs(workspace=str(root))
        follower.close()
    assert [j.request["files"] for j in jobs] == [["real.py"]]


async def test_200_files_changed_at_once_start_a_bounded_number_of_jobs(engine_daemon: DaemonProcess) -> None:
    root = new_repo(engine_daemon, "checkout")
    async with engine_daemon.client() as client:
        follower = await watch(client, root)
        for i in range(200):
            (root / f"mod{i:03}.py").write_text(f"VALUE = {i}\n")
        capped = await follower.until(lambda e: e.kind == "watch" and e.data["action"] == "capped")
        await follower.handled(root)  # every batch of the checkout has been queued or capped
        jobs = await client.jobs(workspace=str(root))
        for job in jobs:
            await wait_for(client, job.id, timeout=60)
        metrics = await client.request("GET", "/metrics")
        follower.close()
    assert 1 <= len(jobs) <= JOBS_PER_MINUTE
    assert sum(len(j.request["files"]) for j in jobs) + capped.data["count"] <= 200
    assert capped.data["count"] >= 200 - JOBS_PER_MINUTE * 5
    assert metrics["watch_files_skipped"] >= capped.data["count"]
