"""The daemon API, written down once: every request, response and streamed event.

The types themselves are plain values in :mod:`daemon.messages` (requests and responses) and
:mod:`daemon.payloads` (event data, job results, progress), outside ``daemon.api`` so that nothing
below the edge imports it; this module is the wire: the routes, the version, the error body, and
the types re-exported for the edge and its clients.

Routes (all under ``/v1``; errors are ``{"error": {"code", "message"}}``)::

    GET    /v1/health                      -> Health
    GET    /v1/metrics                     -> Metrics
    POST   /v1/jobs           SubmitJob    -> JobInfo            (201)
    GET    /v1/jobs?state=&workspace=&kind=&limit= -> JobList  (state: one, a,b, active or all)
    GET    /v1/jobs/{id}                   -> JobInfo
    POST   /v1/jobs/{id}/cancel            -> JobInfo
    POST   /v1/jobs/{id}/answer  Answer    -> JobInfo
    GET    /v1/jobs/{id}/events?after=N    -> EventList, or SSE of StreamEvent
                                              (Accept: text/event-stream; resume with Last-Event-ID)
    GET    /v1/events?workspace=           -> SSE of StreamEvent for every job and the watcher
                                              (resume with Last-Event-ID within one daemon run)
    GET    /v1/changes/{id}                -> ChangeInfo
    POST   /v1/changes/{id}/apply  ApplyChange -> ChangeInfo     (409 when the files moved on;
                                              write=false: an editor already wrote them)
    POST   /v1/changes/{id}/discard        -> ChangeInfo
    GET    /v1/findings?workspace=&file=&state= -> FindingList
    POST   /v1/findings/{id}  FindingUpdate -> FindingInfo        (dismiss / reopen / resolve)
    POST   /v1/lint           LintRequest  -> LintResult         (the static lane: ruff on the given text,
                                              never queued behind a job)
    GET    /v1/workspaces                  -> WorkspaceList
    POST   /v1/workspaces     RegisterWorkspace -> WorkspaceInfo  (idempotent; settings: the editor's
                                              WorkspaceSettings, replacing earlier ones; absent: kept)
    DELETE /v1/workspaces/{id}?forget=1    -> WorkspaceInfo      (stop watching; forget=1 drops its rows)
    GET    /v1/experience/search?q=&limit= -> SearchResults     (Experience* types: protocol_experience)
    GET    /v1/experience?pool=&workspace=&order=&limit= -> ExperienceList;  /stats -> ExperienceStats
    GET    /v1/experience/export -> ExperienceDump;  POST /v1/experience/import ExperienceDump -> ImportResult
    GET|DELETE /v1/experience/{id} -> ExperienceInfo; POST /v1/experience/{id} ExperienceUpdate (pin)
    GET    /v1/experience/retrievals?job=&experience=&limit= -> RetrievalList  (why each matched; one of
                                              job or experience)
    POST   /v1/viewer/link    ViewerLinkRequest -> ViewerLink  (a one-time run viewer URL; 409 no_tcp_listener
                                              when the daemon has no loopback TCP listener)
    POST   /v1/shutdown                    -> Health             (graceful stop)
    GET    /v1/me                          -> PersonInfo         (a team server only: whose token this is)

A team server takes ``X-Troupe-On-Behalf-Of: <Slack user id>`` from a bot's token (:data:`ON_BEHALF_OF`):
the request is then the person that Slack user is mapped to (``daemon.api.team``).
"""

from __future__ import annotations

from dataclasses import dataclass

from daemon.json_types import JsonDict
from daemon.messages import (
    ACTIVE_STATES,
    COMPLETE_MAX_TOKENS,
    COMPLETE_MAX_TOKENS_LIMIT,
    CONNECTION_EVENT,
    FINAL_STATES,
    JOB_KINDS,
    PRIORITIES,
    STREAM_KINDS,
    WATCH_EVENT,
    Answer,
    ApplyChange,
    ChangeInfo,
    ChangeState,
    EventList,
    FilesSaved,
    FindingInfo,
    FindingList,
    FindingState,
    FindingUpdate,
    Health,
    JobInfo,
    JobKind,
    JobList,
    JobOptions,
    JobState,
    LintDiagnostic,
    LintEdit,
    LintFix,
    LintRequest,
    LintResult,
    Metrics,
    PersonInfo,
    PriorityName,
    Question,
    RegisterWorkspace,
    SearchHit,
    SearchResults,
    Severity,
    StreamEvent,
    SubmitJob,
    T,
    Usage,
    ViewerLink,
    ViewerLinkRequest,
    WorkspaceInfo,
    WorkspaceList,
    WorkspaceSettings,
)
from daemon.schema import Message, ProtocolError

API_VERSION = 1
PREFIX = f"/v{API_VERSION}"
ON_BEHALF_OF = "X-Troupe-On-Behalf-Of"

# Re-exported: the edge and its clients import the types from here.
__all__ = [
    "ACTIVE_STATES",
    "API_VERSION",
    "COMPLETE_MAX_TOKENS",
    "COMPLETE_MAX_TOKENS_LIMIT",
    "CONNECTION_EVENT",
    "FINAL_STATES",
    "JOB_KINDS",
    "ON_BEHALF_OF",
    "PREFIX",
    "PRIORITIES",
    "STREAM_KINDS",
    "WATCH_EVENT",
    "Answer",
    "ApplyChange",
    "ChangeInfo",
    "ChangeState",
    "ErrorBody",
    "EventList",
    "FilesSaved",
    "FindingInfo",
    "FindingList",
    "FindingState",
    "FindingUpdate",
    "Health",
    "JobInfo",
    "JobKind",
    "JobList",
    "JobOptions",
    "JobState",
    "LintDiagnostic",
    "LintEdit",
    "LintFix",
    "LintRequest",
    "LintResult",
    "Message",
    "Metrics",
    "PersonInfo",
    "PriorityName",
    "ProtocolError",
    "Question",
    "RegisterWorkspace",
    "SearchHit",
    "SearchResults",
    "Severity",
    "StreamEvent",
    "SubmitJob",
    "T",
    "Usage",
    "ViewerLink",
    "ViewerLinkRequest",
    "WorkspaceInfo",
    "WorkspaceList",
    "WorkspaceSettings",
    "error_json",
]


@dataclass
class ErrorBody(Message):
    code: str
    message: str


def error_json(code: str, message: str) -> JsonDict:
    return {"error": ErrorBody(code, message).to_json()}
