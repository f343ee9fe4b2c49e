"""The store in a PostgreSQL database, for a team server: the same verbs and records as SQLite.

Opened from a URL (``Store.open("postgresql://troupe:...@db.internal/troupe")``, or
``TROUPE_STORE_URL``); the URL's user must own the database (migrations create tables, indexes
and a text-search configuration). Differences from SQLite, all kept inside this module and the
``for_update``/``greatest`` attributes the verbs use:

- placeholders: the verbs' ``?`` and ``:name`` become psycopg's ``%s`` and ``%(name)s``;
- concurrency: no database-wide write lock (``BEGIN IMMEDIATE``); a verb that reads rows and then
  changes them locks those rows (``SELECT ... FOR UPDATE``), and claiming a queued job skips rows
  another worker holds (``SKIP LOCKED``). Migrations hold a transaction-level advisory
  lock, so several processes opening a fresh database run each step once;
- the schema version lives in a one-row table ``troupe_schema_version`` (SQLite: ``user_version``);
- full-text search uses expression GIN indexes over ``to_tsvector`` (``storage.search``);
- a read-only store sets ``default_transaction_read_only``;
- a connection the server cut (a restart, a network drop) is opened again by the next call; a
  transaction it cut fails (its caller sees the error), the next one runs on the new connection.

The password in the URL never reaches a message: ``path`` is the redacted URL, and driver errors
raised while connecting are scrubbed (``storage.location``).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row

from storage.db import Connection, Cursor, Params, Tracer
from storage.errors import StoreError
from storage.location import redacted, scrub
from storage.migrations import Migration

CONNECT_TIMEOUT_S = 10
_SCHEMA_LOCK = 0x7472_6F75_7065  # "troupe": the advisory lock key migrations hold
T = TypeVar("T")
_TOKEN = re.compile(r"'(?:[^']|'')*'|\?|(?<![:\w]):([A-Za-z_]\w*)|%")


@functools.lru_cache(maxsize=512)
def translate(sql: str) -> str:
    """SQL with ``?``/``:name`` placeholders in psycopg's style (string literals left alone)::

        translate("SELECT * FROM jobs WHERE id = ? AND note = 'a?b'")  # ... id = %s AND note = 'a?b'
    """
    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token.startswith("'"):
            return token.replace("%", "%%")  # psycopg reads % everywhere, literals too
        if token == "?":
            return "%s"
        if token == "%":
            return "%%"
        return f"%({match.group(1)})s"

    return _TOKEN.sub(replace, sql)


class PostgresConnection(Connection):
    """One psycopg connection (autocommit outside ``write()``), usable only from the thread that opened it."""

    dialect = "postgresql"
    # NO KEY UPDATE: the row is about to change, but rows referring to it (a job's events, a workspace's
    # jobs) may still be inserted meanwhile: their foreign-key checks take KEY SHARE, which it allows.
    for_update = " FOR NO KEY UPDATE"
    skip_locked = " FOR NO KEY UPDATE SKIP LOCKED"
    greatest = "greatest"
    elsewhere = "point TROUPE_STORE_URL at another database"

    def __init__(self, url: str, read_only: bool, tracer: Tracer | None) -> None:
        super().__init__(redacted(url), read_only)
        self._url = url  # to connect again; messages show ``path``
        self._raw = _open(url, read_only)
        self._tracer = tracer
        self._depth = 0  # write() blocks open

    @property
    def raw(self) -> psycopg.Connection[dict[str, Any]]:
        self._check()
        return self._raw

    def _once_more_if_cut(self, attempt: Callable[[], T]) -> T:
        """``attempt()``; when it finds the connection cut (the server restarted, the network dropped)
        outside any transaction, again on a new connection. Only reads and BEGIN come here, which are
        safe to repeat: outside ``write()`` the verbs only read."""
        try:
            return attempt()
        except psycopg.OperationalError:
            if self._depth or not self._raw.broken:
                raise
            self._raw.close()
            self._raw = _open(self._url, self.read_only)
            return attempt()

    def execute(self, sql: str, params: Params = ()) -> Cursor:
        if self._tracer is not None:
            self._tracer(sql, params)
        # without parameters psycopg sends the text as it is (no %% to undo)
        query, args = (translate(sql), params) if params else (sql, None)
        if self._depth:
            return self.raw.execute(query, args)
        return self._once_more_if_cut(lambda: self.raw.execute(query, args))

    def all(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        cursor = self.execute(sql, params)
        assert isinstance(cursor, psycopg.Cursor)
        return cursor.fetchall() if cursor.description else []

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """A transaction (nested: a savepoint); rows it reads ``for_update`` stay locked until it ends."""
        with contextlib.ExitStack() as stack:
            self._once_more_if_cut(lambda: stack.enter_context(self.raw.transaction()))
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
        if self._depth == 0 and self._raw.broken:  # psycopg ends a transaction on a cut connection silently
            raise StoreError(f"the connection to {self.path} was cut before the transaction committed: "
                             "none of it was written")

    def schema_version(self) -> int:
        if not self.scalar("SELECT to_regclass('troupe_schema_version') IS NOT NULL"):
            return 0
        return int(self.scalar("SELECT coalesce(max(version), 0) FROM troupe_schema_version"))

    def lock_schema(self) -> None:
        self.execute(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})")
        self.execute("CREATE TABLE IF NOT EXISTS troupe_schema_version (version INTEGER NOT NULL)")

    def run_step(self, step: Migration) -> None:
        if step.postgres is None:
            raise StoreError(f"migration {step.version} ({step.name}) has no PostgreSQL version")
        if isinstance(step.postgres, str):
            self.execute(step.postgres)
        else:
            step.postgres(self)
        self.execute("DELETE FROM troupe_schema_version")
        self.execute("INSERT INTO troupe_schema_version (version) VALUES (?)", [step.version])

    def close(self) -> None:
        if not self._closed:
            self._raw.close()
            self._closed = True


def connect_postgres(url: str, *, read_only: bool = False, tracer: Tracer | None = None) -> PostgresConnection:
    """Connect to the database at ``url`` (does not migrate); a StoreError without the password if it fails."""
    return PostgresConnection(url, read_only, tracer)


def _open(url: str, read_only: bool) -> psycopg.Connection[dict[str, Any]]:
    options = "-c default_transaction_read_only=on" if read_only else None
    try:
        return psycopg.connect(url, autocommit=True, row_factory=dict_row, connect_timeout=CONNECT_TIMEOUT_S,
                               application_name="troupe", options=options)
    except (psycopg.Error, ValueError) as exc:
        raise StoreError(f"cannot connect to the Troupe database {redacted(url)}: {scrub(str(exc), url)}"
                         ) from None  # the driver's exception may quote the URL: not chained
