"""The viewer's routes: the page, its static assets, a read-only slice of the API, and links.

    GET  /viewer/                      the page (job list)
    GET  /viewer/jobs/{id}             the page, on one job (live or replayed)
    GET  /viewer/static/{name}         HTML/JS/CSS shipped in this package (no CDN, no build step)
    GET  /viewer/favicon.svg           the page's icon
    GET  /viewer/api/jobs              = GET /v1/jobs
    GET  /viewer/api/jobs/{id}         = GET /v1/jobs/{id}
    GET  /viewer/api/jobs/{id}/events  = GET /v1/jobs/{id}/events (JSON pages, or SSE with Last-Event-ID)
    POST /v1/viewer/link ViewerLinkRequest -> ViewerLink: a one-time link (Unix socket or bearer token)

Every /viewer response carries a strict Content-Security-Policy (scripts only from this origin,
nothing inline), ``nosniff``, no referrer and no framing. The page inserts untrusted text
(model output, file contents) only with ``textContent``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlencode

from aiohttp import web

from daemon.api import routes as api
from daemon.api.protocol import PREFIX as API_PREFIX
from daemon.api.protocol import ProtocolError, ViewerLink, ViewerLinkRequest
from daemon.api.state import DAEMON
from daemon.viewer.auth import COOKIE, LINK_TTL_S, ViewerAuth

PREFIX = "/viewer"
STATIC = Path(__file__).parent / "static"
CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
VIEWER_AUTH = web.AppKey("troupe_viewer_auth", ViewerAuth)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                                "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}

routes = web.RouteTableDef()


def is_viewer_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def _file(name: str) -> web.Response:
    path = STATIC / name
    return web.Response(body=path.read_bytes(), content_type=CONTENT_TYPES[path.suffix], charset="utf-8",
                        headers={"Cache-Control": "no-cache"})


@routes.get(PREFIX)
async def bare(request: web.Request) -> web.Response:
    return web.Response(status=308, headers={"Location": f"{PREFIX}/"})


@routes.get(f"{PREFIX}/")
@routes.get(f"{PREFIX}/jobs/{{job_id}}")
async def page(request: web.Request) -> web.Response:
    # Links relative to the page, so that it works behind a proxy that adds a path (/proxy/8765/viewer/…).
    up = _relative_root(request.path)
    html = (STATIC / "index.html").read_text(encoding="utf-8").replace('"/viewer/', f'"{up}')
    return web.Response(text=html, content_type="text/html", charset="utf-8", headers={"Cache-Control": "no-cache"})


def _relative_root(path: str) -> str:
    """``/viewer/`` as a link relative to ``path`` (a viewer path): ``./``, ``../``, …"""
    depth = path[len(PREFIX) + 1:].count("/")
    return "../" * depth or "./"


# The icon lives here because package data ships only HTML, JS and CSS files.
FAVICON = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><defs><linearGradient id="g" x2="1" y2="1">'
           '<stop offset="0" stop-color="#6366f1"/><stop offset="1" stop-color="#ec4899"/></linearGradient></defs>'
           '<rect width="32" height="32" rx="8" fill="url(#g)"/><text x="16" y="23" font-family="sans-serif" '
           'font-size="19" font-weight="700" fill="#fff" text-anchor="middle">T</text></svg>')


@routes.get(f"{PREFIX}/favicon.svg")
async def favicon(request: web.Request) -> web.Response:
    return web.Response(text=FAVICON, content_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})


@routes.get(f"{PREFIX}/static/{{name}}")
async def asset(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    # Only plain names of files shipped here: no folders, no dot files, no other types.
    if "/" in name or "\\" in name or name.startswith(".") or Path(name).suffix not in CONTENT_TYPES \
            or not (STATIC / name).is_file():
        raise ProtocolError(f"no viewer asset named {name!r}", status=404, code="not_found")
    return _file(name)


# The page reads through the API's own handlers, on read-only routes the viewer cookie may open.
routes.get(f"{PREFIX}/api/jobs")(api.list_jobs)
routes.get(f"{PREFIX}/api/jobs/{{job_id}}")(api.get_job)
routes.get(f"{PREFIX}/api/jobs/{{job_id}}/events")(api.job_events)


@routes.post(f"{API_PREFIX}/viewer/link")
async def make_link(request: web.Request) -> web.Response:
    """A one-time link to the viewer (on one job when ``job_id`` names one; a unique prefix will do)."""
    job_id = (await api.read_body(request, ViewerLinkRequest)).job_id  # an empty body: the job list
    auth, port = request.app[VIEWER_AUTH], getattr(request.app[DAEMON], "tcp_port", None)
    if not auth.enabled or not port:
        raise ProtocolError("the viewer is served on the daemon's loopback TCP listener, which is off (the daemon "
                            "was started with TROUPE_TCP_PORT=off, or could not bind its port: see its log); "
                            "restart it without TROUPE_TCP_PORT (any free port) or with a free port, e.g. "
                            "`troupe down && TROUPE_TCP_PORT=8765 troupe up`", status=409, code="no_tcp_listener")
    path = f"{PREFIX}/jobs/{await _resolve_job(request, job_id)}" if job_id else f"{PREFIX}/"
    link = ViewerLink(url=f"http://127.0.0.1:{port}{path}?token={auth.new_code()}", expires_in=int(LINK_TTL_S))
    return web.json_response(link.to_json())


async def _resolve_job(request: web.Request, job_id: str) -> str:
    store = request.app[DAEMON].store
    if await store.get_job(job_id) is not None:
        return job_id
    matches = [j.id for j in await store.list_jobs(limit=1000) if j.id.startswith(job_id)] if job_id else []
    if len(matches) == 1:
        return matches[0]
    what = "no job" if not matches else f"{len(matches)} jobs"
    raise ProtocolError(f"{what} with an id starting {job_id!r}; `troupe jobs` lists them", status=404,
                        code="not_found")


def viewer_credential(request: web.Request) -> bool:
    """True when the request brings a one-time code or the viewer's cookie (checked by the gate)."""
    return "token" in request.query or request.app[VIEWER_AUTH].cookie_ok(request.cookies.get(COOKIE))


