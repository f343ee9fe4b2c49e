"""Full-text search over the indexes the migrations create: FTS5 tables on SQLite, ``tsvector`` GIN
indexes on PostgreSQL, with one contract for both.

User text is never search syntax: only its words (letters, digits) are used, so ``"``, ``-``,
``*``, ``OR``, ``NEAR``, ``&``, ``!`` and parentheses are searched for as plain words (or ignored).
With :func:`search_rows` every word must match (in any order), stemmed (``payments`` finds
``payment``), no stop words; results come best first (BM25 on SQLite, ``ts_rank`` on PostgreSQL).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from storage.db import Connection
from storage.migrations_postgres import TS_CONFIG, tsvector

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Match:
    """The pieces of a search over ``table`` aliased ``t``: rows from ``source`` where ``condition``
    holds for the ``:match`` parameter, ordered by ``rank`` (lower is better)."""
    source: str
    condition: str
    rank: str


def text_match(connection: Connection, table: str, *, any_word: bool = False) -> Match:
    if connection.dialect == "postgresql":
        parse = "websearch_to_tsquery" if any_word else "plainto_tsquery"
        vector = tsvector(table, "t.")
        return Match(f"{table} t, {parse}('{TS_CONFIG}', :match) q", f"{vector} @@ q", f"-ts_rank({vector}, q)")
    return Match(f"{table}_fts JOIN {table} t ON t.id = {table}_fts.rowid", f"{table}_fts MATCH :match",
                 f"{table}_fts.rank")


def count_sql(connection: Connection, table: str) -> str:
    """How many rows of ``table`` match ``:match`` (any-word syntax); on SQLite the index alone answers."""
    if connection.dialect == "postgresql":
        match = text_match(connection, table, any_word=True)
        return f"SELECT count(*) FROM {match.source} WHERE {match.condition}"
    return f"SELECT count(*) FROM {table}_fts WHERE {table}_fts MATCH :match"


def match_value(connection: Connection, words: Sequence[str], *, any_word: bool = False) -> str:
    """The ``:match`` parameter for ``words`` (each a run of letters, digits or ``_``)."""
    if connection.dialect == "postgresql":
        return (" or " if any_word else " ").join(words)  # websearch_to_tsquery: "or" is its OR
    return (" OR " if any_word else " ").join(f'"{word}"' for word in words)


def search_rows(connection: Connection, table: str, query: str, *, where: str = "",
                params: dict[str, Any] | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """Rows of ``table`` matching every word of ``query``, best first, as dicts of its columns.

    ``where`` filters on ``table``'s columns (aliased ``t``) with named ``params``, e.g.
    ``where="t.workspace_id = :ws", params={"ws": 3}``.
    """
    words = _WORD.findall(query)
    if not words or limit <= 0:
        return []
    match = text_match(connection, table)
    sql = (f"SELECT t.* FROM {match.source} WHERE {match.condition} {'AND ' + where if where else ''} "
           f"ORDER BY {match.rank}, t.id DESC LIMIT :limit")
    return connection.all(sql, {**(params or {}), "match": match_value(connection, words), "limit": limit})
