"""What the bot remembers across restarts, in one small SQLite file (``TROUPE_HOME/slack.db``).

* ``threads``: one Slack thread = one session: its requester, workspace, current job, status
  message and the question it waits on.
* ``jobs``: every job started from Slack, with its thread (so a button press or a follow-up
  finds its way back) and the message that carries its buttons.
* ``seen``: delivery keys (event ids, message ids) already handled; Slack's retries stop here.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    channel TEXT NOT NULL, thread_ts TEXT NOT NULL, requester TEXT, workspace TEXT, job_id TEXT,
    status_ts TEXT, question_id TEXT, pending_prompt TEXT, updated REAL,
    PRIMARY KEY (channel, thread_ts));
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, channel TEXT NOT NULL, thread_ts TEXT NOT NULL, requester TEXT,
    kind TEXT, change_id TEXT, summary_ts TEXT, created REAL);
CREATE INDEX IF NOT EXISTS jobs_thread ON jobs (channel, thread_ts, created);
CREATE TABLE IF NOT EXISTS seen (key TEXT PRIMARY KEY, at REAL);
"""
SEEN_KEEP_S = 3 * 24 * 3600


@dataclass
class Thread:
    channel: str
    thread_ts: str
    requester: str | None = None
    workspace: str | None = None
    job_id: str | None = None
    status_ts: str | None = None
    question_id: str | None = None
    pending_prompt: str | None = None


@dataclass
class JobRecord:
    job_id: str
    channel: str
    thread_ts: str
    requester: str | None
    kind: str | None = None
    change_id: str | None = None
    summary_ts: str | None = None


class BotState:
    """Thread-safe and synchronous: each call is one short transaction (microseconds on local disk)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)
        self._db.execute("DELETE FROM seen WHERE at < ?", (time.time() - SEEN_KEEP_S,))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def first_time(self, *keys: str) -> bool:
        """True when none of ``keys`` was seen before; all of them are remembered either way."""
        with self._lock:
            known = any(self._db.execute("SELECT 1 FROM seen WHERE key = ?", (k,)).fetchone() for k in keys if k)
            self._db.executemany("INSERT OR IGNORE INTO seen (key, at) VALUES (?, ?)",
                                 [(k, time.time()) for k in keys if k])
            return not known

    # ---------------------------------------------------------------- threads

    def thread(self, channel: str, thread_ts: str) -> Thread | None:
        with self._lock:
            row = self._db.execute(
                "SELECT channel, thread_ts, requester, workspace, job_id, status_ts, question_id, pending_prompt "
                "FROM threads WHERE channel = ? AND thread_ts = ?", (channel, thread_ts)).fetchone()
        return Thread(*row) if row else None

    def save_thread(self, thread: Thread) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO threads (channel, thread_ts, requester, workspace, job_id, status_ts, "
                "question_id, pending_prompt, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (thread.channel, thread.thread_ts, thread.requester, thread.workspace, thread.job_id,
                 thread.status_ts, thread.question_id, thread.pending_prompt, time.time()))

    def threads_with_jobs(self) -> list[Thread]:
        with self._lock:
            rows = self._db.execute(
                "SELECT channel, thread_ts, requester, workspace, job_id, status_ts, question_id, pending_prompt "
                "FROM threads WHERE job_id IS NOT NULL").fetchall()
        return [Thread(*row) for row in rows]

    # ---------------------------------------------------------------- jobs

    def add_job(self, record: JobRecord) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO jobs (job_id, channel, thread_ts, requester, kind, change_id, summary_ts, "
                "created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (record.job_id, record.channel, record.thread_ts, record.requester, record.kind, record.change_id,
                 record.summary_ts, time.time()))

    def job(self, job_id: str) -> JobRecord | None:
        with self._lock:
            row = self._db.execute(
                "SELECT job_id, channel, thread_ts, requester, kind, change_id, summary_ts FROM jobs "
                "WHERE job_id = ?", (job_id,)).fetchone()
        return JobRecord(*row) if row else None

    def update_job(self, job_id: str, **fields: str | None) -> None:
        allowed = {"change_id", "summary_ts"}
        if not fields or set(fields) - allowed:
            raise ValueError(f"only {sorted(allowed)} can change")
        sets = ", ".join(f"{name} = ?" for name in fields)
        with self._lock:
            self._db.execute(f"UPDATE jobs SET {sets} WHERE job_id = ?", (*fields.values(), job_id))

    def thread_jobs(self, channel: str, thread_ts: str) -> list[JobRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT job_id, channel, thread_ts, requester, kind, change_id, summary_ts FROM jobs "
                "WHERE channel = ? AND thread_ts = ? ORDER BY created", (channel, thread_ts)).fetchall()
        return [JobRecord(*row) for row in rows]
