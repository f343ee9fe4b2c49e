"""Jobs: queued, claimed by priority, moved through their states, resumable after a restart."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from storage import Job, JobState, NotFoundError, Store, Workspace


def test_a_recorded_job_is_queued_with_a_uuid_and_its_request(store: Store, workspace: Workspace) -> None:
    job = store.record_job("build", {"prompt": "a todo app", "files": ["a.py"]}, workspace_id=workspace.id)
    assert uuid.UUID(job.id)
    assert job.state is JobState.QUEUED and job.kind == "build"
    assert job.request == {"prompt": "a todo app", "files": ["a.py"]}
    assert job.started is None and job.finished is None and job.last_seq == 0
    assert store.get_job(job.id) == job


def test_an_unknown_job_kind_is_a_value_error_listing_the_kinds(store: Store) -> None:
    with pytest.raises(ValueError, match=r"job kind 'bild' is not one of: ask, build, change, review, test"):
        store.record_job("bild", {})


def test_an_unknown_job_state_is_a_value_error_listing_the_states(store: Store, job: Job) -> None:
    with pytest.raises(ValueError, match=r"job state 'done' is not one of: queued, running, waiting_for_answer"):
        store.set_job_state(job.id, "done")


def test_a_request_that_is_not_json_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="job request must be JSON-serialisable"):
        store.record_job("ask", {"when": object()})


def test_a_job_for_an_unknown_workspace_is_refused(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no workspace with id 99"):
        store.record_job("ask", {}, workspace_id=99)


def test_a_job_id_cannot_be_used_twice(store: Store) -> None:
    store.record_job("ask", {}, job_id="j1")
    with pytest.raises(ValueError, match="already exists"):
        store.record_job("ask", {}, job_id="j1")


def test_running_stamps_started_and_finishing_stamps_finished(store: Store, job: Job) -> None:
    running = store.set_job_state(job.id, "running")
    assert running.started is not None and running.finished is None
    waiting = store.set_job_state(job.id, JobState.WAITING_FOR_ANSWER)
    resumed = store.set_job_state(job.id, "running")
    assert resumed.started == running.started == waiting.started
    done = store.set_job_state(job.id, "succeeded", result={"answer": 42})
    assert done.finished is not None and done.result == {"answer": 42}


def test_a_finished_job_cannot_change_state_again(store: Store, job: Job) -> None:
    store.set_job_state(job.id, "cancelled")
    assert store.set_job_state(job.id, "cancelled").state is JobState.CANCELLED  # repeating is harmless
    with pytest.raises(ValueError, match=f"job {job.id} already cancelled; it cannot become running"):
        store.set_job_state(job.id, "running")


def test_a_failed_job_keeps_its_error(store: Store, job: Job) -> None:
    failed = store.set_job_state(job.id, "failed", error="model timed out after 60 s")
    assert store.get_job(job.id).error == failed.error == "model timed out after 60 s"


def test_claiming_takes_the_highest_priority_then_the_oldest_queued_job(store: Store) -> None:
    low = store.record_job("test", {}, priority=0)
    high_old = store.record_job("review", {}, priority=5)
    store.record_job("review", {}, priority=5)
    claimed = store.claim_next_job()
    assert claimed.id == high_old.id and claimed.state is JobState.RUNNING
    store.claim_next_job()
    assert store.claim_next_job().id == low.id
    assert store.claim_next_job() is None


def test_jobs_are_listed_newest_first_and_filtered(store: Store, workspace: Workspace) -> None:
    first = store.record_job("ask", {}, workspace_id=workspace.id)
    second = store.record_job("review", {})
    third = store.record_job("review", {}, workspace_id=workspace.id)
    store.set_job_state(third.id, "running")
    assert [j.id for j in store.list_jobs()] == [third.id, second.id, first.id]
    assert [j.id for j in store.list_jobs(state="queued")] == [second.id, first.id]
    assert [j.id for j in store.list_jobs(state=["queued", "running"], limit=2)] == [third.id, second.id]
    assert [j.id for j in store.list_jobs(workspace_id=workspace.id)] == [third.id, first.id]
    assert [j.id for j in store.list_jobs(kind="review")] == [third.id, second.id]


def test_update_job_sets_and_clears_checkpoint_fields(store: Store, job: Job) -> None:
    updated = store.update_job(job.id, last_phase="coding", checkpoint={"code_state": 3}, priority=2)
    assert (updated.last_phase, updated.checkpoint, updated.priority) == ("coding", {"code_state": 3}, 2)
    cleared = store.update_job(job.id, checkpoint=None)
    assert cleared.checkpoint is None and cleared.last_phase == "coding"


def test_unknown_jobs_are_reported_by_id(store: Store) -> None:
    assert store.get_job("nope") is None
    with pytest.raises(NotFoundError, match="no job with id 'nope'"):
        store.set_job_state("nope", "running")
    with pytest.raises(NotFoundError, match="no job with id 'nope'"):
        store.update_job("nope", last_phase="x")


def test_a_running_job_and_its_checkpoint_survive_a_restart(store_target: Path | str) -> None:
    with Store.open(store_target) as store:
        job = store.record_job("change", {"request": "rename foo"})
        store.set_job_state(job.id, "running")
        store.update_job(job.id, last_phase="review", checkpoint={"cycle": 2})
    with Store.open(store_target) as restarted:
        [resumable] = restarted.list_jobs(state=["running", "waiting_for_answer"])
        assert (resumable.id, resumable.last_phase, resumable.checkpoint) == (job.id, "review", {"cycle": 2})
