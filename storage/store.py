"""``Store``: the sync API over the store (a SQLite file, or PostgreSQL). See the ``storage`` package docstring."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

from storage.db import Connection, Tracer, connect, migrate, schema_version
from storage.experience import ExperienceVerbs
from storage.location import Target
from storage.verbs.audit import AuditVerbs
from storage.verbs.changes import ChangeVerbs
from storage.verbs.events import EventVerbs
from storage.verbs.findings import FindingVerbs
from storage.verbs.jobs import JobVerbs
from storage.verbs.people import PeopleVerbs
from storage.verbs.policies import PolicyVerbs
from storage.verbs.retrievals import RetrievalVerbs
from storage.verbs.usage import UsageVerbs
from storage.verbs.workspaces import WorkspaceVerbs


class Store(WorkspaceVerbs, JobVerbs, EventVerbs, ChangeVerbs, FindingVerbs, UsageVerbs, ExperienceVerbs,
            RetrievalVerbs, PolicyVerbs, PeopleVerbs, AuditVerbs):
    """Workspaces, jobs, events, changes, findings, usage, experience and a team server's people in one
    SQLite file, or in a PostgreSQL database (opened from a ``postgresql://`` URL: ``storage.postgres``),
    with the same verbs.

    A Store holds one connection and may only be used from the thread that opened it
    (``WrongThreadError`` otherwise); use ``AsyncStore`` from asyncio, or one Store per thread.
    Each verb is one transaction; group several with ``with store.transaction():``.
    """

    def __init__(self, connection: Connection) -> None:
        self._conn = connection

    @classmethod
    def open(cls, path: Target, *, read_only: bool = False, tracer: Tracer | None = None) -> Store:
        """Open (creating and migrating if needed) the database at ``path``: a SQLite file, or a
        ``postgresql://user:password@host/dbname`` URL.

        ``read_only`` opens a reader connection that never migrates; ``tracer`` is called with
        ``(sql, params)`` before each statement.
        """
        connection = connect(path, read_only=read_only, tracer=tracer)
        try:
            migrate(connection)
        except BaseException:
            connection.close()
            raise
        return cls(connection)

    @property
    def path(self) -> str:
        """The file, or the URL without its password."""
        return self._conn.path

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Store]:
        """Make several verbs one transaction: all land, or (on an exception) none."""
        with self._conn.write():
            yield self

    def schema_version(self) -> int:
        return schema_version(self._conn)

    def integrity_check(self) -> str:
        """``"ok"``, or SQLite's description of what is damaged (one problem per line; PostgreSQL: "ok")."""
        return self._conn.integrity_check()

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def store_verbs() -> list[str]:
    """Names of the Store methods that ``AsyncStore`` mirrors as coroutines."""
    skip = {"close", "transaction"}  # AsyncStore has its own close; transactions go through run()
    return [name for name, _ in inspect.getmembers(Store, inspect.isfunction)
            if not name.startswith("_") and name not in skip]
