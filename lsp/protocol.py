"""pygls' protocol, answering requests whose parameters do not fit the LSP types.

pygls turns the JSON of a request into lsprotocol types before any handler runs; when that
fails it only logs, and the client waits forever for an answer. Here such a request gets an
``InvalidParams`` error naming the field, and the server carries on with the next message.
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol

from lsp.rpc import describe

log = logging.getLogger("troupe.lsp")


class AnsweredBadMessage(Exception):
    """A malformed message that has been dealt with (answered, or logged for a notification)."""


class TroupeProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "jsonrpc" not in data or not isinstance(data.get("method"), str):
                raise
            method = data["method"]
            cause = describe(exc.__cause__) if isinstance(exc.__cause__, Exception) else str(exc)
            message = f"invalid params for {method}: {cause}"
            if "id" in data:
                self._send_response(data["id"], error=types.ResponseError(
                    code=types.ErrorCodes.InvalidParams.value, message=message))
            log.warning("%s", message)
            raise AnsweredBadMessage(message) from None


class _DropAnswered(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Unable to deserialize message"):
            return False  # TroupeProtocol logs one readable line instead
        return not (record.exc_info and isinstance(record.exc_info[1], AnsweredBadMessage | JsonRpcException))


def quiet_answered_messages() -> None:
    """pygls logs a traceback for every message it could not handle and for every error answer; an
    error the client was answered with (bad params, a daemon refusal) is not a server fault."""
    for name in ("pygls.server", "pygls.io_", "pygls.protocol.json_rpc"):
        logging.getLogger(name).addFilter(_DropAnswered())
