"""Following one job in its thread: the status message, the team's questions, the final summary.

The daemon's event stream (resumed by the client after a disconnect) carries the job's
progress, which the status message shows; it is edited at most once per ``update_interval``.
A question for the human is posted in the thread, addressed to the
requester. At the end: the summary with the diff (inline when short, else a file) and the
Apply / Discard / Details buttons, and a ✅ or ❌ on the message that asked.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError

from daemon.api.protocol import ChangeInfo, FindingInfo, JobInfo
from daemon.client import DaemonError
from daemon.payloads import QuestionData
from slack_bot import render
from slack_bot.poster import StatusMessage
from slack_bot.state import Thread

if TYPE_CHECKING:
    from slack_bot.bot import TroupeBot

log = logging.getLogger("troupe.slack")


class JobFollower:
    def __init__(self, bot: TroupeBot, thread: Thread, job: JobInfo, trigger_ts: str) -> None:
        self.bot, self.thread, self.job, self.trigger_ts = bot, thread, job, trigger_ts
        self.progress = job.progress  # the daemon's; each event brings the newest
        self.status: StatusMessage | None = None
        if thread.status_ts:
            self.status = StatusMessage(bot.poster, thread.channel, thread.status_ts,
                                        lambda: render.status_text(job.kind, job.workspace or thread.workspace,
                                                                          self.progress, job.id),
                                        interval=bot.config.update_interval)

    async def run(self) -> None:
        try:
            async for event in self.bot.daemon.events(self.job.id):
                if event.progress is not None and event.progress != self.progress:
                    self.progress = event.progress
                    if self.status:
                        self.status.touch()
                body = event.payload
                if isinstance(body, QuestionData) and body.for_person:
                    await self._question(body.question_id, body.text)
            job = await self.bot.daemon.job(self.job.id)
        except DaemonError as exc:
            log.warning("lost job %s: %s", self.job.id, exc)
            await self._safe_post(f":warning: I lost track of job `{self.job.id}`: {render.escape(str(exc))}")
            return
        await self.finish(job)

    async def _question(self, question_id: str, text: str) -> None:
        thread = self.bot.state.thread(self.thread.channel, self.thread.thread_ts) or self.thread
        if thread.job_id != self.job.id or thread.question_id == question_id:
            return  # replayed after a restart: already asked
        try:
            job = await self.bot.daemon.job(self.job.id)
        except DaemonError:
            return
        if job.state != "waiting_for_answer" or (job.question and job.question.question_id != question_id):
            return  # replayed after a restart, and answered long ago
        thread.question_id = question_id
        self.bot.state.save_thread(thread)
        who = f"<@{thread.requester}> " if thread.requester else ""
        await self._safe_post(f"{who}:question: *The team asks:* {render.escape(text)}\n"
                              "_Reply in this thread to answer._")

    async def finish(self, job: JobInfo) -> None:
        bot, thread = self.bot, self.thread
        if self.status is not None:
            await self.status.finish(render.final_status_text(job, self.progress))
        change = await self._change(job)
        findings = await self._findings(job)
        inline = change is not None and len(change.diff) <= bot.config.snippet_max_chars
        record = bot.state.job(job.id)
        requester = record.requester if record else thread.requester
        text = render.summary_text(job, findings)
        blocks = render.summary_blocks(job, text, change, inline_diff=inline, requester=requester)
        fallback = f"{job.kind} {render.STATE_WORDS.get(job.state, job.state)}: {text}"
        summary_ts = await self._safe_post(render.cut(fallback), blocks=blocks)
        if change is not None and not inline:
            try:
                await bot.poster.upload(thread.channel, thread.thread_ts, change.diff, f"change-{job.id[:8]}.diff",
                                        f"Proposed change ({len(change.files)} file(s))")
            except SlackApiError as exc:
                log.warning("diff upload failed: %s", exc.response.get("error"))
                await self._safe_post(render.diff_block(change.diff))
        bot.state.update_job(job.id, summary_ts=summary_ts, change_id=change.id if change else None)
        latest = bot.state.thread(thread.channel, thread.thread_ts)
        if latest is not None and latest.job_id == job.id and latest.question_id:
            latest.question_id = None
            bot.state.save_thread(latest)
        await bot.poster.react(thread.channel, self.trigger_ts,
                               "white_check_mark" if job.state == "succeeded" else "x")

    async def _change(self, job: JobInfo) -> ChangeInfo | None:
        change_id = job.outcome.change_id or self.progress.change_id
        if not change_id:
            return None
        try:
            return await self.bot.daemon.change(str(change_id))
        except DaemonError as exc:
            log.warning("change %s of job %s unavailable: %s", change_id, job.id, exc)
            return None

    async def _findings(self, job: JobInfo) -> list[FindingInfo] | None:
        if job.kind != "review" or not job.workspace:
            return None
        try:
            return [f for f in await self.bot.daemon.findings(job.workspace) if f.job_id == job.id]
        except DaemonError:
            return None

    async def _safe_post(self, text: str, **kwargs: Any) -> str | None:
        try:
            return await self.bot.poster.post(self.thread.channel, self.thread.thread_ts, text, **kwargs)
        except SlackApiError as exc:
            log.warning("message not posted: %s", exc.response.get("error"))
            return None
