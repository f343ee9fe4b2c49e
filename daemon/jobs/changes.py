"""Proposed changes, applied or discarded: the domain work behind ``POST /v1/changes/{id}/apply``
and ``…/discard`` (the routes only translate; the daemon and the team server hold one each).

Applying a change writes its files (unless the editor already did, through its own workspace
edit), tells the watcher that the daemon wrote that content (so the save starts no review),
rewards the experience of the job that proposed it (what led to an applied change worked), and
records the outcome on the job's event stream::

    service = ChangeService(store, jobs, watch)
    change, root = await service.apply(change_id, write=True)   # NotFound, Conflict
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from daemon.errors import Conflict, NotFound
from daemon.events import Event
from daemon.jobs.manager import JobManager
from daemon.payloads import LogData

if TYPE_CHECKING:
    from storage import AsyncStore, Change

APPLIED_BONUS = 0.3  # added to the reward of a job's agent experiences when the user applies its change


class WrittenFiles(Protocol):
    """What the service tells the watcher (``daemon.watch.registry.WatchRegistry``): the daemon wrote these."""

    def mark_written(self, root: str, files: dict[str, str]) -> None: ...


class ChangeService:
    def __init__(self, store: AsyncStore, jobs: JobManager, watch: WrittenFiles) -> None:
        self.store, self.jobs, self.watch = store, jobs, watch

    async def get(self, change_id: str) -> tuple[Change, str | None]:
        """The change and its workspace's root (None when it has none)."""
        change = await self.store.get_change(change_id)
        if change is None:
            raise NotFound(f"no proposed change with id {change_id!r}")
        return change, await self.jobs.workspace_root(change.workspace_id)

    async def apply(self, change_id: str, *, write: bool) -> tuple[Change, str]:
        """Apply a proposed change; ``write`` false: the editor wrote the files itself."""
        from daemon.workspace.change import ChangeConflict, ProposedDiff, apply_change

        change, root = await self.get(change_id)
        if str(change.state) != "proposed":
            raise Conflict(f"change {change.id} was already {change.state}")
        if root is None or not isinstance(change.edits, dict):
            raise Conflict(f"change {change.id} has no workspace or no structured edits to apply")
        proposed = ProposedDiff.from_dict(change.edits)
        if write:
            self.watch.mark_written(root, {e.path: e.after for e in proposed.edits if e.after is not None})
            try:
                written = await asyncio.to_thread(apply_change, Path(root), proposed)
            except ChangeConflict as exc:
                raise Conflict(str(exc)) from None
        else:
            written = list(proposed.files)
        applied = await self.store.set_change_state(change.id, "applied")
        await self.store.reward_job_experience(change.job_id, APPLIED_BONUS)
        await self.jobs.record_event(change.job_id, change.workspace_id, Event(LogData(
            level="info", text=f"change {change.id} applied: {', '.join(written)}", change_id=change.id, files=written,
            action="applied")))
        return applied, root

    async def discard(self, change_id: str) -> tuple[Change, str | None]:
        change, root = await self.get(change_id)
        if str(change.state) == "applied":
            raise Conflict(f"change {change.id} was already applied; it cannot be discarded")
        discarded = await self.store.set_change_state(change.id, "discarded")
        await self.jobs.record_event(change.job_id, change.workspace_id, Event(LogData(
            level="info", text=f"change {change.id} discarded", change_id=change.id, action="discarded")))
        return discarded, root
