"""The engine executor's translations: engine findings to store drafts, and hunk reviews that keep
what they did not look at."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from daemon.agents.findings import Finding
from daemon.jobs.engine import EngineExecutor, finding_draft
from daemon.jobs.executor import RunningJob
from storage import FindingDraft


@dataclass
class StoredFinding:
    start_line: int
    end_line: int
    message: str
    rule: str | None = None
    severity: str = "major"
    start_col: int = 1
    end_col: int | None = None
    suggested_fix: str | None = None
    fingerprint: str = "fp"


class FakeStore:
    def __init__(self, *open_findings: StoredFinding) -> None:
        self.open_findings = list(open_findings)

    async def list_findings(self, workspace_id: int, file: str) -> list[StoredFinding]:
        return self.open_findings


def test_an_engine_finding_becomes_a_store_draft() -> None:
    draft = finding_draft(Finding("a.py", 3, 4, "major", "off by one", replacement="x += 1", rule=None))
    assert FindingDraft.from_dict(draft) == FindingDraft("off by one", "major", 3, end_line=4, suggested_fix="x += 1")


async def test_a_hunk_review_keeps_the_models_findings_outside_the_changed_lines() -> None:
    store = FakeStore(
        StoredFinding(5, 5, "far from the change", fingerprint="far"),
        StoredFinding(30, 31, "inside the changed hunk", fingerprint="near"),
        StoredFinding(1, 1, "F401 `os` imported but unused", rule="F401", fingerprint="lint"),
    )
    diff = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -28,7 +28,7 @@\n ctx\n-old\n+new\n ctx\n"
    findings: dict[str, list[dict[str, object]]] = {"a.py": []}
    job = RunningJob("job", "review", {}, Path("/repo"), 1)
    await EngineExecutor(store=store)._keep_unreviewed(job, diff, findings)
    assert [f["fingerprint"] for f in findings["a.py"]] == ["far"]
