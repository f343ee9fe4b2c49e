"""PostgreSQL behind the same verbs: its migrations and their version, its own errors, and a URL
password that never shows. (The other storage tests run on both backends: see conftest.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import psycopg
import pytest

from daemon.doctor import run_doctor
from storage import LATEST_VERSION, FindingDraft, SchemaTooNewError, Store, StoreError
from storage.db import connect, migrate, schema_version
from storage.location import describe, redacted
from storage.migrations import MIGRATIONS, Migration
from tests.fixtures.postgres import PostgresServer
from tests.storage.test_migrations import VERSION_1_ROWS, assert_version_1_rows_kept


def every_message(error: BaseException) -> str:
    """All a user or a log could see of ``error``: its text, its repr and its whole traceback."""
    return f"{error}\n{error!r}\n{''.join(traceback.format_exception(error))}"


def test_several_processes_opening_a_fresh_database_at_once_migrate_it_once(postgres: PostgresServer) -> None:
    url = postgres.create_database()
    versions, errors = [], []

    def open_it() -> None:
        try:
            with Store.open(url) as store:
                versions.append(store.schema_version())
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and versions == [LATEST_VERSION] * 4
    assert postgres.execute("SELECT version FROM troupe_schema_version", dbname=url.rsplit("/", 1)[1]) == [
        (LATEST_VERSION,)]
    postgres.drop_database(url)


@pytest.mark.parametrize("version", range(1, LATEST_VERSION))
def test_a_database_at_an_earlier_version_migrates_to_the_latest_keeping_its_rows(
        postgres: PostgresServer, version: int) -> None:
    url = postgres.create_database()
    connection = connect(url)
    assert migrate(connection, target=version) == version
    with connection.write():
        for statement in VERSION_1_ROWS:
            connection.execute(statement)
    connection.close()
    with Store.open(url) as store:
        assert_version_1_rows_kept(store)
    postgres.drop_database(url)


def test_a_database_newer_than_the_code_is_refused_and_left_unchanged(
        postgres: PostgresServer, postgres_url: str) -> None:
    dbname = postgres_url.rsplit("/", 1)[1]
    postgres.execute("UPDATE troupe_schema_version SET version = %s", [LATEST_VERSION + 5], dbname=dbname)
    with pytest.raises(SchemaTooNewError, match=rf"version {LATEST_VERSION + 5}.*point TROUPE_STORE_URL") as error:
        Store.open(postgres_url)
    assert postgres.password not in every_message(error.value)
    assert postgres.execute("SELECT version FROM troupe_schema_version", dbname=dbname) == [(LATEST_VERSION + 5,)]


def test_a_failing_migration_rolls_back_entirely_and_keeps_the_previous_version(postgres_url: str) -> None:
    def broken(connection) -> None:
        connection.execute("CREATE TABLE half_done (x INTEGER)")
        connection.execute("INSERT INTO no_such_table VALUES (1)")

    steps = [*MIGRATIONS, Migration(LATEST_VERSION + 1, "broken step", lambda db: None, postgres=broken)]
    connection = connect(postgres_url)
    with pytest.raises(StoreError, match=rf"migration {LATEST_VERSION + 1} \(broken step\).*rolled back"):
        migrate(connection, steps)
    assert schema_version(connection) == LATEST_VERSION
    assert connection.scalar("SELECT to_regclass('half_done') IS NULL") is True
    connection.close()


def test_a_wrong_password_is_a_store_error_that_never_shows_the_password(postgres: PostgresServer) -> None:
    url = postgres.url().replace(postgres.password, "not-the-password-4711")
    with pytest.raises(StoreError, match="password authentication failed") as error:
        Store.open(url)
    seen = every_message(error.value)
    assert "not-the-password-4711" not in seen and postgres.password not in seen
    assert "troupe:***@127.0.0.1" in seen  # which database it was, still


def test_an_unreachable_server_is_a_store_error_naming_the_host_not_the_password(postgres: PostgresServer) -> None:
    url = postgres.url().replace(f":{postgres.port}/", ":1/")  # nothing listens on port 1
    with pytest.raises(StoreError, match="cannot connect to the Troupe database") as error:
        Store.open(url)
    assert postgres.password not in every_message(error.value)


def test_the_store_and_doctor_name_the_database_without_its_password(
        postgres: PostgresServer, postgres_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    with Store.open(postgres_url) as store:
        assert store.path == redacted(postgres_url) and postgres.password not in store.path
    monkeypatch.setenv("TROUPE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TROUPE_STORE_URL", postgres_url)
    run_doctor(json_output=True, check_model=False)
    out = capsys.readouterr().out
    [database] = [check for check in json.loads(out) if check["name"] == "database"]
    dbname = postgres_url.rsplit("/", 1)[1]
    assert database == {"name": "database", "ok": True, "detail": f"PostgreSQL database {dbname} on "
                        f"127.0.0.1:{postgres.port} as troupe, schema version {LATEST_VERSION}"}
    assert postgres.password not in out


def test_the_config_file_names_the_store_and_the_environment_wins(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from daemon.config import store_target

    monkeypatch.setenv("TROUPE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("TROUPE_STORE_URL", raising=False)
    assert store_target() == tmp_path / "home" / "troupe.db"
    (tmp_path / "xdg" / "troupe").mkdir(parents=True)
    (tmp_path / "xdg" / "troupe" / "config.toml").write_text(f'[store]\nurl = "{postgres_url}"\n')
    target = store_target()
    assert target == postgres_url and "***" in repr(target)  # a Secret: reprs in logs hide it
    monkeypatch.setenv("TROUPE_STORE_URL", str(tmp_path / "elsewhere.db"))
    assert store_target() == tmp_path / "elsewhere.db"


def test_describe_names_files_and_databases_and_redacted_hides_passwords() -> None:
    assert describe("/srv/troupe.db") == "SQLite file /srv/troupe.db"
    assert describe("postgresql://ada:s3cret@db.internal/troupe") == (
        "PostgreSQL database troupe on db.internal:5432 as ada")
    assert describe("postgresql:///troupe?host=/run/postgresql") == (
        "PostgreSQL database troupe on /run/postgresql")
    assert redacted("postgresql://ada:s3cret@db.internal:6543/troupe?sslmode=require") == (
        "postgresql://ada:***@db.internal:6543/troupe?sslmode=require")
    assert redacted("postgresql://db.internal/troupe?user=ada&password=s3cret") == (
        "postgresql://db.internal/troupe?user=ada&password=***")


def test_row_locks_let_other_writers_through_where_sqlite_would_wait(postgres_url: str, tmp_path) -> None:
    """A review's findings hold only their workspace's row: a job submitted meanwhile in that workspace, and
    events of other jobs, are written at once (SQLite's one write lock would make them wait for the commit)."""
    with Store.open(postgres_url) as store, Store.open(postgres_url) as other:
        other._conn.execute("SET lock_timeout = '5s'")  # blocked would fail, not hang
        workspace = store.add_workspace(tmp_path)
        running = store.record_job("review", {}, workspace_id=workspace.id)
        with store.transaction():
            store.add_findings(workspace.id, running.id, "a.py", [{"message": "m", "severity": "minor",
                                                                    "start_line": 1}])
            store.set_job_state(running.id, "running")  # the job's row, locked too
            queued = other.record_job("ask", {}, workspace_id=workspace.id)
            assert other.append_event(queued.id, "log", {"text": "not blocked"}) == 1
            assert other.list_findings(workspace.id) == []  # not committed yet
        assert [f.message for f in other.list_findings(workspace.id)] == ["m"]


def cut(postgres: PostgresServer, store: Store) -> None:
    """End the store's server session, as a server restart or a network drop would, and wait until it is gone."""
    pid = store._conn.scalar("SELECT pg_backend_pid()")
    postgres.execute("SELECT pg_terminate_backend(%s)", [pid])
    while postgres.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]):
        time.sleep(0.01)


