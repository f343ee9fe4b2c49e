"""Fixtures for the store's tests: a fresh database per test, a workspace and a job in it.

``store`` (and ``store_target``, where it lives) runs each test twice: on a SQLite file and on a
fresh PostgreSQL database of the session's server (``tests/fixtures/postgres.py``). ``db_path`` is
always the SQLite file, for tests of SQLite itself.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from storage import Job, Store, Workspace


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "troupe.db"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to the latest schema once (closed: its WAL folded in), copied for each test."""
    path = tmp_path_factory.mktemp("template") / "troupe.db"
    Store.open(path).close()
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request: pytest.FixtureRequest, db_path: Path, sqlite_template: Path) -> Path | str:
    """A fresh store at the latest schema: a SQLite file's path, or a PostgreSQL database's URL (with its
    password); each a copy of a migrated template, since migrating every test's store from scratch is slow."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres_url"))
    shutil.copyfile(sqlite_template, db_path)
    return db_path


@pytest.fixture
def store(store_target: Path | str) -> Iterator[Store]:
    opened = Store.open(store_target)
    yield opened
    opened.close()


@pytest.fixture
def workspace(store: Store, tmp_path: Path) -> Workspace:
    root = tmp_path / "shop"
    root.mkdir()
    return store.add_workspace(root)


@pytest.fixture
def job(store: Store, workspace: Workspace) -> Job:
    return store.record_job("review", {"file": "app.py"}, workspace_id=workspace.id)
