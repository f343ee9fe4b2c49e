"""``AsyncStore``: the store for asyncio code, with every SQLite call off the event loop.

One dedicated worker thread opens the ``Store`` and runs every call, so the connection never
changes threads (``asyncio.to_thread`` would hop between pool threads). Calls run one at a time,
in the order they were made. Each ``Store`` verb is available as a coroutine of the same name and
arguments::

    store = await AsyncStore.open(path)
    job = await store.record_job("review", {"file": "app.py"})
    seq = await store.append_event(job.id, "message", {"text": "hi"}, role="reviewer")
    # several verbs in one transaction:
    await store.run(lambda s: [s.set_job_state(job.id, "failed", error="boom"),
                               s.append_event(job.id, "job_state", {"state": "failed"})])
    await store.close()

Cancelling an awaiting task does not interrupt SQLite: the call already handed to the worker
thread still completes (its transaction commits or rolls back as a whole).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from storage.errors import StoreError
from storage.store import Store, store_verbs

T = TypeVar("T")


class AsyncStore:
    def __init__(self, executor: ThreadPoolExecutor, store: Store) -> None:
        """Use :meth:`open`; the store must have been opened on ``executor``'s only thread."""
        self._executor = executor
        self._store = store
        self._closed = False

    @classmethod
    async def open(cls, path: str | os.PathLike[str], **options: Any) -> AsyncStore:
        """Open the database at ``path`` on a new worker thread (``options`` as for ``Store.open``)."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="troupe-store")
        try:
            store = await asyncio.get_running_loop().run_in_executor(
                executor, functools.partial(Store.open, path, **options))
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(executor, store)

    @property
    def path(self) -> str:
        return self._store.path

    async def run(self, work: Callable[[Store], T]) -> T:
        """Run ``work(store)`` on the worker thread inside one transaction; returns its result."""
        if self._closed:
            raise StoreError(f"the store for {self.path} is closed; open it again")

        def in_transaction() -> T:
            with self._store.transaction() as store:
                return work(store)

        return await asyncio.get_running_loop().run_in_executor(self._executor, in_transaction)

    async def close(self) -> None:
        """Close the connection and stop the worker thread (waiting for calls in flight)."""
        if self._closed:
            return
        self._closed = True
        await asyncio.get_running_loop().run_in_executor(self._executor, self._store.close)
        self._executor.shutdown(wait=True)

    async def __aenter__(self) -> AsyncStore:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    if TYPE_CHECKING:
        # Every Store verb, as a coroutine (generated below); typed loosely for checkers.
        def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]: ...


def _mirror(name: str) -> Callable[..., Awaitable[Any]]:
    verb = getattr(Store, name)

    @functools.wraps(verb)
    async def call(self: AsyncStore, *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise StoreError(f"the store for {self.path} is closed; open it again")
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, functools.partial(verb, self._store, *args, **kwargs))

    return call


for _name in store_verbs():
    setattr(AsyncStore, _name, _mirror(_name))
