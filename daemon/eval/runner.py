"""Run a suite's items through the daemon: each item in its own temporary workspace, registered
with the eval's model, real jobs submitted and waited for; a failed item is recorded and the run
goes on. :class:`DaemonContext` is the :class:`~daemon.eval.suite.Context` suites see."""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from daemon.client import DaemonClient, DaemonError
from daemon.eval.suite import Context, Item, ItemResult, JobRun, Row, Suite
from daemon.llm.gateway import TIME_LIMIT
from daemon.messages import FINAL_STATES, JobInfo, JobOptions, SubmitJob, WorkspaceSettings
from daemon.payloads import ResultUsage, UsageData

log = logging.getLogger("troupe.eval")

JOB_TIMEOUT = 900.0
"""Seconds the eval waits for one job before cancelling it and recording the item as failed."""
NO_ANSWER = "No one can answer during an evaluation: decide yourself and go on."
_BUDGET_SPENT = re.compile(r"budget spent", re.IGNORECASE)


class DaemonContext:
    def __init__(self, client: DaemonClient, *, model: str | None = None, job_timeout: float = JOB_TIMEOUT,
                 poll: float = 0.25, keep: bool = False) -> None:
        self.client = client
        self.keep = keep  # leave the workspaces, their jobs and findings for a look afterwards
        self.model = model
        self.job_timeout = job_timeout
        self.poll = poll
        self.models_seen: set[str] = set()  # what the daemon's replies and usage events said answered
        self._scratch = Path(tempfile.mkdtemp(prefix="troupe-eval-"))
        self._workspaces: list[int] = []

    async def workspace(self, files: dict[str, str], name: str = "item") -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:40] or "item"
        root = Path(tempfile.mkdtemp(prefix=f"{safe}-", dir=self._scratch)).resolve()
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        info = await self.client.register_workspace(str(root), watch=False,
                                                    settings=WorkspaceSettings(model=self.model))
        self._workspaces.append(info.id)
        return root

    async def job(self, request: SubmitJob) -> JobRun:
        request.validate()
        started = time.monotonic()
        info = await self.client.submit(request)
        info, timed_out = await self._wait(info)
        return await self._run_of(info, timed_out, time.monotonic() - started)

    async def complete(self, workspace: Path, prompt: str, *, max_tokens: int | None = None) -> JobRun:
        return await self.job(SubmitJob(kind="complete", workspace=str(workspace), prompt=prompt,
                                        options=JobOptions(max_tokens=max_tokens or None)))

    async def _wait(self, info: JobInfo) -> tuple[JobInfo, bool]:
        deadline = time.monotonic() + self.job_timeout
        answered: set[str] = set()
        while info.state not in FINAL_STATES:
            if time.monotonic() > deadline:
                try:
                    info = await self.client.cancel(info.id)
                except DaemonError as exc:  # it ended meanwhile: the item is recorded as timed out all the same
                    log.info("could not cancel job %s after its timeout: %s", info.id, exc)
                return info, True
            if info.state == "waiting_for_answer" and info.question and info.question.question_id not in answered:
                answered.add(info.question.question_id)
                await self.client.answer(info.id, NO_ANSWER, info.question.question_id)
            await asyncio.sleep(self.poll)
            info = await self.client.job(info.id)
        return info, False

    async def _run_of(self, info: JobInfo, timed_out: bool, waited: float) -> JobRun:
        outcome = info.outcome
        usage = outcome.usage or ResultUsage()
        findings = []
        if info.kind == "review" and info.workspace:
            findings = [f for f in await self.client.findings(info.workspace, state="all") if f.job_id == info.id]
        change = await self.client.change(outcome.change_id) if outcome.change_id else None
        if outcome.model:
            self.models_seen.add(outcome.model)
        ran = (info.finished_at - info.started_at) if info.finished_at and info.started_at else waited
        calls = await self._calls(info)  # a cancelled job has no result: its events still count
        self.models_seen.update(call.model for call in calls if call.model)  # a team's jobs name it per call
        capped = outcome.capped or bool(_BUDGET_SPENT.search(info.error or "")) or any(
            call.finish_reason in ("length", TIME_LIMIT) for call in calls)
        return JobRun(job_id=info.id, kind=info.kind, state="timeout" if timed_out else info.state,
                      error=f"no end after {self.job_timeout:.0f} s; cancelled" if timed_out else info.error,
                      answer=outcome.answer or "", findings=findings, change=change,
                      prompt_tokens=usage.prompt_tokens or info.usage.prompt_tokens,
                      completion_tokens=usage.completion_tokens or info.usage.completion_tokens,
                      calls=usage.calls or len(calls), seconds=round(ran, 3), capped=capped,
                      result=dict(info.result or {}))

    async def _calls(self, info: JobInfo) -> list[UsageData]:
        """The job's model calls as its usage events tell them (finish reason, cap, tokens)."""
        try:
            events = (await self.client.event_list(info.id)).events
        except DaemonError:
            return []
        return [data for e in events if isinstance(data := e.payload, UsageData)]

    @property
    def scratch(self) -> Path:
        """The folder holding every item's workspace."""
        return self._scratch

    async def close(self) -> None:
        """Unregister the workspaces (dropping their jobs and findings) and delete them, unless ``keep``."""
        if self.keep:
            return
        for workspace_id in self._workspaces:
            try:
                await self.client.unregister_workspace(workspace_id, forget=True)
            except DaemonError as exc:  # the daemon keeps a stray workspace; the run's results stand
                log.warning("could not unregister eval workspace %s: %s", workspace_id, exc)
        shutil.rmtree(self._scratch, ignore_errors=True)


async def run_suite(suite: Suite, ctx: Context, *, rows: tuple[Row, ...], limit: int | None = None,
                    on_result: Callable[[ItemResult, int, int], None] | None = None,
                    skip: set[tuple[str, Row]] | None = None) -> list[ItemResult]:
    """Every chosen item on every row, in the suite's fixed order, less the (item id, row) pairs in
    ``skip`` (finished in a run this one resumes); ``on_result(result, done, total)`` after each, counting
    the skipped as done. An item that raises is recorded as failed (with the error) and the run goes on."""
    items = suite.items()[:limit] if limit else suite.items()
    skip = skip or set()
    total, done, results = len(items) * len(rows), len(skip), []
    for item in items:
        for row in rows:
            if (item.id, row) in skip:
                continue
            results.append(await _one(suite, item, row, ctx))
            done += 1
            if on_result is not None:
                on_result(results[-1], done, total)
    return results


async def _one(suite: Suite, item: Item, row: Row, ctx: Context) -> ItemResult:
    started = time.monotonic()
    try:
        return await suite.run(item, row, ctx)
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as exc:  # one bad item must not end an unattended run: record it, go on
        where = traceback.extract_tb(exc.__traceback__)[-1]
        error = f"{type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})"
        return ItemResult.crashed(suite.name, item, row, error, seconds=round(time.monotonic() - started, 3))
