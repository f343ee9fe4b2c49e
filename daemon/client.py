"""The one client of the daemon API, used by the CLI, the language server and the Slack bot.

    async with DaemonClient() as client:                   # starts the daemon if it is not running
        job = await client.submit(SubmitJob(kind="ask", workspace="/repo", prompt="Where is auth?"))
        async for event in client.events(job.id):          # resumes by itself after a disconnect
            print(event.kind, event.phase, event.data)
        job = await client.job(job.id)

It speaks HTTP over the Unix socket in ``TROUPE_HOME`` (or TCP with a token: ``TROUPE_SERVER_URL`` and
``TROUPE_TOKEN`` name a team server and the person's token, for every adapter), returns
:mod:`daemon.api.protocol` types, raises :class:`DaemonError` with the daemon's message, retries
requests when the daemon is restarting, and ``TROUPE_AUTOSTART=0`` turns auto-start off.

A bot acting for its users (the Slack bot on a team server) makes its calls inside
``with acting_for(slack_user_id):``; they carry ``X-Troupe-On-Behalf-Of`` (tasks started inside inherit it).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import aiohttp

from daemon import paths
from daemon.api.protocol import (
    FINAL_STATES,
    ON_BEHALF_OF,
    PREFIX,
    ChangeInfo,
    EventList,
    FilesSaved,
    FindingInfo,
    FindingList,
    Health,
    JobInfo,
    JobList,
    LintRequest,
    LintResult,
    Message,
    PersonInfo,
    RegisterWorkspace,
    SearchResults,
    StreamEvent,
    SubmitJob,
    ViewerLink,
    ViewerLinkRequest,
    WorkspaceInfo,
    WorkspaceList,
    WorkspaceSettings,
)
from daemon.api.protocol_experience import (
    ExperienceDump,
    ExperienceInfo,
    ExperienceList,
    ExperienceStats,
    ExperienceUpdate,
    ImportResult,
    RetrievalInfo,
    RetrievalList,
)
from daemon.client_stream import JobSeqs, sse_lines
from daemon.json_types import Json, JsonDict, JsonObject
from daemon.payloads import ConnectionData, JobStateData
from daemon.retry import RECONNECT, retry_after

log = logging.getLogger("troupe.client")
M = TypeVar("M", bound=Message)
Query = str | int | float | bool | None
"""A query parameter's value (``None``: left out)."""
_ACTING_FOR: contextvars.ContextVar[str | None] = contextvars.ContextVar("troupe_acting_for", default=None)


@contextlib.contextmanager
def acting_for(slack_user: str | None) -> Iterator[None]:
    """Every call made inside (by any client, and by tasks created inside) is made for ``slack_user``:
    it carries ``X-Troupe-On-Behalf-Of``, which a team server takes from a bot's token only."""
    reset = _ACTING_FOR.set(slack_user)
    try:
        yield
    finally:
        _ACTING_FOR.reset(reset)


def _acting_headers() -> dict[str, str]:
    user = _ACTING_FOR.get()
    return {ON_BEHALF_OF: user} if user else {}


