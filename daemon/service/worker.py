"""``troupe worker``: runs a team server's jobs, on any number of machines.

A worker takes jobs from the team's queue (:mod:`daemon.team_server.queue`), gets the workspace's
repository at the job's commit into its cache (:mod:`daemon.team_server.checkout`), and runs the job with
the daemon's own job code (:class:`daemon.jobs.manager.JobManager`, the same executor, events,
checkpoints, findings and proposed changes), writing to the team's store; its events reach every
API node through :class:`daemon.team_server.events.NotifyingHub`. A job whose worker died is run again
by another one, resumed from the job's last checkpoint (or failed with the reason, when the
executor cannot resume or the job was resumed too often).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import socket
import time
from typing import TYPE_CHECKING

from daemon.events import Event
from daemon.job_options import stored_options
from daemon.jobs.executor import JobExecutor, load_executor
from daemon.jobs.manager import MAX_RESUMES, JobManager, times_resumed
from daemon.payloads import AnswerData, LogData, payload
from daemon.retry import Backoff
from daemon.team_server.checkout import CheckoutError, RepoCache
from daemon.team_server.config import TeamConfig, TeamWorkspace
from daemon.team_server.events import NotifyingHub
from daemon.team_server.queue import TeamQueue
from daemon.team_server.queue import stalled_after as queue_stalled_after
from storage.errors import StoreError

if TYPE_CHECKING:
    from procrastinate import JobContext

    from daemon.json_types import JsonObject
    from storage import AsyncStore, Job

log = logging.getLogger("troupe.worker")
WORKER_RECONNECT = Backoff(first=0.5, cap=2.0)  # a worker whose PostgreSQL went away tries again

_checkout: contextvars.ContextVar[str | None] = contextvars.ContextVar("troupe_checkout", default=None)


class WorkerJobs(JobManager):
    """The daemon's job code, one job at a time per call, in the checkout of that job's commit."""

    async def workspace_root(self, workspace_id: int | None) -> str | None:
        return _checkout.get() or await super().workspace_root(workspace_id)

    async def run_claimed(self, job: Job, checkout: str | None) -> None:
        token = _checkout.set(checkout)
        try:
            await self._run(job)
        finally:
            _checkout.reset(token)

    async def fail(self, job: Job, error: str) -> None:
        await self._finish(job.id, job.workspace_id, "failed", error=error)

    async def take_answers(self, every: float) -> None:
        """Questions asked here are answered on an API node: the answer is an event in the store;
        give it to the job waiting on it (which keeps its worker slot meanwhile)."""
        while True:
            await asyncio.sleep(every)
            for job_id, book in list(self._books.items()):
                pending = book.pending
                if pending is None or pending.future is None or pending.future.done():
                    continue
                for event in await self.store.events_after(job_id, 0):
                    body = payload(event.kind, event.data)
                    if isinstance(body, AnswerData) and body.question_id == pending.question_id:
                        pending.future.set_result(body.text)
                        break


def team_workspace(settings: JsonObject | None) -> TeamWorkspace | None:  # a workspace's stored settings
    team = (settings or {}).get("team")
    if not isinstance(team, dict) or not team.get("remote"):
        return None
    return TeamWorkspace(str(team["name"]), str(team["remote"]))


class TeamWorker:
    def __init__(self, config: TeamConfig, *, name: str | None = None, heartbeat: float | None = None,
                 stalled_after: float | None = None) -> None:
        self.config = config
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        self.heartbeat = heartbeat or float(os.environ.get("TROUPE_WORKER_HEARTBEAT", "5"))
        self.stalled_after = stalled_after or queue_stalled_after()
        self.cache = RepoCache(config.cache / self.name)
        self.reconnects = 0  # times procrastinate's worker stopped on a lost PostgreSQL and started again

    async def run(self) -> None:
        from storage import AsyncStore

        url = self.config.queue_url
        self.store: AsyncStore = await AsyncStore.open(self.config.store_url)
        self.queue = TeamQueue(url)
        self.hub = NotifyingHub(url)
        self.executor: JobExecutor = load_executor(store=self.store)
        self.jobs = WorkerJobs(self.store, self.hub, self.executor, concurrency=self.config.concurrency,
                               reserved=0)
        await self.queue.open()
        await self.hub.open()
        self.queue.register(self.run_job)
        preload = getattr(self.executor, "preload", None)
        if preload is not None and os.environ.get("TROUPE_PRELOAD_LLM", "1") not in ("0", "false", "no"):
            await preload()  # litellm's import (and a local model) before the first job, not in it
        reaper = asyncio.create_task(self._retry_stalled(), name="troupe-stalled")
        answers = asyncio.create_task(self.jobs.take_answers(min(self.heartbeat, 1.0)), name="troupe-answers")
        log.info("troupe worker %s: %d job(s) at once, executor %s", self.name, self.config.concurrency,
                 self.executor.name)
        try:
            await self._work()
        finally:
            for task in (reaper, answers):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self.hub.aclose()
            await self.executor.close()
            await self.queue.close()
            await self.store.close()

    async def _work(self) -> None:
        """procrastinate's worker, again each time it stops on a lost PostgreSQL (a restart, a network
        cut): the jobs it was running are found stalled (or orphaned) and resumed, here or elsewhere."""
        import psycopg
        from procrastinate.exceptions import ConnectorException

        failures = 0
        while True:
            started = time.monotonic()
            try:
                await self.queue.run_worker(concurrency=self.config.concurrency, name=self.name,
                                            heartbeat=self.heartbeat, stalled_after=self.stalled_after)
                return  # stopped (SIGINT/SIGTERM)
            except (ConnectorException, psycopg.Error, StoreError) as exc:
                failures = 0 if time.monotonic() - started > 30 else failures + 1
                self.reconnects += 1
                log.warning("worker %s lost the queue's PostgreSQL (%s); working again once it is back",
                            self.name, str(exc).strip() or type(exc).__name__)
                await WORKER_RECONNECT.wait(failures)

    async def _retry_stalled(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat)
            try:
                await self.queue.retry_stalled(self.stalled_after)
                await self._requeue_orphans()
            except Exception as exc:  # another worker retried it first, or the database blinked
                log.info("retrying stalled jobs: %s", exc)

    async def _requeue_orphans(self) -> None:
        """Jobs the store says are queued or running, older than a stalled worker's timeout, with no
        procrastinate job left to run them (see :meth:`TeamQueue.requeue_orphans`)."""
        active = await self.store.list_jobs(state=["queued", "running"], limit=1000)
        old = time.time() - self.stalled_after
        await self.queue.requeue_orphans([job.id for job in active if job.updated < old])

    async def run_job(self, job_id: str, context: JobContext | None = None) -> None:
        job = await self.store.get_job(job_id)
        if job is None or job.state.is_terminal:
            return  # cancelled while queued, or already run
        if job.state.value == "running" and not await self._resumable(job):
            return
        workspace = await self.store.get_workspace(job.workspace_id) if job.workspace_id is not None else None
        target = team_workspace(workspace.settings if workspace else None)
        checkout: str | None = None
        if target is not None:
            options = stored_options(job.request)
            try:
                path, commit = await self.cache.checkout(target, options.commit, job.id)
            except CheckoutError as exc:
                await self.jobs.fail(job, f"cannot get {target.name}'s repository at "
                                          f"{options.commit or 'its default branch'}: {exc}")
                return
            checkout = str(path)
            if options.commit != commit:  # a retry runs on the same commit
                options.commit = commit
                await self.store.update_job(job.id, request={**job.request, "options": options.to_json()})
        try:
            job = await self.store.set_job_state(job.id, "running")
            await self.jobs.run_claimed(job, checkout)
        finally:
            self.cache.release(job.id)
        current = await self.store.get_job(job.id)
        if current is not None and current.state.value == "queued":  # stopped with the worker: run it again
            await self.queue.defer(job.id, priority=job.priority)

    async def _resumable(self, job: Job) -> bool:
        """A job left running by a worker that died: resume it here, or fail it with the reason."""
        events = await self.store.events_after(job.id, 0)
        resumes = times_resumed(events)
        where = f"last finished phase: {job.last_phase}" if job.last_phase else "no phase had finished"
        if self.executor.resumable and resumes < MAX_RESUMES:
            await self.jobs.record_event(job.id, job.workspace_id, Event(LogData(
                level="warning", text=f"the worker running this job stopped; resuming on {self.name} ({where})")))
            return True
        why = ("the job was resumed too often" if self.executor.resumable
               else f"the {self.executor.name} executor cannot resume jobs")
        await self.jobs.fail(job, f"the worker running this job stopped ({where}; {why}); submit it again")
        return False
