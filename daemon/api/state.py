"""What the API handlers need from the running daemon, as a protocol (so handlers stay testable)."""

from __future__ import annotations

from typing import Any, Protocol

from aiohttp import web

from daemon.api.protocol import Health
from daemon.jobs.hub import EventHub
from daemon.jobs.manager import JobManager
from daemon.watch.registry import WatchRegistry


class ServerOptions(Protocol):
    heartbeat: float


class DaemonState(Protocol):
    store: Any  # storage.AsyncStore
    hub: EventHub
    jobs: JobManager
    watch: WatchRegistry
    options: ServerOptions
    requests: int
    streamed: list[int]  # [events sent on daemon-wide streams], a one-element box the SSE writer bumps

    async def health(self) -> Health: ...

    async def job_counts(self) -> dict[str, int]: ...

    def request_stop(self) -> None: ...

    async def register_workspace(self, root: str, *, watch: bool) -> Any: ...

    async def unregister_workspace(self, workspace: Any, *, forget: bool) -> None: ...


DAEMON = web.AppKey("troupe_daemon", DaemonState)
MAX_BODY = web.AppKey("troupe_max_body", int)
