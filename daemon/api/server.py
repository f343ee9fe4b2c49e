"""The aiohttp application and its listeners.

The Unix socket is the front door: it is bound under a 0177 umask, so it is never wider than
0600, inside ``TROUPE_HOME`` (0700). The TCP listener (on by default, any free port, for the run
viewer; ``TROUPE_TCP_PORT=off`` turns it off) binds loopback only, and every
request on it needs ``Authorization: Bearer <token>`` (the token lives in ``TROUPE_HOME/token``,
0600) and a ``Host`` header naming the loopback address, so a web page that rebinds a DNS
name to 127.0.0.1 cannot talk to it.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from daemon.api.experience import routes as experience_routes
from daemon.api.protocol import ProtocolError, error_json
from daemon.api.routes import BODY_TIMEOUT, routes
from daemon.api.state import DAEMON, MAX_BODY, DaemonState
from daemon.errors import Conflict, DomainError, Invalid, NotFound, TooLarge, Unavailable
from daemon.viewer import is_viewer_path, mount_viewer, viewer_credential, viewer_gate

log = logging.getLogger("troupe.api")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
TCP_TOKEN = web.AppKey("troupe_tcp_token", str)
TCP_HOSTS = web.AppKey("troupe_tcp_hosts", set)  # filled once the TCP port is known
BODY_TIMEOUT_S = 10.0  # a body that has not arrived by then is not coming (a Content-Length that lies)


# The core's refusals (daemon.errors) as HTTP, here and nowhere else.
DOMAIN_STATUS: dict[type[DomainError], int] = {Invalid: 400, NotFound: 404, Conflict: 409, TooLarge: 413,
                                               Unavailable: 503}


def http_status(exc: DomainError) -> int:
    return next((status for kind, status in DOMAIN_STATUS.items() if isinstance(exc, kind)), 400)


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response(error_json(code, message), status=status)


@web.middleware
async def errors_as_json(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes ``{"error": {"code", "message"}}`` with the right status."""
    from storage.errors import NotFoundError

    request.app[DAEMON].requests += 1
    try:
        return await handler(request)
    except ProtocolError as exc:
        return _error(exc.status, exc.code, exc.message)
    except DomainError as exc:
        return _error(http_status(exc), exc.code, exc.message)
    except web.HTTPRequestEntityTooLarge:
        return _error(413, "too_large", f"the request body is larger than the daemon accepts "
                      f"({request.app[MAX_BODY]:,} bytes); send file paths, not file contents")
    except web.HTTPException as exc:
        if exc.status == 404:
            return _error(404, "not_found", f"no such route: {request.method} {request.path}")
        if exc.status == 405:
            return _error(405, "method_not_allowed", f"{request.method} is not allowed on {request.path}")
        return _error(exc.status, "http_error", exc.reason)
    except NotFoundError as exc:
        return _error(404, "not_found", str(exc))
    except ValueError as exc:  # the store refused an argument, with a readable message
        return _error(400, "bad_request", str(exc))
    except ConnectionError as exc:  # the client went away mid-request: nobody is left to answer
        log.info("%s %s: the client went away (%s)", request.method, request.path, exc or type(exc).__name__)
        return _error(400, "client_gone", "the client closed the connection before the request was read")
    except Exception:
        log.exception("unexpected error answering %s %s", request.method, request.path)
        return _error(500, "internal", "the daemon failed to answer; details are in its log "
                      "(TROUPE_HOME/logs/daemon.log)")


