"""The daemon's messages, written down once: every request, response and streamed event.

They are plain values, outside :mod:`daemon.api` so that the core (jobs, watch, eval, lint) uses
them without importing the HTTP edge; :mod:`daemon.api.protocol` lists the routes that carry them
and re-exports them. The CLI, the language server and the Slack bot speak to the daemon only through
:mod:`daemon.client`, which speaks only these types. Each type is a dataclass with ``to_json()`` and
``from_json(data)``; ``from_json`` validates and raises :class:`ProtocolError` with a message a
person can act on (the server answers it as 400). Event data and job results are the records of
:mod:`daemon.payloads`.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import msgspec

from daemon.events import EventKind
from daemon.job_options import COMPLETE_MAX_TOKENS as COMPLETE_MAX_TOKENS
from daemon.job_options import COMPLETE_MAX_TOKENS_LIMIT as COMPLETE_MAX_TOKENS_LIMIT
from daemon.job_options import JobOptions as JobOptions
from daemon.json_types import Json, JsonDict, JsonObject
from daemon.payloads import CONNECTION_EVENT as CONNECTION_EVENT
from daemon.payloads import WATCH_EVENT as WATCH_EVENT
from daemon.payloads import FindingData, JobProgress, JobResult, Payload, PayloadError, job_result, payload, wire
from daemon.schema import Message, ProtocolError
from daemon.schema import T as T  # re-exported: handlers type their bodies with it

JobKind = Literal["ask", "build", "change", "review", "test", "complete"]
"""``complete`` is the bare model: one prompt, one reply (capped at ``options.max_tokens``, default
COMPLETE_MAX_TOKENS), through the gateway with the workspace's model; no team, no files read."""
JOB_KINDS: tuple[str, ...] = typing.get_args(JobKind)
JobState = Literal["queued", "running", "waiting_for_answer", "succeeded", "failed", "cancelled"]
ACTIVE_STATES = ("queued", "running", "waiting_for_answer")
FINAL_STATES = ("succeeded", "failed", "cancelled")
PriorityName = Literal["interactive", "normal", "background"]
# A person waiting beats a background review: higher runs first.
PRIORITIES: dict[str, int] = {"interactive": 20, "normal": 10, "background": 0}
Severity = Literal["critical", "major", "minor", "info"]
FindingState = Literal["open", "dismissed", "resolved", "applied"]
ChangeState = Literal["proposed", "applied", "discarded"]

# WATCH_EVENT: stream-only kind for the watcher; CONNECTION_EVENT: client-made, never sent by the daemon
# (``DaemonClient.watch_events(patient=True)`` yields it when the connection is lost and when it is back).
# Their data, like every event's, is a record of daemon.payloads.
STREAM_KINDS = frozenset({k.value for k in EventKind} | {WATCH_EVENT, CONNECTION_EVENT})


# ---------------------------------------------------------------- requests


@dataclass
class SubmitJob(Message):
    """Ask the daemon to do something. ``workspace`` is the repository root (absolute path)."""

    kind: JobKind
    workspace: str | None = None
    prompt: str | None = None
    files: list[str] = field(default_factory=list)
    priority: PriorityName | None = None
    options: JobOptions = field(default_factory=JobOptions)  # what its kind takes: daemon.job_options
    history: list[str] = field(default_factory=list)
    """The earlier jobs of the same conversation (ids, oldest first): the daemon puts what was asked
    and answered there into the prompt (:mod:`daemon.jobs.history`)."""
    _max_lengths: ClassVar[dict[str, int]] = {"prompt": 200_000, "files": 1_000, "history": 1_000}

    def validate(self) -> None:
        if self.kind in ("ask", "build", "change", "complete") and not (self.prompt or "").strip():
            raise ProtocolError(f"an {self.kind} job needs a prompt: say what the team should do")
        if self.kind == "review" and not self.files and not self.options.diff:
            raise ProtocolError("a review job needs files (paths inside the workspace) or options.diff")
        if self.kind != "build" and self.workspace is None:
            raise ProtocolError(f"this {self.kind} job needs a workspace: the repository root")
        if self.workspace is not None and not self.workspace.startswith("/"):
            raise ProtocolError(f"workspace must be an absolute path, got {self.workspace!r}")
        for name in self.files:
            if name.startswith("/") or ".." in name.replace("\\", "/").split("/") or not name.strip():
                raise ProtocolError(f"file {name!r} must be a path inside the workspace, relative to its root")
        self.options.for_kind(self.kind)

    @property
    def priority_value(self) -> int:
        default = "interactive" if self.kind in ("ask", "build", "change") else "normal"
        return PRIORITIES[self.priority or default]


