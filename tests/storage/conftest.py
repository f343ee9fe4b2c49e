"""Fixtures for the store's tests: a fresh database file per test, a workspace and a job in it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from storage import Job, Store, Workspace


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "troupe.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    opened = Store.open(db_path)
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
