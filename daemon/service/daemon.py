"""The running daemon: opens the store, recovers jobs, starts the watchers and the API, and stops
them again in the right order (stop accepting, end streams, checkpoint jobs, close the store)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from daemon import __version__, paths
from daemon.api.protocol import API_VERSION, Health
from daemon.api.server import bind_unix_socket, load_token, make_app, start_listeners
from daemon.jobs.changes import ChangeService
from daemon.jobs.executor import load_executor
from daemon.jobs.hub import EventHub
from daemon.jobs.manager import JobManager
from daemon.service.options import DaemonOptions
from daemon.service.pidfile import AlreadyRunning, pid_path, read_pid_file, socket_answers
from daemon.service.queries import StoreQueries
from daemon.watch.registry import WatchRegistry

if TYPE_CHECKING:
    from aiohttp import web

    from daemon.json_types import JsonObject
    from storage import AsyncStore, Workspace

log = logging.getLogger("troupe.daemon")


class Daemon(StoreQueries):
    store: AsyncStore  # these five from start() on
    hub: EventHub
    jobs: JobManager
    watch: WatchRegistry
    changes: ChangeService

    def __init__(self, options: DaemonOptions | None = None) -> None:
        self.options = options or DaemonOptions.from_env()
        self.requests = 0
        self.streamed = [0]
        self.started = time.time()
        self.stopping = False
        self.tcp_port: int | None = None
        self._stop = asyncio.Event()
        self._lock_fd: int | None = None
        self._runner: web.AppRunner | None = None
        self._background: list[asyncio.Task[None]] = []

    # ---------------------------------------------------------------- start / stop

    def _take_lock(self) -> None:
        fd = os.open(paths.troupe_home() / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            running = read_pid_file() or {}
            raise AlreadyRunning(f"a Troupe daemon is already running for {paths.troupe_home()} "
                                 f"(pid {running.get('pid', '?')}); `troupe status` shows it") from None
        self._lock_fd = fd

    async def start(self) -> None:
        from daemon.config import store_target
        from storage import AsyncStore

        self._take_lock()
        home, sock_path = paths.troupe_home(), paths.socket_path()
        swept = paths.claim_scratch(home)  # ours alone, now that we hold the lock
        if swept:
            log.info("removed %d scratch folder(s) a previous run left behind", len(swept))
        if sock_path.exists():
            if socket_answers(sock_path):
                raise AlreadyRunning(f"something already answers on {sock_path}")
            sock_path.unlink()  # left behind by a daemon that was killed
        self.store = await AsyncStore.open(store_target())  # TROUPE_HOME's troupe.db, or [store] url
        self.hub = EventHub()
        self.executor = load_executor(self.options.executor, store=self.store)
        self.jobs = JobManager(self.store, self.hub, self.executor, concurrency=self.options.concurrency,
                               reserved=self.options.reserved)
        self.watch = WatchRegistry(self.options.watch, self.jobs.submit, self._is_queued, self.hub.publish)
        self.changes = ChangeService(self.store, self.jobs, self.watch)
        await self.jobs.start()
        token = load_token(home) if self.options.tcp_port is not None else ""
        app = make_app(self, max_body=self.options.max_body, tcp_token=token, body_timeout=self.options.body_timeout)
        self._runner, self.tcp_port = await start_listeners(app, sock=bind_unix_socket(sock_path),
                                                            tcp_port=self.options.tcp_port,
                                                            tcp_required=self.options.tcp_required)
        partial = pid_path().with_suffix(".tmp")  # readers never see half a file
        partial.write_text(json.dumps({"pid": os.getpid(), "socket": str(sock_path), "tcp_port": self.tcp_port,
                                       "started": self.started}))
        partial.replace(pid_path())
        log.info("troupe daemon %s listening on %s%s (pid %d, executor %s)", __version__, sock_path,
                 f" and 127.0.0.1:{self.tcp_port}" if self.tcp_port else "", os.getpid(), self.executor.name)
        self._background = [asyncio.create_task(self._watch_registered())]
        preload = getattr(self.executor, "preload", None)
        if self.options.preload_llm and preload is not None:
            self._background.append(asyncio.create_task(self._warm(preload)))

    async def _watch_registered(self) -> None:
        """Watch again what was watched before; after the socket opens, since big trees take a while."""
        for ws in await self.store.list_workspaces():
            if (ws.settings or {}).get("watch") and Path(ws.root).is_dir():
                self.watch.set_overrides(ws.root, ws.settings.get("overrides"))
                try:
                    await self.watch.add(ws.root)
                except OSError as exc:
                    log.error("cannot watch %s: %s", ws.root, exc)

    @staticmethod
    async def _warm(preload: Callable[[], Awaitable[None]]) -> None:
        """litellm takes seconds to import and the local model seconds to start: do it now, not when a
        person is waiting."""
        try:
            await preload()
        except Exception:
            log.exception("warming up the model failed; the first model call will report why")

    def request_stop(self) -> None:
        self._stop.set()

    async def serve(self) -> None:
        """Run until :meth:`request_stop` (SIGTERM, SIGINT, ``POST /v1/shutdown``), then stop."""
        await self.start()
        try:
            await self._stop.wait()
        finally:
            await self.stop()

    async def stop(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        log.info("stopping: no new requests, ending streams, checkpointing running jobs")
        self.hub.close()
        for task in self._background:
            task.cancel()
        # wait for them: a local model still starting is killed, not left behind
        await asyncio.gather(*self._background, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()
        await self.watch.stop()
        await self.jobs.stop()
        close = getattr(self.executor, "close", None)
        if close is not None:
            await close()
        await self.store.close()
        for path in (paths.socket_path(), pid_path()):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
        log.info("stopped")

    # ---------------------------------------------------------------- what the API asks

    async def health(self) -> Health:
        counts = await self.active_counts()
        return Health(api_version=API_VERSION, version=__version__, pid=os.getpid(),
                      uptime_s=round(time.time() - self.started, 3), home=str(paths.troupe_home()),
                      executor=self.executor.name, jobs=counts, watch=dict(self.watch.status()), stopping=self.stopping,
                      tcp_port=self.tcp_port)

    async def register_workspace(self, root: str, *, watch: bool,
                                 overrides: JsonObject | None = None) -> Workspace:
        """Register (idempotent) and watch or stop watching; ``overrides``, when given, replace the
        workspace's editor overrides (applied per job and per save with ``daemon.config.with_overrides``)."""
        ws = await self.store.add_workspace(root)
        settings = {**(ws.settings or {}), "watch": watch}
        if overrides is not None:
            settings["overrides"] = overrides
        ws = await self.store.update_workspace(ws.id, settings=settings)
        self.watch.set_overrides(ws.root, settings.get("overrides"))
        if watch:
            await self.watch.add(ws.root)
        else:
            await self.watch.remove(ws.root)
        return ws

    async def unregister_workspace(self, workspace: Workspace, *, forget: bool) -> None:
        await self.watch.remove(workspace.root)
        if forget:
            await self.store.remove_workspace(workspace.id)
        else:
            await self.store.update_workspace(workspace.id, settings={**(workspace.settings or {}), "watch": False})
