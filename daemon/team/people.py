"""People of a team server and their API tokens.

A token is shown once, when ``troupe server add-person NAME`` makes it; the store keeps only its
SHA-256 (a token is 32 random bytes, so a plain hash is enough: there is nothing to guess). Which
workspaces a person sees is the team config's ``shared_with``. The table lives in the team's
PostgreSQL beside procrastinate's, created here like procrastinate creates its own: it exists only
on a team server (the laptop daemon has one user, its socket's owner).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

import psycopg
from psycopg.rows import dict_row

SCHEMA = """
CREATE TABLE IF NOT EXISTS troupe_people (
    name TEXT PRIMARY KEY,
    token_sha256 TEXT NOT NULL UNIQUE,
    slack_user TEXT UNIQUE,
    created DOUBLE PRECISION NOT NULL
)"""


@dataclass(frozen=True)
class Person:
    name: str
    slack_user: str | None = None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class People:
    """Token look-ups for the API edge (cached: a token is checked on every request)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._cache: dict[str, tuple[float, Person | None]] = {}

    async def _connect(self) -> psycopg.AsyncConnection[dict[str, object]]:
        return await psycopg.AsyncConnection.connect(self._url, autocommit=True, row_factory=dict_row)

    async def ensure_schema(self) -> None:
        async with await self._connect() as conn:
            await conn.execute(SCHEMA)

    async def add(self, name: str, *, slack_user: str | None = None) -> str:
        """Add ``name`` (or give them a new token, which ends the old one); returns the token."""
        token = "trp_" + secrets.token_urlsafe(32)
        await self.ensure_schema()
        async with await self._connect() as conn:
            await conn.execute(
                "INSERT INTO troupe_people (name, token_sha256, slack_user, created) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (name) DO UPDATE SET token_sha256 = EXCLUDED.token_sha256, "
                "slack_user = COALESCE(EXCLUDED.slack_user, troupe_people.slack_user)",
                [name, token_hash(token), slack_user, time.time()])
        self._cache.clear()
        return token

    async def remove(self, name: str) -> bool:
        async with await self._connect() as conn:
            cursor = await conn.execute("DELETE FROM troupe_people WHERE name = %s", [name])
        self._cache.clear()
        return cursor.rowcount > 0

    async def by_token(self, token: str, *, ttl: float = 30.0) -> Person | None:
        """Whose token this is (None: nobody's). A removed person's token stops working within ``ttl``."""
        digest = token_hash(token)
        cached = self._cache.get(digest)
        if cached is not None and time.monotonic() - cached[0] < ttl:
            return cached[1]
        async with await self._connect() as conn:
            cursor = await conn.execute("SELECT name, slack_user FROM troupe_people WHERE token_sha256 = %s",
                                        [digest])
            row = await cursor.fetchone()
        person = Person(str(row["name"]), str(row["slack_user"]) if row["slack_user"] else None) if row else None
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[digest] = (time.monotonic(), person)
        return person

    async def by_slack_user(self, slack_user: str) -> Person | None:
        async with await self._connect() as conn:
            cursor = await conn.execute("SELECT name, slack_user FROM troupe_people WHERE slack_user = %s",
                                        [slack_user])
            row = await cursor.fetchone()
        return Person(str(row["name"]), slack_user) if row else None
