"""What the API handlers need from the running daemon, as a protocol (so handlers stay testable).

Members the handlers only read are properties, so a daemon may hold a richer type (``Daemon``'s
``options`` is a ``DaemonOptions``); ``requests`` is counted here, so it is a plain attribute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from aiohttp import web

from daemon.api.protocol import Health
from daemon.jobs.changes import ChangeService
from daemon.jobs.hub import EventHub
from daemon.jobs.manager import JobManager
from daemon.watch.registry import WatchRegistry

if TYPE_CHECKING:
    from daemon.json_types import JsonObject
    from storage import AsyncStore, Workspace


class ServerOptions(Protocol):
    @property
    def heartbeat(self) -> float: ...


class DaemonState(Protocol):
    requests: int

    @property
    def store(self) -> AsyncStore: ...

    @property
    def hub(self) -> EventHub: ...

    @property
    def jobs(self) -> JobManager: ...

    @property
    def watch(self) -> WatchRegistry: ...

    @property
    def changes(self) -> ChangeService: ...

    @property
    def options(self) -> ServerOptions: ...

    @property
    def streamed(self) -> list[int]:
        """[events sent on daemon-wide streams], a one-element box the SSE writer bumps."""
        ...

    async def health(self) -> Health: ...

    async def job_counts(self) -> dict[str, int]: ...

    def request_stop(self) -> None: ...

    async def register_workspace(self, root: str, *, watch: bool,
                                 overrides: JsonObject | None = None) -> Workspace: ...

    async def unregister_workspace(self, workspace: Workspace, *, forget: bool) -> None: ...


DAEMON = web.AppKey("troupe_daemon", DaemonState)
MAX_BODY = web.AppKey("troupe_max_body", int)
