"""A team server's audit log: who submitted, applied, discarded or cancelled what, who added or
removed a person, and who was held back by a limit. Append-only; ``troupe server audit`` lists it.

::

    store.record_audit("ada", "submit", "3f2a…", "ask in /team/shop")
    store.record_audit("ada", "submit", "9c1d…", "ask in /team/shop", via="slack-bot")  # a bot acting for ada
    store.list_audit(limit=50)                       # newest first
    store.active_jobs_of("ada")                      # her jobs queued, running or waiting for an answer

A row holds names, ids and a short description the caller writes from them (never a request's
text, never a token): an audit log is read by more people than the secrets it could leak.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from storage import values
from storage.verbs.base import Verbs

ACTIONS = ("submit", "apply", "discard", "cancel", "add-person", "remove-person", "limited")


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: float
    actor: str  # the person (for a bot acting for one: that person; ``via`` names the bot)
    action: str
    target: str = ""  # a job, change or person
    detail: str = ""
    via: str | None = None


def _entry(row: dict[str, Any]) -> AuditEntry:
    return values.record(AuditEntry, row)


class AuditVerbs(Verbs):
    def record_audit(self, actor: str, action: str, target: str = "", detail: str = "", *,
                     via: str | None = None) -> AuditEntry:
        if action not in ACTIONS:
            raise ValueError(f"audit action {action!r} is not one of {', '.join(ACTIONS)}")
        row = self._conn.one(
            "INSERT INTO audit (at, actor, action, target, detail, via) VALUES (?, ?, ?, ?, ?, ?) RETURNING *",
            [values.now(), values.text(actor, "actor"), action, target, detail[:500], via])
        assert row is not None
        return _entry(row)

    def list_audit(self, *, limit: int = 100, actor: str | None = None, action: str | None = None,
                   since: float | None = None) -> list[AuditEntry]:
        """Newest first."""
        where = ["at >= :since"]
        params: dict[str, Any] = {"since": since or 0.0, "limit": values.integer(limit, "limit", minimum=0)}
        for column, value in (("actor", actor), ("action", action)):
            if value is not None:
                where.append(f"{column} = :{column}")
                params[column] = value
        rows = self._conn.all(f"SELECT * FROM audit WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT :limit",
                              params)
        return [_entry(row) for row in rows]

    def active_jobs_of(self, actor: str) -> int:
        """How many jobs ``actor`` submitted are queued, running or waiting for an answer."""
        return int(self._conn.scalar(
            "SELECT count(*) FROM audit JOIN jobs ON jobs.id = audit.target WHERE audit.actor = ? "
            "AND audit.action = 'submit' AND jobs.state IN ('queued', 'running', 'waiting_for_answer')", [actor]))
