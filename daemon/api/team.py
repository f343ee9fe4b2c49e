"""The team server's HTTP edge: the daemon's own handlers, behind a person's token and workspace access.

Every request carries ``Authorization: Bearer <token>`` (``troupe server add-person NAME`` makes
one; 401 without a valid one). A request about a workspace — a job, its events, a change, a
finding, a list of them — is answered only for people the workspace is shared with (the team
config's ``shared_with``); anyone else gets 403, whether the workspace exists or not. Lists need
``?workspace=``: nobody reads across workspaces (the event stream without one carries those shared
with the person). Registering an editor's folder answers the workspace its git remote is cloned
from. The laptop daemon's routes that act on the server's own machine (watching folders, saves,
lint, shutdown, the run viewer) are not served.

A bot's token (``add-person slack-bot --bot``) may send ``X-Troupe-On-Behalf-Of: <Slack user id>``:
the request is then the person that Slack user is mapped to (``add-person ada --slack U0ADA``), with
that person's access. Anyone else sending it, or a Slack user mapped to nobody, gets 403 with a
message the bot shows its user as it is.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from daemon.api import sse
from daemon.api.protocol import ON_BEHALF_OF, PREFIX, PersonInfo, RegisterWorkspace, WorkspaceList, error_json
from daemon.api.routes import BODY_TIMEOUT, all_events, answer, read_body, routes
from daemon.api.server import BODY_TIMEOUT_S, errors_as_json
from daemon.api.state import DAEMON, MAX_BODY, DaemonState
from daemon.team_server.config import TEAM_ROOT, TeamConfig
from daemon.team_server.people import People, Person

log = logging.getLogger("troupe.team.api")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PEOPLE = web.AppKey("troupe_people", People)
TEAM = web.AppKey("troupe_team_config", TeamConfig)
SERVED = {("GET", f"{PREFIX}/health"), ("GET", f"{PREFIX}/metrics"), ("POST", f"{PREFIX}/jobs"),
          ("GET", f"{PREFIX}/jobs"), ("GET", f"{PREFIX}/jobs/{{job_id}}"), ("POST", f"{PREFIX}/jobs/{{job_id}}/cancel"),
          ("POST", f"{PREFIX}/jobs/{{job_id}}/answer"), ("GET", f"{PREFIX}/jobs/{{job_id}}/events"),
          ("GET", f"{PREFIX}/changes/{{change_id}}"),
          ("POST", f"{PREFIX}/changes/{{change_id}}/apply"), ("POST", f"{PREFIX}/changes/{{change_id}}/discard"),
          ("GET", f"{PREFIX}/findings"), ("POST", f"{PREFIX}/findings/{{finding_id}}")}


def _refuse(status: int, code: str, message: str) -> web.Response:
    return web.json_response(error_json(code, message), status=status)


STORE_DOWN_RETRY_S = 2  # the Retry-After of a 503 while the team's PostgreSQL cannot be reached


@web.middleware
async def store_down_is_503(request: web.Request, handler: Handler) -> web.StreamResponse:
    """While the team's PostgreSQL cannot be reached (restarting, a network cut) every request that
    needs it is answered at once with 503 and ``Retry-After``, not a hang and not a 500."""
    import psycopg
    from procrastinate.exceptions import ConnectorException

    from storage.errors import NotFoundError, StoreError

    try:
        return await handler(request)
    except NotFoundError:
        raise
    except (StoreError, psycopg.OperationalError, psycopg.InterfaceError, ConnectorException) as exc:
        log.warning("%s %s: the team's PostgreSQL cannot be reached (%s)", request.method, request.path,
                    type(exc).__name__)
        response = _refuse(503, "store_unavailable", "the team server's PostgreSQL cannot be reached just now "
                           f"(restarting?); try again in {STORE_DOWN_RETRY_S} s")
        response.headers["Retry-After"] = str(STORE_DOWN_RETRY_S)
        return response


def person(request: web.Request) -> Person:
    found: Person = request["troupe_person"]
    return found


@web.middleware
async def needs_person(request: web.Request, handler: Handler) -> web.StreamResponse:
    given = request.headers.get("Authorization", "")
    token = given.removeprefix("Bearer ").strip() if given.startswith("Bearer ") else ""
    people = request.app[PEOPLE]
    found = await people.by_token(token) if token else None
    if found is None:
        return _refuse(401, "unauthorized", "this team server needs 'Authorization: Bearer <your token>'; "
                       "an admin makes one with `troupe server add-person NAME`")
    slack_user = request.headers.get(ON_BEHALF_OF, "").strip()
    if slack_user:
        if not found.bot:
            return _refuse(403, "not_a_bot", f"only a bot's token may act for a Slack user ({ON_BEHALF_OF}); "
                           f"{found.name}'s is not one (an admin marks it: "
                           f"`troupe server set-person {found.name} --bot`)")
        acting = await people.by_slack_user(slack_user)
        if acting is None or acting.bot:
            return _refuse(403, "unknown_slack_user", f"Slack user {slack_user} is not a person of this team "
                           f"server; an admin maps them to one: `troupe server set-person NAME --slack "
                           f"{slack_user}` (or `add-person NAME --slack {slack_user}` for someone new)")
        request["troupe_bot"], found = found, acting
    request["troupe_person"] = found
    return await handler(request)


@web.middleware
async def needs_access(request: web.Request, handler: Handler) -> web.StreamResponse:
    """403 for a workspace the person may not see; lists must name their workspace."""
    route = request.match_info.route.resource
    path = route.canonical if route is not None else request.path
    config, who = request.app[TEAM], person(request)
    name = await _workspace_named(request, path)
    if name is None:
        if path in (f"{PREFIX}/jobs", f"{PREFIX}/findings") and request.method == "GET":
            return _refuse(400, "bad_request", f"say which workspace: ?workspace={TEAM_ROOT}/<name>")
        return await handler(request)
    workspace = config.workspace(name)
    if workspace is None or who.name not in workspace.shared_with:
        return _refuse(403, "forbidden", f"{who.name} has no access to workspace {name!r}; "
                       "the team config's shared_with says who has")
    return await handler(request)


class RateLimits:
    """Requests per second per token on this node: a token bucket each (``[limits]``)."""

    def __init__(self, per_second: float, burst: int) -> None:
        self.per_second, self.burst = per_second, max(burst, 1)
        self._buckets: dict[str, tuple[float, float]] = {}  # who -> (tokens, when)

    def take(self, who: str) -> float:
        """0 when ``who`` may make a request now, else the seconds until they may."""
        if self.per_second <= 0:
            return 0.0
        now = time.monotonic()
        tokens, when = self._buckets.get(who, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - when) * self.per_second)
        if tokens >= 1.0:
            self._buckets[who] = (tokens - 1.0, now)
            return 0.0
        self._buckets[who] = (tokens, now)
        if len(self._buckets) > 100_000:
            self._buckets.clear()
        return (1.0 - tokens) / self.per_second


LIMITS = web.AppKey("troupe_rate_limits", RateLimits)
LIMITED_AUDITED = web.AppKey("troupe_limited_audited", dict)
JOBS_RETRY_S = 5  # the Retry-After of a submit over the jobs-per-person limit
AUDITED = {("POST", f"{PREFIX}/jobs"): "submit", ("POST", f"{PREFIX}/jobs/{{job_id}}/cancel"): "cancel",
           ("POST", f"{PREFIX}/changes/{{change_id}}/apply"): "apply",
           ("POST", f"{PREFIX}/changes/{{change_id}}/discard"): "discard"}


def _too_many(request: web.Request, wait: float, code: str, message: str) -> web.Response:
    response = _refuse(429, code, message)
    response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
    return response


async def _audit_limited(request: web.Request, which: str) -> None:
    """A refusal goes in the audit log once per person and limit per 10 s on this node (a flood is one line)."""
    who, last = person(request), request.app[LIMITED_AUDITED]
    if time.monotonic() - last.get((who.name, which), -1e9) < 10:
        return
    last[(who.name, which)] = time.monotonic()
    bot = request.get("troupe_bot")
    await request.app[DAEMON].store.record_audit(who.name, "limited", which, via=bot.name if bot else None)


@web.middleware
async def limits_and_audit(request: web.Request, handler: Handler) -> web.StreamResponse:
    """429 with Retry-After over a limit (requests per second per token; jobs queued or running per
    person, on submit); what a person did, once done, goes in the audit log."""
    config, who = request.app[TEAM], person(request)
    bot = request.get("troupe_bot")
    token_owner = bot.name if bot else who.name
    wait = request.app[LIMITS].take(token_owner)
    if wait:
        await _audit_limited(request, "requests per second")
        return _too_many(request, wait, "rate_limited", f"{token_owner}'s token is over "
                         f"{config.requests_per_second:g} requests per second; try again in {wait:.1f} s")
    route = request.match_info.route.resource
    action = AUDITED.get((request.method, route.canonical if route is not None else request.path))
    if action == "submit" and config.jobs_per_person:
        active = await request.app[DAEMON].store.active_jobs_of(who.name)
        if active >= config.jobs_per_person:
            await _audit_limited(request, "jobs queued or running")
            return _too_many(request, JOBS_RETRY_S, "too_many_jobs", f"{who.name} has {active} jobs queued or "
                             f"running, the most one person may have ([limits] jobs); try again when one ends")
    response = await handler(request)
    if action is not None and response.status < 400:
        await _audit_done(request, action, response, via=bot.name if bot else None)
    return response


async def _audit_done(request: web.Request, action: str, response: web.StreamResponse, *, via: str | None) -> None:
    store, who = request.app[DAEMON].store, person(request)
    if action == "submit":
        body = json.loads(getattr(response, "text", None) or "{}")
        kind, root = body.get("kind", "?"), body.get("workspace") or "?"
        await store.record_audit(who.name, action, str(body.get("id", "")), f"{kind} in {root}", via=via)
        return
    target = request.match_info.get("job_id") or request.match_info.get("change_id") or ""
    await store.record_audit(who.name, action, target, via=via)


async def _workspace_named(request: web.Request, path: str) -> str | None:
    """The team workspace (a name or /team/<name>) this request is about, or None when it is about none."""
    d = request.app[DAEMON]
    if path.startswith(f"{PREFIX}/jobs/"):
        job = await d.store.get_job(request.match_info["job_id"])
        return await _name_of(d, job.workspace_id if job else None, missing="?")
    if path.startswith(f"{PREFIX}/changes/"):
        change = await d.store.get_change(request.match_info["change_id"])
        return await _name_of(d, change.workspace_id if change else None, missing="?")
    if path.startswith(f"{PREFIX}/findings/"):
        raw = request.match_info["finding_id"]
        finding = await d.store.get_finding(int(raw)) if raw.isdigit() and len(raw) < 19 else None
        return await _name_of(d, finding.workspace_id if finding else None, missing="?")
    if path == f"{PREFIX}/jobs" and request.method == "POST":
        try:
            async with asyncio.timeout(request.app[BODY_TIMEOUT]):  # the handler reads it again, from memory
                body = json.loads(await request.read() or b"{}")
        except (ValueError, TimeoutError):
            return None  # the handler says what is wrong with it
        named = body.get("workspace") if isinstance(body, dict) else None
        return str(named) if named else None
    named = request.query.get("workspace") or (request.query.get("file") if path == f"{PREFIX}/findings" else None)
    if not named:
        return None
    parts = named.removeprefix(TEAM_ROOT + "/").split("/")
    return parts[0] or "?"


async def _name_of(d: DaemonState, workspace_id: int | None, *, missing: str) -> str | None:
    """A stored workspace's team name; ``missing`` for an id nobody may read (a job that does not
    exist answers 403 too, so ids cannot be probed)."""
    if workspace_id is None:
        return missing
    ws = await d.store.get_workspace(workspace_id)
    team = (ws.settings or {}).get("team") if ws else None
    return str(team["name"]) if isinstance(team, dict) and team.get("name") else missing


async def list_workspaces(request: web.Request) -> web.Response:
    """The workspaces shared with the person asking (``?channel=``: the one mapped to that Slack channel)."""
    from daemon.api import views

    d, config, who = request.app[DAEMON], request.app[TEAM], person(request)
    channel = request.query.get("channel")
    mapped = config.for_channel(channel) if channel else None
    if mapped is not None and who.name not in mapped.shared_with and "troupe_bot" in request:
        # the bot asks for a Slack user who wants work done in that channel: say why not (a person's own
        # listing just leaves out what they may not see)
        return _refuse(403, "forbidden", f"{who.name} has no access to the workspace this channel works on; "
                       "the team config's shared_with says who has")
    shown = []
    for ws in await d.store.list_workspaces():
        team = config.workspace(ws.root)
        if team is not None and who.name in team.shared_with and (channel is None or team.channel == channel):
            shown.append(views.workspace_info(ws))
    return answer(WorkspaceList(shown))


async def register_workspace(request: web.Request) -> web.Response:
    """An editor's folder is a clone: the answer is the team workspace cloned from its ``remote``,
    among those shared with the person asking (403 when none is: whether it exists is not said).
    Nothing is registered or watched; the workspaces are the config's."""
    from daemon.api import views

    d, config, who = request.app[DAEMON], request.app[TEAM], person(request)
    body = await read_body(request, RegisterWorkspace)
    if not body.remote:
        return _refuse(400, "bad_request", "a team server's workspaces are its config's [[workspace]] tables: "
                       f"name the git remote {body.root} is a clone of (remote)")
    mine = [ws for ws in config.for_remote(body.remote) if who.name in ws.shared_with]
    if not mine:
        return _refuse(403, "forbidden", f"no team workspace shared with {who.name} is cloned from {body.remote!r}; "
                       "the team config's [[workspace]] remote and shared_with say which")
    if len(mine) > 1:
        return _refuse(409, "conflict", f"{body.remote!r} is the remote of {len(mine)} team workspaces "
                       f"({', '.join(ws.root for ws in mine)}); name one of them instead")
    ws = await d.store.find_workspace_for(mine[0].root)
    assert ws is not None, "the server registers every configured workspace at start"
    return answer(views.workspace_info(ws))


