"""The schema: created on first open, migrated forward step by step, never silently downgraded."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from storage import LATEST_VERSION, SchemaTooNewError, Store, StoreError
from storage.db import connect, migrate, schema_version
from storage.migrations import MIGRATIONS, Migration, run_script

# Rows written with the version-1 schema, as an older Troupe would have left them (SQL both dialects take).
VERSION_1_ROWS = [
    "INSERT INTO workspaces (id, root, name, created) VALUES (1, '/srv/legacy', 'legacy', 1.0)",
    "INSERT INTO jobs (id, workspace_id, kind, state, request, created, updated, last_seq) "
    "VALUES ('old-job', 1, 'review', 'running', '{\"file\": \"a.py\"}', 1.0, 1.0, 1)",
    "INSERT INTO job_events (job_id, seq, at, kind, data, text) VALUES "
    "('old-job', 1, 1.0, 'message', '{\"text\": \"legacy deployment notes\"}', 'legacy deployment notes')",
    "INSERT INTO findings (workspace_id, job_id, file, start_line, start_col, end_line, "
    "severity, message, fingerprint, state, created, updated) VALUES "
    "(1, 'old-job', 'a.py', 3, 1, 3, 'major', 'legacy password in source', 'fp1', 'open', 1, 1)",
]


def assert_version_1_rows_kept(store: Store) -> None:
    """What an upgraded store shows of :data:`VERSION_1_ROWS`: all of it, searchable, still writable."""
    assert store.schema_version() == LATEST_VERSION
    assert store.get_workspace(1).root == "/srv/legacy"
    job = store.get_job("old-job")
    assert job.request == {"file": "a.py"} and job.state == "running"
    assert [e.data["text"] for e in store.events_after("old-job")] == ["legacy deployment notes"]
    assert store.append_event("old-job", "log", {"text": "after the upgrade"}) == 2
    # rows written before full-text search existed are searchable after the upgrade
    assert [e.seq for e in store.search_events("legacy deployment")] == [1]
    assert [f.message for f in store.search_findings("password")] == ["legacy password in source"]
    assert store.integrity_check() == "ok"


def seed_version_1_rows(path: Path) -> None:
    conn = sqlite3.connect(path)
    with conn:
        for statement in VERSION_1_ROWS:
            conn.execute(statement)
    conn.close()


def test_a_new_file_is_created_at_the_latest_version(db_path: Path) -> None:
    with Store.open(db_path) as store:
        assert store.schema_version() == LATEST_VERSION
        assert store.integrity_check() == "ok"


def test_an_existing_empty_file_is_migrated_to_the_latest_version(db_path: Path) -> None:
    db_path.touch()
    with Store.open(db_path) as store:
        assert store.schema_version() == LATEST_VERSION


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert all(m.name for m in MIGRATIONS)


@pytest.mark.parametrize("version", range(1, LATEST_VERSION))
def test_a_database_at_an_earlier_version_migrates_to_the_latest_keeping_its_rows(
        db_path: Path, version: int) -> None:
    connection = connect(db_path)
    assert migrate(connection, target=version) == version
    connection.close()
    seed_version_1_rows(db_path)

    with Store.open(db_path) as store:
        assert_version_1_rows_kept(store)


def test_reopening_a_current_database_changes_nothing(db_path: Path) -> None:
    with Store.open(db_path) as store:
        job = store.record_job("ask", {"question": "why?"})
    with Store.open(db_path) as store:
        assert store.schema_version() == LATEST_VERSION
        assert store.get_job(job.id) == job


def test_a_database_newer_than_the_code_is_refused_and_left_unchanged(db_path: Path) -> None:
    Store.open(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 5}")
    conn.close()

    with pytest.raises(SchemaTooNewError, match=rf"version {LATEST_VERSION + 5}.*Upgrade Troupe"):
        Store.open(db_path)
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION + 5
    conn.close()


def test_a_failing_migration_rolls_back_entirely_and_keeps_the_previous_version(db_path: Path) -> None:
    def broken(db) -> None:
        run_script(db, "CREATE TABLE half_done (x INTEGER);\nINSERT INTO no_such_table VALUES (1);\n")

    steps = [*MIGRATIONS, Migration(LATEST_VERSION + 1, "broken step", broken)]
    connection = connect(db_path)
    with pytest.raises(StoreError, match=rf"migration {LATEST_VERSION + 1} \(broken step\).*rolled back"):
        migrate(connection, steps)
    assert schema_version(connection) == LATEST_VERSION
    assert connection.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'") == 0
    connection.close()


def test_several_threads_opening_a_fresh_file_at_once_each_see_the_latest_version(db_path: Path) -> None:
    versions, errors = [], []

    def open_it() -> None:
        try:
            with Store.open(db_path) as store:
                versions.append(store.schema_version())
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and versions == [LATEST_VERSION] * 4


def test_a_read_only_open_of_an_outdated_database_asks_for_a_read_write_open_first(db_path: Path) -> None:
    connection = connect(db_path)
    migrate(connection, target=1)
    connection.close()
    with pytest.raises(StoreError, match="open it read-write once"):
        Store.open(db_path, read_only=True)


def test_a_file_that_is_not_a_database_gives_a_clear_error(db_path: Path) -> None:
    db_path.write_bytes(b"this is a text file, not SQLite" * 100)
    with pytest.raises(StoreError, match="not a usable SQLite database"):
        Store.open(db_path)


def test_a_database_in_a_missing_folder_gives_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open the Troupe database"):
        Store.open(tmp_path / "missing" / "troupe.db")


def test_connections_use_wal_foreign_keys_and_a_busy_timeout(db_path: Path) -> None:
    with Store.open(db_path) as store:
        conn = store._conn
        assert conn.scalar("PRAGMA journal_mode") == "wal"
        assert conn.scalar("PRAGMA foreign_keys") == 1
        assert conn.scalar("PRAGMA synchronous") == 1  # NORMAL
        assert conn.scalar("PRAGMA busy_timeout") >= 5000
