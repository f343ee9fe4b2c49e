"""Proposed changes: kept until the user applies or discards them, decided once."""

from __future__ import annotations

import pytest

from storage import ChangeState, Job, NotFoundError, Store, Workspace

DIFF = "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-print('hi')\n+print('hello')\n"


def test_a_proposed_change_keeps_diff_edits_and_base_hashes(store: Store, workspace: Workspace, job: Job) -> None:
    edits = {"changes": {"file:///shop/app.py": [{"range": [[0, 0], [0, 11]], "newText": "print('hello')"}]}}
    change = store.propose_change(job.id, DIFF, edits=edits, base_hashes={"app.py": "sha256:ab12"})
    assert change.state is ChangeState.PROPOSED and change.workspace_id == workspace.id
    assert store.get_change(change.id) == change
    assert (change.diff, change.edits, change.base_hashes) == (DIFF, edits, {"app.py": "sha256:ab12"})


def test_a_change_is_applied_or_discarded_once(store: Store, job: Job) -> None:
    applied = store.propose_change(job.id, DIFF)
    assert store.set_change_state(applied.id, "applied").state is ChangeState.APPLIED
    assert store.set_change_state(applied.id, "applied").state is ChangeState.APPLIED  # repeating is harmless
    with pytest.raises(ValueError, match="was already applied; it cannot become discarded"):
        store.set_change_state(applied.id, "discarded")
    discarded = store.propose_change(job.id, DIFF)
    store.set_change_state(discarded.id, "discarded")
    with pytest.raises(ValueError, match="was already discarded"):
        store.set_change_state(discarded.id, "proposed")


def test_changes_are_listed_by_job_workspace_and_state(store: Store, workspace: Workspace, job: Job) -> None:
    first = store.propose_change(job.id, DIFF)
    second = store.propose_change(job.id, DIFF)
    store.set_change_state(first.id, "applied")
    assert [c.id for c in store.list_changes(job_id=job.id)] == [second.id, first.id]
    assert [c.id for c in store.list_changes(workspace_id=workspace.id, state="proposed")] == [second.id]


def test_bad_change_input_is_refused_with_the_reason(store: Store, job: Job) -> None:
    with pytest.raises(ValueError, match="change state 'merged' is not one of: proposed, applied, discarded"):
        store.set_change_state(store.propose_change(job.id, DIFF).id, "merged")
    with pytest.raises(ValueError, match="base_hashes must map file paths"):
        store.propose_change(job.id, DIFF, base_hashes={"app.py": 1})
    with pytest.raises(ValueError, match="change diff is not valid UTF-8"):
        store.propose_change(job.id, b"\xff\xfe".decode("utf-8", "surrogateescape"))
    with pytest.raises(NotFoundError, match="a change must belong to a job"):
        store.propose_change("ghost", DIFF)
    with pytest.raises(NotFoundError):
        store.set_change_state("ghost", "applied")