async def viewer_gate(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Over TCP (after the Host check): let the bearer token or the cookie through, trade a one-time
    code for the cookie, refuse everything else.

    A code is spent at the viewer's root only (``/viewer/``; a link to a job is first sent there,
    unspent), and the cookie has no Path: its default path is then the viewer's root *as the browser
    sees it*, ``/viewer`` or, behind a proxy, ``/proxy/8765/viewer``. Redirects are relative, so they
    stay behind the proxy too."""
    auth = request.app[VIEWER_AUTH]
    code = request.query.get("token")
    if auth.bearer_ok(request.headers.get("Authorization", "")) or auth.cookie_ok(request.cookies.get(COOKIE)):
        if code is None:
            return await handler(request)
        auth.redeem(code)  # spent all the same: a link works once
        return _without_code(request)
    if code and request.method == "GET" and request.path != f"{PREFIX}/":
        return _to_root(request)
    if code and request.method == "GET" and auth.redeem(code):
        response = _without_code(request)
        response.set_cookie(COOKIE, auth.session, path="", httponly=True, samesite="Strict")
        return response
    reason = "this link was already used or has expired" if code else "the viewer needs a link from the daemon"
    message = f"{reason}: run `troupe jobs --open JOB_ID` (or `troupe jobs --open` for the job list) for a new one"
    if request.path.startswith(f"{PREFIX}/api/") or request.path.startswith(f"{PREFIX}/static/"):
        return web.json_response({"error": {"code": "unauthorized", "message": message}}, status=401)
    return web.Response(status=401, content_type="text/plain", text=f"Troupe run viewer: {message}\n")


def _to_root(request: web.Request) -> web.Response:
    """A link to a deeper page, sent (unspent) to the viewer's root, which remembers where it led."""
    rest = request.path[len(PREFIX) + 1:] if request.path.startswith(f"{PREFIX}/") else ""
    up = "viewer/" if request.path == PREFIX else _relative_root(request.path)
    query = [(k, v) for k, v in request.rel_url.query.items() if k != "next"] + ([("next", rest)] if rest else [])
    return web.Response(status=303, headers={"Location": up + "?" + urlencode(query)})


def _without_code(request: web.Request) -> web.Response:
    """The same page without the code, as a relative address (``next`` followed when it names a job)."""
    query = [(k, v) for k, v in request.rel_url.query.items() if k not in ("token", "next")]
    target = request.rel_url.query.get("next", "")
    here = request.path.rsplit("/", 1)[1]  # the last segment: a relative link to this very page
    if request.path == f"{PREFIX}/" and _NEXT.fullmatch(target):
        here = target
    location = (here or "./") + ("?" + urlencode(query) if query else "")
    return web.Response(status=303, headers={"Location": location})


_NEXT = re.compile(r"jobs/[A-Za-z0-9._-]{1,200}")


async def _secure_headers(request: web.Request, response: web.StreamResponse) -> None:
    if is_viewer_path(request.path):
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        response.headers.setdefault("Cache-Control", "no-store")


def mount_viewer(app: web.Application, token: str) -> None:
    """Add the viewer's routes and headers to the daemon's app (``token``: the TCP bearer token)."""
    app[VIEWER_AUTH] = ViewerAuth(token)
    app.add_routes(routes)
    app.on_response_prepare.append(_secure_headers)
