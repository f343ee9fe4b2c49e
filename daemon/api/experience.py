"""The daemon API's experience handlers: search, list, show, pin, delete, stats, export, import, and
the retrieval log (which experience reached which job's prompts, and why it matched).

Imported text is scrubbed of secrets before it is stored, like everything mining stores.
"""

from __future__ import annotations

import json

from aiohttp import web

from daemon.api.protocol import PREFIX, ProtocolError, SearchHit, SearchResults
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
from daemon.api.routes import answer, daemon, id_param, int_query, read_body, workspace_for
from daemon.api.state import DaemonState
from daemon.experience.text import scrub
from daemon.json_types import Json, JsonObject
from storage import POOLS, Experience

routes = web.RouteTableDef()


async def experience_info(d: DaemonState, e: Experience) -> ExperienceInfo:
    return ExperienceInfo(id=e.id, pool=e.pool, key=e.key, value=e.value, task=e.task, score=e.score, uses=e.uses,
                          pinned=e.pinned, batch=e.batch, workspace=await d.jobs.workspace_root(e.workspace_id),
                          job_id=e.job_id, chain=e.chain, phase=e.phase, role=e.role, data=e.data,
                          created_at=e.created, last_used_at=e.last_used)


def _pool(request: web.Request) -> str | None:
    pool = request.query.get("pool")
    if pool is not None and pool not in POOLS:
        raise ProtocolError(f"?pool= must be one of {', '.join(POOLS)}, got {pool!r}")
    return pool


def _id(request: web.Request) -> int:
    return id_param(request, "experience_id", "experience")


@routes.get(f"{PREFIX}/experience/search")
async def search(request: web.Request) -> web.Response:
    d = daemon(request)
    query = request.query.get("q", "").strip()
    if not query:
        raise ProtocolError("say what to search for: ?q=words")
    limit = int_query(request, "limit", 20, maximum=200)
    hits = [SearchHit(kind=f"experience:{e.pool}", text=e.value[:500], job_id=e.job_id, score=round(rank, 4), id=e.id)
            for e, rank in await d.store.search_experience(query, limit=limit)]
    hits += [SearchHit(kind="finding", text=f.message, job_id=f.job_id, file=f.file)
             for f in await d.store.search_findings(query, limit=limit)]
    hits += [SearchHit(kind=e.kind, text=_event_text(e.data), job_id=e.job_id)
             for e in await d.store.search_events(query, limit=limit) if e.kind != "usage"]
    return answer(SearchResults(query=query, hits=hits[:limit]))


def _event_text(data: JsonObject) -> str:  # a stored event's data
    for key in ("text", "conclusion", "message", "summary", "answer"):
        value = data.get(key)
        if isinstance(value, str):
            return value[:500]
    return json.dumps(data)[:500]


@routes.get(f"{PREFIX}/experience")
async def list_experience(request: web.Request) -> web.Response:
    d = daemon(request)
    ws = await workspace_for(d, request.query.get("workspace"), required=False)
    order = request.query.get("order", "recent")
    if order not in ("recent", "uses"):
        raise ProtocolError(f"?order= must be recent or uses, got {order!r}")
    items = await d.store.list_experience(pool=_pool(request), workspace_id=ws.id if ws else None, order=order,
                                         limit=int_query(request, "limit", 50))
    return answer(ExperienceList([await experience_info(d, e) for e in items]))


@routes.get(f"{PREFIX}/experience/stats")
async def stats(request: web.Request) -> web.Response:
    return answer(ExperienceStats(**await daemon(request).store.experience_stats()))


@routes.get(f"{PREFIX}/experience/retrievals")
async def retrievals(request: web.Request) -> web.Response:
    d = daemon(request)
    job_id = request.query.get("job") or None
    experience_id = int_query(request, "experience", 0, maximum=999_999_999) or None
    if job_id is None and experience_id is None:
        raise ProtocolError("say whose retrievals: ?job=JOB_ID or ?experience=ID")
    logged = await d.store.list_retrievals(job_id=job_id, experience_id=experience_id,
                                           limit=int_query(request, "limit", 200, maximum=2000))
    items = []
    for r in logged:
        experience = await d.store.get_experience(r.experience_id)
        items.append(RetrievalInfo(experience_id=r.experience_id, at=r.at, job_id=r.job_id, phase=r.phase,
                                   why=r.why, matched=list(r.matched), relevance=r.relevance,
                                   pool=experience.pool if experience else None,
                                   value=experience.value[:300] if experience else None))
    return answer(RetrievalList(items))


@routes.get(f"{PREFIX}/experience/export")
async def export(request: web.Request) -> web.Response:
    d = daemon(request)
    ws = await workspace_for(d, request.query.get("workspace"), required=False)
    return answer(ExperienceDump(await d.store.export_experience(workspace_id=ws.id if ws else None)))


@routes.post(f"{PREFIX}/experience/import")
async def import_(request: web.Request) -> web.Response:
    d = daemon(request)
    body = await read_body(request, ExperienceDump)
    rows = [_scrubbed(row) for row in body.items]
    known = {ws.id for ws in await d.store.list_workspaces()}
    for row in rows:  # another machine's workspace ids mean nothing here: such rows become global
        if row.get("workspace_id") not in known:
            row["workspace_id"] = None
    added, skipped = await d.store.import_experience(rows)
    return answer(ImportResult(added=added, skipped=skipped))


def _scrubbed(row: Json) -> Json:  # an imported dump's JSON, walked whatever its shape
    if isinstance(row, str):
        return scrub(row)
    if isinstance(row, dict):
        return {k: _scrubbed(v) for k, v in row.items()}
    if isinstance(row, list):
        return [_scrubbed(v) for v in row]
    return row


@routes.get(PREFIX + r"/experience/{experience_id:[0-9]+}")
async def show(request: web.Request) -> web.Response:
    d = daemon(request)
    experience = await d.store.get_experience(_id(request))
    if experience is None:
        raise ProtocolError(f"no experience with id {_id(request)}; `troupe experience list` shows them",
                            status=404, code="not_found")
    return answer(await experience_info(d, experience))


@routes.post(PREFIX + r"/experience/{experience_id:[0-9]+}")
async def update(request: web.Request) -> web.Response:
    d = daemon(request)
    body = await read_body(request, ExperienceUpdate)
    return answer(await experience_info(d, await d.store.update_experience(_id(request), pinned=body.pinned)))


@routes.delete(PREFIX + r"/experience/{experience_id:[0-9]+}")
async def delete(request: web.Request) -> web.Response:
    d = daemon(request)
    return answer(await experience_info(d, await d.store.delete_experience(_id(request))))
