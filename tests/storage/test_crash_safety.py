"""A writer process killed with SIGKILL mid-transaction leaves a healthy file and no half-written rows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from storage import FindingDraft, Store

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

BATCH = 300

# Runs in a child process: adds findings in batches of BATCH, one transaction per batch.
WRITER = textwrap.dedent("""
    import os, sys, time
    from storage import FindingDraft, Store

    path, workspace_id, pause_at, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    inserted = 0

    def tracer(sql, params):
        global inserted
        if sql.startswith("INSERT INTO findings"):
            inserted += 1
            if inserted == pause_at:  # deep inside a batch's transaction: tell the parent, then wait
                print("paused", flush=True)
                time.sleep(120)

    store = Store.open(path, tracer=tracer)
    # A tiny page cache makes SQLite spill uncommitted pages into the WAL file: the hard case.
    store._conn.execute("PRAGMA cache_size = 8")
    for batch in range(1000):
        store.add_findings(workspace_id, None, f"file{batch}.py", [
            FindingDraft(f"problem {i} " + "detail " * 40, "minor", i + 1) for i in range(size)])
        print(f"committed {batch} wal={os.path.getsize(path + '-wal')}", flush=True)
""")


def start_writer(db_path: Path, workspace_id: int, pause_at: int) -> subprocess.Popen:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(db_path), str(workspace_id), str(pause_at),
                             str(BATCH)],
                            stdout=subprocess.PIPE, text=True, env=env)


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def assert_whole_batches_only(db_path: Path, workspace_id: int) -> dict[str, int]:
    with Store.open(db_path) as store:
        assert store.integrity_check() == "ok"
        per_file: dict[str, int] = {}
        for finding in store.list_findings(workspace_id):
            per_file[finding.file] = per_file.get(finding.file, 0) + 1
        assert set(per_file.values()) <= {BATCH}, f"a half-written batch survived: {per_file}"
        # the full-text index agrees with the table: nothing indexed that was rolled back
        assert len(store.search_findings("problem detail", limit=100_000)) == BATCH * len(per_file)
        store.add_findings(workspace_id, None, "after.py", [FindingDraft("still writable", "info", 1)])
        return per_file


def test_killed_in_the_middle_of_a_batch_leaves_none_of_it(db_path: Path, tmp_path: Path) -> None:
    with Store.open(db_path) as store:
        workspace_id = store.add_workspace(tmp_path).id
    writer = start_writer(db_path, workspace_id, pause_at=BATCH + BATCH // 2)  # halfway through batch 2
    try:
        committed, wal_size = writer.stdout.readline().split(" wal=")
        assert committed == "committed 0"
        assert writer.stdout.readline().strip() == "paused"
        # uncommitted pages of the second batch have reached the WAL file
        assert db_path.with_name(db_path.name + "-wal").stat().st_size > int(wal_size)
    finally:
        kill(writer)
    assert assert_whole_batches_only(db_path, workspace_id) == {"file0.py": BATCH}


def test_killed_at_an_arbitrary_moment_leaves_only_whole_batches(db_path: Path, tmp_path: Path) -> None:
    with Store.open(db_path) as store:
        workspace_id = store.add_workspace(tmp_path).id
    writer = start_writer(db_path, workspace_id, pause_at=0)  # never pauses
    try:
        for _ in range(3):
            assert writer.stdout.readline().startswith("committed")
        time.sleep(0.05)  # somewhere inside a later batch, or between two
    finally:
        kill(writer)
    assert len(assert_whole_batches_only(db_path, workspace_id)) >= 3
