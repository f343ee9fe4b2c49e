"""The team server's job queue: procrastinate on the team's PostgreSQL.

A Troupe job (a row in the store, with its events) is run by one procrastinate job of the task
``troupe.run_job(job_id)``, deferred with ``lock=job_id`` so that two procrastinate jobs of the same
Troupe job never run at once. procrastinate gives the rest: workers ``LISTEN`` for new jobs, a
job is fetched by one worker (``SELECT … FOR UPDATE SKIP LOCKED``), a running job is aborted
(its asyncio task cancelled) when it is cancelled, and workers send heartbeats, so the jobs of a
worker that died (SIGKILL, a lost machine) are found by :meth:`TeamQueue.retry_stalled` and run
again elsewhere, resuming from the job's checkpoint.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from procrastinate import App, JobContext, PsycopgConnector

log = logging.getLogger("troupe.team.queue")

TASK = "troupe.run_job"
SCHEMA_LOCK = 0x7472_6F75  # pg_advisory_lock key: one node applies procrastinate's schema at a time


def stalled_after() -> float:
    """Seconds without a heartbeat after which a worker counts as gone (``TROUPE_WORKER_STALLED_AFTER``)."""
    return float(os.environ.get("TROUPE_WORKER_STALLED_AFTER", "30"))


@dataclass(frozen=True)
class QueueHealth:
    """What ``troupe doctor`` says of the queue (:func:`queue_health`)."""

    schema: bool  # procrastinate's tables are there (an API node creates them at its start)
    alive: int = 0  # workers whose last heartbeat is within ``stalled_after``
    silent: int = 0  # workers registered but silent longer (died; the next stalled-job sweep drops them)
    waiting: int = 0  # jobs queued, not yet taken by a worker
    running: int = 0


def queue_health(url: str, *, stalled_after: float, connect_timeout: int = 5) -> QueueHealth:
    """The queue's state in the PostgreSQL at ``url`` (raises psycopg's error when it cannot be reached)."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout, application_name="troupe-doctor",
                         options="-c default_transaction_read_only=on") as conn:
        present = conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL "
                               "AND to_regclass('procrastinate_workers') IS NOT NULL").fetchone()
        if not present or not present[0]:
            return QueueHealth(schema=False)
        alive, silent = conn.execute(
            "SELECT count(*) FILTER (WHERE last_heartbeat > now() - make_interval(secs => %s)), "
            "count(*) FILTER (WHERE last_heartbeat <= now() - make_interval(secs => %s)) FROM procrastinate_workers",
            [stalled_after, stalled_after]).fetchone() or (0, 0)
        waiting, running = conn.execute(
            "SELECT count(*) FILTER (WHERE status = 'todo'), count(*) FILTER (WHERE status = 'doing') "
            "FROM procrastinate_jobs").fetchone() or (0, 0)
    return QueueHealth(True, int(alive), int(silent), int(waiting), int(running))


