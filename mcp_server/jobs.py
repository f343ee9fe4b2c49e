"""Running a daemon job for one tool call: submit it, follow its events, and say what it produced.

While the tool waits, every change in the daemon's JobProgress (state, phase, role) and every tool
run becomes an MCP progress notification (when the caller asked for progress). A question the team
asks a person is put to the user as an elicitation when the client supports it; otherwise the tool
returns, the job keeps waiting, and the result says how to answer. A cancelled MCP request cancels
the job in the daemon.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import AcceptedElicitation, Context, DeclinedElicitation
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from daemon.api.protocol import FINAL_STATES, JobInfo, ProtocolError, StreamEvent, SubmitJob
from daemon.client import DaemonClient, DaemonError
from daemon.payloads import QuestionData, ToolRunData
from mcp_server import render

log = logging.getLogger("troupe.mcp")
R = TypeVar("R")

TEAM_DECIDES = "No preference: use your best judgement."  # what a declined question tells the team


@dataclass(frozen=True)
class Waiting:
    """A job that waits for a person's answer to ``text``."""

    job: JobInfo
    question_id: str
    text: str


class TeamQuestion(BaseModel):
    """The form an elicitation shows: one free-text answer."""

    answer: str = Field(description="Your answer to the team's question")


def refused(exc: DaemonError | ProtocolError) -> ToolError:
    """The daemon's refusal (or an unreachable daemon) as the tool error the client shows."""
    if isinstance(exc, DaemonError) and exc.status == 0:
        return ToolError(f"Troupe: {exc}")
    return ToolError(f"Troupe refused the request: {exc}")


def tool_result(text: str, *, error: bool = False, **structured: Any) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured or None,
                          is_error=error)


class Progress:
    """MCP progress for one tool call: a counter that grows with every new message."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.count = 0
        self.last: str | None = None

    async def say(self, message: str) -> None:
        if message != self.last:
            self.last, self.count = message, self.count + 1
            await self.ctx.report_progress(self.count, None, message)

    async def event(self, event: StreamEvent) -> None:
        body = event.payload
        if isinstance(body, ToolRunData):
            await self.say(f"{body.tool}: {' '.join(body.summary.split())[:120]}")
        elif event.progress is not None:
            await self.say(render.status_line(event.progress))


class JobRunner:
    def __init__(self, client: DaemonClient) -> None:
        self.client = client

    async def call(self, what: Awaitable[R]) -> R:
        """One daemon call; its refusal becomes a tool error."""
        try:
            return await what
        except (DaemonError, ProtocolError) as exc:
            raise refused(exc) from None

    async def run(self, ctx: Context, request: SubmitJob) -> CallToolResult:
        """Submit ``request`` and wait for its outcome (or for a question the user must answer)."""
        job = await self.call(self.client.submit(request))
        return await self.follow(ctx, job)

    async def follow(self, ctx: Context, job: JobInfo) -> CallToolResult:
        """Wait for ``job`` (see :meth:`wait`) and say what it produced, or what it asks."""
        ended = await self.wait(ctx, job)
        if isinstance(ended, Waiting):
            return self.waiting(ended.job, ended.question_id, ended.text)
        return await self.outcome(ended)

    async def wait(self, ctx: Context, job: JobInfo) -> JobInfo | Waiting:
        """Follow ``job`` to its final state, reporting progress; a question the user does not answer
        here stops the wait (the job keeps waiting for the answer)."""
        progress = Progress(ctx)
        await progress.say(f"{job.kind} job {job.id} {job.state}")
        try:
            pending = job.progress.question
            if job.state == "waiting_for_answer" and pending is not None and not await self.ask_person(
                    ctx, job.id, pending.question_id, pending.text):
                return Waiting(job, pending.question_id, pending.text)
            if job.state not in FINAL_STATES:
                async for event in self.client.events(job.id, after=job.last_seq):
                    await progress.event(event)
                    body = event.payload
                    if isinstance(body, QuestionData) and body.for_person and not await self.ask_person(
                            ctx, job.id, body.question_id, body.text):
                        return Waiting(await self.call(self.client.job(job.id)), body.question_id, body.text)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):  # the request was cancelled: so is the job
                await self.cancel_quietly(job.id)
            raise
        except DaemonError as exc:
            raise ToolError(f"Troupe lost job {job.id}: {exc}; the `job_status` tool shows how it ends") from None
        return await self.call(self.client.job(job.id))

    async def cancel_quietly(self, job_id: str) -> None:
        try:
            await self.client.cancel(job_id)
            log.info("job %s cancelled with its MCP request", job_id)
        except DaemonError as exc:  # it finished meanwhile, or the daemon is gone
            log.info("cancelling job %s: %s", job_id, exc)

    async def ask_person(self, ctx: Context, job_id: str, question_id: str, text: str) -> bool:
        """Put the team's question to the user (an elicitation) and pass the answer on; False when the
        client cannot ask, or the user closed the form without answering."""
        capabilities = ctx.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            return False
        try:
            result = await ctx.elicit(f"Troupe asks: {text}", TeamQuestion)
        except (NoBackChannelError, MCPError, ValueError) as exc:
            log.info("elicitation for job %s failed: %s", job_id, exc)
            return False
        if isinstance(result, AcceptedElicitation):
            reply = result.data.answer if result.data.answer.strip() else TEAM_DECIDES
        elif isinstance(result, DeclinedElicitation):
            reply = TEAM_DECIDES
        else:  # cancelled: the job keeps waiting; the `answer` tool can still answer it
            return False
        await self.call(self.client.answer(job_id, reply, question_id or None))
        return True

    def waiting(self, job: JobInfo, question_id: str, text: str) -> CallToolResult:
        return tool_result(render.waiting_text(job, question_id, text), job=job.to_json(),
                           question={"question_id": question_id, "text": text})

    async def outcome(self, job: JobInfo) -> CallToolResult:
        """What a job ended with (or where it stands): its reply, findings, proposed change, tests."""
        if job.state not in FINAL_STATES:
            pending = job.progress.question
            if pending is not None:
                return self.waiting(job, pending.question_id, pending.text)
            return tool_result(f"{job.kind} job {job.id} is {render.status_line(job.progress)}", job=job.to_json())
        change_id = job.outcome.change_id
        change = await self.call(self.client.change(change_id)) if change_id else None
        findings = []
        if job.kind in ("review", "test") and job.workspace:
            with contextlib.suppress(DaemonError):
                findings = [f for f in await self.client.findings(job.workspace) if f.job_id == job.id]
        return tool_result(render.outcome_text(job, change, findings), error=job.state != "succeeded",
                           job=job.to_json(), change=change.to_json() if change else None,
                           findings=[f.to_json() for f in findings])
