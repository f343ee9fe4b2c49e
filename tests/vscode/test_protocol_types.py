"""The extension's TypeScript view of the daemon (src/common/daemon.generated.ts) and of the language
server's custom messages (src/common/lsp.generated.ts) is generated from the Python protocol; this
fails when the two drift (a field, a kind, a message or a record added in Python and not regenerated,
or a file edited by hand), and when the extension keeps a hand copy of what is generated."""

from __future__ import annotations

import re

import msgspec

from daemon.api import typescript as daemon_ts
from daemon.payloads import PAYLOADS
from lsp import messages
from lsp import typescript as lsp_ts

PROTOCOL_TS = daemon_ts.TARGET.with_name("protocol.ts")
EXTENSION_SRC = daemon_ts.TARGET.parents[1]


def test_the_committed_typescript_types_are_what_the_python_protocol_generates() -> None:
    assert daemon_ts.TARGET.read_text() == daemon_ts.generate(), (
        "vscode-extension/src/common/daemon.generated.ts is stale: run `python -m daemon.api.typescript --write`")
    assert lsp_ts.TARGET.read_text() == lsp_ts.generate(), (
        "vscode-extension/src/common/lsp.generated.ts is stale: run `python -m lsp.typescript --write`")


def test_every_event_kind_and_the_job_progress_have_typescript_types() -> None:
    text = daemon_ts.generate()
    for kind, record in PAYLOADS.items():
        assert f"  {kind}: {record.__name__};" in text and f"export interface {record.__name__} {{" in text
    assert "export interface JobProgress {" in text and "  progress?: JobProgress;" in text
    assert '"complete"' in text.split("export type JobKind =")[1].split("\n")[0]  # the kind the hand copy lacked
    assert "  result?: JobResult | null;" in text
    assert "export interface JobOptions {" in text and "  options?: JobOptions;" in text


def _fields(text: str, interface: str) -> dict[str, str]:
    body = re.search(rf"^export interface {interface} {{\n(.*?)^}}", text, re.MULTILINE | re.DOTALL)
    assert body is not None, f"no interface {interface}"
    return dict(re.findall(r"^  (\w+\??): (.+);$", body.group(1), re.MULTILINE))


def test_every_custom_message_and_its_records_are_typed_with_the_wire_keys() -> None:
    text = lsp_ts.generate()
    for table, calls in (("CommandTypes", messages.COMMANDS), ("RequestTypes", messages.REQUESTS)):
        for method, call in calls.items():
            line = f'  "{method}": {{ params: {call.params.__name__}; result: {call.result.__name__} }};'
            assert line in text.split(f"export interface {table} {{")[1], line
    for method, record in messages.NOTIFICATIONS.items():
        assert f'  "{method}": {record.__name__};' in text
    for record in lsp_ts.RECORDS:  # each field under the key the server sends (camelCase)
        keys = {f.encode_name for f in msgspec.structs.fields(record)}
        assert {k.rstrip("?") for k in _fields(text, record.__name__)} == keys, record.__name__
    assert _fields(text, "ChangeProposedParams")["testsFailed?"] == "string"  # left out, never null
    assert _fields(text, "JobEventParams")["event"] == "TroupeEvent"
    assert _fields(text, "ServerStatus")["daemon"] == '"connected" | "connecting" | "unreachable"'
    for code in messages.ErrorCode:
        assert f": {code.value}," in text.split("export const ErrorCodes = {")[1].split("}")[0]


def test_the_extension_keeps_no_hand_copy_of_the_generated_types() -> None:
    protocol = PROTOCOL_TS.read_text()
    assert not re.search(r"^export (interface|const|type|enum) ", protocol, re.MULTILINE), (
        "src/common/protocol.ts only re-exports the generated types")
    generated = set(re.findall(r"^export (?:interface|const|type) (\w+)", lsp_ts.generate(), re.MULTILINE))
    for source in EXTENSION_SRC.rglob("*.ts"):
        if source.name.endswith(".generated.ts") or "test" in source.parts:
            continue
        declared = set(re.findall(r"^export (?:interface|const|type) (\w+)", source.read_text(), re.MULTILINE))
        assert not declared & generated, f"{source} declares {sorted(declared & generated)} again"
    for method in (*messages.COMMANDS, *messages.REQUESTS, *messages.NOTIFICATIONS):
        quoted = [s for s in EXTENSION_SRC.rglob("*.ts") if f'"{method}"' in s.read_text()
                  and not s.name.endswith(".generated.ts") and "test" not in s.parts]
        assert not quoted, f"{method} is spelled out in {quoted}: use Commands/Requests/Notifications"