def test_a_store_whose_connection_was_cut_connects_again_for_the_next_read_or_write(
        postgres: PostgresServer, postgres_url: str) -> None:
    with Store.open(postgres_url) as store:
        job = store.record_job("ask", {})
        cut(postgres, store)
        assert store.get_job(job.id) == job  # a read, repeated on a new connection
        cut(postgres, store)
        assert store.append_event(job.id, "log", {"text": "after"}) == 1  # its BEGIN, repeated
        with pytest.raises(StoreError, match="cut before the transaction committed: none of it was written"), \
                store.transaction():
            store.set_job_state(job.id, "running")
            cut(postgres, store)
            with pytest.raises(psycopg.OperationalError):  # caught: the transaction must still fail, whole
                store.append_event(job.id, "log", {"text": "lost"})
        assert [e.data["text"] for e in store.events_after(job.id)] == ["after"]
        assert store.get_job(job.id).state == "queued"


KILLED_WRITER = """
import sys, time
from storage import FindingDraft, Store

def tracer(sql, params):
    if sql.startswith("INSERT INTO findings") and params["start_line"] == 50:  # deep inside the batch
        print("paused", flush=True)
        time.sleep(120)

store = Store.open(sys.argv[1], tracer=tracer)
store.add_findings(int(sys.argv[2]), None, "a.py", [FindingDraft(f"problem {i}", "minor", i + 1) for i in range(100)])
"""


def test_a_writer_killed_mid_transaction_leaves_none_of_it_and_no_lock_behind(
        postgres_url: str, tmp_path) -> None:
    with Store.open(postgres_url) as store:
        workspace = store.add_workspace(tmp_path)
        root = Path(__file__).resolve().parents[2]
        writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, postgres_url, str(workspace.id)],
                                  stdout=subprocess.PIPE, text=True, cwd=root,
                                  env={**os.environ, "PYTHONPATH": str(root)})
        try:
            assert writer.stdout.readline() == "paused\n"  # 49 findings written, not committed
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait(30)
        store._conn.execute("SET lock_timeout = '10s'")  # the workspace's row lock must be gone with it
        assert store.add_findings(workspace.id, None, "b.py", [FindingDraft("after", "info", 1)])[0].file == "b.py"
        assert [f.file for f in store.list_findings(workspace.id)] == ["b.py"]
