"""JSON-RPC plumbing: readable error answers, and serving the declared custom messages.

Every parameter that reaches a handler untyped (command arguments, custom ``troupe/…``
requests) is read as its record of :mod:`lsp.messages` (:func:`command`, :func:`request`), so a
client that sends the wrong shape gets an ``InvalidParams`` answer naming the field, never a
crash or a silent hang; the handler's record is answered as JSON. Errors from the
daemon become ``RequestFailed`` with the daemon's own message.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import cattrs
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from daemon.client import DaemonError
from lsp.messages import COMMANDS, REQUESTS, Call, ErrorCode
from lsp.records import BadParams, Record, read, wire

P = TypeVar("P", bound=Record)
S = TypeVar("S", bound=LanguageServer)
Handler = Callable[[S, P], Awaitable[Any]]

DAEMON_UNREACHABLE = ErrorCode.DAEMON_UNREACHABLE.value


def invalid_params(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=message)


def request_failed(message: str) -> JsonRpcException:
    return JsonRpcException(message=message, code=ErrorCode.REQUEST_FAILED.value)


def daemon_failed(exc: DaemonError) -> JsonRpcException:
    """A daemon error as the answer to the editor's request."""
    if exc.status == 0:
        return JsonRpcException(message=f"Troupe: {exc}", code=DAEMON_UNREACHABLE)
    return request_failed(f"Troupe: {exc}")


def plain(value: Any) -> Any:
    """pygls hands custom parameters over as namedtuple-like objects: back to dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _camel(match: re.Match[str]) -> str:
    return match.group(1).upper()


def describe(exc: Exception) -> str:
    """A cattrs error as ``"required field missing at prompt; expected an integer at findingId"``,
    with the field names as the client wrote them (camelCase)."""
    if isinstance(exc, cattrs.BaseValidationError):
        messages = cattrs.transform_error(exc, path="")
        return "; ".join(re.sub(r"_([a-z])", _camel, m.replace(" @ .", " at ")) for m in messages)
    return str(exc)


def parse(cls: type[P], value: Any, what: str) -> P:
    """``value`` (a JSON object) as the record ``cls``; raises ``InvalidParams`` saying what was wrong."""
    try:
        return read(cls, plain(value))
    except BadParams as exc:
        raise invalid_params(f"{what}: {exc}") from None


def _answer(call: Call, result: Any, method: str) -> Any:
    """The handler's result as JSON; a result of another type than the one declared is a bug here."""
    if not isinstance(result, call.result):
        raise TypeError(f"{method} answered {type(result).__name__}; lsp/messages.py declares {call.result.__name__}")
    return wire(result) if isinstance(result, Record) else result.to_json()


def command(server: S, name: str) -> Callable[[Handler[S, P]], Handler[S, P]]:
    """Serve the command ``name`` of :data:`lsp.messages.COMMANDS` with ``handler(ls, params)``: its one
    object argument read as the declared record, the handler's record answered as JSON."""
    call = COMMANDS[name]

    def register(handler: Handler[S, P]) -> Handler[S, P]:
        async def serve(ls: S, *args: Any) -> Any:
            if not args and call.optional:
                args = ({},)
            if len(args) != 1:
                raise invalid_params(f"{name} takes one argument, an object; got {len(args)} arguments")
            return _answer(call, await handler(ls, parse(call.params, args[0], name)), name)  # type: ignore[arg-type]

        server.command(name)(serve)
        return handler

    return register


def request(server: S, name: str) -> Callable[[Handler[S, P]], Handler[S, P]]:
    """Serve the custom request ``name`` of :data:`lsp.messages.REQUESTS` (no params: ``{}``)."""
    call = REQUESTS[name]

    def register(handler: Handler[S, P]) -> Handler[S, P]:
        async def serve(ls: S, params: Any) -> Any:
            parsed = parse(call.params, params if params is not None else {}, name)
            return _answer(call, await handler(ls, parsed), name)  # type: ignore[arg-type]

        server.feature(name)(serve)
        return handler

    return register
