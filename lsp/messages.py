"""The language server's own messages, written down once: every ``troupe.*`` command and
``troupe/…`` request (its params record and its result), every ``troupe/…`` notification (its
params record), and the error codes the server answers with.

The records are msgspec structs with camelCase keys on the wire (as LSP has them); an unknown
field is refused (:mod:`lsp.records`: :func:`~lsp.records.wire`, :func:`~lsp.records.read`). The VS Code
extension's types are generated from this module (``python -m lsp.typescript``, into
``vscode-extension/src/common/lsp.generated.ts``); ``tests/vscode`` fails on drift. A result or a
params field that is a daemon record (``JobInfo``, ``StreamEvent``, ``SearchResults``) keeps the
daemon's own JSON (snake_case), typed in ``daemon.generated.ts``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

from daemon.messages import (
    ChangeState,
    FindingState,
    JobInfo,
    JobList,
    JobState,
    SearchResults,
    Severity,
    StreamEvent,
)
from daemon.schema import Message
from lsp.records import Record

LinkState = Literal["connecting", "connected", "unreachable"]
JobsFilter = Literal["queued", "running", "waiting_for_answer", "succeeded", "failed", "cancelled", "active", "all"]


# ---------------------------------------------------------------- shared pieces


class Position(Record):
    """A position in a document, as LSP has it (0-based line, UTF-16 character by default)."""

    line: int
    character: int


class Range(Record):
    start: Position
    end: Position


class Empty(Record):
    """A request that takes no parameters (``{}``)."""


# ---------------------------------------------------------------- command arguments


class AskArgs(Record):
    """``troupe.ask``: a question (``mode: "ask"``) or a change to propose (``mode: "change"``).
    ``file`` is a document URI (or an absolute path) to focus on; a ``selection`` needs it."""

    prompt: str
    file: str | None = None
    selection: Range | None = None
    mode: Literal["ask", "change"] = "ask"

    def check(self) -> str | None:
        if not self.prompt.strip():
            return "prompt is empty: say what to ask the team"
        if self.selection is not None and self.file is None:
            return "a selection needs the file it is in"
        return None


class ReviewArgs(Record):
    """``troupe.review``: the file to review (a document URI or an absolute path)."""

    file: str


class RunTestsArgs(Record):
    """``troupe.test``: the file whose workspace's tests to run (none: the only workspace)."""

    file: str | None = None


class JobArgs(Record):
    """``troupe.cancel``."""

    job_id: str


class ViewerArgs(Record):
    """``troupe.openViewer``: the run viewer on one job (an id or a unique prefix), else the job list.
    ``open`` false: only answer the link (a client behind a port-forwarding proxy, such as VS Code in
    code-server, maps it with ``asExternalUri`` and opens it itself)."""

    job_id: str | None = None
    open: bool = True

    def check(self) -> str | None:
        return "jobId is empty" if self.job_id is not None and not self.job_id.strip() else None


class AnswerArgs(Record):
    """``troupe.answer``: answer the question a waiting job asked."""

    job_id: str
    text: str
    question_id: str | None = None

    def check(self) -> str | None:
        return None if self.text.strip() else "text is empty: the team needs an answer"


class ChangeArgs(Record):
    """``troupe.applyChange`` / ``troupe.discardChange``."""

    change_id: str


class DismissArgs(Record):
    """``troupe.dismiss``: the daemon keeps the finding dismissed (a learning), with the reason."""

    finding_id: int
    reason: str | None = None


class FindingArgs(Record):
    """``troupe.explain`` / ``troupe.fixApplied``."""

    finding_id: int


# ---------------------------------------------------------------- command results


class JobStarted(Record):
    """The answer of a command that starts a job: it is then followed (progress, questions, outcome)."""

    job_id: str


class JobStateChanged(Record):
    """``troupe.cancel`` / ``troupe.answer``: the job's state after it."""

    job_id: str
    state: JobState


class ChangeApplied(Record):
    change_id: str
    applied: bool


class ChangeDiscarded(Record):
    change_id: str
    state: ChangeState


class FindingStateChanged(Record):
    finding_id: int
    state: FindingState


class ViewerAnswer(Record):
    """``troupe.openViewer``'s answer: ``opened`` false leaves opening ``url`` to the client."""

    url: str
    opened: bool


# ---------------------------------------------------------------- request params and results


class JobsQuery(Record):
    """``troupe/jobs``: the daemon's jobs, newest first (``active``: queued, running or waiting)."""

    state: JobsFilter | None = None
    workspace: str | None = None
    limit: int = 50

    def check(self) -> str | None:
        return None if 1 <= self.limit <= 1000 else f"limit must be from 1 to 1000, got {self.limit}"


