"""Proposed changes: what a team wants to do to the user's files, waiting for consent."""

from __future__ import annotations

import uuid
from typing import Any

from storage import values
from storage.errors import NotFoundError
from storage.records import Change, ChangeState
from storage.verbs.base import UNSET, Verbs


def _change(row: dict[str, Any]) -> Change:
    return Change(id=row["id"], job_id=row["job_id"], workspace_id=row["workspace_id"], diff=row["diff"],
                  edits=values.from_json(row["edits"]), base_hashes=values.from_json(row["base_hashes"]),
                  state=ChangeState(row["state"]), created=row["created"], updated=row["updated"])


class ChangeVerbs(Verbs):
    def propose_change(self, job_id: str, diff: str, *, edits: Any = None,
                       base_hashes: dict[str, str] | None = None, workspace_id: int | None = UNSET) -> Change:
        """Keep a change for the user to apply or discard.

        ``base_hashes`` maps each touched file to the hash of its content the change was made
        against, so applying it later can detect that the file moved on. ``workspace_id``
        defaults to the job's workspace.
        """
        diff = values.text(diff, "change diff")
        edits_json = values.to_json(edits, "change edits")
        hashes = base_hashes or {}
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in hashes.items()):
            raise ValueError("change base_hashes must map file paths (str) to hashes (str)")
        hashes_json = values.to_json(hashes, "change base_hashes")
        at = values.now()
        with self._conn.write():
            job_workspace = self._conn.one("SELECT workspace_id FROM jobs WHERE id = ?", [job_id])
            if job_workspace is None:
                raise NotFoundError(f"no job with id {job_id!r}; a change must belong to a job")
            if workspace_id is UNSET:
                workspace_id = job_workspace["workspace_id"]
            elif workspace_id is not None and not self._conn.scalar(
                    "SELECT 1 FROM workspaces WHERE id = ?", [workspace_id]):
                raise NotFoundError(f"no workspace with id {workspace_id}")
            row = self._conn.one(
                "INSERT INTO changes (id, job_id, workspace_id, diff, edits, base_hashes, state, created, "
                "updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                [str(uuid.uuid4()), job_id, workspace_id, diff, edits_json, hashes_json,
                 ChangeState.PROPOSED.value, at, at])
        assert row is not None
        return _change(row)

    def get_change(self, change_id: str) -> Change | None:
        row = self._conn.one("SELECT * FROM changes WHERE id = ?", [change_id])
        return _change(row) if row else None

    def list_changes(self, *, job_id: str | None = None, workspace_id: int | None = None,
                     state: ChangeState | str | None = None, limit: int = 100) -> list[Change]:
        """Changes, newest first, filtered by job, workspace and state."""
        where = ["TRUE"]
        params: dict[str, Any] = {"limit": values.integer(limit, "limit", minimum=0)}
        if job_id is not None:
            where.append("job_id = :job")
            params["job"] = job_id
        if workspace_id is not None:
            where.append("workspace_id = :ws")
            params["ws"] = workspace_id
        if state is not None:
            where.append("state = :state")
            params["state"] = values.enum_value(ChangeState, state, "change state").value
        rows = self._conn.all(f"SELECT * FROM changes WHERE {' AND '.join(where)} "
                              "ORDER BY created DESC, rowid DESC LIMIT :limit", params)
        return [_change(row) for row in rows]

    def set_change_state(self, change_id: str, state: ChangeState | str) -> Change:
        """Mark a proposed change applied or discarded; a decided change cannot be decided again."""
        state = values.enum_value(ChangeState, state, "change state")
        with self._conn.write():
            row = self._conn.one(f"SELECT * FROM changes WHERE id = ?{self._conn.for_update}", [change_id])
            change = _change(row) if row else None
            if change is None:
                raise NotFoundError(f"no change with id {change_id!r}")
            if change.state is state:
                return change
            if change.state is not ChangeState.PROPOSED:
                raise ValueError(f"change {change_id} was already {change.state.value}; "
                                 f"it cannot become {state.value}")
            row = self._conn.one("UPDATE changes SET state = ?, updated = ? WHERE id = ? RETURNING *",
                                 [state.value, values.now(), change_id])
        assert row is not None
        return _change(row)