@dataclass
class Answer(Message):
    """A person's answer to the question a waiting job asked."""

    text: str
    question_id: str | None = None
    _max_lengths: ClassVar[dict[str, int]] = {"text": 100_000}

    def validate(self) -> None:
        if not self.text.strip():
            raise ProtocolError("the answer is empty")


@dataclass
class WorkspaceSettings(Message):
    """An editor's overrides for one workspace (``troupe.model``, ``troupe.reviewOnSave``,
    ``troupe.testOnSave``); None, or an empty model, means no override. They win over the user and
    repository files; ``TROUPE_MODEL`` still wins over ``model`` (:func:`daemon.config.with_overrides`)."""

    model: str | None = None
    review_on_save: bool | None = None
    test_on_save: bool | None = None
    _max_lengths: ClassVar[dict[str, int]] = {"model": 300}

    def validate(self) -> None:
        if self.model is not None:
            self.model = self.model.strip() or None
        if self.model is not None and any(c.isspace() for c in self.model):
            raise ProtocolError(f"model {self.model!r} is not a litellm model string (it has spaces)")

    def overrides(self) -> JsonDict:
        """The overrides as the store keeps them: only those that are set."""
        return {k: v for k, v in self.to_json().items() if v is not None}


@dataclass
class RegisterWorkspace(Message):
    """Register (and watch) a repository; ``settings``, when given, replace its editor overrides.
    ``remote`` (the folder's git remote) is how a team server finds the workspace an editor's
    clone is of (:func:`daemon.api.team.register_workspace`); the laptop daemon ignores it."""

    root: str
    watch: bool = True
    settings: WorkspaceSettings | None = None
    remote: str | None = None

    def validate(self) -> None:
        if not self.root.startswith("/"):
            raise ProtocolError(f"root must be an absolute path, got {self.root!r}")


@dataclass
class FilesSaved(Message):
    """An editor saved these files (relative to ``root``, a registered workspace) where the daemon's
    watcher does not see saves: the daemon decides what they start, as for a watched save."""

    root: str
    files: list[str]

    def validate(self) -> None:
        if not self.root.startswith("/"):
            raise ProtocolError(f"root must be an absolute path, got {self.root!r}")
        for name in self.files:
            if name.startswith("/") or ".." in name.split("/"):
                raise ProtocolError(f"files: {name!r} must be relative to the workspace and stay inside it")


@dataclass
class ViewerLinkRequest(Message):
    """A link to the run viewer: on one job (an id, or a unique prefix of one), else on the job list."""

    job_id: str | None = None
    _max_lengths: ClassVar[dict[str, int]] = {"job_id": 200}


@dataclass
class ApplyChange(Message):
    """``write`` false records a change an editor applied itself (``workspace/applyEdit``)."""

    write: bool = True


@dataclass
class FindingUpdate(Message):
    state: FindingState
    reason: str | None = None


@dataclass
class LintRequest(Message):
    """Lint this text as the file ``path`` (absolute; the project's ruff configuration applies)."""

    path: str
    text: str
    _max_lengths: ClassVar[dict[str, int]] = {"path": 4_096, "text": 1_000_000}

    def validate(self) -> None:
        if not self.path.startswith("/"):
            raise ProtocolError(f"path must be an absolute path, got {self.path!r}")


