"""The adapters render records; they never read a daemon payload by string key.

An event's ``data``, a job's ``result`` and ``request`` are typed once (daemon.payloads,
daemon.messages) and read as records (``event.payload``, ``job.outcome``, ``job.submitted``);
``x.data.get("to", "human")`` in an adapter is the drift this test stops. The TypeScript side is
typed by the generated types (tsc refuses an unknown field); the run viewer's plain JavaScript may
read only fields the records declare.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import msgspec

from daemon.payloads import PAYLOADS

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ("lsp", "slack_bot", "daemon/cli")
PAYLOAD_FIELDS = {"data", "result", "request"}


def _payload_root(node: ast.expr) -> bool:
    """``x.data`` / ``x.result`` / ``x.request``, also as ``(x.result or {})``."""
    if isinstance(node, ast.BoolOp):
        return any(_payload_root(v) for v in node.values)
    return isinstance(node, ast.Attribute) and node.attr in PAYLOAD_FIELDS


def string_key_reads(source: str) -> list[tuple[int, str]]:
    """Where ``source`` reads a payload key by string: ``.get("k")`` or ``["k"]`` on a payload field."""
    found = []
    for node in ast.walk(ast.parse(source)):
        by_get = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and _payload_root(node.func.value))
        by_index = (isinstance(node, ast.Subscript) and _payload_root(node.value)
                    and isinstance(node.slice, ast.Constant))
        if by_get or by_index:
            found.append((getattr(node, "lineno", 0), ast.unparse(node)))
    return found


def test_the_check_finds_the_reads_it_forbids() -> None:
    bad = ('if event.data.get("to", "human") == "human": pass\n'
           'x = (job.result or {}).get("change_id")\ny = info.result["answer"]\nz = job.request.get("prompt")\n')
    assert sorted(line for line, _ in string_key_reads(bad)) == [1, 2, 3, 4]
    assert string_key_reads("body = event.payload\nif body.for_person: pass\nx = job.outcome.change_id\n") == []


def test_no_adapter_reads_a_payload_key_by_string() -> None:
    offenders = [f"{path.relative_to(ROOT)}:{line}: {text}"
                 for folder in ADAPTERS for path in sorted((ROOT / folder).rglob("*.py"))
                 for line, text in string_key_reads(path.read_text())]
    assert offenders == [], "read the record instead (event.payload, job.outcome, job.submitted):\n" + \
        "\n".join(offenders)


def test_the_viewer_reads_only_fields_the_payload_records_declare() -> None:
    declared = {f.name for record in PAYLOADS.values() for f in msgspec.structs.fields(record)}
    unknown = [f"{path.name}: data.{name}" for path in sorted((ROOT / "daemon/viewer/static").glob("*.js"))
               for name in re.findall(r"\bdata\.([a-z_]+)", path.read_text()) if name not in declared]
    assert unknown == [], "a field no payload record has (add it to daemon/payloads.py or read another):\n" + \
        "\n".join(unknown)
