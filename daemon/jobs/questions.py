"""Questions a job asks a person, and their answers — live, and replayed after a restart.

A job that asks waits in ``waiting_for_answer`` without holding a worker slot. The question and
the answer are events in the job's log, so a daemon that restarts can still take the answer:
the job is then re-run from its checkpoint and, when the executor asks the same question
again, the stored answer is given back at once instead of asking twice.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from daemon.payloads import HUMAN, AnswerData, QuestionData, payload

if TYPE_CHECKING:
    from storage import JobEvent


@dataclass
class PendingQuestion:
    question_id: str
    text: str
    future: asyncio.Future[str] | None = None


@dataclass
class QuestionBook:
    """The questions of one job: the one waiting now, and answers already given (for replay)."""

    pending: PendingQuestion | None = None
    replay: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def from_events(cls, events: Iterable[JobEvent]) -> QuestionBook:
        """Rebuild from stored events (objects with ``kind`` and ``data``)."""
        asked: dict[str, str] = {}
        answered: dict[str, str] = {}
        order: list[str] = []
        for event in events:
            body = payload(str(event.kind), event.data)
            if isinstance(body, QuestionData) and body.question_id and body.for_person:
                asked[body.question_id] = body.text
                order.append(body.question_id)
            elif isinstance(body, AnswerData) and body.question_id and body.by == HUMAN:
                answered[body.question_id] = body.text
        book = cls(replay=[(asked[q], answered[q]) for q in order if q in answered])
        unanswered = [q for q in order if q not in answered]
        if unanswered:
            book.pending = PendingQuestion(unanswered[-1], asked[unanswered[-1]])
        return book

    def take_replayed(self, question: str) -> str | None:
        """The stored answer to this question from an earlier run of the job, used once."""
        for index, (text, answer) in enumerate(self.replay):
            if text == question:
                del self.replay[index]
                return answer
        return None

    def ask(self, question: str) -> PendingQuestion:
        self.pending = PendingQuestion(secrets.token_hex(4), question,
                                       asyncio.get_running_loop().create_future())
        return self.pending
