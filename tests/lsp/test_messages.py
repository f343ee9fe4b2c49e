"""The custom messages are declared once (lsp/messages.py) and the server serves exactly those: every
declared command and request is registered and reads its declared record (an unknown field is refused,
naming the known ones), every answer reads back as its declared result, and what the server sends
keeps the camelCase keys the extension reads. (Every notification a test's editor receives is read
as its declared record too: tests/lsp/conftest.py fails the test otherwise.)"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from daemon.schema import Message
from lsp.app import build_server
from lsp.messages import (
    COMMANDS,
    NOTIFICATIONS,
    REQUESTS,
    AskArgs,
    ChangeProposedParams,
    ErrorCode,
    JobStarted,
    JobStateChanged,
    Position,
    QuestionParams,
    Range,
)
from lsp.records import BadParams, Record, read, wire
from lsp.rpc import plain
from tests.daemon.conftest import DaemonProcess
from tests.lsp.conftest import Editor, new_repo


def keys(record: type[Record]) -> list[str]:
    return [f.encode_name for f in msgspec.structs.fields(record)]


def test_the_server_registers_every_declared_command_and_request_and_no_other() -> None:
    fm = build_server().protocol.fm
    assert sorted(fm.commands) == sorted(COMMANDS)
    assert sorted(m for m in fm.features if m.startswith("troupe")) == sorted(REQUESTS)
    assert not set(NOTIFICATIONS) & set(fm.features)  # notifications go the other way


def test_records_travel_with_camel_case_keys_and_leave_out_what_is_unset() -> None:
    assert wire(QuestionParams(job_id="j1", question_id="q1", text="Rename it?")) == {
        "jobId": "j1", "questionId": "q1", "text": "Rename it?"}
    proposed = ChangeProposedParams(job_id="j1", change_id="c1", files=["a.py"], diff="+x")
    assert wire(proposed) == {"jobId": "j1", "changeId": "c1", "files": ["a.py"], "diff": "+x"}
    assert wire(ChangeProposedParams(job_id="j", change_id="c", files=[], diff="", tests_failed="1 failed"))[
        "testsFailed"] == "1 failed"
    ask = AskArgs(prompt="fix it", file="file:///w/a.py", mode="change",
                  selection=Range(start=Position(line=1, character=0), end=Position(line=2, character=4)))
    assert read(AskArgs, wire(ask)) == ask


@pytest.mark.parametrize(("params", "words"), [
    ({"prompt": "hi", "bogus": 1}, "unknown field bogus; known fields are prompt, file, selection, mode"),
    ({"prompt": "hi", "file": "/w/a.py", "selection": {"start": {"line": 0, "character": 0, "col": 3},
                                                       "end": {"line": 0, "character": 1}}},
     "selection.start: unknown field col; known fields are line, character"),
    ({"prompt": "hi", "mode": "yolo"}, "mode must be one of 'ask', 'change'; got 'yolo'"),
    ({"prompt": "hi", "file": 5}, "file: expected str | null, got int"),
    ({}, "required field prompt is missing"),
])
def test_params_that_are_not_the_declared_record_are_refused_saying_why(params: dict[str, Any], words: str) -> None:
    with pytest.raises(BadParams) as caught:
        read(AskArgs, params)
    assert words in str(caught.value)


async def invalid(editor: Editor, method: str, params: Any) -> str:
    with pytest.raises(JsonRpcException) as caught:
        await editor.raw_request(method, params)
    assert caught.value.code == ErrorCode.INVALID_PARAMS, caught.value
    return caught.value.message


async def test_every_declared_message_is_served_with_its_records(engine_daemon: DaemonProcess,
                                                                 open_editor: Any) -> None:
    root = new_repo(engine_daemon.home, "declared")
    editor = await open_editor(engine_daemon.home, [root])
    await editor.registered(root)

    for name, call in COMMANDS.items():  # each reads its own record: an unknown field names the known ones
        message = await invalid(editor, types.WORKSPACE_EXECUTE_COMMAND,
                                {"command": name, "arguments": [{"bogus": 1}]})
        assert message == f"{name}: unknown field bogus; known fields are {', '.join(keys(call.params)) or 'none'}"
    for method, call in REQUESTS.items():
        message = await invalid(editor, method, {"bogus": 1})
        assert message == f"{method}: unknown field bogus; known fields are {', '.join(keys(call.params)) or 'none'}"

    given = {"troupe/jobs": {"workspace": str(root), "limit": 5}, "troupe/experience": {"query": "pathlib"}}
    for method, call in REQUESTS.items():  # each answer reads back as its declared result
        answer = plain(await editor.raw_request(method, given.get(method, {})))
        if issubclass(call.result, Record):
            read(call.result, answer)
        else:
            assert issubclass(call.result, Message)
            call.result.from_json(answer)

    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    for _ in range(5):  # a job that ended before the cancel reached it is refused: start another
        started = plain(await editor.command("troupe.test", {"file": str(root / "calc.py")}))
        assert read(JobStarted, started).job_id
        try:
            cancelled = plain(await editor.command("troupe.cancel", {"jobId": started["jobId"]}))
        except JsonRpcException as exc:
            assert "nothing to cancel" in str(exc), exc
            continue
        assert read(JobStateChanged, cancelled).job_id == started["jobId"]
        break
    else:
        raise AssertionError("each of 5 test jobs ended before its cancel")
