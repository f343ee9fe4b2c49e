"""Full-text search over the ``{table}_fts`` indexes that ``migrations.add_fts`` creates.

User text is never FTS5 syntax: every word is quoted, so ``"``, ``-``, ``*``, ``OR``, ``NEAR``
and parentheses are searched for as plain words. All words must match (in any order); results
come best first (BM25).
"""

from __future__ import annotations

import re
from typing import Any

from storage.db import Connection

_WORD = re.compile(r"\w+")


def match_expression(query: str) -> str | None:
    """The FTS5 MATCH expression for what a user typed; ``None`` when it holds no words."""
    words = _WORD.findall(query)
    if not words:
        return None
    return " ".join(f'"{word}"' for word in words)


def search_rows(connection: Connection, table: str, query: str, *, where: str = "",
                params: dict[str, Any] | None = None, limit: int = 20,
                rowid: str = "id") -> list[dict[str, Any]]:
    """Rows of ``table`` matching ``query``, best first, as dicts of its columns.

    ``where`` filters on ``table``'s columns (aliased ``t``) with named ``params``, e.g.
    ``where="t.workspace_id = :ws", params={"ws": 3}``.
    """
    expression = match_expression(query)
    if expression is None or limit <= 0:
        return []
    sql = (f"SELECT t.* FROM {table}_fts JOIN {table} t ON t.{rowid} = {table}_fts.rowid "
           f"WHERE {table}_fts MATCH :match {'AND ' + where if where else ''} "
           f"ORDER BY {table}_fts.rank, t.{rowid} DESC LIMIT :limit")
    return connection.all(sql, {**(params or {}), "match": expression, "limit": limit})
