"""Usage: tokens and dollars per model call, summed per job for budgets and reports."""

from __future__ import annotations

from typing import Any

from storage import values
from storage.errors import NotFoundError
from storage.records import UsageRecord, UsageTotals
from storage.verbs.base import Verbs


class UsageVerbs(Verbs):
    def record_usage(self, job_id: str | None, model: str, prompt_tokens: int, completion_tokens: int,
                     cost: float = 0.0, *, role: str | None = None, at: float | None = None,
                     cached_prompt_tokens: int = 0) -> UsageRecord:
        """Account one model call (``job_id=None`` for calls outside any job); ``cached_prompt_tokens``
        of its prompt tokens came from the provider's prompt cache."""
        row_values: dict[str, Any] = {
            "job_id": job_id, "model": values.text(model, "usage model"),
            "role": values.optional_text(role, "usage role"),
            "prompt_tokens": values.integer(prompt_tokens, "prompt_tokens", minimum=0),
            "completion_tokens": values.integer(completion_tokens, "completion_tokens", minimum=0),
            "cost": values.amount(cost, "cost"), "at": values.now() if at is None else at,
            "cached_prompt_tokens": values.integer(cached_prompt_tokens, "cached_prompt_tokens", minimum=0)}
        with self._conn.write():
            if job_id is not None and not self._conn.scalar("SELECT 1 FROM jobs WHERE id = ?", [job_id]):
                raise NotFoundError(f"no job with id {job_id!r}")
            row = self._conn.one(
                "INSERT INTO usage (job_id, at, model, role, prompt_tokens, completion_tokens, cost, "
                "cached_prompt_tokens) VALUES (:job_id, :at, :model, :role, :prompt_tokens, :completion_tokens, "
                ":cost, :cached_prompt_tokens) RETURNING *",
                row_values)
        assert row is not None
        return values.record(UsageRecord, row)

    def job_usage(self, job_id: str) -> UsageTotals:
        """Totals over the job's model calls (all zero when it made none)."""
        row = self._conn.one(
            "SELECT count(*) AS calls, coalesce(sum(prompt_tokens), 0) AS prompt_tokens, "
            "coalesce(sum(completion_tokens), 0) AS completion_tokens, coalesce(sum(cost), 0.0) AS cost, "
            "coalesce(sum(cached_prompt_tokens), 0) AS cached_prompt_tokens "
            "FROM usage WHERE job_id = ?", [job_id])
        assert row is not None
        return UsageTotals(job_id=job_id, **row)
