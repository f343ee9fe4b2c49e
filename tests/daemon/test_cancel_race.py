"""A cancel that reaches a job just as it ends on its own: refused as "nothing to cancel", never a crash."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from daemon.errors import Conflict
from daemon.jobs.executor import JobResult, RunningJob
from daemon.jobs.hub import EventHub
from daemon.jobs.manager import JobManager
from daemon.messages import SubmitJob
from storage import AsyncStore


class Quick:
    name, resumable = "quick", False

    async def run(self, job: RunningJob, emit: Any, ask_human: Any) -> JobResult:
        return JobResult(status="succeeded", result={"answer": "done"})

    async def close(self) -> None:
        return None


async def test_a_cancel_arriving_after_the_job_stored_its_end_is_refused_and_the_end_stands(tmp_path: Path) -> None:
    store = await AsyncStore.open(tmp_path / "troupe.db")
    manager = JobManager(store, EventHub(), Quick())
    read, ended, go = asyncio.Event(), asyncio.Event(), asyncio.Event()
    real_run, real_require = store.run, manager.require

    async def run(work: Any) -> Any:  # the job's task waits for the cancel's read, then stores its end and stops
        mine = asyncio.current_task() in manager._tasks.values()
        if mine and not ended.is_set():
            await read.wait()
        value = await real_run(work)
        if mine and not ended.is_set() and (await real_require(job.id)).state.value == "succeeded":
            ended.set()
            await go.wait()
        return value

    async def require(job_id: str) -> Any:  # the cancel reads the job as not ended, and the job ends meanwhile
        seen = await real_require(job_id)
        if not read.is_set():
            read.set()
            await ended.wait()
        return seen

    store.run = run  # type: ignore[method-assign]
    manager.require = require  # type: ignore[method-assign]
    await manager.start()
    try:
        job = await manager.submit(SubmitJob(kind="ask", prompt="what is 2 + 2?"))
        with pytest.raises(Conflict, match=f"job {job.id} already succeeded; nothing to cancel"):
            await manager.cancel(job.id)
        stored = await store.get_job(job.id)
        assert stored is not None and stored.state.value == "succeeded"
        events = [e.data.get("state") for e in await store.events_after(job.id, 0) if e.kind == "job_state"]
        assert events[-1] == "succeeded" and "cancelled" not in events
    finally:
        go.set()
        await manager.stop()
        await store.close()
