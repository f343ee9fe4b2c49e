"""Connections to the store: one SQLite file (the embedded default) or a PostgreSQL database.

:func:`connect` takes a path (SQLite) or a ``postgresql://`` URL (``storage.postgres``); both give
a :class:`Connection` with the same few calls (``execute``, ``all``, ``one``, ``scalar``, ``write``)
taking SQL with ``?`` or ``:name`` placeholders, so the verbs are written once. What differs
between the two is here, on the connection: row locks (``for_update``), the two-argument maximum
(``greatest``), the schema version and how a migration step runs.

A :class:`Connection` belongs to the thread that opened it (SQLite objects refuse cross-thread
use); other threads and processes open their own. With SQLite, WAL lets any number of readers run
while one writer writes; writers queue on the lock for up to ``BUSY_TIMEOUT_S``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from sqlite_utils import Database

from storage.errors import SchemaTooNewError, StoreError, WrongThreadError
from storage.location import Target, is_url
from storage.migrations import LATEST_VERSION, MIGRATIONS, Migration

BUSY_TIMEOUT_S = 30.0

Tracer = Callable[[str, Any], None]
Params = Sequence[Any] | dict[str, Any]


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...


class Connection(ABC):
    """What the verbs use; see :class:`SqliteConnection` and ``storage.postgres.PostgresConnection``."""

    dialect = "sqlite"
    for_update = ""  # appended to a SELECT whose rows the transaction then changes (SQLite: the write lock)
    skip_locked = ""  # the same, passing over rows another transaction holds (claiming queued jobs)
    greatest = "max"  # the larger of two values
    elsewhere = "point TROUPE_HOME at another folder"  # where to go when this database is too new

    def __init__(self, path: str, read_only: bool) -> None:
        self.path = path  # for messages: never holds a password
        self.read_only = read_only
        self._owner = threading.get_ident()
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise StoreError(f"the store for {self.path} is closed; open it again")
        if threading.get_ident() != self._owner:
            raise WrongThreadError(
                f"this Store for {self.path} was opened in thread {self._owner} and cannot be used from "
                f"thread {threading.get_ident()}: open one Store per thread, or use AsyncStore")

    @abstractmethod
    def execute(self, sql: str, params: Params = ()) -> Cursor:
        ...

    @abstractmethod
    def all(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        ...

    def one(self, sql: str, params: Params = ()) -> dict[str, Any] | None:
        rows = self.all(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Params = ()) -> Any:
        rows = self.all(sql, params)  # to the end, so a RETURNING write completes
        return next(iter(rows[0].values())) if rows else None

    @abstractmethod
    def write(self) -> contextlib.AbstractContextManager[None]:
        """One transaction around several writes: all of them land, or none. Nested blocks are savepoints."""
        ...

    @abstractmethod
    def schema_version(self) -> int:
        ...

    @abstractmethod
    def run_step(self, step: Migration) -> None:
        """Inside the step's transaction, holding the schema lock: run it and record its version."""
        ...

    def lock_schema(self) -> None:
        """Inside a transaction: make other openers wait until it ends (SQLite's write lock already does)."""
        return None

    def integrity_check(self) -> str:
        return "ok"

    @abstractmethod
    def close(self) -> None:
        ...


