"""The API's types: every message round-trips through JSON, and bad input gets a readable 400."""

from __future__ import annotations

import dataclasses

import pytest

from daemon.api import protocol
from daemon.api.protocol import (
    Answer,
    JobInfo,
    Message,
    ProtocolError,
    RegisterWorkspace,
    StreamEvent,
    SubmitJob,
)


def all_message_types() -> list[type[Message]]:
    return [v for v in vars(protocol).values()
            if isinstance(v, type) and issubclass(v, Message) and v is not Message and dataclasses.is_dataclass(v)]


def test_every_message_type_has_a_json_round_trip() -> None:
    samples = {
        "SubmitJob": {"kind": "review", "workspace": "/r", "files": ["a.py"]},
        "JobOptions": {"diff": "--- a/a.py", "trigger": "save", "hashes": {"a.py": "0f"}, "teams": 2},
        "Answer": {"text": "postgres"},
        "RegisterWorkspace": {"root": "/r", "settings": {"model": "openai/gpt-4o-mini", "review_on_save": False}},
        "WorkspaceSettings": {"model": "ollama/llama3", "review_on_save": True, "test_on_save": False},
        "FindingUpdate": {"state": "dismissed"},
        "ApplyChange": {"write": False},
        "Usage": {},
        "Question": {"question_id": "q1", "text": "which?"},
        "JobInfo": {"id": "j", "kind": "ask", "state": "queued", "priority": 20, "question": {"question_id": "q",
                                                                                             "text": "?"}},
        "JobList": {"jobs": []},
        "StreamEvent": {"kind": "finding", "data": {"file": "a.py"}, "job_id": "j", "seq": 3},
        "EventList": {"events": [{"kind": "job_state", "data": {"state": "running"}}]},
        "ChangeInfo": {"id": "c", "job_id": "j", "state": "proposed", "diff": "--- a\n"},
        "FindingInfo": {"id": 1, "file": "a.py", "severity": "major", "message": "m", "start_line": 2},
        "FindingList": {"findings": []},
        "WorkspaceInfo": {"id": 1, "root": "/r", "settings": {"test_on_save": True}},
        "WorkspaceList": {"workspaces": []},
        "PersonInfo": {"name": "ada", "slack_user": "U0ADA", "bot": False},
        "SearchHit": {"kind": "finding", "text": "t"},
        "SearchResults": {"query": "q", "hits": []},
        "Health": {"api_version": 1, "version": "0.1.0", "pid": 1, "uptime_s": 1.5, "home": "/h", "executor": "x",
                   "tcp_port": 8765},
        "ViewerLinkRequest": {"job_id": "j1"},
        "ViewerLink": {"url": "http://127.0.0.1:8765/viewer/jobs/j1?token=abc", "expires_in": 600},
        "Metrics": {"requests": 1, "jobs_by_state": {}, "jobs_submitted": 0, "events_streamed": 0,
                    "watch_saves_seen": 0, "watch_jobs_started": 0, "watch_files_skipped": 0},
        "ErrorBody": {"code": "bad_request", "message": "m"},
        "LintRequest": {"path": "/r/a.py", "text": "import os\n"},
        "FilesSaved": {"root": "/r", "files": ["a.py"]},
        "LintEdit": {"start_line": 1, "start_col": 1, "end_line": 2, "end_col": 1, "text": ""},
        "LintFix": {"message": "Remove unused import", "applicability": "safe",
                    "edits": [{"start_line": 1, "start_col": 1, "end_line": 2, "end_col": 1, "text": ""}]},
        "LintDiagnostic": {"rule": "F821", "message": "Undefined name `x`", "severity": "major", "start_line": 1,
                           "start_col": 1, "end_line": 1, "end_col": 2},
        "LintResult": {"path": "/r/a.py", "content_hash": "ab", "diagnostics": [
            {"rule": "F401", "message": "`os` imported but unused", "severity": "minor", "start_line": 1,
             "start_col": 8, "end_line": 1, "end_col": 10, "fix": {"message": "Remove", "applicability": "safe"}}]},
    }
    types = all_message_types()
    assert {t.__name__ for t in types} == set(samples), "a new protocol type needs a sample here"
    for cls in types:
        obj = cls.from_json(samples[cls.__name__])
        assert cls.from_json(obj.to_json()) == obj


@pytest.mark.parametrize(("body", "message"), [
    ({"kind": "deploy"}, "SubmitJob.kind: 'deploy' is not one of 'ask', 'build', 'change', 'review', 'test'"),
    ({"kind": "ask", "workspace": "/r"}, "an ask job needs a prompt"),
    ({"kind": "ask", "prompt": 3, "workspace": "/r"}, "SubmitJob.prompt: Expected `str | null`, got `int`"),
    ({"kind": "review", "workspace": "/r"}, "a review job needs files"),
    ({"kind": "review", "workspace": "/r", "files": "a.py"}, "SubmitJob.files: Expected `array`, got `str`"),
    ({"kind": "ask", "prompt": "q", "workspace": "repo"}, "workspace must be an absolute path"),
    ({"kind": "ask", "prompt": "q", "workspace": "/r", "colour": "red"}, "unknown field(s) colour"),
    ({"kind": "ask", "prompt": "q", "workspace": "/r", "priority": "urgent"}, "'urgent' is not one of"),
    ([1, 2], "SubmitJob: expected a JSON object, got a list"),
    ({"kind": "review", "workspace": "/r", "files": ["../etc/passwd"]}, "must be a path inside the workspace"),
    ({"kind": "review", "workspace": "/r", "files": ["/etc/passwd"]}, "must be a path inside the workspace"),
])
def test_bad_submissions_say_what_is_wrong(body: object, message: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        SubmitJob.from_json(body)
    assert message in caught.value.message
    assert caught.value.status == 400


def test_an_overlong_field_is_413_not_400() -> None:
    with pytest.raises(ProtocolError) as caught:
        Answer.from_json({"text": "x" * 100_001})
    assert caught.value.status == 413


def test_interactive_jobs_outrank_background_reviews() -> None:
    ask = SubmitJob(kind="ask", workspace="/r", prompt="why?")
    save_review = SubmitJob(kind="review", workspace="/r", files=["a.py"], priority="background")
    assert ask.priority_value > SubmitJob(kind="review", workspace="/r", files=["a.py"]).priority_value
    assert SubmitJob(kind="review", workspace="/r", files=["a.py"]).priority_value > save_review.priority_value


def test_nested_types_and_unknown_event_kinds() -> None:
    job = JobInfo.from_json({"id": "j", "kind": "ask", "state": "running", "priority": 1,
                             "usage": {"prompt_tokens": 5, "completion_tokens": 2, "cost": 0}})
    assert job.usage.total_tokens == 7 and isinstance(job.usage.cost, float)
    with pytest.raises(ProtocolError, match="unknown event kind"):
        StreamEvent.from_json({"kind": "telepathy"})
    with pytest.raises(ProtocolError, match="root must be an absolute path"):
        RegisterWorkspace.from_json({"root": "."})
