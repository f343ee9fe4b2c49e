"""Job events: what the engine emits, the store keeps in order, and adapters show.

Every event has a ``kind`` from :class:`EventKind` and a JSON-serialisable ``data`` dict whose
shape is that kind's record in :mod:`daemon.payloads` (checked when the daemon records it).
``phase`` and ``role`` are set when the event belongs to one. The store assigns ``seq``
(1, 2, 3, ... per job), which is also the resume point for event streams.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from daemon.payloads import Payload


class EventKind(StrEnum):
    """What happened; each kind's ``data`` is its record in :data:`daemon.payloads.PAYLOADS`."""

    JOB_STATE = "job_state"          # JobStateData: the job's new state
    PHASE_STARTED = "phase_started"  # PhaseStartedData
    PHASE_FINISHED = "phase_finished"  # PhaseFinishedData: conclusion, tokens, cost, seconds
    MESSAGE = "message"              # MessageData (the speaker is the event's role)
    QUESTION = "question"            # QuestionData: to the instructor or the human
    ANSWER = "answer"                # AnswerData
    TOOL_RUN = "tool_run"            # ToolRunData: tests, static checks, context
    USAGE = "usage"                  # UsageData: one model call
    CODE_STATE = "code_state"        # CodeStateData
    CHANGE_PROPOSED = "change_proposed"  # ChangeProposedData
    FINDING = "finding"              # FindingData
    LOG = "log"                      # LogData


@dataclass
class Event:
    kind: EventKind
    data: dict[str, Any] = field(default_factory=dict)
    phase: str | None = None
    role: str | None = None
    job_id: str | None = None
    seq: int | None = None
    at: float | None = None

    @property
    def payload(self) -> Payload:
        """``data`` as its kind's record (match on its class); PayloadError when it does not fit."""
        from daemon.payloads import payload  # payloads imports EventKind from here

        return payload(self.kind, self.data)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["kind"] = str(self.kind)
        return out


EventSink = Callable[[Event], Awaitable[None]]
"""Where the engine sends events; the daemon stores and broadcasts them."""
