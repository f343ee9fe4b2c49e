"""JSON-RPC plumbing: readable error answers and typed parsing of loosely typed parameters.

Every parameter that reaches a handler untyped (command arguments, custom ``troupe/…``
requests) goes through :func:`parse`, so a client that sends the wrong shape gets an
``InvalidParams`` answer naming the field, never a crash or a silent hang. Errors from the
daemon become ``RequestFailed`` with the daemon's own message.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import default_converter

from daemon.client import DaemonError

T = TypeVar("T")

DAEMON_UNREACHABLE = -32001  # server-defined range: the daemon could not be reached


def invalid_params(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=message)


def request_failed(message: str) -> JsonRpcException:
    return JsonRpcException(message=message, code=types.LSPErrorCodes.RequestFailed.value)


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


def _strict(kind: type, name: str) -> Any:
    def structure(value: Any, _: type) -> Any:
        if type(value) is not kind and not (kind is float and type(value) is int):
            raise ValueError(f"expected {name}, got {type(value).__name__} {str(value)[:40]!r}")
        return value

    return structure


CONVERTER = default_converter()  # LSP types (Range, Position) plus strict JSON scalars: 5 is not "5"
for _kind, _name in ((str, "a string"), (int, "an integer"), (bool, "true or false"), (float, "a number")):
    CONVERTER.register_structure_hook(_kind, _strict(_kind, _name))


def parse(cls: type[T], value: Any, what: str) -> T:
    """``value`` (a JSON object) as ``cls``; raises ``InvalidParams`` saying what was wrong."""
    value = plain(value)
    if not isinstance(value, dict):
        raise invalid_params(f"{what}: expected one JSON object, got {type(value).__name__}")
    try:
        parsed: T = CONVERTER.structure(value, cls)  # pygls' converter is untyped
    except Exception as exc:
        raise invalid_params(f"{what}: {describe(exc)}") from None
    check = getattr(parsed, "check", None)
    if check is not None:
        problem = check()
        if problem:
            raise invalid_params(f"{what}: {problem}")
    return parsed


def command_argument(cls: type[T], args: tuple[Any, ...], command: str) -> T:
    """The one object argument of a ``workspace/executeCommand`` call."""
    if len(args) != 1:
        raise invalid_params(f"{command} takes one argument, an object; got {len(args)} arguments")
    return parse(cls, args[0], command)
