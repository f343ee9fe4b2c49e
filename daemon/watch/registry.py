"""One watcher and one trigger per registered workspace, started and stopped together."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from daemon.json_types import JsonObject
from daemon.watch.trigger import IsQueued, Publish, SaveTrigger, Submit, content_hash
from daemon.watch.watcher import RepoWatcher

log = logging.getLogger("troupe.watch")


class WorkspaceWatch(TypedDict):
    mode: str  # how its saves are seen: "inotify", "polling" (or "stopped")
    note: str


class WatchStatus(TypedDict):
    """What the watchers did (``Health.watch``; ``/metrics`` reads the counts)."""

    workspaces: dict[str, WorkspaceWatch]
    polling: list[str]
    saves_seen: int
    jobs_started: int
    files_skipped: int


@dataclass
class WatchOptions:
    debounce: float = 0.5
    files_per_job: int = 5
    jobs_per_minute: int = 6
    force_polling: bool = False
    poll_interval: float = 1.0


class WatchRegistry:
    def __init__(self, options: WatchOptions, submit: Submit, is_queued: IsQueued, publish: Publish) -> None:
        self.options = options
        self.submit, self.is_queued, self.publish = submit, is_queued, publish
        self._watching: dict[str, tuple[RepoWatcher, SaveTrigger]] = {}
        self._unwatched: dict[str, SaveTrigger] = {}  # root -> the trigger of saves editors report
        self._overrides: dict[str, JsonObject] = {}  # root -> its editor overrides (checked by daemon.config)
        self._changing = asyncio.Lock()  # add/remove wait on a thread: two at once must not both start a watcher

    def set_overrides(self, root: str, overrides: JsonObject | None) -> None:
        """A workspace's editor overrides, read by its trigger at every save (watched now or later)."""
        self._overrides[root] = dict(overrides or {})

    def is_watching(self, root: str) -> bool:
        return root in self._watching

    def mode(self, root: str) -> str | None:
        entry = self._watching.get(root)
        return entry[0].mode if entry else None

    async def add(self, root: str) -> str:
        """Watch ``root`` (idempotent, also when called twice at once); returns the mode: ``inotify`` or ``polling``."""
        async with self._changing:
            if root in self._watching:
                return self._watching[root][0].mode
            trigger = self._unwatched.pop(root, None) or self._trigger(root)
            watcher = RepoWatcher(Path(root), trigger.on_change, debounce=self.options.debounce,
                                  force_polling=self.options.force_polling, poll_interval=self.options.poll_interval)
            await asyncio.to_thread(watcher.start)  # walking a big tree to add watches takes a moment
            self._watching[root] = (watcher, trigger)
        log.info("watching %s (%s%s)", root, watcher.mode, f": {watcher.note}" if watcher.note else "")
        if watcher.mode == "polling" and not self.options.force_polling:
            trigger.notice("polling", [], watcher.note)
        return watcher.mode

    def _trigger(self, root: str) -> SaveTrigger:
        return SaveTrigger(Path(root), self.submit, self.is_queued, self.publish,
                           files_per_job=self.options.files_per_job, jobs_per_minute=self.options.jobs_per_minute,
                           overrides=lambda: self._overrides.get(root))

    async def saved(self, root: str, files: list[str]) -> None:
        """Files an editor saved in ``root``: the same decision as for a save the watcher sees (review
        on save, tests on save, the per-minute cap), made by the workspace's one trigger."""
        if root in self._watching:
            trigger = self._watching[root][1]
        else:
            trigger = self._unwatched.setdefault(root, self._trigger(root))
        await trigger.on_change([Path(root) / name for name in files])

    async def remove(self, root: str) -> bool:
        async with self._changing:
            entry = self._watching.pop(root, None)
            if entry is None:
                return False
            await asyncio.to_thread(entry[0].stop)
        return True

    async def stop(self) -> None:
        for root in list(self._watching):
            await self.remove(root)

    def mark_written(self, root: str, files: dict[str, str]) -> None:
        """Files the daemon itself just wrote (rel path -> new text): their save events start nothing."""
        entry = self._watching.get(root)
        if entry is not None:
            for rel, text in files.items():
                entry[1].mark_written(rel, content_hash(text.encode("utf-8")))

    def status(self) -> WatchStatus:
        triggers = [t for _, t in self._watching.values()]
        return {
            "workspaces": {root: {"mode": w.mode, "note": w.note} for root, (w, _) in self._watching.items()},
            "polling": sorted(root for root, (w, _) in self._watching.items() if w.mode == "polling"),
            "saves_seen": sum(t.saves_seen for t in triggers),
            "jobs_started": sum(t.jobs_started for t in triggers),
            "files_skipped": sum(t.files_skipped for t in triggers),
        }
