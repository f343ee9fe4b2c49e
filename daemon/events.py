"""Job events: what the engine emits, the store keeps in order, and adapters show.

Every event has a ``kind`` from :class:`EventKind` and a JSON-serialisable ``data`` dict.
``phase`` and ``role`` are set when the event belongs to one. The store assigns ``seq``
(1, 2, 3, ... per job), which is also the resume point for event streams.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class EventKind(StrEnum):
    JOB_STATE = "job_state"          # data: {"state": ..., "error"?: ...}
    PHASE_STARTED = "phase_started"  # data: {"phase": name, "cycle"?: n}
    PHASE_FINISHED = "phase_finished"  # data: {"phase": name, "conclusion": str, "tokens": n, "cost": x, "seconds": s}
    MESSAGE = "message"              # data: {"text": str, "to"?: role}  (role = speaker)
    QUESTION = "question"            # data: {"question_id": str, "text": str, "to": "instructor" | "human"}
    ANSWER = "answer"                # data: {"question_id": str, "text": str, "by": role | "human"}
    TOOL_RUN = "tool_run"            # data: {"tool": "pytest"|"ruff"|..., "ok": bool, "summary": str, ...}
    USAGE = "usage"                  # data: {"model", "prompt_tokens", "completion_tokens", "cost", "total_*"}
    CODE_STATE = "code_state"        # data: {"index", "hash", "files": [...], "instruction": str}
    CHANGE_PROPOSED = "change_proposed"  # data: {"change_id", "files": [...], "diff": str}
    FINDING = "finding"              # data: one finding as a dict
    LOG = "log"                      # data: {"level": ..., "text": ...}


@dataclass
class Event:
    kind: EventKind
    data: dict[str, Any] = field(default_factory=dict)
    phase: str | None = None
    role: str | None = None
    job_id: str | None = None
    seq: int | None = None
    at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["kind"] = str(self.kind)
        return out


EventSink = Callable[[Event], Awaitable[None]]
"""Where the engine sends events; the daemon stores and broadcasts them."""
