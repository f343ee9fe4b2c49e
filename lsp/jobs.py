"""Following the jobs this editor started: work-done progress, the team's questions, proposed
changes offered with Apply / Discard, and the outcome.

Progress is begun only when the client said it supports ``window.workDoneProgress``; the
report message names the phase and the role (``"code · programmer"``); cancelling the
progress in the editor cancels the job. A question reaches the user as a ``troupe/question``
notification and (unless the client asked for notifications only) a ``window/showMessageRequest``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from daemon.api.protocol import FINAL_STATES, JobInfo, StreamEvent
from daemon.client import DaemonError
from daemon.payloads import ChangeProposedData, PhaseStartedData, QuestionData, ToolRunData
from lsp.messages import ChangeProposedParams, JobFinishedParams, QuestionParams

if TYPE_CHECKING:
    from lsp.server import TroupeServer

log = logging.getLogger("troupe.lsp")

YES, NO, TEAM_DECIDES = "Yes", "No", "Let the team decide"
APPLY, APPLY_ANYWAY, DISCARD, LATER = "Apply", "Apply Anyway", "Discard", "Later"
ANSWERS = {YES: "Yes.", NO: "No.", TEAM_DECIDES: "No preference: use your best judgement."}


def _short(text: str | None, limit: int = 300) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


class JobFollower:
    def __init__(self, server: TroupeServer) -> None:
        self.server = server
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def follow(self, job: JobInfo, title: str) -> None:
        if job.id not in self.tasks:
            task = asyncio.create_task(self._follow(job, title), name=f"troupe-job-{job.id}")
            self.tasks[job.id] = task
            task.add_done_callback(lambda _: self.tasks.pop(job.id, None))

    async def close(self) -> None:
        for task in list(self.tasks.values()):
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)

    # ---------------------------------------------------------------- progress

    def _supports_progress(self) -> bool:
        window = self.server.client_capabilities.window
        return bool(window and window.work_done_progress)

    async def _begin(self, job: JobInfo, title: str) -> str | None:
        if not self._supports_progress():
            return None
        token = f"troupe-{job.id}-{uuid.uuid4().hex[:6]}"
        progress = self.server.work_done_progress
        try:
            await progress.create_async(token)
        except Exception as exc:  # the client refused: work without a progress bar
            log.warning("work done progress refused: %s", exc)
            return None
        progress.begin(token, types.WorkDoneProgressBegin(title=title, message=f"{job.title or job.kind} queued",
                                                          cancellable=True))
        def on_cancel(future: Any) -> None:  # the user pressed cancel on the progress
            if future.cancelled():
                self._spawn(self._cancel(job.id))

        cancelled = progress.tokens.get(token)
        if cancelled is not None:
            cancelled.add_done_callback(on_cancel)
        return token

    def _report(self, token: str | None, message: str) -> None:
        if token is not None:
            self.server.work_done_progress.report(token, types.WorkDoneProgressReport(message=message))

    def _end(self, token: str | None, message: str) -> None:
        if token is not None:
            self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
            self.server.work_done_progress.tokens.pop(token, None)

    async def _cancel(self, job_id: str) -> None:
        try:
            await self.server.link.call(lambda c: c.cancel(job_id))
        except DaemonError as exc:
            log.warning("cancelling job %s failed: %s", job_id, exc)

    # ---------------------------------------------------------------- the job

    async def _follow(self, job: JobInfo, title: str) -> None:
        token = await self._begin(job, title)
        seen: set[tuple[str, str]] = set()
        try:
            async for event in self.server.link.client.events(job.id):
                self._on_event(token, event, seen)
                if event.progress is not None and event.progress.state in FINAL_STATES:
                    break
            info = await self.server.link.call(lambda c: c.job(job.id))
        except DaemonError as exc:
            self._end(token, f"lost the daemon ({exc}); `troupe jobs` shows how job {job.id} ends")
            return
        self._end(token, info.state if not info.error else f"{info.state}: {_short(info.error)}")
        url = await self.viewer_url(info.id)
        self.server.notify(JobFinishedParams(job=info, viewer_url=url))
        self._tell_outcome(info, url)

    async def viewer_url(self, job_id: str) -> str | None:
        """A one-time run viewer link on the job; None when the daemon serves no viewer."""
        try:
            return (await self.server.link.call(lambda c: c.viewer_link(job_id))).url
        except DaemonError as exc:
            log.info("no viewer link for job %s: %s", job_id, exc)
            return None

    def _on_event(self, token: str | None, event: StreamEvent, seen: set[tuple[str, str]]) -> None:
        progress, body = event.progress, event.payload
        if progress is not None and progress.phase and progress.role and (progress.phase, progress.role) not in seen:
            seen.add((progress.phase, progress.role))  # who works on what now
            self._report(token, f"{progress.phase} · {progress.role}")
        if isinstance(body, PhaseStartedData) and not event.role:
            self._report(token, event.phase or body.phase)
        elif isinstance(body, ToolRunData):
            self._report(token, f"{body.tool}: {body.summary[:80]}")
        elif isinstance(body, QuestionData) and body.for_person:
            self._report(token, "waiting for your answer")
            self._spawn(self.ask_user(event.job_id or "", body.question_id, body.text))
        elif isinstance(body, ChangeProposedData):
            self._spawn(self.offer_change(event.job_id or "", body))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self.tasks[f"ui-{id(task)}"] = task
        task.add_done_callback(lambda t: self.tasks.pop(f"ui-{id(t)}", None))

    def _tell_outcome(self, info: JobInfo, url: str | None = None) -> None:
        """One message, only for a failure or an answer; a failure's carries the viewer link."""
        answer = info.outcome.answer
        if info.state == "failed":
            see = f" (see what happened: {url})" if url else ""
            self.server.say(types.MessageType.Error, f"Troupe: the {info.kind} job failed: {_short(info.error)}{see}")
        elif info.state == "succeeded" and info.kind == "ask" and answer:
            self.server.say(types.MessageType.Info, f"Troupe: {answer[:2000]}")

    # ---------------------------------------------------------------- asking the user

    async def ask_user(self, job_id: str, question_id: str, text: str) -> None:
        self.server.notify(QuestionParams(job_id=job_id, question_id=question_id, text=text))
        if self.server.settings.get("questions") == "notification":
            return
        choice = await self.server.window_show_message_request_async(types.ShowMessageRequestParams(
            type=types.MessageType.Info, message=f"Troupe asks: {text}",
            actions=[types.MessageActionItem(title=t) for t in (YES, NO, TEAM_DECIDES)]))
        if choice is None:
            return  # closed: the job keeps waiting; troupe.answer can still answer it
        try:
            await self.server.link.call(lambda c: c.answer(job_id, ANSWERS.get(choice.title, choice.title),
                                                           question_id or None))
        except DaemonError as exc:
            self.server.say(types.MessageType.Warning, f"Troupe: your answer did not reach the team: {exc}")

    async def offer_change(self, job_id: str, proposed: ChangeProposedData) -> None:
        change_id, files = proposed.change_id, proposed.files
        failed = proposed.tests_failed or None  # the daemon's verdict
        self.server.notify(ChangeProposedParams(job_id=job_id, change_id=change_id, files=files, diff=proposed.diff,
                                                tests_failed=failed))
        if self.server.settings.get("changes") == "notification":
            return
        where = f"{', '.join(files) or 'no file'} (change {change_id})"
        choice = await self.server.window_show_message_request_async(types.ShowMessageRequestParams(
            type=types.MessageType.Warning if failed else types.MessageType.Info,
            message=f"Troupe proposes a change to {where}, but its own tests failed: {_short(failed, 200)}"
            if failed else f"Troupe proposes a change to {where}.",
            actions=[types.MessageActionItem(title=t) for t in (APPLY_ANYWAY if failed else APPLY, DISCARD, LATER)]))
        title = choice.title if choice is not None else LATER
        try:
            if title in (APPLY, APPLY_ANYWAY):
                await self.server.apply_change(change_id)
            elif title == DISCARD:
                await self.server.link.call(lambda c: c.discard_change(change_id))
        except Exception as exc:
            self.server.say(types.MessageType.Warning, f"Troupe: change {change_id}: {exc}")
