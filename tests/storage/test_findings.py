"""Findings: each review of a file replaces the stale ones, and the same finding is never shown twice."""

from __future__ import annotations

import pytest

from storage import FindingDraft, FindingState, Job, NotFoundError, Severity, Store, Workspace
from storage.errors import StaleReview


def draft(message: str, line: int = 1, **fields) -> FindingDraft:
    return FindingDraft(message=message, severity=fields.pop("severity", "minor"), start_line=line, **fields)


def test_findings_are_stored_open_with_their_range_and_fix(store: Store, workspace: Workspace, job: Job) -> None:
    [finding] = store.add_findings(workspace.id, job.id, "src/app.py", [FindingDraft(
        "SQL built from user input", "critical", 12, 5, 14, 9, rule="security/sql",
        suggested_fix="use a parameterised query")])
    assert (finding.file, finding.start_line, finding.start_col, finding.end_line, finding.end_col) == (
        "src/app.py", 12, 5, 14, 9)
    assert finding.severity is Severity.CRITICAL and finding.state is FindingState.OPEN
    assert (finding.rule, finding.suggested_fix, finding.job_id) == (
        "security/sql", "use a parameterised query", job.id)
    assert store.list_findings(workspace.id, "src/app.py") == [finding]


def test_a_finding_reported_again_keeps_its_id_and_takes_the_new_range(
        store: Store, workspace: Workspace, job: Job) -> None:
    [first] = store.add_findings(workspace.id, job.id, "app.py", [draft("Unused import os", 3)])
    [again] = store.add_findings(workspace.id, job.id, "app.py", [draft("unused  import OS", 7)])
    assert again.id == first.id and again.start_line == 7
    assert [f.id for f in store.list_findings(workspace.id, "app.py")] == [first.id]


def test_a_new_review_resolves_the_open_findings_it_no_longer_reports(
        store: Store, workspace: Workspace, job: Job) -> None:
    _, fixed = store.add_findings(workspace.id, job.id, "app.py", [draft("kept", 1), draft("fixed", 2)])
    store.add_findings(workspace.id, job.id, "app.py", [draft("kept", 1), draft("new", 9)])
    assert [f.message for f in store.list_findings(workspace.id, "app.py")] == ["kept", "new"]
    assert store.get_finding(fixed.id).state is FindingState.RESOLVED


def test_without_replace_open_earlier_findings_stay_open(store: Store, workspace: Workspace, job: Job) -> None:
    store.add_findings(workspace.id, job.id, "app.py", [draft("from the linter", 1)])
    store.add_findings(workspace.id, job.id, "app.py", [draft("from the reviewer", 2)], replace_open=False)
    assert len(store.list_findings(workspace.id, "app.py")) == 2


def test_a_dismissed_finding_is_not_shown_again(store: Store, workspace: Workspace, job: Job) -> None:
    [noise] = store.add_findings(workspace.id, job.id, "app.py", [draft("prefer f-strings", 4)])
    store.set_finding_state(noise.id, "dismissed")
    returned = store.add_findings(workspace.id, job.id, "app.py", [draft("prefer f-strings", 8)])
    assert returned == [] and store.list_findings(workspace.id, "app.py") == []
    assert store.get_finding(noise.id).state is FindingState.DISMISSED


def test_duplicates_within_one_review_are_stored_once(store: Store, workspace: Workspace, job: Job) -> None:
    stored = store.add_findings(workspace.id, job.id, "app.py", [draft("same", 1), draft("same", 5)])
    assert [f.start_line for f in stored] == [1]


def test_an_explicit_fingerprint_decides_what_counts_as_the_same_finding(
        store: Store, workspace: Workspace, job: Job) -> None:
    store.add_findings(workspace.id, job.id, "app.py", [draft("a wording", 1, fingerprint="fp-1")])
    [reworded] = store.add_findings(workspace.id, job.id, "app.py", [draft("another wording", 1, fingerprint="fp-1")])
    assert reworded.message == "another wording"
    assert len(store.list_findings(workspace.id, state=None)) == 1


def test_reviews_of_different_files_do_not_touch_each_other(store: Store, workspace: Workspace, job: Job) -> None:
    store.add_findings(workspace.id, job.id, "a.py", [draft("in a", 1)])
    store.add_findings(workspace.id, job.id, "b.py", [])
    assert [f.file for f in store.list_findings(workspace.id)] == ["a.py"]


