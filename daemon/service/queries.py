"""What the API asks of any node that keeps its jobs in a store: the laptop daemon
(:mod:`daemon.service.daemon`) and a team server's API node (:mod:`daemon.service.team`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from daemon.messages import ACTIVE_STATES

if TYPE_CHECKING:
    from storage import AsyncStore


class StoreQueries:
    store: AsyncStore

    async def _is_queued(self, job_id: str) -> bool:
        job = await self.store.get_job(job_id)
        return job is not None and job.state.value == "queued"

    async def job_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for job in await self.store.list_jobs(limit=1_000_000):
            counts[job.state.value] = counts.get(job.state.value, 0) + 1
        return counts

    async def active_counts(self) -> dict[str, int]:
        """Jobs per active state, every active state named (0 when none)."""
        active = await self.store.list_jobs(state=ACTIVE_STATES, limit=100_000)
        return {state: sum(1 for j in active if j.state.value == state) for state in ACTIVE_STATES}