async def workspace_events(request: web.Request) -> web.StreamResponse:
    """``/v1/events``: one workspace's (``?workspace=``, which :func:`needs_access` checked), or without
    it those of every workspace shared with the person asking (the language server's stream)."""
    if request.query.get("workspace"):
        return await all_events(request)
    d, config, who = request.app[DAEMON], request.app[TEAM], person(request)
    roots = frozenset(ws.root for ws in config.workspaces.values() if who.name in ws.shared_with)
    after = d.hub.parse_stream_id(request.headers.get("Last-Event-ID") or request.query.get("after"))
    sub = d.hub.subscribe(roots=roots, after=after)
    return await sse.stream_all(request, d.hub, sub, heartbeat=d.options.heartbeat, counter=d.streamed)


async def me(request: web.Request) -> web.Response:
    """Whose token this is (the Slack bot asks whether it may act for its users)."""
    who = person(request)
    return answer(PersonInfo(who.name, who.slack_user, who.bot))


def make_team_app(state: DaemonState, people: People, config: TeamConfig, *, max_body: int) -> web.Application:
    app = web.Application(client_max_size=max_body, middlewares=[errors_as_json, store_down_is_503, needs_person,
                                                                    limits_and_audit, needs_access])
    app[DAEMON] = state
    app[PEOPLE] = people
    app[TEAM] = config
    app[LIMITS] = RateLimits(config.requests_per_second, config.burst)
    app[LIMITED_AUDITED] = {}
    app[MAX_BODY] = max_body
    app[BODY_TIMEOUT] = BODY_TIMEOUT_S
    for route in routes:
        if isinstance(route, web.RouteDef) and (route.method, route.path) in SERVED:
            app.router.add_route(route.method, route.path, route.handler)
    app.router.add_get(f"{PREFIX}/workspaces", list_workspaces)
    app.router.add_get(f"{PREFIX}/me", me)
    app.router.add_post(f"{PREFIX}/workspaces", register_workspace)
    app.router.add_get(f"{PREFIX}/events", workspace_events)
    return app

