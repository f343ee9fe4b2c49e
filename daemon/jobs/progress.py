"""A job's progress, folded from its events in one place for every surface (``JobProgress``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

from daemon.payloads import (
    HUMAN,
    AnswerData,
    ChangeProposedData,
    JobProgress,
    JobStateData,
    MessageData,
    PendingQuestion,
    PhaseFinishedData,
    PhaseStartedData,
    QuestionData,
    UsageData,
    payload,
)

if TYPE_CHECKING:
    from daemon.json_types import Json
    from storage import JobEvent


def advance(progress: JobProgress, kind: str, data: Json, *, phase: str | None = None,
            role: str | None = None) -> JobProgress:
    """The progress after one event (``data`` as recorded)."""
    body = payload(kind, data)
    changes: dict[str, object] = {}  # msgspec.structs.replace checks nothing: each value is its field's type
    if phase:
        changes["phase"] = phase
    if isinstance(body, JobStateData) and body.state:
        changes["state"] = body.state
        if body.state != "waiting_for_answer":
            changes["question"] = None
    elif isinstance(body, PhaseStartedData):
        changes.update(phase=body.phase or phase or progress.phase, role=role)
    elif isinstance(body, PhaseFinishedData):
        changes["phases_done"] = progress.phases_done + 1
    elif isinstance(body, UsageData):
        changes.update(tokens=progress.tokens + body.tokens, cost=progress.cost + body.cost,
                       cached_tokens=progress.cached_tokens + body.cached_prompt_tokens, role=role or progress.role)
    elif isinstance(body, MessageData) and role and role != HUMAN:
        changes["role"] = role
    elif isinstance(body, QuestionData) and body.for_person:
        changes["question"] = PendingQuestion(question_id=body.question_id, text=body.text)
    elif isinstance(body, AnswerData) and progress.question and body.question_id == progress.question.question_id:
        changes["question"] = None
    elif isinstance(body, ChangeProposedData):
        changes.update(change_id=body.change_id, change_files=list(body.files))
    return msgspec.structs.replace(progress, **changes) if changes else progress


def fold(events: Iterable[JobEvent]) -> JobProgress:
    """The progress after ``events`` (stored events, oldest first)."""
    progress = JobProgress()
    for event in events:
        progress = advance(progress, str(event.kind), event.data, phase=event.phase, role=event.role)
    return progress
