"""What an event, a job result and a job's progress hold, written down once.

Every :class:`EventKind` (and the two stream-only kinds, ``watch`` and ``connection``) has one
record here, and each record names its kind (``LogData.kind == "log"``): :data:`PAYLOADS` maps a
kind to its record, so the payloads are a tagged union by ``kind``. They are plain values (no
``daemon.api`` import). Emitters build the records (``Event(LogData(text=...))``): a field a record
does not declare is a ``TypeError`` there. Where data crosses an edge, msgspec checks it:
:func:`payload` when the daemon records an event and when a client reads one (an unknown field is a
:class:`PayloadError`), :func:`job_result` when a client reads a job. Every field has a default (a
clipped event keeps only ``text``); defaults are left out on the wire, except in the records sent
whole (a finding, a watcher notice, a connection change).

``vscode-extension/src/common/daemon.generated.ts`` is generated from these records and
:mod:`daemon.messages` (``python -m daemon.api.typescript``); a test fails when it drifts.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar, Literal

import msgspec

from daemon.json_types import Json, JsonDict, JsonObject
from daemon.workspace.reports import TestReport

HUMAN = "human"


class EventKind(StrEnum):
    """What happened; each kind's data is its record in :data:`PAYLOADS`."""

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


WATCH_EVENT = "watch"
CONNECTION_EVENT = "connection"


