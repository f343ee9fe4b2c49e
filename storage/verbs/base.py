"""What every group of verbs shares: the connection, and a sentinel for "argument not given"."""

from __future__ import annotations

from typing import Any, Final

from storage.db import Connection


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final[Any] = _Unset()
"""Default of optional update arguments, so that passing ``None`` can mean "clear this field"."""

NO_LIMIT: Final = (1 << 63) - 1
"""``LIMIT`` for "all rows" in both dialects (SQLite's ``-1`` is an error on PostgreSQL)."""


class Verbs:
    _conn: Connection
