"""Store records -> protocol types. The only place that knows both shapes.

The store's enums (``storage.records``) and the protocol's Literals name the same values (a test
says so), so an enum's value is cast to its Literal here.
"""

from __future__ import annotations

from typing import cast

from daemon.api.protocol import (
    ChangeInfo,
    ChangeState,
    FindingInfo,
    FindingState,
    JobInfo,
    JobKind,
    JobState,
    ProtocolError,
    Question,
    Severity,
    StreamEvent,
    Usage,
    WorkspaceInfo,
    WorkspaceSettings,
)
from daemon.jobs.describe import job_title, tests_failed
from daemon.jobs.progress import advance
from daemon.payloads import JobProgress, JobResult, PayloadError, PendingQuestion, ResultUsage, job_result
from storage import Change, Finding, Job, JobEvent, UsageTotals, Workspace


def job_info(job: Job, *, workspace: str | None, usage: UsageTotals | None = None,
             question: tuple[str, str] | None = None, progress: JobProgress | None = None) -> JobInfo:
    result = job.result if isinstance(job.result, dict) else ({"value": job.result} if job.result else None)
    try:
        outcome = job_result(result)
    except PayloadError:  # not written by this daemon: shown as it is, read as empty
        outcome = JobResult()
    if usage is not None:
        totals = Usage(usage.prompt_tokens, usage.completion_tokens, float(usage.cost),
                       int(getattr(usage, "cached_prompt_tokens", 0)))
    else:
        stored = outcome.usage or ResultUsage()
        totals = Usage(stored.prompt_tokens, stored.completion_tokens, stored.cost, stored.cached_prompt_tokens)
    return JobInfo(
        id=job.id, kind=cast(JobKind, str(job.kind)), state=job_state(job), priority=job.priority, workspace=workspace,
        request=job.request or {}, result=result, error=job.error, created_at=job.created,
        started_at=job.started, finished_at=job.finished, usage=totals,
        question=Question(*question) if question else None, last_seq=job.last_seq,
        title=job_title(str(job.kind), job.request or {}), tests_failed=tests_failed(result),
        progress=progress or JobProgress(  # not followed live: what the job's row says
            state=str(job.state), phase=job.last_phase, tokens=totals.total_tokens, cost=totals.cost,
            question=PendingQuestion(question_id=question[0], text=question[1]) if question else None,
            change_id=outcome.change_id),
    )


def job_state(job: Job) -> JobState:
    return cast(JobState, str(job.state))


def event_info(event: JobEvent, *, workspace: str | None, progress: JobProgress | None = None) -> StreamEvent:
    return StreamEvent(kind=event.kind, data=event.data or {}, job_id=event.job_id, seq=event.seq,
                       phase=event.phase, role=event.role, at=event.at, workspace=workspace, progress=progress)


def events_info(events: list[JobEvent], *, after: int, workspace: str | None) -> list[StreamEvent]:
    """A job's stored events after seq ``after``, each with the progress it left (``events``: all, from 1)."""
    shown, progress = [], JobProgress()
    for event in events:
        progress = advance(progress, str(event.kind), event.data, phase=event.phase, role=event.role)
        if (event.seq or 0) > after:
            shown.append(event_info(event, workspace=workspace, progress=progress))
    return shown


def finding_info(finding: Finding, *, workspace: str | None) -> FindingInfo:
    return FindingInfo(
        id=finding.id, file=finding.file, severity=cast(Severity, str(finding.severity)), message=finding.message,
        start_line=finding.start_line, start_col=finding.start_col, end_line=finding.end_line,
        end_col=finding.end_col, state=cast(FindingState, str(finding.state)), rule=finding.rule,
        suggested_fix=finding.suggested_fix,
        fingerprint=finding.fingerprint, workspace=workspace, job_id=finding.job_id,
        content_hash=getattr(finding, "content_hash", None),
    )


def change_info(change: Change, *, workspace: str | None, job_result: object = None) -> ChangeInfo:
    edits = change.edits
    files = [e.get("path") for e in edits.get("edits", [])] if isinstance(edits, dict) else []
    return ChangeInfo(id=change.id, job_id=change.job_id, state=cast(ChangeState, str(change.state)), diff=change.diff,
                      files=[f for f in files if isinstance(f, str)], edits=edits,
                      base_hashes=dict(change.base_hashes or {}), workspace=workspace,
                      tests_failed=tests_failed(job_result if isinstance(job_result, dict) else None))


def workspace_info(workspace: Workspace, *, watching: bool = False, mode: str | None = None) -> WorkspaceInfo:
    return WorkspaceInfo(id=workspace.id, root=workspace.root, watching=watching, watch_mode=mode,
                         settings=workspace_settings(workspace))


def workspace_settings(workspace: Workspace) -> WorkspaceSettings:
    """The editor overrides the store keeps for a workspace (``settings["overrides"]``)."""
    stored = (workspace.settings or {}).get("overrides") or {}
    try:
        return WorkspaceSettings.from_json(stored)
    except ProtocolError:  # written by an older daemon, or by hand: show none rather than fail
        return WorkspaceSettings()
