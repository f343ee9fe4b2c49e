"""A job that continues a conversation: ``SubmitJob.history`` names the earlier jobs of one
conversation (a Slack thread), oldest first, and the daemon puts what was asked and answered there
before the new words. A surface passes the ids; the prompt is composed here, once, when the job
runs (its stored request keeps the person's words, so its title is theirs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from daemon.messages import SubmitJob
from daemon.payloads import PayloadError, job_result

if TYPE_CHECKING:
    from daemon.json_types import JsonObject
    from storage import AsyncStore

HISTORY_JOBS = 3  # the newest earlier jobs that reach the prompt
HISTORY_CHARS = 1500  # of each earlier request and answer


async def with_history(store: AsyncStore, request: JsonObject) -> JsonObject:
    """``request`` (a stored SubmitJob) with its prompt preceded by its conversation; the same
    request when it has no history (or none of its earlier jobs is still stored)."""
    submitted = _submitted(request)
    earlier = [line for job_id in submitted.history[-HISTORY_JOBS:] for line in await _turn(store, job_id)]
    if not earlier:
        return request
    lines = ["This continues an earlier conversation (one Slack thread).", "", *earlier,
             f"Now: {submitted.prompt or ''}"]
    return {**request, "prompt": "\n".join(lines)}


async def _turn(store: AsyncStore, job_id: str) -> list[str]:
    """One earlier job as lines of the prompt: its request, the team's answer, the files it changed."""
    job = await store.get_job(job_id)
    if job is None:  # forgotten with its workspace: the conversation goes on without it
        return []
    try:
        result = job_result(job.result if isinstance(job.result, dict) else None)
    except PayloadError:
        result = job_result(None)
    lines = [f"Earlier request ({job.kind}): {_submitted(job.request).prompt or ''}"[:HISTORY_CHARS],
             f"The team's answer: {result.reply or job.error or job.state}"[:HISTORY_CHARS]]
    if result.files:
        lines.append(f"Files the team changed: {', '.join(result.files)}")
    return [*lines, ""]


def _submitted(request: JsonObject) -> SubmitJob:
    """A stored request as its SubmitJob, as the daemon stored it (checked when it was submitted)."""
    return msgspec.convert(request or {"kind": "ask"}, SubmitJob)
