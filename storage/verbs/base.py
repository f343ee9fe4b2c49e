"""What every group of verbs shares: the connection, and a sentinel for "argument not given"."""

from __future__ import annotations

from typing import Any, Final

from storage.db import Connection


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final[Any] = _Unset()
"""Default of optional update arguments, so that passing ``None`` can mean "clear this field"."""


class Verbs:
    _conn: Connection
