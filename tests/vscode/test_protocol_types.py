"""The extension's TypeScript view of the daemon (src/common/daemon.generated.ts) is generated from
the Python protocol; this fails when the two drift (a field, a kind or a record added in Python and
not regenerated, or the file edited by hand)."""

from __future__ import annotations

from daemon.api.typescript import TARGET, generate
from daemon.payloads import PAYLOADS


def test_the_committed_typescript_types_are_what_the_python_protocol_generates() -> None:
    assert TARGET.read_text() == generate(), (
        "vscode-extension/src/common/daemon.generated.ts is stale: run `python -m daemon.api.typescript --write`")


def test_every_event_kind_and_the_job_progress_have_typescript_types() -> None:
    text = generate()
    for kind, record in PAYLOADS.items():
        assert f"  {kind}: {record.__name__};" in text and f"export interface {record.__name__} {{" in text
    assert "export interface JobProgress {" in text and "  progress?: JobProgress;" in text
    assert '"complete"' in text.split("export type JobKind =")[1].split("\n")[0]  # the kind the hand copy lacked
    assert "  result?: JobResult | null;" in text
