"""``troupe server``: one API node of a team server, for many people, on TCP.

An API node holds no job: it records a submitted job in the team's store and queues it
(procrastinate); ``troupe worker`` processes run it. Every node relays every job's events from
PostgreSQL (:class:`daemon.team_server.events.EventRelay`), so a stream opened on any node follows a job
run on any worker. Requests need a person's token (:mod:`daemon.api.team`); a workspace is the
team config's ``[[workspace]]`` (a git remote, cloned on the workers), seen only by the people it
is shared with. The laptop daemon (:mod:`daemon.service.daemon`) is not involved.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from daemon import __version__, paths
from daemon.api.protocol import API_VERSION, Health
from daemon.errors import Conflict, NotFound, Unavailable
from daemon.events import Event
from daemon.jobs.changes import ChangeService
from daemon.jobs.describe import job_title
from daemon.jobs.hub import EventHub
from daemon.jobs.manager import JobManager, _redacted
from daemon.jobs.newest import superseding
from daemon.messages import ACTIVE_STATES, SubmitJob
from daemon.payloads import JobStateData
from daemon.service.options import DaemonOptions
from daemon.service.queries import StoreQueries
from daemon.team_server.config import TeamConfig
from daemon.team_server.events import EventRelay, NotifyingHub
from daemon.team_server.people import People
from daemon.team_server.queue import TeamQueue
from daemon.watch.registry import WatchRegistry

if TYPE_CHECKING:
    from daemon.api.server import JsonErrorRunner
    from daemon.events import EventSink
    from daemon.jobs.executor import AskHuman, JobResult, RunningJob
    from daemon.json_types import JsonObject
    from storage import AsyncStore, Job, Workspace

CANCEL_WAIT_S = 30.0  # how long a cancel waits for the worker running the job to stop it


class QueuedExecutor:
    """What an API node reports as its executor: jobs run on the workers."""

    name = "team-queue"
    resumable = True

    async def run(self, job: RunningJob, emit: EventSink, ask_human: AskHuman) -> JobResult:
        raise RuntimeError("an API node runs no job: `troupe worker` does")

    async def close(self) -> None:
        return None


class TeamJobs(JobManager):
    """The job queue's requests on an API node: submit and cancel go through procrastinate."""

    def __init__(self, store: AsyncStore, hub: EventHub, queue: TeamQueue, config: TeamConfig) -> None:
        super().__init__(store, hub, QueuedExecutor(), concurrency=1, reserved=0)
        self.queue, self.config = queue, config

    async def start(self) -> None:
        """Nothing to recover here: a job left running by a dead worker is the workers' to resume."""

    async def stop(self) -> None:
        self.stopping = True

    async def submit(self, request: SubmitJob, *, priority: int | None = None) -> Job:
        if self.stopping:
            raise Unavailable("the server is stopping; submit the job again once it is back", code="stopping")
        target = self.config.workspace(request.workspace or "")
        if target is None:  # the edge already refused workspaces the person may not see
            raise NotFound(f"no team workspace {request.workspace!r}; the team config names "
                           f"{', '.join(sorted(self.config.workspaces)) or 'none'}")
        ws = await self.store.find_workspace_for(target.root)
        assert ws is not None, "the server registers every configured workspace at start"
        older: list[Job] = []
        if request.kind == "review":  # newest wins, as on the laptop
            active = await self.store.list_jobs(state=list(ACTIVE_STATES), workspace_id=ws.id, kind="review")
            request, older = superseding(request, active)
        body = _redacted(request.to_json())
        job = await self.store.record_job(request.kind, body, workspace_id=ws.id,
                                          priority=request.priority_value if priority is None else priority)
        self.submitted += 1
        await self.record_event(job.id, ws.id, Event(JobStateData(state="queued", title=job_title(request.kind, body))))
        await self.queue.defer(job.id, priority=job.priority)
        for old in older:
            try:
                await self.cancel(old.id, reason=f"superseded by job {job.id}, a review of newer content")
            except (Conflict, NotFound):
                pass  # it finished meanwhile
        return job

    async def cancel(self, job_id: str, *, reason: str = "cancelled by the user") -> Job:
        job = await self.require(job_id)
        if job.state.is_terminal:
            raise Conflict(f"job {job_id} already {job.state.value}; nothing to cancel")
        outcome = await self.queue.cancel(job_id)
        if outcome == "aborting":  # its worker cancels the run and records the end
            deadline = time.monotonic() + CANCEL_WAIT_S
            while time.monotonic() < deadline:
                job = await self.require(job_id)
                if job.state.is_terminal:
                    return job
                await asyncio.sleep(0.1)
        job = await self.require(job_id)
        if not job.state.is_terminal:
            await self._finish(job_id, job.workspace_id, "cancelled", error=reason)
        return await self.require(job_id)


