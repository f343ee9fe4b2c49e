"""AsyncStore: the same verbs as coroutines, all run on one worker thread off the event loop."""

from __future__ import annotations

import asyncio
import inspect
import threading
from pathlib import Path

import pytest

from storage import AsyncStore, JobState, Store, StoreError
from storage.store import store_verbs


def test_every_store_verb_has_an_async_twin() -> None:
    verbs = store_verbs()
    assert {"record_job", "append_event", "add_findings", "search_events", "job_usage"} <= set(verbs)
    for name in verbs:
        twin = getattr(AsyncStore, name)
        assert inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin) == inspect.signature(getattr(Store, name)), name


async def test_verbs_work_from_asyncio(store_target: Path | str) -> None:
    async with await AsyncStore.open(store_target) as store:
        job = await store.record_job("ask", {"question": "where is auth?"})
        assert await store.append_event(job.id, "message", {"text": "in auth.py"}, role="cto") == 1
        [event] = await store.events_after(job.id, 0)
        assert event.data == {"text": "in auth.py"} and event.role == "cto"
        assert (await store.set_job_state(job.id, "succeeded")).state is JobState.SUCCEEDED


async def test_concurrent_coroutines_get_distinct_seqs_in_call_order(store_target: Path | str) -> None:
    async with await AsyncStore.open(store_target) as store:
        job = await store.record_job("review", {})
        seqs = await asyncio.gather(*(store.append_event(job.id, "log", {"n": i}) for i in range(100)))
        assert seqs == list(range(1, 101))
        assert [e.data["n"] for e in await store.events_after(job.id)] == list(range(100))


async def test_all_calls_run_on_one_thread_that_is_not_the_event_loops(store_target: Path | str) -> None:
    async with await AsyncStore.open(store_target) as store:
        names = await asyncio.gather(*(store.run(lambda _: threading.current_thread().name) for _ in range(5)))
        assert len(set(names)) == 1 and names[0] != threading.current_thread().name


async def test_run_makes_several_verbs_one_transaction(store_target: Path | str) -> None:
    async with await AsyncStore.open(store_target) as store:
        job = await store.record_job("test", {})

        def fail_halfway(s: Store) -> None:
            s.set_job_state(job.id, "failed", error="boom")
            raise RuntimeError("crash before commit")

        with pytest.raises(RuntimeError):
            await store.run(fail_halfway)
        assert (await store.get_job(job.id)).state is JobState.QUEUED


async def test_a_closed_async_store_says_so(store_target: Path | str) -> None:
    store = await AsyncStore.open(store_target)
    await store.close()
    with pytest.raises(StoreError, match="is closed"):
        await store.list_jobs()


async def test_opening_a_bad_file_raises_from_open(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open"):
        await AsyncStore.open(tmp_path / "no" / "such" / "dir.db")