class SqliteConnection(Connection):
    """One SQLite connection with Troupe's pragmas, usable only from the thread that opened it."""

    def __init__(self, db: Database, path: str, read_only: bool) -> None:
        super().__init__(path, read_only)
        self._db = db

    @property
    def db(self) -> Database:
        """The sqlite-utils ``Database``; checks the calling thread first."""
        self._check()
        return self._db

    def execute(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        return self.db.execute(sql, params)

    def all(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, params)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def scalar(self, sql: str, params: Params = ()) -> Any:
        rows = self.db.execute(sql, params).fetchall()  # to the end, so a RETURNING write completes
        return rows[0][0] if rows else None

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """One transaction around several writes: all of them land, or none.

        ``BEGIN IMMEDIATE`` takes the write lock up front, so a read-then-write inside the block
        cannot be overtaken by another writer. Nested blocks become savepoints.
        """
        db = self.db
        if db.conn.in_transaction:
            name = f"troupe_{secrets.token_hex(4)}"
            db.execute(f"SAVEPOINT {name}")
            try:
                yield
            except BaseException:
                if db.conn.in_transaction:  # some errors end the whole transaction themselves
                    db.execute(f"ROLLBACK TO {name}")
                    db.execute(f"RELEASE {name}")
                raise
            db.execute(f"RELEASE {name}")
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
            db.execute("COMMIT")
        except BaseException:
            if db.conn.in_transaction:
                db.execute("ROLLBACK")
            raise

    def schema_version(self) -> int:
        return int(self.scalar("PRAGMA user_version"))

    def run_step(self, step: Migration) -> None:
        step.apply(self.db)
        self.execute(f"PRAGMA user_version = {int(step.version)}")

    def integrity_check(self) -> str:
        """``"ok"``, or SQLite's description of what is damaged (one problem per line)."""
        return "\n".join(str(next(iter(row.values()))) for row in self.all("PRAGMA integrity_check"))

    def close(self) -> None:
        if not self._closed:
            self.db.conn.close()
            self._closed = True


def connect(target: Target, *, read_only: bool = False, tracer: Tracer | None = None) -> Connection:
    """Open the store at ``target``: a ``postgresql://`` URL, else a SQLite file path.

    Does not migrate; see :func:`migrate`. ``tracer`` is called with ``(sql, params)`` before each
    statement (for debugging and tests).
    """
    if is_url(target):
        try:
            from storage.postgres import connect_postgres  # psycopg only where PostgreSQL is used
        except ImportError as exc:
            raise StoreError(f"a PostgreSQL store needs psycopg ({exc}): pip install 'troupe[server]'") from None
        return connect_postgres(str(target), read_only=read_only, tracer=tracer)
    return connect_sqlite(target, read_only=read_only, tracer=tracer)


def connect_sqlite(path: str | os.PathLike[str], *, read_only: bool = False,
                   tracer: Tracer | None = None) -> SqliteConnection:
    """Open the SQLite file ``path`` with WAL, foreign keys, a busy timeout and ``synchronous=NORMAL``."""
    path = os.fspath(path)
    try:
        if read_only:
            uri = Path(path).absolute().as_uri() + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        else:
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the Troupe database at {path}: {exc} "
                         "(does the folder exist and can this user write to it?)") from exc
    try:
        db = Database(conn, tracer=tracer, execute_plugins=False)
        db.execute("PRAGMA foreign_keys = ON")
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        db.execute("PRAGMA synchronous = NORMAL")  # with WAL: durable except on power loss, never corrupt
        db.execute("PRAGMA schema_version").fetchone()  # "file is not a database" shows up here
        if not read_only and path != ":memory:":
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode != "wal":
                conn.close()
                raise StoreError(f"{path} cannot use write-ahead logging (journal mode stays {mode!r}); "
                                 "keep TROUPE_HOME on a local filesystem")
    except sqlite3.OperationalError as exc:  # locked, read-only folder, disk full...
        conn.close()
        raise StoreError(f"cannot prepare the Troupe database at {path}: {exc}") from exc
    except sqlite3.DatabaseError as exc:  # "file is not a database", a damaged header
        conn.close()
        raise StoreError(f"{path} is not a usable SQLite database: {exc}; move it aside and Troupe "
                         "will create a fresh one") from exc
    return SqliteConnection(db, path, read_only)


def schema_version(connection: Connection) -> int:
    return connection.schema_version()


def migrate(connection: Connection, migrations: Sequence[Migration] = MIGRATIONS,
            target: int | None = None) -> int:
    """Run the pending steps (up to ``target``, default all), each in its own transaction.

    Returns the version reached. Raises :class:`SchemaTooNewError` when the file is newer than
    ``migrations`` and changes nothing. Safe when several processes open the file at once: the
    version is re-read under the write lock, so each step runs exactly once.
    """
    latest = migrations[-1].version if migrations else 0
    target = latest if target is None else target
    current = schema_version(connection)
    if current > latest:
        raise SchemaTooNewError(
            f"{connection.path} has schema version {current}, but this Troupe only knows versions up "
            f"to {latest}. Upgrade Troupe, or {connection.elsewhere}; the database was not changed.")
    pending = [m for m in migrations if current < m.version <= target]
    if pending and connection.read_only:
        raise StoreError(f"{connection.path} is at schema version {current} and needs migrating to "
                         f"{target}; open it read-write once (start the daemon) first")
    for step in pending:
        try:
            with connection.write():
                connection.lock_schema()
                if schema_version(connection) >= step.version:
                    continue  # another process ran this step while we waited for the lock
                connection.run_step(step)
        except Exception as exc:
            raise StoreError(f"migration {step.version} ({step.name}) of {connection.path} failed and "
                             f"was rolled back; the database stays at version "
                             f"{schema_version(connection)}: {exc}") from exc
    return schema_version(connection)


__all__ = ["BUSY_TIMEOUT_S", "LATEST_VERSION", "Connection", "SqliteConnection", "connect", "migrate",
           "schema_version"]