class TeamQueue:
    """The procrastinate app of a team server (an API node defers, a worker runs)."""

    def __init__(self, url: str) -> None:
        self.app = App(connector=PsycopgConnector(conninfo=url, min_size=1, max_size=10))

    async def open(self) -> None:
        await self.app.open_async()
        await self._ensure_schema()

    async def close(self) -> None:
        await self.app.close_async()

    async def _ensure_schema(self) -> None:
        """procrastinate's tables, created once (its schema is not idempotent, so under a lock)."""
        connector = self.app.connector
        await connector.execute_query_async(f"SELECT pg_advisory_lock({SCHEMA_LOCK})")
        try:
            row = await connector.execute_query_one_async(
                "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS present")
            if not row["present"]:
                log.info("creating procrastinate's schema")
                await self.app.schema_manager.apply_schema_async()
        finally:
            await connector.execute_query_async(f"SELECT pg_advisory_unlock({SCHEMA_LOCK})")

    def register(self, run: Callable[[str, JobContext], Awaitable[None]]) -> None:
        """Make ``run(job_id, context)`` the task's body (on a worker)."""

        async def run_job(context: JobContext, job_id: str) -> None:
            await run(job_id, context)

        self.app.task(name=TASK, pass_context=True)(run_job)

    async def defer(self, job_id: str, *, priority: int = 0) -> int:
        """Queue the Troupe job ``job_id``; returns the procrastinate job's id."""
        deferrer = self.app.configure_task(TASK, lock=job_id, priority=priority)
        return int(await deferrer.defer_async(job_id=job_id))

    async def cancel(self, job_id: str) -> str | None:
        """Cancel the Troupe job's queued or running procrastinate job: ``"cancelled"`` (it had not
        started: nobody will run it), ``"aborting"`` (a worker is running it and stops it), or None
        (there was none to cancel)."""
        rows = await self.app.connector.execute_query_all_async(
            "SELECT id FROM procrastinate_jobs WHERE lock = %(lock)s AND status IN ('todo', 'doing') "
            "ORDER BY id", lock=job_id)
        outcome = None
        for row in rows:
            if await self.app.job_manager.cancel_job_by_id_async(row["id"], abort=True):
                status = await self.app.job_manager.get_job_status_async(row["id"])
                outcome = "aborting" if status.value in ("aborting", "doing") else outcome or "cancelled"
        return outcome

    async def retry_stalled(self, seconds_since_heartbeat: float) -> list[str]:
        """Run again the jobs of workers whose heartbeat is older than ``seconds_since_heartbeat``
        (procrastinate's recipe for workers that died); returns their Troupe job ids."""
        stalled = await self.app.job_manager.get_stalled_jobs(seconds_since_heartbeat=seconds_since_heartbeat)
        retried: list[str] = []
        for job in stalled:
            await self.app.job_manager.retry_job(job)
            retried.append(str(job.task_kwargs.get("job_id")))
        if retried:
            await self.app.job_manager.prune_stalled_workers(seconds_since_heartbeat)
            log.warning("a worker stopped sending heartbeats; its jobs run again: %s", ", ".join(retried))
        return retried

    async def requeue_orphans(self, job_ids: list[str]) -> list[str]:
        """Queue again those of ``job_ids`` (Troupe jobs the store says are queued or running) that
        have no procrastinate job waiting or running: their worker lost PostgreSQL mid-job, or their
        node lost it between recording the job and queueing it. Returns the ids queued again."""
        from procrastinate.exceptions import AlreadyEnqueued

        if not job_ids:
            return []
        rows = await self.app.connector.execute_query_all_async(
            "SELECT DISTINCT lock FROM procrastinate_jobs WHERE lock = ANY(%(locks)s) AND status IN ('todo', 'doing')",
            locks=job_ids)
        live = {row["lock"] for row in rows}
        requeued: list[str] = []
        for job_id in job_ids:
            if job_id in live:
                continue
            deferrer = self.app.configure_task(TASK, lock=job_id, queueing_lock=job_id)
            try:
                await deferrer.defer_async(job_id=job_id)
            except AlreadyEnqueued:
                continue  # another worker's sweep queued it first
            requeued.append(job_id)
        if requeued:
            log.warning("jobs that had lost their queue entry run again: %s", ", ".join(requeued))
        return requeued

    async def run_worker(self, *, concurrency: int, name: str, heartbeat: float, stalled_after: float,
                         **options: Any) -> None:  # Any: procrastinate's other WorkerOptions, passed on
        """Work until stopped (SIGINT/SIGTERM: running jobs finish first)."""
        await self.app.run_worker_async(concurrency=concurrency, name=name, wait=True,
                                        update_heartbeat_interval=heartbeat,
                                        fetch_job_polling_interval=heartbeat,  # finds retried jobs (no NOTIFY)
                                        stalled_worker_timeout=stalled_after, **options)