class Payload(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """Base of every event payload. Subclasses say ``frozen=True`` again: msgspec inherits it (and
    the refusal of unknown fields, and leaving defaults out) at run time, type checkers do not."""

    kind: ClassVar[str] = ""  # the event kind whose data this record is
    clipped: bool = False  # the stream cut a too-large event down to ``text``
    team: int | str | None = None  # Croto: the team that emitted it (0, 1, …), or "pool" for the merging


class JobStateData(Payload, frozen=True):
    kind: ClassVar[str] = EventKind.JOB_STATE
    state: str = ""
    error: str | None = None
    resumed: bool = False
    title: str | None = None  # on ``queued``: the job's title, for surfaces that see only events


class PhaseStartedData(Payload, frozen=True):
    kind: ClassVar[str] = EventKind.PHASE_STARTED
    phase: str = ""
    cycle: int | None = None


class PhaseFinishedData(Payload, frozen=True):
    kind: ClassVar[str] = EventKind.PHASE_FINISHED
    phase: str = ""
    cycle: int | None = None
    conclusion: str = ""
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    model_seconds: float | None = None
    engine_seconds: float | None = None
    calls: int | None = None
    turns: int | None = None
    files: list[str] = []
    delegated: bool = False
    skipped: str | None = None  # why the phase was skipped (experience, a shortcut)


class MessageData(Payload, frozen=True):
    kind: ClassVar[str] = EventKind.MESSAGE
    text: str = ""
    to: str | None = None  # the role spoken to; the speaker is the event's role
    reflection: bool = False


class QuestionData(Payload, frozen=True):
    kind: ClassVar[str] = EventKind.QUESTION
    question_id: str = ""
    text: str = ""
    to: str = HUMAN  # "instructor" or "human"

    @property
    def for_person(self) -> bool:
        """A person must answer it (the team asked its instructor otherwise)."""
        return self.to == HUMAN


class AnswerData(Payload, frozen=True):
    kind: ClassVar[str] = EventKind.ANSWER
    question_id: str = ""
    text: str = ""
    by: str = HUMAN
    escalated: bool = False  # the instructor passed the question on to a person


class ToolRunData(Payload, frozen=True):
    kind: ClassVar[str] = EventKind.TOOL_RUN
    tool: str = "tool"  # "tests", "static_check", "context", …
    ok: bool = False
    summary: str = ""
    passed: int | None = None
    failed: int | None = None
    seconds: float | None = None
    included: list[str] = []
    left_out: list[str] = []
    tokens: int | None = None

    @classmethod
    def of_report(cls, tool: str, report: TestReport, seconds: float) -> ToolRunData:
        """A test run (``tests``, ``doctests``, ``related_tests``) as its event: the report summed up."""
        return cls(tool=tool, ok=report.ok, summary=report.summary(), passed=report.passed, failed=report.failed,
                   seconds=round(seconds, 3))


class UsageData(Payload, frozen=True):
    kind: ClassVar[str] = EventKind.USAGE
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cached_prompt_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache
    total_tokens: int | None = None
    total_cost: float | None = None
    finish_reason: str | None = None
    max_tokens: int | None = None
    seconds: float | None = None  # the bare model (``complete``): the call, and the job's whole time
    model_seconds: float | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class CodeStateData(Payload, frozen=True):
    kind: ClassVar[str] = EventKind.CODE_STATE
    index: int = 0
    hash: str = ""
    files: list[str] = []
    instruction: str = ""


class ChangeProposedData(Payload, frozen=True):
    kind: ClassVar[str] = EventKind.CHANGE_PROPOSED
    change_id: str = ""
    files: list[str] = []
    diff: str = ""
    tests_failed: str | None = None  # the change's own tests failed: offer it with that warning


class FindingData(Payload, frozen=True, omit_defaults=False):  # sent whole, as before
    """One finding (the fields of ``daemon.messages.FindingInfo``); 1-based lines."""

    kind: ClassVar[str] = EventKind.FINDING
    id: int = 0
    file: str = ""
    severity: str = "info"
    message: str = ""
    start_line: int = 1
    start_col: int = 1
    end_line: int | None = None
    end_col: int | None = None
    state: str = "open"
    rule: str | None = None
    suggested_fix: str | None = None
    fingerprint: str | None = None
    job_id: str | None = None
    content_hash: str | None = None


class OrchestratorStep(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """The puppeteer orchestrator's pick (daemon.teams.puppeteer)."""

    action: str
    turn: int


class NetworkLayer(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """A MacNet layer that finished (daemon.teams.macnet): its agents, their calls, its temperature."""

    layer: int
    agents: int
    calls: int = 0
    temperature: float | None = None
    finished_at: float = 0.0  # seconds since the network started


class LogData(Payload, frozen=True):
    kind: ClassVar[str] = EventKind.LOG
    level: str = "info"  # "info", "warning", "error"
    text: str = ""
    skipped: str | None = None  # a loop skipped (its name); ``reason`` says why
    reason: str | None = None
    action: str | None = None  # "skipped", "stale", "applied", "discarded"
    file: str | None = None
    files: list[str] = []
    change_id: str | None = None
    experience: bool = False  # a note of the experience layer (daemon.experience.session):
    step: str | None = None  # a workflow shortcut: the loop or phase it plans,
    cycles: int | None = None  # and the cycles it gives a loop (0: skipped)
    learning: int | None = None  # a finding not reported again: the learning (a person's) that matched
    finish_reason: str | None = None  # a reply cut short: why ("length", …), and the cap it hit
    max_tokens: int | None = None
    finding: JsonObject | None = None  # a finding dropped as invalid: the model's raw JSON object
    orchestrator: OrchestratorStep | None = None
    network: NetworkLayer | None = None
    pool: JsonObject | None = None  # a Croto pool round's report (daemon.teams.pool.Note), free-form

    @property
    def notable(self) -> bool:
        """Worth a line of its own on a surface: a warning, an error or a skipped loop."""
        return self.level in ("warning", "error") or self.skipped is not None


class WatchData(Payload, frozen=True, omit_defaults=False):  # sent whole, as before
    kind: ClassVar[str] = WATCH_EVENT
    workspace: str | None = None
    action: str = ""  # queued | skipped | capped | polling | error
    files: list[str] = []  # the first 50
    count: int = 0  # how many files in all
    reason: str | None = None
    job_id: str | None = None  # queued: the job it started


class ConnectionData(Payload, frozen=True, omit_defaults=False):  # sent whole, as before
    """Made by the client (``DaemonClient.watch_events(patient=True)``), never sent by the daemon."""

    kind: ClassVar[str] = CONNECTION_EVENT
    state: Literal["lost", "back"] = "lost"
    error: str | None = None


PAYLOADS: dict[str, type[Payload]] = {record.kind: record for record in (
    JobStateData, PhaseStartedData, PhaseFinishedData, MessageData, QuestionData, AnswerData, ToolRunData,
    UsageData, CodeStateData, ChangeProposedData, FindingData, LogData, WatchData, ConnectionData)}
assert set(PAYLOADS) == {str(k) for k in EventKind} | {WATCH_EVENT, CONNECTION_EVENT}, "one record per event kind"
LEGACY_FIELDS: dict[str, frozenset[str]] = {EventKind.USAGE: frozenset({"calls", "tokens"})}
"""Fields that stored rows of older daemons carry and no record declares (a ``complete`` job's usage
event sent ``calls`` and ``tokens``): dropped when such a row is read, refused anywhere else."""


class PayloadError(ValueError):
    """Data that does not fit its kind's record; the message names the field."""


def payload(kind: str, data: Json) -> Payload:
    """``data`` as ``kind``'s record; :class:`PayloadError` when a field has the wrong type or is not
    one the record declares."""
    record = PAYLOADS.get(str(kind))
    if record is None:
        raise PayloadError(f"unknown event kind {kind!r}")
    data = {} if data is None else data
    legacy = LEGACY_FIELDS.get(str(kind))
    if legacy and isinstance(data, dict) and not legacy.isdisjoint(data):
        data = {k: v for k, v in data.items() if k not in legacy}
    try:
        return msgspec.convert(data, record, strict=True)
    except msgspec.ValidationError as exc:
        raise PayloadError(f"{kind} event data: {_where(exc)}") from None


def wire(record: Payload) -> JsonDict:
    """``record`` as JSON-ready event data (its defaults left out)."""
    data: JsonDict = msgspec.to_builtins(record, enc_hook=_plain)
    return data


def _plain(value: object) -> object:
    """A ``str`` subclass (the engine's ``Reply`` carries its finish reason) as the plain text."""
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"event data cannot hold a {type(value).__name__}")


def clipped_payload(kind: str, text: str) -> Payload:
    """What is left of a ``kind`` event too large to send: ``clipped``, and ``text`` where the record has it."""
    record = PAYLOADS[str(kind)]
    has_text = "text" in record.__struct_fields__
    return record(clipped=True, **({"text": text} if has_text else {}))


def _where(exc: msgspec.ValidationError) -> str:
    text = str(exc)
    message, _, path = text.partition(" - at `$")
    return f"{path.rstrip('`').lstrip('.')}: {message}" if path else message


# ---------------------------------------------------------------- job results


class ResultUsage(msgspec.Struct, kw_only=True, frozen=True):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cost: float = 0.0


class JobResult(msgspec.Struct, kw_only=True, frozen=True):
    """A finished job's result (``JobInfo.result``): a team's chain, or the bare model (``complete``)."""

    answer: str | None = None
    conclusion: str | None = None
    conclusions: dict[str, str] = {}
    status: str | None = None
    chain: str | None = None
    error: str | None = None
    warnings: list[str] = []
    files: list[str] = []
    test_report: TestReport | None = None
    tests: str | None = None  # chains with a test loop: "passed", "failed" or "not run"
    change_id: str | None = None
    findings: int | None = None  # how many findings were stored
    usage: ResultUsage | None = None
    model: str | None = None  # complete: the model that answered
    finish_reason: str | None = None
    capped: bool = False
    max_tokens: int | None = None

    @property
    def reply(self) -> str | None:
        """What the team (or the model) said: the answer, else the last phase's conclusion."""
        return self.answer or self.conclusion or None

    @property
    def plan(self) -> str | None:
        return self.conclusions.get("plan")


def job_result(data: Json) -> JobResult:
    """A job's stored result as its record; :class:`PayloadError` when a field has the wrong type."""
    try:
        return msgspec.convert(data or {}, JobResult, strict=True)
    except msgspec.ValidationError as exc:
        raise PayloadError(f"job result: {_where(exc)}") from None


# ---------------------------------------------------------------- job progress


class PendingQuestion(msgspec.Struct, kw_only=True, frozen=True):
    question_id: str
    text: str


class JobProgress(msgspec.Struct, kw_only=True, frozen=True):
    """Where a job stands, computed once by the daemon (:mod:`daemon.jobs.progress`) and sent with
    every ``JobInfo`` and every job event, so that no surface folds events itself."""

    state: str = "queued"
    phase: str | None = None  # the phase now running (the last one started)
    role: str | None = None  # the role speaking or calling the model last
    phases_done: int = 0
    tokens: int = 0  # prompt + completion tokens so far
    cached_tokens: int = 0  # of the prompt tokens, read from the provider's prompt cache
    cost: float = 0.0
    question: PendingQuestion | None = None  # what the team is waiting for a person to answer
    change_id: str | None = None  # the change the job proposed
    change_files: list[str] = []
