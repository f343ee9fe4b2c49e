"""The daemon API's handlers: one small function per route, each parsing a protocol type in and
answering a protocol type out. The route table is in :mod:`daemon.api.protocol`'s docstring;
the experience handlers are in :mod:`daemon.api.experience`."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Literal, overload

from aiohttp import web

from daemon.api import sse, views
from daemon.api.protocol import (
    FINAL_STATES,
    PREFIX,
    Answer,
    ApplyChange,
    EventList,
    FilesSaved,
    FindingList,
    FindingUpdate,
    JobInfo,
    JobList,
    LintRequest,
    Message,
    Metrics,
    ProtocolError,
    RegisterWorkspace,
    SubmitJob,
    T,
    WorkspaceList,
)
from daemon.api.state import DAEMON, MAX_BODY, DaemonState
from daemon.experience.learnings import record_learning
from daemon.schema import TOO_DEEP, plain_json
from storage import Job, Workspace

MAX_ID = 2**63 - 1  # SQLite's INTEGER

routes = web.RouteTableDef()


def answer(message: Message, status: int = 200) -> web.Response:
    return web.json_response(message.to_json(), status=status)


BODY_TIMEOUT = web.AppKey("troupe_body_timeout", float)


async def read_body(request: web.Request, cls: type[T]) -> T:
    """The request's JSON body as ``cls``: a 413 for a body over the limit (told or sent), a 408 when
    it does not arrive in time (a Content-Length that lies), a 400 for anything that is not plain JSON
    text (see :func:`daemon.schema.plain_json`)."""
    limit = request.app[MAX_BODY]
    if request.content_length is not None and request.content_length > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=request.content_length)
    timeout = request.app[BODY_TIMEOUT]
    try:
        async with asyncio.timeout(timeout):
            raw = await request.read()  # over client_max_size: HTTPRequestEntityTooLarge -> 413
    except TimeoutError:
        raise ProtocolError(f"the request body did not arrive within {timeout:g} s (its Content-Length says "
                            f"{request.content_length} bytes); send the whole body", status=408,
                            code="request_timeout") from None
    try:
        data = json.loads(raw) if raw.strip() else {}
    except RecursionError:
        raise ProtocolError(TOO_DEEP) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"the request body is not valid JSON ({exc}); send a JSON object") from None
    plain_json(data)
    return cls.from_json(data)


def id_param(request: web.Request, name: str, what: str) -> int:
    """A numeric id from the path: a 400 when it is not a plain decimal number, a 404 when it is one
    no row can have (over SQLite's 64-bit range)."""
    raw = request.match_info[name]
    if not (raw.isascii() and raw.isdigit()):
        raise ProtocolError(f"{what} ids are integers, got {raw[:40]!r}")
    if len(raw) > 19 or int(raw) > MAX_ID:
        raise ProtocolError(f"no {what} with id {raw[:40]}", status=404, code="not_found")
    return int(raw)


def daemon(request: web.Request) -> DaemonState:
    return request.app[DAEMON]


def int_query(request: web.Request, name: str, default: int, *, maximum: int = 10_000) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9 or int(raw) > maximum:
        raise ProtocolError(f"?{name}= must be an integer from 0 to {maximum}, got {raw!r}")
    return int(raw)


async def job_info(d: DaemonState, job: Job) -> JobInfo:
    usage = None if job.state.is_terminal else await d.store.job_usage(job.id)
    return views.job_info(job, workspace=await d.jobs.workspace_root(job.workspace_id), usage=usage,
                          question=d.jobs.pending_question(job.id) or await _stored_question(d, job),
                          progress=d.jobs.progress(job.id))


async def _stored_question(d: DaemonState, job: Job) -> tuple[str, str] | None:
    if job.state.value != "waiting_for_answer":
        return None
    from daemon.jobs.questions import QuestionBook

    pending = QuestionBook.from_events(await d.store.events_after(job.id, 0)).pending
    return (pending.question_id, pending.text) if pending else None


@overload
async def workspace_for(d: DaemonState, root: str | None, *, required: Literal[True] = True) -> Workspace: ...
@overload
async def workspace_for(d: DaemonState, root: str | None, *, required: bool) -> Workspace | None: ...
async def workspace_for(d: DaemonState, root: str | None, *, required: bool = True) -> Workspace | None:
    if not root:
        if required:
            raise ProtocolError("say which workspace: ?workspace=/absolute/path/of/the/repository")
        return None
    if not os.path.isabs(root):
        raise ProtocolError(f"workspace must be an absolute path, got {root!r}")
    ws = await d.store.find_workspace_for(root)
    if ws is None:
        raise ProtocolError(f"{root} is not in a registered workspace; register it with `troupe watch {root}`",
                            status=404, code="not_found")
    return ws


# ---------------------------------------------------------------- daemon


@routes.get(f"{PREFIX}/health")
async def health(request: web.Request) -> web.Response:
    return answer(await daemon(request).health())


@routes.get(f"{PREFIX}/metrics")
async def metrics(request: web.Request) -> web.Response:
    d = daemon(request)
    counts = await d.job_counts()
    watch = d.watch.status()
    return answer(Metrics(requests=d.requests, jobs_by_state=counts, jobs_submitted=d.jobs.submitted,
                          events_streamed=d.hub.published, watch_saves_seen=watch["saves_seen"],
                          watch_jobs_started=watch["jobs_started"], watch_files_skipped=watch["files_skipped"]))


@routes.post(f"{PREFIX}/shutdown")
async def shutdown(request: web.Request) -> web.Response:
    d = daemon(request)
    asyncio.get_running_loop().call_later(0.05, d.request_stop)
    reply = await d.health()
    reply.stopping = True
    return answer(reply, status=202)


# ---------------------------------------------------------------- jobs


@routes.post(f"{PREFIX}/jobs")
async def submit_job(request: web.Request) -> web.Response:
    d = daemon(request)
    job = await d.jobs.submit(await read_body(request, SubmitJob))
    return answer(await job_info(d, job), status=201)


@routes.get(f"{PREFIX}/jobs")
async def list_jobs(request: web.Request) -> web.Response:
    d = daemon(request)
    state = request.query.get("state")
    states = None if state in (None, "all") else ("queued", "running", "waiting_for_answer") \
        if state == "active" else state.split(",")
    ws = await workspace_for(d, request.query.get("workspace"), required=False)
    jobs = await d.store.list_jobs(state=states, workspace_id=ws.id if ws else None,
                                   kind=request.query.get("kind"), limit=int_query(request, "limit", 50))
    return answer(JobList([await job_info(d, job) for job in jobs]))


@routes.get(f"{PREFIX}/jobs/{{job_id}}")
async def get_job(request: web.Request) -> web.Response:
    d = daemon(request)
    return answer(await job_info(d, await d.jobs.require(request.match_info["job_id"])))


@routes.post(f"{PREFIX}/jobs/{{job_id}}/cancel")
async def cancel_job(request: web.Request) -> web.Response:
    d = daemon(request)
    return answer(await job_info(d, await d.jobs.cancel(request.match_info["job_id"])))


@routes.post(f"{PREFIX}/jobs/{{job_id}}/answer")
async def answer_job(request: web.Request) -> web.Response:
    d = daemon(request)
    body = await read_body(request, Answer)
    job = await d.jobs.answer(request.match_info["job_id"], body.text, body.question_id)
    return answer(await job_info(d, job))


@routes.get(f"{PREFIX}/jobs/{{job_id}}/events")
async def job_events(request: web.Request) -> web.StreamResponse:
    d = daemon(request)
    job = await d.jobs.require(request.match_info["job_id"])
    after = sse.resume_after(request)
    root = await d.jobs.workspace_root(job.workspace_id)
    if not sse.wants_stream(request):
        limit = int_query(request, "limit", 1000)
        shown = views.events_info(await d.store.events_after(job.id, 0), after=after, workspace=root)[:limit]
        return answer(EventList(shown, job_state=views.job_state(job)))
    sub = d.hub.subscribe(job_id=job.id)  # before reading the store, so nothing falls in between
    backlog = views.events_info(await d.store.events_after(job.id, 0), after=after, workspace=root)
    job = await d.jobs.require(job.id)  # its state now
    return await sse.stream_job(request, d.hub, sub, backlog, after=after,
                                finished=str(job.state) in FINAL_STATES, heartbeat=d.options.heartbeat)


@routes.get(f"{PREFIX}/events")
async def all_events(request: web.Request) -> web.StreamResponse:
    d = daemon(request)
    root = request.query.get("workspace")
    if root:  # a workspace not registered yet is fine: its events start once it is
        if not os.path.isabs(root):
            raise ProtocolError(f"workspace must be an absolute path, got {root!r}")
        ws = await d.store.find_workspace_for(root)
        root = ws.root if ws else os.path.realpath(root)
    after = d.hub.parse_stream_id(request.headers.get("Last-Event-ID") or request.query.get("after"))
    sub = d.hub.subscribe(workspace=root, after=after)
    return await sse.stream_all(request, d.hub, sub, heartbeat=d.options.heartbeat, counter=d.streamed)


# ---------------------------------------------------------------- changes


@routes.get(f"{PREFIX}/changes/{{change_id}}")
async def get_change(request: web.Request) -> web.Response:
    d = daemon(request)
    change, root = await d.changes.get(request.match_info["change_id"])
    job = await d.store.get_job(change.job_id) if change.job_id else None
    return answer(views.change_info(change, workspace=root, job_result=job.result if job else None))


@routes.post(f"{PREFIX}/changes/{{change_id}}/apply")
async def apply_change(request: web.Request) -> web.Response:
    d = daemon(request)
    body = await read_body(request, ApplyChange)
    applied, root = await d.changes.apply(request.match_info["change_id"], write=body.write)
    return answer(views.change_info(applied, workspace=root))


@routes.post(f"{PREFIX}/changes/{{change_id}}/discard")
async def discard_change(request: web.Request) -> web.Response:
    discarded, root = await daemon(request).changes.discard(request.match_info["change_id"])
    return answer(views.change_info(discarded, workspace=root))


# ---------------------------------------------------------------- findings


@routes.get(f"{PREFIX}/findings")
async def list_findings(request: web.Request) -> web.Response:
    d = daemon(request)
    file = request.query.get("file")
    ws = await workspace_for(d, request.query.get("workspace") or file)
    if file and os.path.isabs(file):
        file = os.path.relpath(os.path.realpath(file), ws.root)
    state = request.query.get("state", "open")
    found = await d.store.list_findings(ws.id, file or None, state=None if state == "all" else state,
                                        limit=int_query(request, "limit", 1000))
    return answer(FindingList([views.finding_info(f, workspace=ws.root) for f in found]))


@routes.post(f"{PREFIX}/findings/{{finding_id}}")
async def update_finding(request: web.Request) -> web.Response:
    d = daemon(request)
    finding_id = id_param(request, "finding_id", "finding")
    body = await read_body(request, FindingUpdate)
    finding = await d.store.set_finding_state(finding_id, body.state)
    root = await d.jobs.workspace_root(finding.workspace_id)
    await record_learning(d.store, finding, body.state, body.reason, root)  # reviews learn from people
    return answer(views.finding_info(finding, workspace=await d.jobs.workspace_root(finding.workspace_id)))


@routes.post(f"{PREFIX}/lint")
async def lint(request: web.Request) -> web.Response:
    """The static lane: answered at once, beside the job queue (no slot, no model)."""
    from daemon.lint.ruff import lint_text

    body = await read_body(request, LintRequest)
    path = os.path.realpath(body.path)
    ws = await daemon(request).store.find_workspace_for(path)
    return answer(await lint_text(path, body.text, ws.root if ws else None))


# ---------------------------------------------------------------- workspaces


@routes.get(f"{PREFIX}/workspaces")
async def list_workspaces(request: web.Request) -> web.Response:
    d = daemon(request)
    return answer(WorkspaceList([views.workspace_info(ws, watching=d.watch.is_watching(ws.root),
                                                      mode=d.watch.mode(ws.root))
                                 for ws in await d.store.list_workspaces()]))


@routes.post(f"{PREFIX}/workspaces")
async def register_workspace(request: web.Request) -> web.Response:
    d = daemon(request)
    body = await read_body(request, RegisterWorkspace)
    if not Path(body.root).is_dir():
        raise ProtocolError(f"{body.root} is not a folder on this machine")
    ws = await d.register_workspace(body.root, watch=body.watch,
                                    overrides=body.settings.overrides() if body.settings is not None else None)
    return answer(views.workspace_info(ws, watching=d.watch.is_watching(ws.root), mode=d.watch.mode(ws.root)),
                  status=201)


@routes.post(f"{PREFIX}/saves")
async def files_saved(request: web.Request) -> web.Response:
    d = daemon(request)
    body = await read_body(request, FilesSaved)
    ws = await workspace_for(d, body.root)
    await d.watch.saved(ws.root, body.files)
    return answer(views.workspace_info(ws, watching=d.watch.is_watching(ws.root), mode=d.watch.mode(ws.root)))


@routes.delete(f"{PREFIX}/workspaces/{{workspace_id}}")
async def unregister_workspace(request: web.Request) -> web.Response:
    d = daemon(request)
    workspace_id = id_param(request, "workspace_id", "workspace")
    ws = await d.store.get_workspace(workspace_id)
    if ws is None:
        raise ProtocolError(f"no workspace with id {workspace_id}; `troupe status` lists them", status=404,
                            code="not_found")
    await d.unregister_workspace(ws, forget=request.query.get("forget") == "1")
    return answer(views.workspace_info(ws))