# ---------------------------------------------------------------- responses


@dataclass
class Usage(Message):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0  # cached prompt tokens priced at the provider's cached rate
    cached_prompt_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cached_note(self) -> str:
        """What every surface shows beside the tokens: " (1,200 cached)", or "" when nothing was cached."""
        return f" ({self.cached_prompt_tokens:,} cached)" if self.cached_prompt_tokens else ""


@dataclass
class LintEdit(Message):
    """Replace the text from (``start_line``, ``start_col``) to (``end_line``, ``end_col``), 1-based
    lines and character columns, end exclusive."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int
    text: str


@dataclass
class LintFix(Message):
    message: str
    applicability: Literal["safe", "unsafe", "display-only"]
    edits: list[LintEdit] = field(default_factory=list)


@dataclass
class LintDiagnostic(Message):
    """One lint issue; ``message`` does not repeat ``rule``; 1-based lines and character columns."""

    rule: str
    message: str
    severity: Severity
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    fix: LintFix | None = None


@dataclass
class LintResult(Message):
    """``configured``: the project's own ruff configuration applied (else ruff's defaults)."""

    path: str
    content_hash: str
    diagnostics: list[LintDiagnostic] = field(default_factory=list)
    configured: bool = False
    error: str | None = None  # ruff could not run; diagnostics is empty


@dataclass
class Question(Message):
    question_id: str
    text: str


@dataclass
class JobInfo(Message):
    id: str
    kind: JobKind
    state: JobState
    priority: int
    workspace: str | None = None
    request: JsonObject = field(default_factory=dict)  # the SubmitJob as stored: read it as .submitted
    result: JsonObject | None = None  # the job's stored result: read it as .outcome
    error: str | None = None
    created_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    usage: Usage = field(default_factory=Usage)
    question: Question | None = None
    last_seq: int = 0
    title: str = ""  # what the job is about, for a person ("review on save: app.py"): views.job_title
    tests_failed: str | None = None  # its own test run failed ("Tests FAILED: 1 failed …"): result.test_report
    progress: JobProgress = field(default_factory=JobProgress)  # phase, role, tokens, cost, pending question

    @property
    def submitted(self) -> SubmitJob:
        """``request`` as the SubmitJob it was (its prompt, files and options)."""
        return SubmitJob.from_json(self.request)

    @property
    def outcome(self) -> JobResult:
        """``result`` as its record (empty while the job runs)."""
        return job_result(self.result)

    def validate(self) -> None:
        try:
            self.outcome  # noqa: B018 - checked at the edge, read later
        except PayloadError as exc:
            raise ProtocolError(f"JobInfo.{exc}") from None


@dataclass
class JobList(Message):
    jobs: list[JobInfo]


@dataclass
class StreamEvent(Message):
    """One event of a job (or of the watcher when ``job_id`` is None); ``seq`` orders a job's events.
    ``data`` is the record of ``kind`` in daemon.payloads (read it as :attr:`payload`); ``progress``
    is the job's progress after this event, computed by the daemon (None on the watcher's events)."""

    kind: str
    data: JsonObject = field(default_factory=dict)  # kind's payload record as JSON: read it as .payload
    job_id: str | None = None
    seq: int | None = None
    phase: str | None = None
    role: str | None = None
    at: float | None = None
    workspace: str | None = None
    progress: JobProgress | None = None

    @classmethod
    def of(cls, record: Payload, *, job_id: str | None = None, seq: int | None = None, phase: str | None = None,
           role: str | None = None, at: float | None = None, workspace: str | None = None,
           progress: JobProgress | None = None) -> StreamEvent:
        """The event that carries ``record``: its kind, and its data as sent."""
        return cls(kind=record.kind, data=wire(record), job_id=job_id, seq=seq, phase=phase, role=role, at=at,
                   workspace=workspace, progress=progress)

    @property
    def payload(self) -> Payload:
        """``data`` as its kind's record (match on its class: ``isinstance(e.payload, QuestionData)``)."""
        return payload(self.kind, self.data)

    def validate(self) -> None:
        if self.kind not in STREAM_KINDS:
            raise ProtocolError(f"unknown event kind {self.kind!r}")
        try:
            self.payload  # noqa: B018 - checked at the edge, read later
        except PayloadError as exc:
            raise ProtocolError(str(exc)) from None


