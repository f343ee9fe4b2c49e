"""``AsyncStore``: the store for asyncio code, with every SQLite call off the event loop.

One dedicated worker thread opens the ``Store`` and runs every call, so the connection never
changes threads (``asyncio.to_thread`` would hop between pool threads). Calls run one at a time,
in the order they were made. Each ``Store`` verb is a coroutine of the same name, arguments and
(typed) result::

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
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Concatenate, ParamSpec, TypeVar

from storage.errors import StoreError
from storage.location import Target
from storage.store import Store

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")


def _verb(verb: Callable[Concatenate[Store, P], R]) -> Callable[Concatenate[AsyncStore, P], Coroutine[Any, Any, R]]:
    """``verb`` as a coroutine method that runs it on the store's worker thread."""

    @functools.wraps(verb)
    async def call(self: AsyncStore, *args: P.args, **kwargs: P.kwargs) -> R:
        if self._closed:
            raise StoreError(f"the store for {self.path} is closed; open it again")
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, functools.partial(verb, self._store, *args, **kwargs))

    return call


class AsyncStore:
    def __init__(self, executor: ThreadPoolExecutor, store: Store) -> None:
        """Use :meth:`open`; the store must have been opened on ``executor``'s only thread."""
        self._executor = executor
        self._store = store
        self._closed = False

    @classmethod
    async def open(cls, path: Target, **options: Any) -> AsyncStore:
        """Open the database at ``path`` (a file or a URL) on a new worker thread (``options`` as for
        ``Store.open``)."""
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

    # Every Store verb, as a coroutine with the verb's own arguments and result (tests/storage checks
    # that none is missing). Workspaces:
    add_workspace = _verb(Store.add_workspace)
    get_workspace = _verb(Store.get_workspace)
    find_workspace_for = _verb(Store.find_workspace_for)
    list_workspaces = _verb(Store.list_workspaces)
    update_workspace = _verb(Store.update_workspace)
    remove_workspace = _verb(Store.remove_workspace)

    # Jobs and their events:
    record_job = _verb(Store.record_job)
    get_job = _verb(Store.get_job)
    list_jobs = _verb(Store.list_jobs)
    claim_next_job = _verb(Store.claim_next_job)
    set_job_state = _verb(Store.set_job_state)
    update_job = _verb(Store.update_job)
    append_event = _verb(Store.append_event)
    events_after = _verb(Store.events_after)
    search_events = _verb(Store.search_events)

    # Changes and findings:
    propose_change = _verb(Store.propose_change)
    get_change = _verb(Store.get_change)
    list_changes = _verb(Store.list_changes)
    set_change_state = _verb(Store.set_change_state)
    add_findings = _verb(Store.add_findings)
    get_finding = _verb(Store.get_finding)
    list_findings = _verb(Store.list_findings)
    set_finding_state = _verb(Store.set_finding_state)
    search_findings = _verb(Store.search_findings)

    # Usage:
    record_usage = _verb(Store.record_usage)
    job_usage = _verb(Store.job_usage)

    # Experience:
    add_experience = _verb(Store.add_experience)
    get_experience = _verb(Store.get_experience)
    list_experience = _verb(Store.list_experience)
    search_experience = _verb(Store.search_experience)
    update_experience = _verb(Store.update_experience)
    delete_experience = _verb(Store.delete_experience)
    count_retrievals = _verb(Store.count_retrievals)
    list_retrievals = _verb(Store.list_retrievals)
    reward_job_experience = _verb(Store.reward_job_experience)
    eliminate_experience = _verb(Store.eliminate_experience)
    experience_eliminations = _verb(Store.experience_eliminations)
    experience_stats = _verb(Store.experience_stats)
    export_experience = _verb(Store.export_experience)
    import_experience = _verb(Store.import_experience)
    bump_experience_counter = _verb(Store.bump_experience_counter)

    # Policies (daemon.teams.puppeteer):
    save_policy = _verb(Store.save_policy)
    latest_policy = _verb(Store.latest_policy)
    policy_history = _verb(Store.policy_history)

    # People of a team server (storage.verbs.people):
    add_person = _verb(Store.add_person)
    update_person = _verb(Store.update_person)
    remove_person = _verb(Store.remove_person)
    person_by_token = _verb(Store.person_by_token)
    person_by_token_hash = _verb(Store.person_by_token_hash)
    person_by_slack_user = _verb(Store.person_by_slack_user)
    list_people = _verb(Store.list_people)

    # A team server's audit log (storage.verbs.audit):
    record_audit = _verb(Store.record_audit)
    list_audit = _verb(Store.list_audit)
    active_jobs_of = _verb(Store.active_jobs_of)

    # The file itself:
    schema_version = _verb(Store.schema_version)
    integrity_check = _verb(Store.integrity_check)