@web.middleware
async def tcp_needs_token(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Requests over TCP must name a loopback Host and carry the bearer token; the Unix socket needs neither."""
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    if not isinstance(sockname, tuple):  # Unix socket: the file mode is the access control
        return await handler(request)
    host_ok = request.headers.get("Host", "").lower() in request.app[TCP_HOSTS]
    if is_viewer_path(request.path) and (host_ok or viewer_credential(request)):
        # The browser page (bearer token, one-time link or its cookie). Behind a port-forwarding proxy the
        # Host is the proxy's (code-server's /proxy/<port>/ forwards the browser's own Host), so another
        # Host passes here only with a one-time link or the cookie it set for that host: a page on a
        # DNS-rebound name has neither.
        return await viewer_gate(request, handler)
    if not host_ok:
        return _error(403, "bad_host", "the Host header must name the loopback address the daemon listens on")
    given = request.headers.get("Authorization", "")
    expected = f"Bearer {request.app[TCP_TOKEN]}"
    if not hmac.compare_digest(given.encode(), expected.encode()):
        return _error(401, "unauthorized", "this TCP listener needs 'Authorization: Bearer <token>'; "
                      "the token is in TROUPE_HOME/token")
    return await handler(request)


class JsonErrorHandler(RequestHandler):
    """aiohttp's connection handler, answering what its HTTP parser refuses (a garbage request line,
    an unknown method, a URL or header over the size limit, a broken body) as the API's JSON error
    instead of plain text; such a client mistake is logged as one, not as a daemon failure."""

    def handle_error(self, request: web.BaseRequest, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if status >= 500:
            log.error("error reading a request: %s", exc or message, exc_info=exc)
        else:
            log.info("refused a malformed request (%s): %s", status, message or exc)
        if request.writer.output_size > 0:  # an answer has begun: the connection is all that is left
            raise ConnectionError("a response was already sent; cannot send the error as well")
        code = "internal" if status >= 500 else "bad_http"
        text = (f"the request is not HTTP the daemon can read: {message or exc or 'malformed'}"
                if status < 500 else "the daemon failed to read the request; details are in its log")
        response = web.json_response(error_json(code, text[:2000]), status=status)
        response.force_close()
        return response


class JsonErrorServer(web.Server):
    def __call__(self) -> RequestHandler:
        return JsonErrorHandler(self, loop=self._loop, **self._kwargs)


class JsonErrorRunner(web.AppRunner):
    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = JsonErrorServer  # same state, one method more: aiohttp has no handler-class option
        return server


def make_app(state: DaemonState, *, max_body: int, tcp_token: str = "",
             body_timeout: float = BODY_TIMEOUT_S) -> web.Application:
    app = web.Application(client_max_size=max_body, middlewares=[tcp_needs_token, errors_as_json])
    app[DAEMON] = state
    app[TCP_TOKEN] = tcp_token
    app[TCP_HOSTS] = set()
    app[MAX_BODY] = max_body
    app[BODY_TIMEOUT] = body_timeout
    app.add_routes(routes)
    app.add_routes(experience_routes)
    mount_viewer(app, tcp_token)
    return app


def bind_unix_socket(path: Path) -> socket.socket:
    """A listening Unix socket at ``path``, created 0600 from the start (no wider window)."""
    if len(os.fsencode(path)) >= 104:
        raise OSError(f"socket path {path} is too long for a Unix socket; use a shorter TROUPE_HOME")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except BaseException:
        sock.close()
        raise
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def load_token(home: Path) -> str:
    """The TCP bearer token, created (0600) on first use; an empty or short one is replaced, and a
    token file others could read is narrowed back to 0600."""
    path = home / "token"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return _new_token(path)
    with os.fdopen(fd) as handle:
        if os.fstat(fd).st_mode & 0o077:
            log.warning("%s was readable by others; narrowing it to 0600", path)
            os.fchmod(fd, 0o600)
        token = handle.read().strip()
    if len(token) < 16:  # an empty token would let "Authorization: Bearer " in
        log.warning("%s held no usable token; writing a new one", path)
        path.unlink()
        return _new_token(path)
    return token


def _new_token(path: Path) -> str:
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return token


async def start_listeners(app: web.Application, *, sock: socket.socket, tcp_port: int | None,
                          tcp_host: str = "127.0.0.1", tcp_required: bool = True) -> tuple[web.AppRunner, int | None]:
    """Serve ``app`` on the Unix socket and, when asked, on loopback TCP; returns the TCP port
    (None when off, or when it could not be bound and ``tcp_required`` is false: the daemon then
    serves the socket alone and says why in its log)."""
    if tcp_port is not None and tcp_host not in ("127.0.0.1", "::1", "localhost"):
        raise ValueError(f"the TCP listener is loopback-only; {tcp_host} is not a loopback address")
    runner = JsonErrorRunner(app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    bound = None
    if tcp_port is not None:
        site = web.TCPSite(runner, tcp_host, tcp_port)
        try:
            await site.start()
        except OSError as exc:
            if tcp_required:
                await runner.cleanup()
                raise OSError(exc.errno, f"cannot listen on {tcp_host}:{tcp_port} (TROUPE_TCP_PORT): "
                                         f"{exc.strerror}; pick another port or set TROUPE_TCP_PORT=off") from None
            log.warning("no TCP listener (so no run viewer): cannot listen on %s:%s: %s", tcp_host, tcp_port, exc)
            return runner, None
        # The Unix socket's address is its path; TCP's is (host, port[, …]): port 0 asked for any free one.
        bound = next((address[1] for address in runner.addresses if isinstance(address, tuple)), tcp_port)
        for host in ("127.0.0.1", "localhost", "[::1]"):
            app[TCP_HOSTS].update({host, f"{host}:{bound}"})
    return runner, bound