class TeamServer(StoreQueries):
    """One API node (the state the API's handlers read, as :class:`daemon.service.daemon.Daemon` is)."""

    def __init__(self, config: TeamConfig) -> None:
        self.config = config
        self.options = DaemonOptions.from_env()
        self.requests = 0
        self.streamed = [0]
        self.started = time.time()
        self.stopping = False
        self.port: int | None = None
        self._stop = asyncio.Event()
        self._runner: JsonErrorRunner | None = None

    async def start(self) -> None:
        from aiohttp import web

        from daemon.api.server import JsonErrorRunner
        from daemon.api.team import make_team_app
        from storage import AsyncStore

        url = self.config.queue_url
        self.store: AsyncStore = await AsyncStore.open(self.config.store_url)
        self.queue = TeamQueue(url)
        await self.queue.open()
        self.people = People(self.store)
        await self._register_workspaces()
        self.hub = NotifyingHub(url)
        await self.hub.open()
        self.relay = EventRelay(url, self.store, self.hub)
        await self.relay.start()
        self.jobs = TeamJobs(self.store, self.hub, self.queue, self.config)
        self.watch = WatchRegistry(self.options.watch, self.jobs.submit, self._is_queued, self.hub.publish)
        self.changes = ChangeService(self.store, self.jobs, self.watch)
        app = make_team_app(self, self.people, self.config, max_body=self.options.max_body)
        self._runner = JsonErrorRunner(app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.host, self.config.port)
        await site.start()
        self.port = next((a[1] for a in self._runner.addresses if isinstance(a, tuple)), self.config.port)

    async def _register_workspaces(self) -> None:
        for ws in self.config.workspaces.values():
            row = await self.store.add_workspace(ws.root, name=ws.name)
            team = {"name": ws.name, "remote": ws.remote, "channel": ws.channel, "shared_with": list(ws.shared_with)}
            if (row.settings or {}).get("team") != team:
                await self.store.update_workspace(row.id, settings={**(row.settings or {}), "team": team})

    def request_stop(self) -> None:
        self._stop.set()

    async def serve(self, ready: Callable[[TeamServer], None] | None = None) -> None:
        await self.start()
        if ready is not None:
            ready(self)
        try:
            await self._stop.wait()
        finally:
            await self.stop()

    async def stop(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        self.hub.close()
        if self._runner is not None:
            await self._runner.cleanup()
        await self.jobs.stop()
        await self.relay.stop()
        await self.hub.aclose()
        await self.queue.close()
        await self.store.close()

    async def health(self) -> Health:
        counts = await self.active_counts()
        return Health(api_version=API_VERSION, version=__version__, pid=os.getpid(),
                      uptime_s=round(time.time() - self.started, 3), home=str(paths.troupe_home()),
                      executor=self.jobs.executor.name, jobs=counts, stopping=self.stopping, tcp_port=self.port)

    async def register_workspace(self, root: str, *, watch: bool, overrides: JsonObject | None = None) -> Workspace:
        raise Conflict("a team server's workspaces are its config's [[workspace]] tables")

    async def unregister_workspace(self, workspace: Workspace, *, forget: bool) -> None:
        raise Conflict("a team server's workspaces are its config's [[workspace]] tables")
