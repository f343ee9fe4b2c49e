"""Job events: each job's ordered log (phase changes, messages, tool runs, usage), searchable."""

from __future__ import annotations

from typing import Any

from storage import values
from storage.errors import NotFoundError
from storage.records import JobEvent
from storage.search import search_rows
from storage.verbs.base import NO_LIMIT, Verbs


def _event(row: dict[str, Any]) -> JobEvent:
    return JobEvent(job_id=row["job_id"], seq=row["seq"], at=row["at"], kind=row["kind"],
                    data=values.from_json(row["data"]), phase=row["phase"], role=row["role"])


class EventVerbs(Verbs):
    def append_event(self, job_id: str, kind: str, data: dict[str, Any] | None = None, *,
                     phase: str | None = None, role: str | None = None, at: float | None = None) -> int:
        """Add an event at the end of the job's log and return its ``seq`` (1, 2, 3, ... per job).

        Safe from any number of connections at once: the seq is taken under the write lock.
        """
        kind = str(values.text(kind, "event kind"))
        data = {} if data is None else data
        data_json = values.to_json(data, "event data")
        phase = values.optional_text(phase, "event phase")
        role = values.optional_text(role, "event role")
        with self._conn.write():
            seq = self._conn.scalar(
                "UPDATE jobs SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq", [job_id])
            if seq is None:
                raise NotFoundError(f"no job with id {job_id!r}; record_job it before appending events")
            self._conn.execute(
                "INSERT INTO job_events (job_id, seq, at, kind, phase, role, data, text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [job_id, seq, values.now() if at is None else at, kind, phase, role, data_json,
                 values.searchable_text(data)])
        return int(seq)

    def events_after(self, job_id: str, seq: int = 0, *, limit: int | None = None) -> list[JobEvent]:
        """The job's events with seq greater than ``seq``, in order (``seq=0``: from the start)."""
        rows = self._conn.all(
            "SELECT * FROM job_events WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            [job_id, seq, NO_LIMIT if limit is None else values.integer(limit, "limit", minimum=0)])
        return [_event(row) for row in rows]

    def search_events(self, query: str, *, job_id: str | None = None, workspace_id: int | None = None,
                      limit: int = 20) -> list[JobEvent]:
        """Events whose text contains every word of ``query`` (plain words, no FTS syntax), best first."""
        where: list[str] = []
        params: dict[str, Any] = {}
        if job_id is not None:
            where.append("t.job_id = :job")
            params["job"] = job_id
        if workspace_id is not None:
            where.append("t.job_id IN (SELECT id FROM jobs WHERE workspace_id = :ws)")
            params["ws"] = workspace_id
        rows = search_rows(self._conn, "job_events", query, where=" AND ".join(where), params=params,
                           limit=limit)
        return [_event(row) for row in rows]
