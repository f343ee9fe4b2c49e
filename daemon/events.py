"""Job events: what the engine emits, the store keeps in order, and adapters show.

An event's ``data`` is a record of :mod:`daemon.payloads` (``Event(LogData(text="..."))``); its
``kind`` is the record's. A dict, or a record of a stream-only kind (``watch``, ``connection``), is
refused where the event is built. ``phase`` and ``role`` are set when the event belongs to one. The
store assigns ``seq`` (1, 2, 3, ... per job), which is also the resume point for event streams.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from daemon.json_types import JsonDict
from daemon.payloads import EventKind as EventKind
from daemon.payloads import Payload, PayloadError, wire


@dataclass
class Event:
    data: Payload
    phase: str | None = None
    role: str | None = None
    job_id: str | None = None
    seq: int | None = None
    at: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.data, Payload) or self.data.kind not in EventKind._value2member_map_:
            raise PayloadError(f"an event's data must be the record of a job event kind (daemon.payloads), "
                               f"got {type(self.data).__name__}")

    @property
    def kind(self) -> EventKind:
        return EventKind(self.data.kind)

    def to_dict(self) -> JsonDict:
        return {"kind": str(self.kind), "data": wire(self.data), "phase": self.phase, "role": self.role,
                "job_id": self.job_id, "seq": self.seq, "at": self.at}


EventSink = Callable[[Event], Awaitable[None]]
"""Where the engine sends events; the daemon stores and broadcasts them."""
Say = Callable[[Payload, "str | None"], Awaitable[None]]
"""How a part of the engine emits one payload, spoken by a role (None: by no role); the run adds the
phase and the job."""
