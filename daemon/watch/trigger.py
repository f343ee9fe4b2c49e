"""From saved files to jobs: which saves deserve a review (and a test run), and how many.

The watcher reports files; this decides. A file whose content was already reviewed starts
nothing; a file already waiting in a queued review is not queued twice; files are grouped at
most ``files_per_job`` to a job, and at most ``jobs_per_minute`` save-triggered jobs start per
workspace, so a ``git checkout`` of 500 files starts a handful of background reviews and says
what it skipped (``troupe review`` reviews them on demand). A save of a file whose review is
already running starts a new one, and the job queue cancels the older (newest wins:
:mod:`daemon.jobs.newest`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import subprocess
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from daemon.config import ConfigError, Settings, load_settings, with_overrides
from daemon.json_types import JsonObject
from daemon.messages import JobOptions, StreamEvent, SubmitJob
from daemon.payloads import WatchData

log = logging.getLogger("troupe.watch")

MAX_FILE_BYTES = 1_000_000
MAX_DIFF_CHARS = 100_000

class Submitted(Protocol):
    """What submitting a job gives back (the store's ``Job``, the client's ``JobInfo``): its id."""

    @property
    def id(self) -> str: ...


Submit = Callable[[SubmitJob], Awaitable[Submitted]]
IsQueued = Callable[[str], Awaitable[bool]]
Publish = Callable[[StreamEvent], None]


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def changed_hunks(root: Path, files: list[str]) -> str | None:
    """``git diff HEAD`` of exactly these files, when each of them has one (so the reviewer reads the
    changed hunks first); None for new files, a repository without commits, or a huge diff."""
    try:
        proc = subprocess.run(["git", "-C", str(root), "diff", "--no-color", "--no-ext-diff", "-U3", "HEAD", "--",
                               *files], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    diff = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0 or not diff or len(diff) > MAX_DIFF_CHARS:
        return None
    in_diff = set(re.findall(r"^diff --git a/.* b/(.*)$", diff, flags=re.MULTILINE))
    return diff if in_diff == set(files) else None


class SaveTrigger:
    """Turns batches of saved files in one workspace into review and test jobs."""

    def __init__(self, root: Path, submit: Submit, is_queued: IsQueued, publish: Publish, *,
                 files_per_job: int = 5, jobs_per_minute: int = 6,
                 overrides: Callable[[], JsonObject | None] = lambda: None) -> None:
        self.root = Path(root)
        self.submit, self.is_queued, self.publish = submit, is_queued, publish
        self.files_per_job = max(1, files_per_job)
        self.jobs_per_minute = max(1, jobs_per_minute)
        self.overrides = overrides  # the workspace's editor overrides, read at every save
        self.reviewed: dict[str, str] = {}  # file -> content hash last sent to a review
        self._queued_review: dict[str, str] = {}  # file -> id of its review job, while it may be queued
        self._queued_test: str | None = None
        self._started: deque[float] = deque()
        self.saves_seen = self.jobs_started = self.files_skipped = 0

    def mark_written(self, rel: str, digest: str) -> None:
        """The daemon wrote this content itself (an applied change): its save starts nothing."""
        self.reviewed[rel] = digest

    def notice(self, action: str, files: list[str], reason: str, *, job_id: str | None = None) -> None:
        notice = WatchData(workspace=str(self.root), action=action, files=files[:50], count=len(files), reason=reason,
                           job_id=job_id)
        self.publish(StreamEvent.of(notice, workspace=str(self.root), at=time.time()))

    def _budget(self) -> int:
        now = time.monotonic()
        while self._started and now - self._started[0] > 60:
            self._started.popleft()
        return self.jobs_per_minute - len(self._started)

    def _settings(self) -> Settings:
        try:
            return with_overrides(load_settings(self.root), self.overrides())
        except ConfigError as exc:
            self.notice("error", [], f"configuration ignored: {exc}")
            return with_overrides(Settings(), self.overrides())

    def _read(self, path: Path) -> tuple[str, str] | str:
        """(relative path, content hash), or the reason the file is not reviewed."""
        rel = path.relative_to(self.root).as_posix()
        try:
            data = path.read_bytes()
        except OSError as exc:
            return f"{rel}: unreadable ({exc.strerror})"
        if len(data) > MAX_FILE_BYTES:
            return f"{rel}: larger than {MAX_FILE_BYTES // 1000} kB"
        if b"\0" in data[:8192]:
            return f"{rel}: binary"
        return rel, content_hash(data)

    async def on_change(self, files: list[Path]) -> None:
        settings = self._settings()
        if not (settings.review_on_save or settings.test_on_save):
            return
        self.saves_seen += len(files)
        changed: list[tuple[str, str]] = []
        unreadable: list[str] = []
        for path in files:
            read = self._read(path)
            if isinstance(read, str):
                unreadable.append(read)
            elif self.reviewed.get(read[0]) != read[1]:
                changed.append(read)
        if unreadable:
            self.files_skipped += len(unreadable)
            self.notice("skipped", unreadable, "not reviewed: too large, binary or unreadable")
        if not changed:
            return
        if settings.review_on_save:
            await self._reviews(changed)
        if settings.test_on_save:
            await self._test([rel for rel, _ in changed])

    async def _reviews(self, changed: list[tuple[str, str]]) -> None:
        fresh: list[tuple[str, str]] = []
        for rel, digest in changed:
            job_id = self._queued_review.get(rel)
            if job_id is not None and await self.is_queued(job_id):
                self.reviewed[rel] = digest  # the queued review reads the file when it starts
            else:
                fresh.append((rel, digest))
        batches = [fresh[i:i + self.files_per_job] for i in range(0, len(fresh), self.files_per_job)]
        allowed = max(0, self._budget())
        for batch in batches[:allowed]:
            files = [rel for rel, _ in batch]
            diff = await asyncio.to_thread(changed_hunks, self.root, files)
            options = JobOptions(trigger="save", hashes=dict(batch), diff=diff or None)
            job = await self.submit(SubmitJob(kind="review", workspace=str(self.root), files=files,
                                              priority="background", options=options))
            self._started.append(time.monotonic())
            self.jobs_started += 1
            for rel, digest in batch:
                self.reviewed[rel] = digest
                self._queued_review[rel] = job.id
            self.notice("queued", files, "saved", job_id=job.id)
        capped = [rel for batch in batches[allowed:] for rel, _ in batch]
        if capped:
            self.files_skipped += len(capped)
            self.notice("capped", capped, (
                f"{len(capped)} saved file(s) not reviewed: at most {self.jobs_per_minute} save reviews "
                f"of {self.files_per_job} files per minute; run `troupe review FILE…` to review them now"))
            log.info("watch %s: %d file(s) over the review cap", self.root, len(capped))

    async def _test(self, files: list[str]) -> None:
        if self._queued_test is not None and await self.is_queued(self._queued_test):
            return
        if self._budget() <= 0:
            self.notice("capped", files, "test run skipped: the per-minute cap of save-triggered jobs is spent")
            return
        job = await self.submit(SubmitJob(kind="test", workspace=str(self.root), files=files,
                                          priority="background", options=JobOptions(trigger="save")))
        self._started.append(time.monotonic())
        self.jobs_started += 1
        self._queued_test = job.id
        self.notice("queued", files, "saved: running the tests", job_id=job.id)