class ExperienceQuery(Record):
    """``troupe/experience``: search what the team has learnt."""

    query: str
    limit: int = 20

    def check(self) -> str | None:
        if not self.query.strip():
            return "query is empty: say what to look for"
        if not 1 <= self.limit <= 200:
            return f"limit must be from 1 to 200, got {self.limit}"
        return None


class ServerStatus(Record):
    """The ``troupe/status`` notification and the ``troupe/getStatus`` answer: the daemon link and this
    editor session's jobs and usage."""

    daemon: LinkState
    reason: str
    active_jobs: int
    workspaces: list[str]
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    cost: float


class DebugInfo(Record):
    """``troupe/debug``: what this process has loaded (tests check that the server stays light)."""

    pid: int
    engine_modules: list[str]
    modules: int
    documents: list[str]
    folders: dict[str, str | None]
    followed_jobs: list[str]


# ---------------------------------------------------------------- diagnostics' data


class FindingDiagnosticData(Record):
    """The ``data`` of a Troupe finding's diagnostic (the editor hands it back with code actions)."""

    finding_id: int
    fingerprint: str | None
    has_fix: bool  # the finding carries a suggested replacement (a quick fix)
    severity: Severity
    by: str  # who found it, for a person: "Troupe (AI reviewer)", "Troupe (F401)"


class LintDiagnosticData(Record):
    """The ``data`` of a lint diagnostic (the daemon's static lane: ruff)."""

    rule: str
    by: str
    has_fix: bool
    severity: Severity


# ---------------------------------------------------------------- notifications


class JobEventParams(Record):
    """``troupe/jobEvent``: a daemon event of a job in the registered workspaces or started here."""

    event: StreamEvent


class QuestionParams(Record):
    """``troupe/question``: the team asks; answer with ``troupe.answer``."""

    job_id: str
    question_id: str
    text: str


class ChangeProposedParams(Record):
    """``troupe/changeProposed``: apply with ``troupe.applyChange``. ``testsFailed``: the change's own
    tests failed (the daemon's summary): offer it with a warning."""

    job_id: str
    change_id: str
    files: list[str]
    diff: str
    tests_failed: str | None = None


class JobFinishedParams(Record):
    """``troupe/jobFinished``: the daemon's JobInfo of a job started here; ``viewerUrl`` a one-time run
    viewer link on it (spent at first use, valid 10 minutes), absent when the viewer is off."""

    job: JobInfo
    viewer_url: str | None = None


# ---------------------------------------------------------------- the tables


@dataclass(frozen=True)
class Call:
    """A request or a command: what it takes and what it answers."""

    params: type[Record]
    result: type[Record | Message]  # a daemon record (Message) is answered as the daemon's JSON
    optional: bool = False  # a command that may be called without its argument (as ``{}``)


COMMANDS: dict[str, Call] = {
    "troupe.ask": Call(AskArgs, JobStarted),
    "troupe.review": Call(ReviewArgs, JobStarted),
    "troupe.test": Call(RunTestsArgs, JobStarted, optional=True),
    "troupe.cancel": Call(JobArgs, JobStateChanged),
    "troupe.answer": Call(AnswerArgs, JobStateChanged),
    "troupe.applyChange": Call(ChangeArgs, ChangeApplied),
    "troupe.discardChange": Call(ChangeArgs, ChangeDiscarded),
    "troupe.dismiss": Call(DismissArgs, FindingStateChanged),
    "troupe.explain": Call(FindingArgs, JobStarted),
    "troupe.fixApplied": Call(FindingArgs, FindingStateChanged),
    "troupe.openViewer": Call(ViewerArgs, ViewerAnswer, optional=True),
}
"""``workspace/executeCommand`` commands: each takes ONE object (its params record)."""

REQUESTS: dict[str, Call] = {
    "troupe/jobs": Call(JobsQuery, JobList),
    "troupe/getStatus": Call(Empty, ServerStatus),
    "troupe/experience": Call(ExperienceQuery, SearchResults),
    "troupe/debug": Call(Empty, DebugInfo),
}
"""Custom requests (client -> server); no params reads as ``{}``."""

NOTIFICATIONS: dict[str, type[Record]] = {
    "troupe/status": ServerStatus,
    "troupe/jobEvent": JobEventParams,
    "troupe/question": QuestionParams,
    "troupe/changeProposed": ChangeProposedParams,
    "troupe/jobFinished": JobFinishedParams,
}
"""Custom notifications (server -> client)."""

METHOD_OF: dict[type[Record], str] = {record: method for method, record in NOTIFICATIONS.items()}


class ErrorCode(enum.IntEnum):
    """The JSON-RPC error codes the server answers with."""

    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    DAEMON_UNREACHABLE = -32001  # server-defined range: the daemon could not be reached
    REQUEST_FAILED = -32803
