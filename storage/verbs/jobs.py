"""Jobs: the unit of work (ask, build, change, review, test), queued, run, resumed after a restart."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from storage import values
from storage.errors import NotFoundError
from storage.records import Job, JobKind, JobState
from storage.verbs.base import UNSET, Verbs


def _job(row: dict[str, Any]) -> Job:
    return Job(
        id=row["id"], kind=JobKind(row["kind"]), state=JobState(row["state"]),
        workspace_id=row["workspace_id"], priority=row["priority"],
        request=values.from_json(row["request"]), result=values.from_json(row["result"]),
        error=row["error"], created=row["created"], updated=row["updated"], started=row["started"],
        finished=row["finished"], last_phase=row["last_phase"],
        checkpoint=values.from_json(row["checkpoint"]), last_seq=row["last_seq"])


class JobVerbs(Verbs):
    def record_job(self, kind: JobKind | str, request: dict[str, Any], *, workspace_id: int | None = None,
                   priority: int = 0, job_id: str | None = None) -> Job:
        """Queue a new job; ``job_id`` defaults to a fresh UUID."""
        kind = values.enum_value(JobKind, kind, "job kind")
        job_id = values.text(job_id, "job id") if job_id is not None else str(uuid.uuid4())
        priority = values.integer(priority, "priority")
        request_json = values.to_json(request, "job request")
        at = values.now()
        with self._conn.write():
            if workspace_id is not None and not self._conn.scalar(
                    "SELECT 1 FROM workspaces WHERE id = ?", [workspace_id]):
                raise NotFoundError(f"no workspace with id {workspace_id}; add_workspace it first")
            if self._conn.scalar("SELECT 1 FROM jobs WHERE id = ?", [job_id]):
                raise ValueError(f"a job with id {job_id!r} already exists")
            row = self._conn.one(
                "INSERT INTO jobs (id, workspace_id, kind, state, priority, request, created, updated) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                [job_id, workspace_id, kind.value, JobState.QUEUED.value, priority, request_json, at, at])
        assert row is not None
        return _job(row)

    def get_job(self, job_id: str) -> Job | None:
        row = self._conn.one("SELECT * FROM jobs WHERE id = ?", [job_id])
        return _job(row) if row else None

    def _require_job(self, job_id: str, *, lock: bool = False) -> Job:
        """The job; with ``lock``, its row stays locked until the transaction ends (it is about to change)."""
        row = self._conn.one(f"SELECT * FROM jobs WHERE id = ?{self._conn.for_update if lock else ''}", [job_id])
        if row is None:
            raise NotFoundError(f"no job with id {job_id!r}")
        return _job(row)

    def list_jobs(self, *, state: JobState | str | Iterable[JobState | str] | None = None,
                  workspace_id: int | None = None, kind: JobKind | str | None = None,
                  limit: int = 100) -> list[Job]:
        """Jobs, newest first; ``state`` may be one state or several."""
        where = ["TRUE"]
        params: dict[str, Any] = {"limit": values.integer(limit, "limit", minimum=0)}
        if state is not None:
            states = values.enum_values(JobState, state, "job state")
            where.append(f"state IN ({', '.join(f':s{i}' for i in range(len(states)))})")
            params.update({f"s{i}": s.value for i, s in enumerate(states)})
        if workspace_id is not None:
            where.append("workspace_id = :ws")
            params["ws"] = workspace_id
        if kind is not None:
            where.append("kind = :kind")
            params["kind"] = values.enum_value(JobKind, kind, "job kind").value
        rows = self._conn.all(f"SELECT * FROM jobs WHERE {' AND '.join(where)} "
                              "ORDER BY created DESC, rowid DESC LIMIT :limit", params)
        return [_job(row) for row in rows]

    def claim_next_job(self, min_priority: int | None = None) -> Job | None:
        """Move the most urgent queued job (highest priority, then oldest; at least ``min_priority``
        when given) to running, atomically (two claimers never get the same job)."""
        with self._conn.write():
            row = self._conn.one("SELECT id FROM jobs WHERE state = 'queued' AND priority >= ? "
                                 f"ORDER BY priority DESC, created, rowid LIMIT 1{self._conn.skip_locked}",
                                 [-(1 << 62) if min_priority is None else min_priority])
            return self.set_job_state(row["id"], JobState.RUNNING) if row else None

    def set_job_state(self, job_id: str, state: JobState | str, *, error: str | None = UNSET,
                      result: Any = UNSET) -> Job:
        """Move a job to ``state``, stamping ``started``/``finished``.

        A finished job (succeeded, failed, cancelled) is final: moving it elsewhere is a
        ValueError. Setting the state it already has changes nothing.
        """
        state = values.enum_value(JobState, state, "job state")
        with self._conn.write():
            job = self._require_job(job_id, lock=True)
            if job.state is state and error is UNSET and result is UNSET:
                return job
            if job.state.is_terminal and job.state is not state:
                raise ValueError(f"job {job_id} already {job.state.value}; it cannot become {state.value}")
            at = values.now()
            changes: dict[str, Any] = {"state": state.value}
            if state is JobState.RUNNING and job.started is None:
                changes["started"] = at
            if state.is_terminal and job.finished is None:
                changes["finished"] = at
            return self._update(job_id, changes, error=error, result=result, at=at)

    def update_job(self, job_id: str, *, result: Any = UNSET, error: str | None = UNSET,
                   last_phase: str | None = UNSET, checkpoint: Any = UNSET, priority: int = UNSET,
                   request: dict[str, Any] = UNSET) -> Job:
        """Change the given fields (``None`` clears one); the state changes only via ``set_job_state``."""
        changes: dict[str, Any] = {}
        if last_phase is not UNSET:
            changes["last_phase"] = values.optional_text(last_phase, "last phase")
        if checkpoint is not UNSET:
            changes["checkpoint"] = None if checkpoint is None else values.to_json(checkpoint, "checkpoint")
        if priority is not UNSET:
            changes["priority"] = values.integer(priority, "priority")
        if request is not UNSET:
            changes["request"] = values.to_json(request, "job request")
        with self._conn.write():
            self._require_job(job_id)
            return self._update(job_id, changes, error=error, result=result, at=values.now())

    def _update(self, job_id: str, changes: dict[str, Any], *, error: Any, result: Any, at: float) -> Job:
        if error is not UNSET:
            changes["error"] = values.optional_text(error, "job error")
        if result is not UNSET:
            changes["result"] = None if result is None else values.to_json(result, "job result")
        changes["updated"] = at
        assignments = ", ".join(f"{column} = :{column}" for column in changes)
        row = self._conn.one(f"UPDATE jobs SET {assignments} WHERE id = :id RETURNING *",
                             {**changes, "id": job_id})
        assert row is not None
        return _job(row)