def test_findings_are_listed_by_file_then_line(store: Store, workspace: Workspace, job: Job) -> None:
    store.add_findings(workspace.id, job.id, "b.py", [draft("b9", 9), draft("b2", 2)])
    store.add_findings(workspace.id, job.id, "a.py", [draft("a5", 5)])
    assert [f.message for f in store.list_findings(workspace.id)] == ["a5", "b2", "b9"]


def test_a_finding_can_be_applied_and_reopened(store: Store, workspace: Workspace, job: Job) -> None:
    [finding] = store.add_findings(workspace.id, job.id, "app.py", [draft("x", 1)])
    assert store.set_finding_state(finding.id, "applied").state is FindingState.APPLIED
    assert store.list_findings(workspace.id, state="applied") == [store.get_finding(finding.id)]
    store.add_findings(workspace.id, job.id, "app.py", [draft("x", 1)])  # it came back: open again
    with pytest.raises(ValueError, match="already open"):
        store.set_finding_state(finding.id, "open")
    with pytest.raises(NotFoundError):
        store.set_finding_state(12345, "dismissed")


@pytest.mark.parametrize(("file", "error"), [
    ("../secrets.txt", "leaves the workspace"),
    ("src/../../etc/passwd", "leaves the workspace"),
    ("/etc/passwd", "must be relative"),
    ("C:\\Windows\\x.py", "must be relative"),
    (".", "names the workspace root"),
])
def test_a_file_outside_the_workspace_is_refused(store: Store, workspace: Workspace, file: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        store.add_findings(workspace.id, None, file, [draft("x")])


def test_file_paths_are_normalised(store: Store, workspace: Workspace) -> None:
    [finding] = store.add_findings(workspace.id, None, "src\\pkg/./mod.py", [draft("x")])
    assert finding.file == "src/pkg/mod.py"


@pytest.mark.parametrize(("fields", "error"), [
    ({"message": "x", "severity": "blocker", "start_line": 1},
     "finding severity 'blocker' is not one of: critical, major, minor, info"),
    ({"message": "x", "severity": "info", "start_line": 0}, "start_line must be at least 1"),
    ({"message": "x", "severity": "info", "start_line": 5, "end_line": 4}, "end_line must be at least 5"),
    ({"message": " ", "severity": "info", "start_line": 1}, "finding message must not be empty"),
    ({"message": "x", "severity": "info", "start_line": 1, "colour": "red"}, "unknown fields"),
    ({"message": "x", "severity": "info"}, "missing a field"),
])
def test_a_malformed_finding_is_refused_and_nothing_of_the_batch_is_stored(
        store: Store, workspace: Workspace, fields: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        store.add_findings(workspace.id, None, "app.py", [draft("valid one"), fields])
    assert store.list_findings(workspace.id, state=None) == []


def test_an_unknown_finding_state_is_a_value_error(store: Store, workspace: Workspace) -> None:
    [finding] = store.add_findings(workspace.id, None, "app.py", [draft("x")])
    with pytest.raises(ValueError, match="finding state 'fixed' is not one of: open, applied, dismissed, resolved"):
        store.set_finding_state(finding.id, "fixed")


def test_an_older_review_finishing_late_never_replaces_the_findings_of_newer_content(
        store: Store, workspace: Workspace, job: Job) -> None:
    [fresh] = store.add_findings(workspace.id, job.id, "app.py", [draft("undefined_six", 4)],
                                 content_hash="new", read_at=200.0)
    with pytest.raises(StaleReview, match="older content"):
        store.add_findings(workspace.id, job.id, "app.py", [draft("divides by zero", 2)],
                           content_hash="old", read_at=100.0)
    assert [(f.id, f.state, f.content_hash) for f in store.list_findings(workspace.id, "app.py", state=None)] == [
        (fresh.id, FindingState.OPEN, "new")]


def test_a_newer_review_that_found_nothing_still_beats_an_older_one(
        store: Store, workspace: Workspace, job: Job) -> None:
    store.add_findings(workspace.id, job.id, "app.py", [draft("divides by zero", 2)], content_hash="a", read_at=1.0)
    store.add_findings(workspace.id, job.id, "app.py", [], content_hash="fixed", read_at=3.0)  # the fix, reviewed
    with pytest.raises(StaleReview):
        store.add_findings(workspace.id, job.id, "app.py", [draft("divides by zero", 2)], content_hash="a",
                           read_at=2.0)
    assert store.list_findings(workspace.id, "app.py") == []
    same = store.add_findings(workspace.id, job.id, "app.py", [draft("style", 1)], content_hash="fixed",
                              read_at=2.5, replace_open=False)  # the same text read earlier: still true
    assert [f.message for f in same] == ["style"]