class DaemonError(RuntimeError):
    """The daemon answered with an error (``status``, ``code``), or could not be reached (status 0)."""

    def __init__(self, message: str, *, status: int = 0, code: str = "unreachable",
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status, self.code = status, code
        self.retry_after = retry_after  # a 429's or 503's Retry-After, in seconds


MAX_RETRY_AFTER = 30.0
"""The longest one 429 or 503 makes a client wait before asking again, whatever Retry-After says."""


def _answer_error(resp: aiohttp.ClientResponse, payload: Json) -> DaemonError:  # the daemon's JSON, unchecked
    error = (payload or {}).get("error", {}) if isinstance(payload, dict) else {}
    wait = retry_after(resp.headers.get("Retry-After")) if resp.status in (429, 503) else None
    return DaemonError(error.get("message", f"HTTP {resp.status}"), status=resp.status,
                       code=error.get("code", "http_error"), retry_after=wait)


class DaemonClient:
    def __init__(self, socket_path: str | os.PathLike[str] | None = None, *, tcp_url: str | None = None,
                 token: str | None = None, autostart: bool | None = None, timeout: float = 30.0,
                 retries: int = 5) -> None:
        self.socket_path = Path(socket_path) if socket_path else None
        if tcp_url is None and socket_path is None:  # a team server (`troupe server`), with this person's token
            tcp_url, token = os.environ.get("TROUPE_SERVER_URL") or None, token or os.environ.get("TROUPE_TOKEN")
        # several API nodes of a team server, comma-separated: the next one when one cannot be reached
        self.tcp_urls = [u.strip().rstrip("/") for u in (tcp_url or "").split(",") if u.strip()]
        self.tcp_url = self.tcp_urls[0] if self.tcp_urls else None
        self.token = token
        env = os.environ.get("TROUPE_AUTOSTART", "1")
        self.autostart = (env not in ("0", "false", "no")) if autostart is None else autostart
        self.timeout = timeout
        self.retries = retries
        self._session: aiohttp.ClientSession | None = None

    # ---------------------------------------------------------------- plumbing

    @property
    def base(self) -> str:
        return self.tcp_url or "http://troupe"

    def _new_session(self) -> aiohttp.ClientSession:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        connector = None if self.tcp_url else aiohttp.UnixConnector(
            path=str(self.socket_path or paths.socket_path()), limit=100)
        return aiohttp.ClientSession(connector=connector, headers=headers,
                                     timeout=aiohttp.ClientTimeout(total=None, sock_connect=5))

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = self._new_session()
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> DaemonClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _reach(self, attempt: int, exc: BaseException, *, patient: bool = False) -> None:
        """After a failed connection: start the daemon once (when allowed), else back off; after
        ``retries`` attempts raise :class:`DaemonError`, unless ``patient`` (wait as long as it takes,
        never starting the daemon)."""
        if len(self.tcp_urls) > 1:  # the next API node (a load balancer's job, done by the client)
            lost = self.tcp_url or ""
            self.tcp_url = self.tcp_urls[(self.tcp_urls.index(lost) + 1) % len(self.tcp_urls)]
            log.info("cannot reach %s (%s); trying %s", lost, exc, self.tcp_url)
        if patient:
            await RECONNECT.wait(attempt)
            return
        if attempt >= self.retries:
            hint = "start it with `troupe up`" if not self.autostart else "see TROUPE_HOME/logs/daemon.log"
            raise DaemonError(f"cannot reach the Troupe daemon ({exc}); {hint}") from None
        if attempt == 0 and self.autostart and not self.tcp_url:
            from daemon.service.process import start_background

            try:
                await asyncio.to_thread(start_background)
            except RuntimeError as start_error:
                raise DaemonError(str(start_error)) from None
            await self.close()
            return
        await RECONNECT.wait(attempt)

    async def request(self, method: str, path: str, *, body: Message | JsonDict | None = None,
                      params: Mapping[str, Query] | None = None, timeout: float | None = None) -> JsonObject:
        """One API call; the decoded JSON answer. Requests that never reached the daemon are retried
        (after starting it, when allowed), GETs also after a lost connection; an error answer raises
        :class:`DaemonError`."""
        data = body.to_json() if isinstance(body, Message) else body
        query = {k: str(v) for k, v in (params or {}).items() if v is not None}
        for attempt in range(self.retries + 1):
            try:
                async with self.session.request(
                        method, f"{self.base}{PREFIX}{path}", json=data, params=query, headers=_acting_headers(),
                        timeout=aiohttp.ClientTimeout(total=timeout or self.timeout)) as resp:
                    try:
                        payload = await resp.json(content_type=None)
                    except ValueError:
                        text = (await resp.text())[:200]
                        raise DaemonError(f"the daemon answered HTTP {resp.status} without JSON: {text}",
                                          status=resp.status, code="bad_answer") from None
                    if resp.status >= 400:
                        refused = _answer_error(resp, payload)
                        if refused.retry_after is None or attempt >= self.retries:
                            raise refused
                        # 429 (a limit) or 503 (the server's database is restarting): nothing was
                        # done; ask again after the Retry-After the server gave
                        log.info("%s %s: %s; again in %.1f s", method, path, refused, refused.retry_after)
                        await asyncio.sleep(min(refused.retry_after, MAX_RETRY_AFTER))
                        continue
                    answer: JsonObject = payload  # the daemon's JSON answer: read by the record's from_json
                    return answer
            except (aiohttp.ClientConnectorError, FileNotFoundError) as exc:  # never reached the daemon
                await self._reach(attempt, exc)
            except (aiohttp.ServerDisconnectedError, ConnectionResetError) as exc:
                if method not in ("GET", "DELETE"):  # it may have been done: never do it twice
                    raise DaemonError(f"the connection to the daemon was lost during {method} {path} ({exc}); "
                                      "check with `troupe jobs` whether it happened") from None
                await self._reach(attempt, exc)
        raise AssertionError("unreachable")

    async def _get(self, cls: type[M], path: str, **params: Query) -> M:
        return cls.from_json(await self.request("GET", path, params=params))

    async def _post(self, cls: type[M], path: str, body: Message | JsonDict | None = None) -> M:
        return cls.from_json(await self.request("POST", path, body=body or {}))

    # ---------------------------------------------------------------- the API

    async def health(self) -> Health:
        return await self._get(Health, "/health")

    async def submit(self, request: SubmitJob) -> JobInfo:
        return await self._post(JobInfo, "/jobs", request)

    async def job(self, job_id: str) -> JobInfo:
        return await self._get(JobInfo, f"/jobs/{quote(job_id)}")

    async def jobs(self, *, state: str | None = None, workspace: str | None = None, limit: int = 50) -> list[JobInfo]:
        return (await self._get(JobList, "/jobs", state=state, workspace=workspace, limit=limit)).jobs

    async def cancel(self, job_id: str) -> JobInfo:
        return await self._post(JobInfo, f"/jobs/{quote(job_id)}/cancel")

    async def answer(self, job_id: str, text: str, question_id: str | None = None) -> JobInfo:
        return await self._post(JobInfo, f"/jobs/{quote(job_id)}/answer", {"text": text, "question_id": question_id})

    async def event_list(self, job_id: str, after: int = 0) -> EventList:
        return await self._get(EventList, f"/jobs/{quote(job_id)}/events", after=after)

    async def change(self, change_id: str) -> ChangeInfo:
        return await self._get(ChangeInfo, f"/changes/{quote(change_id)}")

    async def apply_change(self, change_id: str, *, write: bool = True) -> ChangeInfo:
        """Apply a proposed change; ``write=False`` records one an editor applied itself."""
        return await self._post(ChangeInfo, f"/changes/{quote(change_id)}/apply", {"write": write})

    async def discard_change(self, change_id: str) -> ChangeInfo:
        return await self._post(ChangeInfo, f"/changes/{quote(change_id)}/discard")

    async def findings(self, workspace: str | None = None, file: str | None = None,
                       state: str = "open") -> list[FindingInfo]:
        return (await self._get(FindingList, "/findings", workspace=workspace, file=file, state=state)).findings

    async def lint(self, path: str, text: str) -> LintResult:
        """The static lane: ruff's diagnostics for ``text`` as the file ``path``, in milliseconds."""
        return await self._post(LintResult, "/lint", LintRequest(path=path, text=text))

    async def set_finding_state(self, finding_id: int, state: str, reason: str | None = None) -> FindingInfo:
        return await self._post(FindingInfo, f"/findings/{finding_id}", {"state": state, "reason": reason})

    async def workspaces(self, *, channel: str | None = None) -> list[WorkspaceInfo]:
        """The registered workspaces (a team server: those shared with you; ``channel``: only the one
        its config maps that Slack channel to — the laptop daemon lists them all)."""
        return (await self._get(WorkspaceList, "/workspaces", channel=channel)).workspaces

    async def me(self) -> PersonInfo:
        """Whose token this is (a team server only: the laptop daemon answers 404)."""
        return await self._get(PersonInfo, "/me")

    async def register_workspace(self, root: str, *, watch: bool = True, settings: WorkspaceSettings | None = None,
                                 remote: str | None = None) -> WorkspaceInfo:
        """Register ``root``; ``settings`` (an editor's overrides) replace the stored ones when given. A
        team server answers the workspace whose remote is ``remote`` (``root`` is a clone of it)."""
        return await self._post(WorkspaceInfo, "/workspaces", RegisterWorkspace(root=root, watch=watch,
                                                                                settings=settings, remote=remote))

    async def saved(self, root: str, files: list[str]) -> WorkspaceInfo:
        """Files saved where the daemon's watcher does not see saves: the daemon decides what they
        start (a review, the tests), as for a watched save."""
        return await self._post(WorkspaceInfo, "/saves", FilesSaved(root=root, files=files))

    async def unregister_workspace(self, workspace_id: int, *, forget: bool = False) -> WorkspaceInfo:
        params = {"forget": "1"} if forget else None
        return WorkspaceInfo.from_json(await self.request("DELETE", f"/workspaces/{workspace_id}", params=params))

    async def search(self, query: str, limit: int = 20) -> SearchResults:
        return await self._get(SearchResults, "/experience/search", q=query, limit=limit)

    async def experience(self, *, pool: str | None = None, workspace: str | None = None, order: str = "recent",
                         limit: int = 50) -> list[ExperienceInfo]:
        return (await self._get(ExperienceList, "/experience", pool=pool, workspace=workspace, order=order,
                                limit=limit)).items

    async def experience_item(self, experience_id: int) -> ExperienceInfo:
        return await self._get(ExperienceInfo, f"/experience/{int(experience_id)}")

    async def pin_experience(self, experience_id: int, pinned: bool = True) -> ExperienceInfo:
        return await self._post(ExperienceInfo, f"/experience/{int(experience_id)}", ExperienceUpdate(pinned))

    async def delete_experience(self, experience_id: int) -> ExperienceInfo:
        return ExperienceInfo.from_json(await self.request("DELETE", f"/experience/{int(experience_id)}"))

    async def retrievals(self, *, job_id: str | None = None, experience_id: int | None = None,
                         limit: int = 200) -> list[RetrievalInfo]:
        """Which experiences reached ``job_id``'s prompts (in order), or where ``experience_id`` was used
        (newest first), each with why it matched."""
        return (await self._get(RetrievalList, "/experience/retrievals", job=job_id,
                                experience=experience_id, limit=limit)).items

    async def experience_stats(self) -> ExperienceStats:
        return await self._get(ExperienceStats, "/experience/stats")

    async def export_experience(self, workspace: str | None = None) -> list[JsonObject]:
        return (await self._get(ExperienceDump, "/experience/export", workspace=workspace)).items

    async def import_experience(self, items: list[JsonObject]) -> ImportResult:
        return await self._post(ImportResult, "/experience/import", ExperienceDump(items))

    async def viewer_link(self, job_id: str | None = None) -> ViewerLink:
        """A one-time link to the run viewer on ``job_id`` (or the job list); DaemonError 409
        ``no_tcp_listener`` when the daemon runs without its loopback TCP listener."""
        return await self._post(ViewerLink, "/viewer/link", ViewerLinkRequest(job_id=job_id))

    async def shutdown(self) -> Health:
        return await self._post(Health, "/shutdown")

    # ---------------------------------------------------------------- streams

    async def events(self, job_id: str, after: int = 0) -> AsyncIterator[StreamEvent]:
        """The job's events from ``after`` on, live, until its final state; reconnects and resumes
        from the last seq it saw when the connection drops or the daemon restarts."""
        last, failures = after, 0
        while True:
            try:
                async for event_id, event in self._sse(f"/jobs/{quote(job_id)}/events", str(last)):
                    failures = 0
                    last = int(event_id) if event_id.isdigit() else last
                    yield event
                    if isinstance(state := event.payload, JobStateData) and state.state in FINAL_STATES:
                        return
                info = await self.job(job_id)  # the stream ended without a final state: restarting?
                if info.state in FINAL_STATES and info.last_seq <= last:
                    return
            except (TimeoutError, aiohttp.ClientError, ConnectionResetError, FileNotFoundError) as exc:
                await self._reach(failures, exc)  # the first failure may start the daemon again
                failures += 1
            except DaemonError as exc:
                if exc.retry_after is None or failures >= self.retries:
                    raise
                await asyncio.sleep(min(exc.retry_after, MAX_RETRY_AFTER))  # 429/503: resume after it
                failures += 1

    async def watch_events(self, workspace: str | None = None, *, patient: bool = False) -> AsyncIterator[StreamEvent]:
        """Every event of every job (of one workspace) and the watcher's notices, forever; reconnects.

        Without ``patient`` a daemon that stays away raises :class:`DaemonError` after ``retries``
        attempts. A ``patient`` follower (``troupe watch``) waits for it as long as it takes, backing
        off to one attempt every 2 s, and hears of it through a ``connection`` event when the daemon is
        lost and one when it is back; the daemon's own error answers still raise at once. The old
        Last-Event-ID is kept across a restart: the new daemon reads it as stale and replays all it
        holds, so events between its start and the reconnect are not lost. So does another node of a
        team server (each node counts its own stream): what it replays that was seen already is
        dropped here, by the job's event ``seq``, so every job event comes once, in order."""
        last, failures, lost = "", 0, False
        newest = JobSeqs()
        while True:
            try:
                async with self._open_sse("/events", last, workspace=workspace) as resp:
                    failures = 0
                    if lost:
                        lost = False
                        yield StreamEvent.of(ConnectionData(state="back"), workspace=workspace, at=time.time())
                    async for event_id, event in self._read_sse(resp):
                        last = event_id
                        if newest.first_time(event):
                            yield event
            except DaemonError as exc:
                if exc.retry_after is None or (failures >= self.retries and not patient):
                    raise
                await asyncio.sleep(min(exc.retry_after, MAX_RETRY_AFTER))  # 429/503: resume after it
                failures += 1
            except (TimeoutError, aiohttp.ClientError, ConnectionResetError, FileNotFoundError) as exc:
                if patient and not lost:
                    lost = True
                    why = str(exc) or type(exc).__name__
                    yield StreamEvent.of(ConnectionData(state="lost", error=why), workspace=workspace, at=time.time())
                await self._reach(failures if patient else min(failures + 1, self.retries), exc, patient=patient)
                failures += 1
            else:  # the daemon closed the stream (it is stopping): reconnect, but never restart it
                await asyncio.sleep(0.2)

    async def _sse(self, path: str, last_id: str, **params: Query) -> AsyncIterator[tuple[str, StreamEvent]]:
        async with self._open_sse(path, last_id, **params) as resp:
            async for item in self._read_sse(resp):
                yield item

    @contextlib.asynccontextmanager
    async def _open_sse(self, path: str, last_id: str, **params: Query) -> AsyncIterator[aiohttp.ClientResponse]:
        """The open stream, once the daemon has answered it; its error answer raises DaemonError."""
        headers = {"Accept": "text/event-stream", **({"Last-Event-ID": last_id} if last_id else {}),
                   **_acting_headers()}
        query = {k: v for k, v in params.items() if v is not None}
        async with self.session.get(f"{self.base}{PREFIX}{path}", headers=headers, params=query,
                                    timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as resp:
            if resp.status >= 400:
                raise _answer_error(resp, await resp.json(content_type=None))
            yield resp

    @staticmethod
    async def _read_sse(resp: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, StreamEvent]]:
        event_id = ""
        data: list[str] = []
        async for raw in sse_lines(resp.content):
            line = raw.decode("utf-8", errors="replace").rstrip("\r")
            if not line:
                if data:
                    yield event_id, StreamEvent.from_json(json.loads("\n".join(data)))
                data = []
            elif line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())


class SyncClient:
    """The same calls from synchronous code (a sync Slack handler, a script): each call runs on a
    fresh event loop with its own connection. Streams need :class:`DaemonClient`.

        job = SyncClient().submit(SubmitJob(kind="review", workspace="/repo", files=["app.py"]))
    """

    def __init__(self, **options: Any) -> None:  # DaemonClient's keywords, passed on whole
        self._options = options

    def __getattr__(self, name: str) -> Any:  # any DaemonClient call, looked up by name: its own types
        method = getattr(DaemonClient, name, None)
        if method is None or name.startswith("_") or name in ("events", "watch_events"):
            raise AttributeError(f"SyncClient has no call {name!r}")

        def call(*args: Any, **kwargs: Any) -> Any:  # that call's own arguments and answer
            async def once() -> Any:
                async with DaemonClient(**self._options) as client:
                    return await getattr(client, name)(*args, **kwargs)

            return asyncio.run(once())

        return call
