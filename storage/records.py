"""What the store hands back: one frozen dataclass per row kind, and the enums their states use.

Timestamps are Unix seconds (``time.time()``). Lines and columns of findings are 1-based, as a
person reads them; the LSP adapter converts to 0-based positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class JobKind(StrEnum):
    ASK = "ask"
    BUILD = "build"
    CHANGE = "change"
    REVIEW = "review"
    TEST = "test"
    COMPLETE = "complete"  # the bare model: one call, no team


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING_FOR_ANSWER = "waiting_for_answer"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        """A finished job never changes state again."""
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


class ChangeState(StrEnum):
    PROPOSED = "proposed"
    APPLIED = "applied"
    DISCARDED = "discarded"


class Severity(StrEnum):
    CRITICAL = "critical"
    MAJOR = "major"
    MINOR = "minor"
    INFO = "info"


class FindingState(StrEnum):
    OPEN = "open"
    APPLIED = "applied"  # the user applied the suggested fix
    DISMISSED = "dismissed"  # the user said it is not a problem; never shown again
    RESOLVED = "resolved"  # a later review of the file no longer reported it


@dataclass(frozen=True, slots=True)
class Workspace:
    id: int
    root: str  # absolute, resolved path of the repository root
    name: str
    created: float
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    kind: JobKind
    state: JobState
    workspace_id: int | None
    priority: int  # higher runs first
    request: dict[str, Any]
    result: Any
    error: str | None
    created: float
    updated: float
    started: float | None
    finished: float | None
    last_phase: str | None  # the last phase that finished, for resuming after a restart
    checkpoint: Any  # whatever the engine needs to resume from last_phase
    last_seq: int  # seq of the newest event; 0 when the job has none


@dataclass(frozen=True, slots=True)
class JobEvent:
    """One entry of a job's ordered log; field names match ``daemon.events.Event``."""

    job_id: str
    seq: int  # 1, 2, 3, ... per job, assigned by the store
    at: float
    kind: str
    data: dict[str, Any]
    phase: str | None = None
    role: str | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """A proposed change: nothing touches the user's files until it is applied."""

    id: str
    job_id: str
    workspace_id: int | None
    diff: str  # unified diff
    edits: Any  # structured edits (e.g. an LSP WorkspaceEdit as JSON)
    base_hashes: dict[str, str]  # file -> hash of its content when the change was proposed
    state: ChangeState
    created: float
    updated: float


@dataclass(frozen=True, slots=True)
class FindingDraft:
    """A finding as a reviewer reports it, before the store gives it an id and a state.

    ``fingerprint`` identifies "the same finding" across reviews (line numbers move, so they are
    not part of it); left empty, the store derives one from the file, rule and message.
    """

    message: str
    severity: Severity | str
    start_line: int
    start_col: int = 1
    end_line: int | None = None  # defaults to start_line
    end_col: int | None = None  # None: to the end of end_line
    rule: str | None = None
    suggested_fix: str | None = None
    fingerprint: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FindingDraft:
        """Build a draft from a dict (e.g. parsed model output); unknown keys are a ValueError."""
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"finding has unknown fields {sorted(unknown)}; known: "
                             f"{sorted(cls.__dataclass_fields__)}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(f"finding is missing a field: {exc}") from None


@dataclass(frozen=True, slots=True)
class Finding:
    id: int
    workspace_id: int
    job_id: str | None
    file: str  # workspace-relative, '/'-separated
    start_line: int
    start_col: int
    end_line: int
    end_col: int | None
    severity: Severity
    message: str
    rule: str | None
    suggested_fix: str | None
    fingerprint: str
    state: FindingState
    created: float
    updated: float
    content_hash: str | None = None  # sha256 of the file text the review read


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One model call's token and cost accounting."""

    id: int
    job_id: str | None
    at: float
    model: str
    role: str | None
    prompt_tokens: int
    completion_tokens: int
    cost: float  # dollars; 0 for local or unpriced models
    cached_prompt_tokens: int = 0  # of prompt_tokens, served from the provider's prompt cache


@dataclass(frozen=True, slots=True)
class UsageTotals:
    job_id: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    cached_prompt_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
