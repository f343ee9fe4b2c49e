"""Findings: review comments on a file, shown as diagnostics, deduplicated by fingerprint."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from storage import values
from storage.errors import NotFoundError, StaleReview
from storage.records import Finding, FindingDraft, FindingState, Severity
from storage.search import search_rows
from storage.verbs.base import NO_LIMIT, Verbs

_COLUMNS = ("start_line", "start_col", "end_line", "end_col", "severity", "message", "rule",
            "suggested_fix", "fingerprint")


def _finding(row: dict[str, Any]) -> Finding:
    return values.record(Finding, row, severity=Severity(row["severity"]), state=FindingState(row["state"]))


def default_fingerprint(file: str, rule: str | None, message: str) -> str:
    """Same file, rule and message (ignoring case and spacing) = same finding, wherever it moved."""
    normal = " ".join(message.lower().split())
    return hashlib.sha256(f"{file}\0{rule or ''}\0{normal}".encode()).hexdigest()[:32]


def _checked(draft: FindingDraft | Mapping[str, Any], file: str) -> dict[str, Any]:
    """The row values of one reported finding, or a ValueError saying what is wrong with it."""
    if isinstance(draft, Mapping):
        draft = FindingDraft.from_dict(dict(draft))
    start_line = values.integer(draft.start_line, "finding start_line", minimum=1)
    start_col = values.integer(draft.start_col, "finding start_col", minimum=1)
    end_line = start_line if draft.end_line is None else values.integer(
        draft.end_line, "finding end_line", minimum=start_line)
    end_col = None if draft.end_col is None else values.integer(draft.end_col, "finding end_col", minimum=1)
    if end_col is not None and end_line == start_line and end_col < start_col:
        raise ValueError(f"finding ends (col {end_col}) before it starts (col {start_col}) on line {start_line}")
    message = values.text(draft.message, "finding message")
    rule = values.optional_text(draft.rule, "finding rule")
    fingerprint = (values.text(draft.fingerprint, "finding fingerprint") if draft.fingerprint is not None
                   else default_fingerprint(file, rule, message))
    return {"start_line": start_line, "start_col": start_col, "end_line": end_line, "end_col": end_col,
            "severity": values.enum_value(Severity, draft.severity, "finding severity").value,
            "message": message, "rule": rule,
            "suggested_fix": values.optional_text(draft.suggested_fix, "finding suggested_fix"),
            "fingerprint": fingerprint}


class FindingVerbs(Verbs):
    def add_findings(self, workspace_id: int, job_id: str | None, file: str,
                     findings: Iterable[FindingDraft | Mapping[str, Any]], *,
                     replace_open: bool = True, content_hash: str | None = None,
                     read_at: float | None = None) -> list[Finding]:
        """Record what a review of ``file`` (workspace-relative) reported, in one transaction.

        A finding whose fingerprint is already open updates that row (its range may have moved)
        instead of adding a twin; one the user dismissed stays dismissed and is not returned.
        With ``replace_open``, open findings of the file that this review no longer reports
        become ``resolved``. Returns the open findings for what was reported, in input order.

        ``content_hash`` and ``read_at`` say which text of the file the review read, and when:
        when the file's findings already come from a different text read later, nothing is
        written and :class:`~storage.errors.StaleReview` is raised (newest content wins).
        """
        file = values.relative_file(file)
        drafts = [_checked(draft, file) for draft in findings]  # all checked before anything is written
        at = values.now()
        with self._conn.write():
            # the workspace's row lock orders concurrent reviews of its files (SQLite: the write lock)
            if not self._conn.scalar(f"SELECT 1 FROM workspaces WHERE id = ?{self._conn.for_update}",
                                     [workspace_id]):
                raise NotFoundError(f"no workspace with id {workspace_id}")
            if job_id is not None and not self._conn.scalar("SELECT 1 FROM jobs WHERE id = ?", [job_id]):
                raise NotFoundError(f"no job with id {job_id!r}")
            if content_hash is not None:
                self._claim_content(workspace_id, file, content_hash, at if read_at is None else read_at, job_id)
            known = self._conn.all(
                "SELECT id, fingerprint, state FROM findings WHERE workspace_id = ? AND file = ? "
                "AND state IN ('open', 'dismissed')", [workspace_id, file])
            open_ids = {row["fingerprint"]: row["id"] for row in known if row["state"] == "open"}
            dismissed = {row["fingerprint"] for row in known if row["state"] == "dismissed"}
            reported: set[str] = set()
            stored: list[Finding] = []
            for draft in drafts:
                fingerprint = draft["fingerprint"]
                if fingerprint in reported or (fingerprint in dismissed and fingerprint not in open_ids):
                    continue
                reported.add(fingerprint)
                if fingerprint in open_ids:
                    assignments = ", ".join(f"{column} = :{column}" for column in _COLUMNS)
                    row = self._conn.one(
                        f"UPDATE findings SET {assignments}, job_id = :job_id, content_hash = :hash, "
                        "updated = :at WHERE id = :id RETURNING *",
                        {**draft, "job_id": job_id, "at": at, "id": open_ids[fingerprint], "hash": content_hash})
                else:
                    row = self._conn.one(
                        f"INSERT INTO findings (workspace_id, job_id, file, {', '.join(_COLUMNS)}, state, "
                        f"created, updated, content_hash) VALUES (:workspace_id, :job_id, :file, "
                        f"{', '.join(':' + c for c in _COLUMNS)}, 'open', :at, :at, :hash) RETURNING *",
                        {**draft, "workspace_id": workspace_id, "job_id": job_id, "file": file, "at": at,
                         "hash": content_hash})
                assert row is not None
                stored.append(_finding(row))
            if replace_open:
                stale = [finding_id for fp, finding_id in open_ids.items() if fp not in reported]
                for finding_id in stale:
                    self._conn.execute("UPDATE findings SET state = 'resolved', updated = ? WHERE id = ?",
                                       [at, finding_id])
        return stored

    def _claim_content(self, workspace_id: int, file: str, content_hash: str, read_at: float,
                       job_id: str | None) -> None:
        """Record that a review read this text of the file at ``read_at``, unless a review already
        read a different text later (then :class:`StaleReview`)."""
        newest = self._conn.one("SELECT content_hash, read_at, job_id FROM reviewed_content "
                                "WHERE workspace_id = ? AND file = ?", [workspace_id, file])
        if newest is not None and newest["read_at"] > read_at:
            if newest["content_hash"] != content_hash:
                raise StaleReview(f"{file}: this review read older content than job {newest['job_id']}'s, "
                                  "whose findings stay")
            return
        self._conn.execute(
            "INSERT INTO reviewed_content (workspace_id, file, content_hash, read_at, job_id) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace_id, file) DO UPDATE SET "
            "content_hash = excluded.content_hash, read_at = excluded.read_at, job_id = excluded.job_id",
            [workspace_id, file, content_hash, read_at, job_id])

    def get_finding(self, finding_id: int) -> Finding | None:
        row = self._conn.one("SELECT * FROM findings WHERE id = ?", [finding_id])
        return _finding(row) if row else None

    def list_findings(self, workspace_id: int, file: str | None = None, *,
                      state: FindingState | str | None = FindingState.OPEN,
                      limit: int | None = None) -> list[Finding]:
        """A workspace's findings (of one file, in one state; ``state=None``: all), by file and line."""
        where = ["workspace_id = :ws"]
        params: dict[str, Any] = {"ws": workspace_id}
        if file is not None:
            where.append("file = :file")
            params["file"] = values.relative_file(file)
        if state is not None:
            where.append("state = :state")
            params["state"] = values.enum_value(FindingState, state, "finding state").value
        params["limit"] = NO_LIMIT if limit is None else values.integer(limit, "limit", minimum=0)
        rows = self._conn.all(f"SELECT * FROM findings WHERE {' AND '.join(where)} "
                              "ORDER BY file, start_line, start_col, id LIMIT :limit", params)
        return [_finding(row) for row in rows]

    def set_finding_state(self, finding_id: int, state: FindingState | str) -> Finding:
        """Record what became of a finding (applied, dismissed, resolved, or open again)."""
        state = values.enum_value(FindingState, state, "finding state")
        with self._conn.write():
            finding = self.get_finding(finding_id)
            if finding is None:
                raise NotFoundError(f"no finding with id {finding_id}")
            self._conn.execute(f"SELECT 1 FROM workspaces WHERE id = ?{self._conn.for_update}", [finding.workspace_id])
            if state is FindingState.OPEN and finding.state is not FindingState.OPEN and self._conn.scalar(
                    "SELECT 1 FROM findings WHERE workspace_id = ? AND file = ? AND fingerprint = ? "
                    "AND state = 'open'", [finding.workspace_id, finding.file, finding.fingerprint]):
                raise ValueError(f"finding {finding_id} cannot be reopened: the same finding is already "
                                 "open in that file")
            row = self._conn.one("UPDATE findings SET state = ?, updated = ? WHERE id = ? RETURNING *",
                                 [state.value, values.now(), finding_id])
        assert row is not None
        return _finding(row)

    def search_findings(self, query: str, *, workspace_id: int | None = None,
                        state: FindingState | str | None = None, limit: int = 20) -> list[Finding]:
        """Findings whose message, rule or file contains every word of ``query``, best first."""
        where: list[str] = []
        params: dict[str, Any] = {}
        if workspace_id is not None:
            where.append("t.workspace_id = :ws")
            params["ws"] = workspace_id
        if state is not None:
            where.append("t.state = :state")
            params["state"] = values.enum_value(FindingState, state, "finding state").value
        rows = search_rows(self._conn, "findings", query, where=" AND ".join(where), params=params,
                           limit=limit)
        return [_finding(row) for row in rows]
