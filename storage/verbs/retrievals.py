"""The retrieval log: every time an experience reached a prompt (or screened a finding), and why it
matched: what it was used as, the query's words it shares, and its relevance.

::

    store.count_retrievals([Retrieval(12, "example", ("clamp", "high"), 0.42)], job_id="job-2", phase="fix")
    store.count_retrievals([13], job_id="job-2", phase="review")   # no reason known: logged all the same
    store.list_retrievals(job_id="job-2")        # [RetrievalRecord(experience_id=12, why="example", ...), ...]
    store.list_retrievals(experience_id=12)      # where one experience was used, newest first

Counting a retrieval also adds one to the experience's ``uses`` (what refinement keeps by).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from storage import values
from storage.verbs.base import NO_LIMIT, Verbs

MAX_MATCHED = 24  # words kept per retrieval: enough to say why, never a whole prompt


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Why one experience was retrieved. ``why``: what it was used as (``hint``, ``solution``,
    ``example``, ``workflow``, ``learning``, ``screening``); ``matched``: the query's words it shares;
    ``relevance``: its similarity to the query (None where it was not ranked by one)."""

    experience_id: int
    why: str = ""
    matched: tuple[str, ...] = ()
    relevance: float | None = None


@dataclass(frozen=True, slots=True)
class RetrievalRecord:
    """One row of the log: a :class:`Retrieval` with the job, the phase and when."""

    id: int
    experience_id: int
    job_id: str | None
    phase: str | None
    at: float
    why: str = ""
    matched: tuple[str, ...] = ()
    relevance: float | None = None


def _record(row: dict[str, Any]) -> RetrievalRecord:
    matched = values.from_json(row["matched"]) or []
    return values.record(RetrievalRecord, row, matched=tuple(str(w) for w in matched))


class RetrievalVerbs(Verbs):
    def count_retrievals(self, retrieved: Iterable[int | Retrieval], *, job_id: str | None = None,
                         phase: str | None = None) -> None:
        """Record that these experiences reached a prompt (an id alone: no reason known): ``uses`` += 1
        and a log row each, with its reason. An experience named twice counts once (its first reason)."""
        at = values.now()
        reasons: dict[int, Retrieval] = {}
        for item in retrieved:
            reason = item if isinstance(item, Retrieval) else Retrieval(values.integer(item, "experience id"))
            reasons.setdefault(reason.experience_id, reason)
        with self._conn.write():
            for experience_id, reason in reasons.items():
                if self._conn.execute("UPDATE experiences SET uses = uses + 1, last_used = ? WHERE id = ?",
                                      [at, experience_id]).rowcount:
                    matched = values.to_json(list(reason.matched[:MAX_MATCHED]), "matched words")
                    relevance = None if reason.relevance is None else round(float(reason.relevance), 4)
                    self._conn.execute(
                        "INSERT INTO experience_retrievals (experience_id, job_id, phase, at, why, matched, relevance) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [experience_id, job_id, phase, at, reason.why, matched, relevance])

    def list_retrievals(self, *, job_id: str | None = None, experience_id: int | None = None,
                        limit: int | None = 200) -> list[RetrievalRecord]:
        """The log, oldest first for a job (the order its prompts were built), newest first otherwise."""
        where: list[str] = []
        params: dict[str, Any] = {}
        if job_id is not None:
            where.append("job_id = :job_id")
            params["job_id"] = job_id
        if experience_id is not None:
            where.append("experience_id = :experience_id")
            params["experience_id"] = experience_id
        order = "id" if job_id is not None else "id DESC"
        params["limit"] = NO_LIMIT if limit is None else values.integer(limit, "limit", minimum=0)
        rows = self._conn.all(f"SELECT * FROM experience_retrievals {'WHERE ' + ' AND '.join(where) if where else ''}"
                              f" ORDER BY {order} LIMIT :limit", params)
        return [_record(row) for row in rows]
