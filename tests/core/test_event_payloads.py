"""Event payloads are records, built typed by every emitter and checked where they are read.

``Event(LogData(text=...))``: the record names the event's kind; a field it does not declare is a
TypeError where it is built and a PayloadError where JSON is read back (the store, the stream).
"""

from __future__ import annotations

import ast
from pathlib import Path

import msgspec
import pytest

from daemon.events import Event, EventKind
from daemon.messages import FindingInfo, ProtocolError, StreamEvent
from daemon.payloads import (
    PAYLOADS,
    AnswerData,
    FindingData,
    LogData,
    NetworkLayer,
    OrchestratorStep,
    PayloadError,
    UsageData,
    WatchData,
    clipped_payload,
    payload,
    wire,
)

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("daemon", "lsp", "slack_bot", "mcp_server", "storage")
EVENT_TYPES = {"Event", "StreamEvent"}


def test_an_unknown_field_is_refused_where_the_payload_is_built() -> None:
    with pytest.raises(TypeError, match="bogus"):
        LogData(text="hello", bogus=1)  # type: ignore[call-arg]
    with pytest.raises(PayloadError, match="got dict"):
        Event({"text": "hello"})  # type: ignore[arg-type]
    with pytest.raises(PayloadError, match="got WatchData"):  # a stream-only kind is no job event
        Event(WatchData(action="queued"))


def test_an_unknown_field_is_refused_where_the_payload_is_read() -> None:
    with pytest.raises(PayloadError, match="log event data: Object contains unknown field `bogus`"):
        payload("log", {"text": "hello", "bogus": 1})
    with pytest.raises(PayloadError, match="unknown field `verdict`"):
        payload("log", {"text": "hello", "network": {"layer": 0, "agents": 2, "verdict": "ok"}})
    with pytest.raises(ProtocolError, match="message event data: Object contains unknown field `mood`"):
        StreamEvent.from_json({"kind": "message", "data": {"text": "hi", "mood": "happy"}})


def test_the_fields_that_rode_undeclared_are_declared_and_read_back() -> None:
    sent = [LogData(text="layer 1", team=0, network=NetworkLayer(layer=0, agents=2, calls=3, temperature=0.2)),
            LogData(text="orchestrator: next review", orchestrator=OrchestratorStep(action="review", turn=2)),
            LogData(text="pool round 1", team="pool", pool={"round": 1, "waiting": 3}),
            LogData(text="finding dropped", finding={"line": 3}, finish_reason="length", max_tokens=64),
            LogData(text="workflow shortcut", experience=True, step="review", cycles=0, learning=7),
            AnswerData(question_id="q1", text="ask the user", by="cto", escalated=True),
            UsageData(model="m", team=1, seconds=0.5, model_seconds=0.4)]
    for record in sent:
        assert payload(record.kind, msgspec.json.decode(msgspec.json.encode(wire(record)))) == record


def test_the_wire_leaves_defaults_out_except_in_records_sent_whole() -> None:
    assert wire(LogData(text="hello")) == {"text": "hello"}
    assert wire(FindingData(id=3, file="a.py"))["severity"] == "info"  # a finding is sent whole, as before
    for kind, record in PAYLOADS.items():
        assert record.kind == kind and payload(kind, wire(record())) == record()


def test_a_stored_usage_row_of_an_older_daemon_still_reads() -> None:
    old = {"model": "m", "calls": 1, "prompt_tokens": 3, "completion_tokens": 2, "tokens": 5, "cost": 0.0}
    usage = payload("usage", old)
    assert isinstance(usage, UsageData) and usage.tokens == 5
    with pytest.raises(PayloadError, match="calls"):  # only in stored rows of that kind
        payload("log", {"text": "x", "calls": 1})


def test_an_event_too_large_to_stream_keeps_its_kind_and_a_text_where_it_has_one() -> None:
    assert wire(clipped_payload("message", "too large")) == {"clipped": True, "text": "too large"}
    assert wire(clipped_payload("job_state", "too large")) == {"clipped": True}


def test_a_finding_event_reads_as_the_finding_it_carries() -> None:
    data = FindingData(id=4, file="a.py", severity="major", message="m", start_line=2, team=1)
    finding = FindingInfo.from_event(data, "/repo")
    assert (finding.id, finding.severity, finding.start_line, finding.workspace) == (4, "major", 2, "/repo")


def dict_literal_payloads(source: str) -> list[int]:
    """Lines where ``source`` builds event data as a dict literal: ``f(EventKind.X, {...})``,
    ``Event({...})``, ``StreamEvent(..., data={...})``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        kinds = [a for a in node.args if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name)
                 and a.value.id == "EventKind"]
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        values = [*node.args, *(k.value for k in node.keywords if k.arg == "data")]
        literal = any(isinstance(v, ast.Dict | ast.DictComp) for v in values)
        if literal and (kinds or name in EVENT_TYPES):
            found.append(node.lineno)
    return sorted(found)


def test_no_event_payload_is_built_as_a_dict_literal_outside_the_payload_module() -> None:
    offenders = [f"{path.relative_to(ROOT)}:{line}" for top in SOURCES for path in sorted((ROOT / top).rglob("*.py"))
                 if "eval/data" not in path.as_posix() and path.name != "payloads.py"
                 for line in dict_literal_payloads(path.read_text())]
    assert offenders == []


def test_the_dict_literal_check_finds_the_old_forms() -> None:
    old = ('await emit(Event(EventKind.LOG, {"text": "x"}))\nawait say(EventKind.USAGE, {"model": "m"}, "cto")\n'
           'StreamEvent(kind="watch", data={"action": "queued"})\n')
    assert dict_literal_payloads(old) == [1, 2, 3]
    assert EventKind.LOG.value == "log"