@dataclass
class EventList(Message):
    events: list[StreamEvent]
    job_state: JobState | None = None


@dataclass
class ChangeInfo(Message):
    id: str
    job_id: str | None
    state: ChangeState
    diff: str
    files: list[str] = field(default_factory=list)
    edits: Json = None  # the change's structured edits as the engine made them (ProposedDiff.to_dict)
    base_hashes: dict[str, str] = field(default_factory=dict)
    workspace: str | None = None
    tests_failed: str | None = None  # the change's own tests failed: offer it with that warning, not a plain Apply


@dataclass
class FindingInfo(Message):
    """A review comment; lines and columns are 1-based, ``file`` is workspace-relative."""

    id: int
    file: str
    severity: Severity
    message: str
    start_line: int
    start_col: int = 1
    end_line: int | None = None
    end_col: int | None = None
    state: FindingState = "open"
    rule: str | None = None
    suggested_fix: str | None = None
    fingerprint: str | None = None
    workspace: str | None = None
    job_id: str | None = None
    content_hash: str | None = None  # sha256 of the file text the finding was computed on

    @classmethod
    def from_event(cls, data: FindingData, workspace: str | None) -> FindingInfo:
        """The finding a ``finding`` event carries (checked as any FindingInfo: ProtocolError)."""
        names = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in msgspec.structs.asdict(data).items() if k in names}
        return cls.from_json({**fields, "workspace": workspace})


@dataclass
class FindingList(Message):
    findings: list[FindingInfo]


@dataclass
class WorkspaceInfo(Message):
    id: int
    root: str
    watching: bool = False
    watch_mode: str | None = None
    settings: WorkspaceSettings = field(default_factory=WorkspaceSettings)


@dataclass
class WorkspaceList(Message):
    workspaces: list[WorkspaceInfo]


@dataclass
class PersonInfo(Message):
    """A team server's answer to ``GET /v1/me``: whose token this is (never the token)."""

    name: str
    slack_user: str | None = None
    bot: bool = False  # may act for Slack users (``X-Troupe-On-Behalf-Of``)


@dataclass
class SearchHit(Message):
    kind: str
    text: str
    job_id: str | None = None
    file: str | None = None
    score: float | None = None
    id: int | None = None  # experience hits: the experience's id


@dataclass
class SearchResults(Message):
    query: str
    hits: list[SearchHit]


@dataclass
class Health(Message):
    api_version: int
    version: str
    pid: int
    uptime_s: float
    home: str
    executor: str
    jobs: dict[str, int] = field(default_factory=dict)
    watch: JsonObject = field(default_factory=dict)  # the watchers' status (daemon.watch.registry.WatchStatus)
    stopping: bool = False
    tcp_port: int | None = None  # the loopback TCP listener (run viewer); None: off

    @property
    def viewer(self) -> str | None:
        """The run viewer's address (it opens with a one-time link: ``troupe jobs --open``)."""
        return f"http://127.0.0.1:{self.tcp_port}/viewer/" if self.tcp_port else None


@dataclass
class ViewerLink(Message):
    """A one-time link to the run viewer: the first visit trades it for a session cookie."""

    url: str
    expires_in: int


@dataclass
class Metrics(Message):
    requests: int
    jobs_by_state: dict[str, int]
    jobs_submitted: int
    events_streamed: int
    watch_saves_seen: int
    watch_jobs_started: int
    watch_files_skipped: int
